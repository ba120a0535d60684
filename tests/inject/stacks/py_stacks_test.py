# -*- coding: utf-8 -*-
"""tests/inject/stacks/py_stacks_test.py: the Python frame walker inside a real
interpreter (run by run_py_stacks_test.sh once per installed CPython).

    python3.X py_stacks_test.py path/to/libgpscope_stacks_pytest.so

The library is loaded with ctypes.CDLL, whose calls release the GIL (as
PyTorch does around CUDA calls), so each capture runs on a Python thread,
inside a C call, without the GIL: where the collector's callback runs. Each
capture is compared frame by frame (file, function, line) with
traceback.extract_stack() taken on the same source line. Then every
instruction offset of many code objects is checked against the
interpreter's own PyCode_Addr2Line, and names against co_filename/co_name/
co_qualname. Exits 1 with the differences on any mismatch; 0 when all pass.
"""
import asyncio
import ctypes
import functools
import sys
import threading
import traceback

LIB = ctypes.CDLL(sys.argv[1])
LIB.gps_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.gps_capture.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
LIB.gps_line.argtypes = [ctypes.c_uint64, ctypes.c_int, ctypes.c_int]
LIB.gps_code_names.argtypes = [ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
LIB.gps_string.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_int]
LIB.gps_fault.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.gps_capture_on_native_thread.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.gps_capture_main_from_native_thread.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.gps_native_compare.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.gps_capture_loop.argtypes = [ctypes.c_int]
LIB.gps_record_image.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]

SZ = 1 << 16
C = LIB.gps_capture  # short, so a capture and its traceback fit on one line
FAILURES = []
CHECKS = [0]


def buf():
    return ctypes.create_string_buffer(SZ)


def parse(b, n):
    if n < 0:
        raise RuntimeError("capture output did not fit")
    lines = b.value.decode("utf-8").split("\n")
    status, depth = lines[0].split(" ")
    frames = []
    for line in lines[1:]:
        if line:
            f, fn, ln = line.split("\t")
            frames.append((f, fn, int(ln)))
    return status, int(depth), frames


def want_of(extracted):
    return [(f.filename, f.name, -1 if f.lineno is None else f.lineno) for f in reversed(extracted)]


def check(label, b, n, extracted, want_status="ok", max_frames=64):
    CHECKS[0] += 1
    status, depth, got = parse(b, n)
    want = want_of(extracted)
    if want_status == "truncated":
        want = want[:max_frames]
    problems = []
    if status != want_status:
        problems.append("status %s, want %s" % (status, want_status))
    if depth != len(got):
        problems.append("depth %d but %d frames" % (depth, len(got)))
    if got != want:
        problems.append("frames differ")
    if problems:
        lines = ["%s: %s" % (label, "; ".join(problems))]
        for i in range(max(len(got), len(want))):
            g = got[i] if i < len(got) else None
            w = want[i] if i < len(want) else None
            lines.append("  %s %-60s | %s" % ("  " if g == w else "!!", g, w))
        FAILURES.append("\n".join(lines))


# ---------------------------------------------------------------- stacks --

def inner(label):
    b = buf()
    n = C(b, SZ, 64); w = traceback.extract_stack()
    check(label, b, n, w)


def middle(label):
    inner(label)
    return 1


def outer(label):
    return middle(label) + 1


def gen(label):
    b = buf()
    n = C(b, SZ, 64); w = traceback.extract_stack()
    yield b, n, w


def deep(k, label):
    if k > 0:
        return deep(k - 1, label)
    b = buf()
    n = C(b, SZ, 64); w = traceback.extract_stack()
    check(label, b, n, w, want_status="truncated")
    n = C(b, SZ, 10); w = traceback.extract_stack()
    check(label + " (10)", b, n, w, want_status="truncated", max_frames=10)
    return 0


async def coro_inner(label):
    await asyncio.sleep(0)
    b = buf()
    n = C(b, SZ, 64); w = traceback.extract_stack()
    check(label, b, n, w)


async def coro_outer(label):
    await coro_inner(label)


class Model:
    def forward(self, label):
        b = buf()
        n = C(b, SZ, 64); w = traceback.extract_stack()
        check(label, b, n, w)

    @staticmethod
    def static(label):
        Model().forward(label)


def decorated(f):
    @functools.wraps(f)
    def wrapper(*a):
        return f(*a)
    return wrapper


@decorated
def wrapped(label):
    inner(label)


def fünf(label):  # a latin-1 name: a compact non-ASCII str
    b = buf()
    n = C(b, SZ, 64); w = traceback.extract_stack()
    check(label, b, n, w)


