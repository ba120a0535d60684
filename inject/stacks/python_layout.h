// inject/stacks/python_layout.h: where CPython 3.9-3.13 keep the fields the
// stack walker reads, one compiled-in table per minor version.
//
// The collector never includes Python headers and never links libpython:
// the interpreter in the process is found at run time (python_stacks.h) and
// its minor version picks one of these tables. The numbers were taken from
// each version's own headers (cpython/pystate.h, cpython/code.h,
// cpython/frameobject.h for 3.9/3.10, internal/pycore_frame.h for 3.11+)
// and are checked against them by tests/inject/stacks/python_layout_test.cc,
// which compiles python_offsets_probe.c against every installed CPython.
// All offsets are in bytes for x86-64 / aarch64 (LP64) release builds with
// the GIL (not Py_DEBUG/Py_TRACE_REFS, not free-threaded 3.13t: those move
// ob_type, which python_stacks.cc detects before using a table).
//
//   const PythonLayout* l = FindPythonLayout(3, 12);  // nullptr: unsupported
//
// Thread model: constant data, any thread.
#ifndef GPSCOPE_INJECT_STACKS_PYTHON_LAYOUT_H_
#define GPSCOPE_INJECT_STACKS_PYTHON_LAYOUT_H_

#include <cstdint>

namespace gpscope::inject::stacks {

// What the frame's instruction field holds.
enum class InstrKind : uint8_t {
  kLastiBytes,  // 3.9: PyFrameObject.f_lasti, an int byte offset (-1 before the first)
  kLastiUnits,  // 3.10: f_lasti in 2-byte code units (-1 before the first)
  kPrevInstr,   // 3.11, 3.12: _PyInterpreterFrame.prev_instr, a pointer into co_code_adaptive
  kInstrPtr,    // 3.13: _PyInterpreterFrame.instr_ptr, same, the current instruction
};

// How co_lnotab / co_linetable maps byte offsets to lines (line_table.h).
enum class LineTableKind : uint8_t {
  kLnotab,     // 3.9 co_lnotab
  kPep626,     // 3.10 co_linetable (PEP 626 (start delta, line delta) pairs)
  kLocations,  // 3.11+ co_linetable (the location table, Objects/locations.md)
};

// Offsets of -1 mean "this version has no such field".
struct PythonLayout {
  int minor;  // 3.<minor>

  // Object headers (the same in every supported version).
  int16_t ob_type;      // PyObject.ob_type
  int16_t ob_size;      // PyVarObject.ob_size
  int16_t tp_name;      // PyTypeObject.tp_name
  int16_t tp_basicsize; // PyTypeObject.tp_basicsize

  // PyThreadState -> innermost frame. 3.11/3.12 go through the _PyCFrame
  // that tstate->cframe points at: frame = tstate->cframe->current_frame.
  // Otherwise frame = *(tstate + tstate_frame).
  int16_t tstate_cframe;  // PyThreadState.cframe, or -1
  int16_t tstate_frame;   // PyThreadState.frame/current_frame, or _PyCFrame.current_frame

  // One frame: a PyFrameObject (3.9/3.10) or a _PyInterpreterFrame (3.11+).
  int16_t frame_previous;  // f_back / previous
  int16_t frame_code;      // f_code / f_executable (3.13)
  int16_t frame_instr;     // f_lasti / prev_instr / instr_ptr
  int16_t frame_owner;     // _PyInterpreterFrame.owner (a char), or -1
  InstrKind instr_kind;
  int8_t owner_generator;  // FRAME_OWNED_BY_GENERATOR, or -1
  int8_t owner_cstack;     // FRAME_OWNED_BY_CSTACK (3.12+), or -1
  int8_t owner_max;        // the largest valid owner value
  // PyFrame_Type.tp_basicsize (3.9/3.10; frames are objects there), else 0.
  int16_t frame_basicsize;

  // PyCodeObject.
  int16_t code_basicsize;       // PyCode_Type.tp_basicsize (3.11+: offset of co_code_adaptive)
  int16_t code_filename;
  int16_t code_name;
  int16_t code_qualname;        // 3.11+, else -1
  int16_t code_firstlineno;     // an int
  int16_t code_linetable;       // co_lnotab (3.9) / co_linetable (bytes)
  int16_t code_code;            // co_code bytes object (3.9/3.10), else -1
  int16_t code_adaptive;        // co_code_adaptive, inline bytecode (3.11+), else -1
  int16_t code_firsttraceable;  // _co_firsttraceable, an int (3.11+), else -1
  LineTableKind line_table;

  // PyBytesObject / PyASCIIObject / PyCompactUnicodeObject.
  int16_t bytes_sval;
  int16_t unicode_length;
  int16_t unicode_state;         // the 32-bit state bitfield
  int16_t unicode_ascii_size;    // sizeof(PyASCIIObject): compact ASCII data follows
  int16_t unicode_compact_size;  // sizeof(PyCompactUnicodeObject): other compact data follows
  int16_t unicode_utf8_length;
  int16_t unicode_utf8;
  int8_t unicode_kind_shift;     // state bits: kind (3 bits), compact, ascii
  int8_t unicode_compact_bit;
  int8_t unicode_ascii_bit;
  int16_t unicode_basicsize;     // PyUnicode_Type.tp_basicsize
  int16_t bytes_basicsize;       // PyBytes_Type.tp_basicsize
};

// Where 3.13+ keep, inside _PyRuntime.debug_offsets (the _Py_DebugOffsets
// table CPython publishes for out-of-process debuggers, pycore_runtime.h),
// the values InitPythonStacks compares with the PythonLayout. Byte offsets
// of uint64_t fields within _Py_DebugOffsets.
struct DebugOffsetsLayout {
  int minor;
  int16_t cookie;  // char[8] "xdebugpy"
  int16_t version;  // PY_VERSION_HEX
  int16_t free_threaded;
  int16_t tstate_current_frame;
  int16_t frame_previous;
  int16_t frame_executable;
  int16_t frame_instr_ptr;
  int16_t frame_owner;
  int16_t code_filename;
  int16_t code_name;
  int16_t code_qualname;
  int16_t code_linetable;
  int16_t code_firstlineno;
  int16_t code_adaptive;
  int16_t ob_type;
  int16_t bytes_sval;
  int16_t unicode_ascii_size;
};

// The debug-offsets table for 3.minor, or nullptr (before 3.13).
const DebugOffsetsLayout* FindDebugOffsetsLayout(int minor);

// The table for CPython major.minor, or nullptr when it is not supported.
const PythonLayout* FindPythonLayout(int major, int minor);

// Every table, oldest first (tests iterate them).
const PythonLayout* const* AllPythonLayouts(int* count);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_PYTHON_LAYOUT_H_
