"""The worker side of bench/overhead_baton.py's relay (a Python workload's half).

Several processes, one per configuration (no tracing, gpscope, nsys, ...), run at the same time
and pass a token round a ring of FIFOs: a process waits for the token, times one block of its
workload (ended by a device synchronize), passes the token on. Only the holder runs, so blocks
of the different configurations alternate every few milliseconds and the machine's drift hits
them alike, and every process's start-up is paid once, side by side. bench/tiny_kernels.cu
speaks the same protocol:

  --baton IN,OUT,READY   three FIFO paths: the token arrives on IN and leaves on OUT; one byte
                         'r' on READY says the process is warm and waiting
  token bytes            't' run a block; 'q' pass 'q' on and stop

At the end the process prints its JSON line with "block_us": every block's time in order, so the
coordinator pairs the i-th blocks of all configurations (they ran within one lap of the token).
"""
import os
import time


def relay(spec, block):
    """Runs block() once per 't' token arriving on spec's IN; returns the block times in us."""
    fin, fout, ready = spec.split(",")
    # O_RDWR: opening a FIFO this way never waits for the other end (Linux), and a reader that
    # also holds the write end never sees end-of-file while the coordinator is alive.
    fd_in = os.open(fin, os.O_RDWR)
    fd_out = os.open(fout, os.O_RDWR)
    fd_ready = os.open(ready, os.O_RDWR)
    os.write(fd_ready, b"r")
    times = []
    try:
        while True:
            tok = os.read(fd_in, 1)
            if not tok or tok == b"q":
                os.write(fd_out, b"q")
                break
            t0 = time.monotonic_ns()
            block()
            times.append((time.monotonic_ns() - t0) / 1e3)
            os.write(fd_out, tok)
    finally:
        for fd in (fd_in, fd_out, fd_ready):
            os.close(fd)
    return times