def 漢字(label):  # a 2-byte-kind name
    b = buf()
    n = C(b, SZ, 64); w = traceback.extract_stack()
    check(label, b, n, w)


def through_c_callback(label):
    libc = ctypes.CDLL(None)
    cmp_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))

    def compare(a, b_):
        b = buf()
        n = C(b, SZ, 64); w = traceback.extract_stack()
        check(label, b, n, w)
        return a[0] - b_[0]

    arr = (ctypes.c_int * 2)(2, 1)
    libc.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), cmp_t(compare))


def run_stack_tests():
    outer("nested functions")
    Model.static("method and staticmethod")
    wrapped("functools.wraps decorator")
    fünf("latin-1 function name")
    漢字("UCS-2 function name")

    for b, n, w in gen("generator"):
        check("generator", b, n, w)
    g = gen("generator via next")
    b, n, w = next(g)
    check("generator via next", b, n, w)

    asyncio.run(coro_outer("coroutine under asyncio"))

    deep(150, "deep recursion truncated to 64")

    f = lambda: (lambda b: (C(b, SZ, 64), traceback.extract_stack(), b))(buf())  # noqa: E731
    n, w, b = f()
    check("lambda", b, n, w)

    results = [(lambda b: (C(b, SZ, 64), traceback.extract_stack(), b))(buf()) for _ in range(1)]
    n, w, b = results[0]
    check("list comprehension", b, n, w)

    keys = []
    sorted([2, 1], key=lambda x: keys.append((lambda b: (C(b, SZ, 64), traceback.extract_stack(), b))(buf())) or x)
    n, w, b = keys[0]
    check("key function called from C (sorted)", b, n, w)

    through_c_callback("ctypes callback from C qsort")

    src = "def exec_fn(label):\n    inner(label)\n\nexec_fn('exec, non-ASCII file name')\n"
    exec(compile(src, "fïle-\U0001F600.py", "exec"), globals())

    errors = []

    def thread_body():
        try:
            outer("non-main thread")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    t = threading.Thread(target=thread_body)
    t.start()
    t.join()
    if errors:
        FAILURES.append("thread: " + errors[0])

    # Native stacks through libffi, _ctypes and the eval loop: the fast
    # unwinder must give libgcc's frames, without falling back.
    for depth in (1, 20):
        def nest(k):
            if k == 0:
                b = buf()
                LIB.gps_native_compare(b, SZ)
                return b.value.decode()
            return nest(k - 1)
        r = nest(depth)
        CHECKS[0] += 1
        parts = r.split()
        if len(parts) != 4 or parts[3] != "1" or int(parts[1]) < 10:
            FAILURES.append("native stack under Python (depth %d): fast/libgcc/fast-path/equal = %s"
                            % (depth, r))
        elif parts[2] != "1":
            print("note: the fast unwinder fell back to libgcc under Python: %s" % r)

    b = buf()
    n = LIB.gps_capture_on_native_thread(b, SZ)
    status, depth, got = parse(b, n)
    CHECKS[0] += 1
    if (status, depth) != ("nothread", 0):
        FAILURES.append("native pthread: status %s depth %d, want nothread 0" % (status, depth))

    # The main thread's stack, read by a thread without Python while the
    # main thread waits in a C call (JAX's float(loss) and XLA's threads).
    def waits_in_c(depth):
        if depth:
            return waits_in_c(depth - 1)
        b = buf()
        n = LIB.gps_capture_main_from_native_thread(b, SZ); e = traceback.extract_stack()
        return b, n, e

    if threading.current_thread() is threading.main_thread():
        for depth in (0, 5, 80):
            b, n, e = waits_in_c(depth)
            check("main thread's stack from a native thread, depth %d" % depth, b, n, e,
                  want_status="truncated" if len(e) > 64 else "ok")


# ------------------------------------------------------ code, lines, strings --

def code_objects(roots):
    seen = set()
    stack = list(roots)
    while stack:
        co = stack.pop()
        if id(co) in seen:
            continue
        seen.add(id(co))
        yield co
        stack.extend(c for c in co.co_consts if isinstance(c, type(run_stack_tests.__code__)))


