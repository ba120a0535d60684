"""A stand-in workload for bench/overhead_ab.py on a machine without a GPU.

It does what the CUDA driver does for CUDA_INJECTION64_PATH (dlopen the library, call
InitializeInjection) with GPSCOPE_CUPTI_PATH pointing at the stand-in libcupti
(tests/inject/fake_cupti.cc), starts the stand-in's "application" (a context on device 0
and FAKE_CUPTI_KERNELS kernels at FAKE_CUPTI_RATE), then runs steps of --step-ms of sleep,
writing each step's CLOCK_MONOTONIC start/end to --step-log, for --seconds.

  ab_fake_workload.py --step-log F --seconds S [--step-ms 10] [--syncs]
"""
import argparse
import ctypes
import os
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--step-log", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--step-ms", type=float, default=10.0)
    p.add_argument("--syncs", action="store_true",
                   help="one stand-in cudaDeviceSynchronize per step (API callbacks: stacks)")
    a = p.parse_args()
    lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=os.RTLD_NOW | os.RTLD_LOCAL)
    lib.InitializeInjection()
    fake = ctypes.CDLL(os.environ["GPSCOPE_CUPTI_PATH"], mode=os.RTLD_NOW | os.RTLD_NOLOAD)
    fake.fake_cupti_start()
    deadline = time.monotonic() + a.seconds
    with open(a.step_log, "w", buffering=1) as log:
        while time.monotonic() < deadline:
            t0 = time.monotonic_ns()
            time.sleep(a.step_ms / 1000.0)
            if a.syncs:
                fake.fake_cupti_api_call(2, 165, 0, 0)  # CUPTI_CB_DOMAIN_RUNTIME_API, cudaDeviceSynchronize
            log.write(f"{t0} {time.monotonic_ns()}\n")


if __name__ == "__main__":
    main()
