// inject/stacks/python_layout.cc: see python_layout.h. Every number below is
// what tests/inject/stacks/python_offsets_probe.c prints when built against
// that version's headers (checked by python_layout_test).
#include "inject/stacks/python_layout.h"

namespace gpscope::inject::stacks {
namespace {

// Fields shared by every supported version are filled in by this helper so
// each table below lists only what differs.
constexpr PythonLayout Base(int minor) {
  PythonLayout l{};
  l.minor = minor;
  l.ob_type = 8;
  l.ob_size = 16;
  l.tp_name = 24;
  l.tp_basicsize = 32;
  l.tstate_cframe = -1;
  l.frame_owner = -1;
  l.owner_generator = -1;
  l.owner_cstack = -1;
  l.owner_max = -1;
  l.code_qualname = -1;
  l.code_code = -1;
  l.code_adaptive = -1;
  l.code_firsttraceable = -1;
  l.bytes_sval = 32;
  l.bytes_basicsize = 33;
  l.unicode_length = 16;
  l.unicode_state = 32;
  l.unicode_kind_shift = 2;
  l.unicode_compact_bit = 5;
  l.unicode_ascii_bit = 6;
  return l;
}

// 3.9-3.11: PyASCIIObject still has wstr (48 bytes), PyCompactUnicodeObject
// wstr_length (72).
constexpr PythonLayout WithWstrUnicode(PythonLayout l) {
  l.unicode_ascii_size = 48;
  l.unicode_compact_size = 72;
  l.unicode_utf8_length = 48;
  l.unicode_utf8 = 56;
  l.unicode_basicsize = 80;
  return l;
}

// 3.12+: wstr is gone (PEP 623).
constexpr PythonLayout WithoutWstrUnicode(PythonLayout l) {
  l.unicode_ascii_size = 40;
  l.unicode_compact_size = 56;
  l.unicode_utf8_length = 40;
  l.unicode_utf8 = 48;
  l.unicode_basicsize = 64;
  return l;
}

constexpr PythonLayout Make39() {
  PythonLayout l = WithWstrUnicode(Base(9));
  l.tstate_frame = 24;  // PyThreadState.frame
  l.frame_previous = 24;  // PyFrameObject.f_back
  l.frame_code = 32;
  l.frame_instr = 104;  // f_lasti
  l.instr_kind = InstrKind::kLastiBytes;
  l.frame_basicsize = 368;
  l.code_basicsize = 176;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;  // co_lnotab
  l.code_code = 48;
  l.line_table = LineTableKind::kLnotab;
  return l;
}

constexpr PythonLayout Make310() {
  PythonLayout l = WithWstrUnicode(Base(10));
  l.tstate_frame = 24;
  l.frame_previous = 24;
  l.frame_code = 32;
  l.frame_instr = 96;  // f_lasti, in code units
  l.instr_kind = InstrKind::kLastiUnits;
  l.frame_basicsize = 360;
  l.code_basicsize = 176;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  l.code_code = 48;
  l.line_table = LineTableKind::kPep626;
  return l;
}

constexpr PythonLayout Make311() {
  PythonLayout l = WithWstrUnicode(Base(11));
  l.tstate_cframe = 56;
  l.tstate_frame = 8;  // _PyCFrame.current_frame (after uint8_t use_tracing)
  l.frame_previous = 48;
  l.frame_code = 32;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 69;
  l.instr_kind = InstrKind::kPrevInstr;
  l.owner_generator = 1;
  l.owner_max = 2;  // no FRAME_OWNED_BY_CSTACK yet
  l.code_basicsize = 184;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_adaptive = 184;
  l.code_firsttraceable = 168;
  l.line_table = LineTableKind::kLocations;
  return l;
}

constexpr PythonLayout Make312() {
  PythonLayout l = WithoutWstrUnicode(Base(12));
  l.tstate_cframe = 56;
  l.tstate_frame = 0;  // _PyCFrame.current_frame
  l.frame_previous = 8;
  l.frame_code = 0;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 70;
  l.instr_kind = InstrKind::kPrevInstr;
  l.owner_generator = 1;
  l.owner_cstack = 3;
  l.owner_max = 3;
  l.code_basicsize = 192;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_adaptive = 192;
  l.code_firsttraceable = 176;
  l.line_table = LineTableKind::kLocations;
  return l;
}

constexpr PythonLayout Make313() {
  PythonLayout l = WithoutWstrUnicode(Base(13));
  l.tstate_frame = 72;  // PyThreadState.current_frame
  l.frame_previous = 8;
  l.frame_code = 0;  // f_executable
  l.frame_instr = 56;  // instr_ptr
  l.frame_owner = 70;
  l.instr_kind = InstrKind::kInstrPtr;
  l.owner_generator = 1;
  l.owner_cstack = 3;
  l.owner_max = 3;
  l.code_basicsize = 200;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_adaptive = 200;
  l.code_firsttraceable = 184;
  l.line_table = LineTableKind::kLocations;
  return l;
}

constexpr PythonLayout kLayout39 = Make39();
constexpr PythonLayout kLayout310 = Make310();
constexpr PythonLayout kLayout311 = Make311();
constexpr PythonLayout kLayout312 = Make312();
constexpr PythonLayout kLayout313 = Make313();
constexpr const PythonLayout* kLayouts[] = {&kLayout39, &kLayout310, &kLayout311, &kLayout312,
                                            &kLayout313};

// _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h): all fields
// are uint64_t, in declaration order after the 8-byte cookie.
constexpr DebugOffsetsLayout kDebug313 = {
    13,
    /*cookie=*/0,
    /*version=*/8,
    /*free_threaded=*/16,
    /*tstate_current_frame=*/184,
    /*frame_previous=*/232,
    /*frame_executable=*/240,
    /*frame_instr_ptr=*/248,
    /*frame_owner=*/264,
    /*code_filename=*/280,
    /*code_name=*/288,
    /*code_qualname=*/296,
    /*code_linetable=*/304,
    /*code_firstlineno=*/312,
    /*code_adaptive=*/344,
    /*ob_type=*/360,
    /*bytes_sval=*/528,
    /*unicode_ascii_size=*/560,
};

}  // namespace

const DebugOffsetsLayout* FindDebugOffsetsLayout(int minor) {
  return minor == 13 ? &kDebug313 : nullptr;
}

const PythonLayout* FindPythonLayout(int major, int minor) {
  if (major != 3) return nullptr;
  for (const PythonLayout* l : kLayouts) {
    if (l->minor == minor) return l;
  }
  return nullptr;
}

const PythonLayout* const* AllPythonLayouts(int* count) {
  *count = static_cast<int>(sizeof(kLayouts) / sizeof(kLayouts[0]));
  return kLayouts;
}

}  // namespace gpscope::inject::stacks