def run_line_tests():
    import dis, inspect, json.decoder, tokenize, asyncio.base_events  # noqa: E401
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    roots = []
    for mod in (dis, inspect, json.decoder, tokenize, asyncio.base_events, traceback, threading,
                sys.modules[__name__]):
        for v in vars(mod).values():
            for f in ([v] + list(vars(v).values()) if isinstance(v, type) else [v]):
                f = getattr(f, "__func__", f)
                if hasattr(f, "__code__"):
                    roots.append(f.__code__)
    codes = list(code_objects(roots))
    offsets = 0
    bad = []
    for co in codes:
        first = co.co_firstlineno
        b = ctypes.create_string_buffer(8192)
        LIB.gps_code_names(id(co), first, b, 8192)
        want_names = "\t".join([co.co_filename, co.co_name, getattr(co, "co_qualname", "")])
        if b.value.decode("utf-8") != want_names:
            bad.append("names of %r: %r, want %r" % (co, b.value.decode("utf-8"), want_names))
        for off in [-2] + list(range(0, len(co.co_code), 2)):
            got = LIB.gps_line(id(co), first, off)
            want = addr2line(co, off)
            offsets += 1
            if got != want:
                bad.append("%s:%s offset %d: line %d, PyCode_Addr2Line %d"
                           % (co.co_filename, co.co_qualname if hasattr(co, "co_qualname") else co.co_name,
                              off, got, want))
        # A code object captured with another first line is a reused address.
        if LIB.gps_line(id(co), first + 1, 0) != -1003:
            bad.append("%r with a wrong first line was not reported stale" % co)
    CHECKS[0] += offsets
    if bad:
        FAILURES.append("line/name checks: %d of %d failed, first ones:\n  %s"
                        % (len(bad), offsets, "\n  ".join(bad[:20])))
    if len(codes) < 500 or offsets < 20000:
        FAILURES.append("line checks covered only %d code objects, %d offsets" % (len(codes), offsets))

    for s in ["plain ascii", "héllo wörld", "漢字かな", "emoji \U0001F600 x", "", "x" * 3000]:
        b = ctypes.create_string_buffer(65536)
        n = LIB.gps_string(id(s), b, 65536)
        CHECKS[0] += 1
        if n < 0 or b.value.decode("utf-8") != s:
            FAILURES.append("string %r read as %r (%d)" % (s[:20], b.value[:40], n))

    class MyStr(str):
        pass
    if LIB.gps_string(id(MyStr("sub")), ctypes.create_string_buffer(64), 64) != -2:
        FAILURES.append("a str subclass (not PyUnicode_Type) was read as a string")
    if LIB.gps_string(id(12345), ctypes.create_string_buffer(64), 64) != -2:
        FAILURES.append("an int was read as a string")
    CHECKS[0] += 2


def record_image(path):
    """Records this thread's chain into a memory image (record_py_image.py)."""
    def leaf():
        err = ctypes.create_string_buffer(1 << 16)
        enc = lambda w: "".join("%s\t%s\t%d\n" % f for f in want_of(w)).encode("utf-8")  # noqa: E731
        n = LIB.gps_record_image(path.encode(), enc(traceback.extract_stack()), err, len(err))
        if n < 0:
            raise SystemExit("recording failed: " + err.value.decode("utf-8", "replace"))
        print("recorded %d frames into %s" % (n, path))

    def branch():
        leaf()

    def root():
        branch()

    root()


def main():
    info = ctypes.create_string_buffer(4096)
    enabled = LIB.gps_init(info, 4096)
    print("python stacks:", info.value.decode())
    if not enabled:
        print("FAIL: Python stacks did not enable in CPython %s" % sys.version.split()[0])
        return 1
    # The pending call that registers the exit hook runs on this thread at a
    # bytecode boundary: by now it has.
    import atexit
    if not LIB.gps_exit_hook():
        print("FAIL: CPython %s: the atexit hook that stops walks was not registered"
              % sys.version.split()[0])
        return 1
    if atexit._ncallbacks() < 1:
        print("FAIL: CPython %s: atexit has no callbacks after the hook was registered"
              % sys.version.split()[0])
        return 1
    if len(sys.argv) > 2 and sys.argv[2] == "--finalize":
        # A daemon thread captures in a loop inside one C call while the
        # interpreter shuts down and frees its thread state: every capture
        # must stop at the finalizing flag, none may crash.
        import time
        threading.Thread(target=lambda: LIB.gps_capture_loop(5000), daemon=True).start()
        time.sleep(0.3)
        print("main thread exits with the capture loop running")
        return 0
    if len(sys.argv) > 2:
        record_image(sys.argv[2])
        return 0
    run_stack_tests()
    run_line_tests()
    fault = ctypes.create_string_buffer(256)
    LIB.gps_fault(fault, 256)
    if not LIB.gps_enabled() or fault.value != b"none":
        FAILURES.append("Python stacks were turned off during the test: %s" % fault.value.decode())
    if FAILURES:
        print("FAIL: CPython %s: %d problems" % (sys.version.split()[0], len(FAILURES)))
        for f in FAILURES:
            print(f)
        return 1
    print("PASS: CPython %s: %d checks" % (sys.version.split()[0], CHECKS[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
