/* tests/inject/stacks/python_offsets_probe.c: prints the CPython struct
 * offsets that inject/stacks/python_layout.cc has compiled in, as the real
 * headers of one interpreter define them ("name value" lines).
 *
 * Built once per installed CPython (tests/inject/stacks/CMakeLists.txt),
 * against that version's headers with Py_BUILD_CORE (3.11+ keep
 * _PyInterpreterFrame in internal/pycore_frame.h). python_layout_test runs
 * each build and compares every line with the table for that version, so a
 * table that disagrees with the headers fails the build's tests. The
 * collector itself never needs these headers. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_runtime.h"
#endif

#define P(name, value) printf("%s %lld\n", name, (long long)(value))

/* Bit position of a one-bit-wide probe into a bitfield: set the field to 1
 * in a zeroed copy and find the lowest set bit of the 32-bit word. */
static int lowest_bit(unsigned int word) {
  for (int i = 0; i < 32; ++i) {
    if (word & (1u << i)) return i;
  }
  return -1;
}

int main(void) {
  P("version_minor", PY_MINOR_VERSION);
  P("object.ob_type", offsetof(PyObject, ob_type));
  P("varobject.ob_size", offsetof(PyVarObject, ob_size));
  P("type.tp_basicsize", offsetof(PyTypeObject, tp_basicsize));
  P("type.tp_name", offsetof(PyTypeObject, tp_name));

#if PY_VERSION_HEX >= 0x030D0000
  P("tstate.current_frame", offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030B0000
  P("tstate.cframe", offsetof(PyThreadState, cframe));
  P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
#else
  P("tstate.frame", offsetof(PyThreadState, frame));
#endif

#if PY_VERSION_HEX >= 0x030B0000
  P("frame.previous", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030D0000
  P("frame.code", offsetof(_PyInterpreterFrame, f_executable));
  P("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
  P("frame.code", offsetof(_PyInterpreterFrame, f_code));
  P("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
  P("frame.owner", offsetof(_PyInterpreterFrame, owner));
  P("owner.generator", FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030C0000
  P("owner.cstack", FRAME_OWNED_BY_CSTACK);
  P("owner.max", FRAME_OWNED_BY_CSTACK);
#else
  P("owner.max", FRAME_OWNED_BY_FRAME_OBJECT);
#endif
#else
  P("frame.previous", offsetof(PyFrameObject, f_back));
  P("frame.code", offsetof(PyFrameObject, f_code));
  P("frame.instr", offsetof(PyFrameObject, f_lasti));
  P("frame.basicsize", sizeof(PyFrameObject));
#endif

#if PY_VERSION_HEX >= 0x030B0000
  /* Objects/codeobject.c: the bytecode is the variable part. */
  P("code.basicsize", offsetof(PyCodeObject, co_code_adaptive));
#else
  P("code.basicsize", sizeof(PyCodeObject));
#endif
  P("code.filename", offsetof(PyCodeObject, co_filename));
  P("code.name", offsetof(PyCodeObject, co_name));
  P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030B0000
  P("code.qualname", offsetof(PyCodeObject, co_qualname));
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
  P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
  P("code.firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#elif PY_VERSION_HEX >= 0x030A0000
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
  P("code.code", offsetof(PyCodeObject, co_code));
#else
  P("code.linetable", offsetof(PyCodeObject, co_lnotab));
  P("code.code", offsetof(PyCodeObject, co_code));
#endif

  P("bytes.ob_sval", offsetof(PyBytesObject, ob_sval));
  /* Objects/bytesobject.c: PyBytesObject_SIZE, the header and one NUL. */
  P("bytes.basicsize", offsetof(PyBytesObject, ob_sval) + 1);
  P("unicode.basicsize", sizeof(PyUnicodeObject));
  P("unicode.length", offsetof(PyASCIIObject, length));
  P("unicode.state", offsetof(PyASCIIObject, state));
  P("unicode.ascii_size", sizeof(PyASCIIObject));
  P("unicode.compact_size", sizeof(PyCompactUnicodeObject));
  P("unicode.utf8_length", offsetof(PyCompactUnicodeObject, utf8_length));
  P("unicode.utf8", offsetof(PyCompactUnicodeObject, utf8));
  {
    PyASCIIObject o;
    unsigned int word;
    memset(&o, 0, sizeof o);
    o.state.kind = 1;
    memcpy(&word, &o.state, sizeof word);
    P("unicode.kind_shift", lowest_bit(word));
    memset(&o, 0, sizeof o);
    o.state.compact = 1;
    memcpy(&word, &o.state, sizeof word);
    P("unicode.compact_bit", lowest_bit(word));
    memset(&o, 0, sizeof o);
    o.state.ascii = 1;
    memcpy(&word, &o.state, sizeof word);
    P("unicode.ascii_bit", lowest_bit(word));
  }
#if PY_VERSION_HEX >= 0x030D0000
  /* internal/pycore_runtime.h: _PyRuntime.debug_offsets. */
  P("debug.cookie", offsetof(_Py_DebugOffsets, cookie));
  P("debug.version", offsetof(_Py_DebugOffsets, version));
  P("debug.free_threaded", offsetof(_Py_DebugOffsets, free_threaded));
  P("debug.tstate_current_frame", offsetof(_Py_DebugOffsets, thread_state.current_frame));
  P("debug.frame_previous", offsetof(_Py_DebugOffsets, interpreter_frame.previous));
  P("debug.frame_executable", offsetof(_Py_DebugOffsets, interpreter_frame.executable));
  P("debug.frame_instr_ptr", offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
  P("debug.frame_owner", offsetof(_Py_DebugOffsets, interpreter_frame.owner));
  P("debug.code_filename", offsetof(_Py_DebugOffsets, code_object.filename));
  P("debug.code_name", offsetof(_Py_DebugOffsets, code_object.name));
  P("debug.code_qualname", offsetof(_Py_DebugOffsets, code_object.qualname));
  P("debug.code_linetable", offsetof(_Py_DebugOffsets, code_object.linetable));
  P("debug.code_firstlineno", offsetof(_Py_DebugOffsets, code_object.firstlineno));
  P("debug.code_adaptive", offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
  P("debug.ob_type", offsetof(_Py_DebugOffsets, pyobject.ob_type));
  P("debug.bytes_sval", offsetof(_Py_DebugOffsets, bytes_object.ob_sval));
  P("debug.unicode_ascii_size", offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size));
#endif
  return 0;
}
