"""tests/inject/stacks_child.py INJECT_LIB FAKE_CUPTI OUT: a Python "CUDA program"
for collector_stacks_test: loads the injected library and the stand-in
libcupti through ctypes, makes ten synchronizing calls from sync_site(), and
writes the calls' correlation ids and the source lines the stacks must name
to OUT. ctypes releases the GIL around each call, as PyTorch does around its
CUDA calls, so the collector walks the frames without it."""
import ctypes
import sys
import time

RUNTIME_API = 2           # CUPTI_CB_DOMAIN_RUNTIME_API
STREAM_SYNCHRONIZE = 131  # CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020


def line_of(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return number
    raise SystemExit("marker %s not found" % marker)


def sync_site(call):
    return call(RUNTIME_API, STREAM_SYNCHRONIZE, 20, 0)  # call site


def main():
    inject_path, fake_path, out_path = sys.argv[1:4]
    inject = ctypes.CDLL(inject_path)
    if inject.InitializeInjection() != 1:
        return 11
    fake = ctypes.CDLL(fake_path)  # the library the collector loaded
    if fake.fake_cupti_start() != 0:
        return 13
    call = fake.fake_cupti_api_call
    call.restype = ctypes.c_uint32
    call.argtypes = [ctypes.c_uint32] * 4
    with open(out_path, "w") as out:
        out.write("line %d\n" % line_of("call site"))
        out.write("outer_line %d\n" % line_of("outer site"))
        for _ in range(10):
            out.write("sync %d\n" % sync_site(call))  # outer site
    time.sleep(0.3)  # a few writer drains while the code objects are alive
    return 0


if __name__ == "__main__":
    sys.exit(main())
