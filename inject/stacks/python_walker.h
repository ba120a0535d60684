// inject/stacks/python_walker.h: the Python frame-chain walk itself, over a
// layout table and a "reader" policy, so one piece of code serves
//   - the hot path (DirectLoads: plain loads of our own thread's frames),
//   - the start-up calibration walk and the tests (a MemoryReader that
//     cannot fault), and
//   - the replay of recorded memory images (a reader over the image).
//
// What it reads, per frame, for each layout (python_layout.h):
//   3.9/3.10  PyFrameObject: ob_type (== &PyFrame_Type), f_code, f_lasti,
//             f_back; the code's ob_type, co_firstlineno and co_code's
//             ob_size (the bytecode length bounds f_lasti).
//   3.11/3.12 _PyInterpreterFrame: owner, f_code, prev_instr, previous;
//             the code's ob_type, ob_size, _co_firsttraceable, co_firstlineno.
//   3.13      the same with f_executable and instr_ptr.
// It skips the frames CPython itself hides from tracebacks: 3.12+ frames
// owned by the C stack (the interpreter's entry shims) and 3.11+
// "incomplete" frames (not a generator, instruction before
// _co_firsttraceable: a call still setting up its frame).
//
// Validation before every pointer is followed: non-null, 8-byte aligned,
// below 2^47 (a user-space address on x86-64 and aarch64 with 48-bit VAs);
// type pointers equal the interpreter's PyCode_Type (and PyFrame_Type);
// owner within the enum; the instruction inside the bytecode; a cycle
// (Brent's algorithm, O(1) state) or a bounded number of steps ends the
// walk. The first failed check returns kInconsistent with the frames
// gathered so far; the caller decides what that means (python_stacks.cc
// turns Python stacks off process-wide).
//
// Thread model: a pure function of memory; the hot-path instantiation does
// no allocation, no locking, no syscalls, no calls into Python.
#ifndef GPSCOPE_INJECT_STACKS_PYTHON_WALKER_H_
#define GPSCOPE_INJECT_STACKS_PYTHON_WALKER_H_

#include <cstdint>
#include <cstring>

#include "inject/stacks/capture_record.h"
#include "inject/stacks/memory_reader.h"
#include "inject/stacks/python_layout.h"

namespace gpscope::inject::stacks {

// The addresses a walk compares against, found once at start-up.
struct PyWalkTarget {
  const PythonLayout* layout = nullptr;
  uint64_t code_type = 0;   // &PyCode_Type
  uint64_t frame_type = 0;  // &PyFrame_Type (3.9/3.10 check frame objects too)
};

enum class WalkStatus : uint8_t {
  kComplete,      // reached the end of the chain
  kTruncated,     // out of room (or steps): the outermost frames are missing
  kInconsistent,  // a check failed; see WalkFault
};

enum class WalkFault : uint8_t {
  kNone = 0,
  kBadThreadState,   // the thread state / _PyCFrame pointer failed a check
  kBadFramePointer,  // null-but-not-end, misaligned or non-canonical frame
  kBadFrameType,     // 3.9/3.10: the frame's ob_type is not PyFrame_Type
  kBadOwner,         // 3.11+: owner outside the enum
  kBadCodePointer,   // misaligned or non-canonical code object pointer
  kBadCodeType,      // the code object's ob_type is not PyCode_Type
  kBadInstruction,   // the instruction lies outside the code object
  kCycle,            // the chain loops
  kUnreadable,       // a checked reader could not read an address
};

const char* WalkFaultName(WalkFault f);

struct WalkResult {
  int depth = 0;
  uint64_t top_frame = 0;  // the address of the frame out[0] came from (0: none)
  WalkStatus status = WalkStatus::kComplete;
  WalkFault fault = WalkFault::kNone;
};

// Plain loads, for the calling thread's own live frames (see
// python_stacks.h for why they cannot fault with a verified layout).
struct DirectLoads {
  template <typename T>
  bool Load(uint64_t addr, T* out) const {
    std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), sizeof(T));
    return true;
  }
};

// Loads through a MemoryReader (cannot fault; may fail).
struct CheckedLoads {
  MemoryReader* reader;
  template <typename T>
  bool Load(uint64_t addr, T* out) const {
    return reader->Read(addr, out, sizeof(T));
  }
};

inline bool PlausiblePointer(uint64_t p) {
  return p != 0 && (p & 7) == 0 && (p >> 47) == 0;
}

// Walks the frame chain of `tstate` (a PyThreadState*), writing at most
// `max_frames` FrameRefs, innermost first.
template <typename Loads>
WalkResult WalkPythonFrames(const PyWalkTarget& target, const Loads& loads, uint64_t tstate,
                            FrameRef* out, int max_frames) {
  const PythonLayout& l = *target.layout;
  WalkResult r;
  auto fail = [&r](WalkFault f) {
    r.status = WalkStatus::kInconsistent;
    r.fault = f;
    return r;
  };
  if (!PlausiblePointer(tstate)) return fail(WalkFault::kBadThreadState);
  uint64_t frame = 0;
  if (l.tstate_cframe >= 0) {
    uint64_t cframe = 0;
    if (!loads.Load(tstate + l.tstate_cframe, &cframe)) return fail(WalkFault::kUnreadable);
    if (!PlausiblePointer(cframe)) return fail(WalkFault::kBadThreadState);
    if (!loads.Load(cframe + l.tstate_frame, &frame)) return fail(WalkFault::kUnreadable);
  } else if (!loads.Load(tstate + l.tstate_frame, &frame)) {
    return fail(WalkFault::kUnreadable);
  }

  const bool interpreter_frames = l.frame_owner >= 0;  // 3.11+
  // Skipped frames count as steps too: the walk is bounded either way.
  const int max_steps = 2 * max_frames + 16;
  int steps = 0;
  // Brent: `mark` is re-anchored at steps 1, 2, 4, 8, ...; a frame equal to
  // the mark means the chain loops.
  uint64_t mark = 0;
  int since_mark = 0;
  int power = 1;
  while (frame != 0) {
    if (r.depth >= max_frames || steps >= max_steps) {
      r.status = WalkStatus::kTruncated;
      return r;
    }
    ++steps;
    if (!PlausiblePointer(frame)) return fail(WalkFault::kBadFramePointer);
    if (frame == mark) return fail(WalkFault::kCycle);
    if (++since_mark == power) {
      mark = frame;
      power *= 2;
      since_mark = 0;
    }

    uint64_t code = 0;
    uint64_t previous = 0;
    if (!loads.Load(frame + l.frame_code, &code) ||
        !loads.Load(frame + l.frame_previous, &previous)) {
      return fail(WalkFault::kUnreadable);
    }
    int8_t owner = 0;
    if (interpreter_frames) {
      if (!loads.Load(frame + l.frame_owner, &owner)) return fail(WalkFault::kUnreadable);
      if (owner < 0 || owner > l.owner_max) return fail(WalkFault::kBadOwner);
      if (owner == l.owner_cstack) {  // 3.12+: an entry shim, not Python code
        frame = previous;
        continue;
      }
    } else {
      uint64_t frame_type = 0;
      if (!loads.Load(frame + l.ob_type, &frame_type)) return fail(WalkFault::kUnreadable);
      if (frame_type != target.frame_type) return fail(WalkFault::kBadFrameType);
    }

    if (!PlausiblePointer(code)) return fail(WalkFault::kBadCodePointer);
    uint64_t code_type = 0;
    if (!loads.Load(code + l.ob_type, &code_type)) return fail(WalkFault::kUnreadable);
    if (code_type != target.code_type) return fail(WalkFault::kBadCodeType);

    int32_t offset = 0;
    bool skip = false;
    if (interpreter_frames) {
      uint64_t instr = 0;
      int64_t units = 0;  // Py_SIZE(code): bytecode length in 2-byte code units
      int32_t first_traceable = 0;
      if (!loads.Load(frame + l.frame_instr, &instr) || !loads.Load(code + l.ob_size, &units) ||
          !loads.Load(code + l.code_firsttraceable, &first_traceable)) {
        return fail(WalkFault::kUnreadable);
      }
      const uint64_t start = code + static_cast<uint64_t>(l.code_adaptive);
      const int64_t delta = static_cast<int64_t>(instr - start);
      // A new frame's prev_instr is one unit before the start (3.11/3.12).
      if ((instr & 1) != 0 || units < 0 || units > (int64_t{1} << 28) || delta < -2 ||
          delta > 2 * units) {
        return fail(WalkFault::kBadInstruction);
      }
      offset = static_cast<int32_t>(delta);
      skip = owner != l.owner_generator && delta < 2 * static_cast<int64_t>(first_traceable);
    } else {
      int32_t lasti = 0;
      uint64_t co_code = 0;  // the bytecode, a bytes object the code object owns
      int64_t bytes = 0;
      if (!loads.Load(frame + l.frame_instr, &lasti) || !loads.Load(code + l.code_code, &co_code)) {
        return fail(WalkFault::kUnreadable);
      }
      if (!PlausiblePointer(co_code)) return fail(WalkFault::kBadInstruction);
      if (!loads.Load(co_code + l.ob_size, &bytes)) return fail(WalkFault::kUnreadable);
      offset = l.instr_kind == InstrKind::kLastiUnits ? lasti * 2 : lasti;
      if (lasti < -1 || bytes < 0 || offset >= bytes) return fail(WalkFault::kBadInstruction);
    }
    if (!skip) {
      int32_t first_line = 0;
      if (!loads.Load(code + l.code_firstlineno, &first_line)) return fail(WalkFault::kUnreadable);
      if (r.depth == 0) r.top_frame = frame;
      out[r.depth++] = FrameRef{code, offset, first_line};
    }
    frame = previous;
  }
  return r;
}

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_PYTHON_WALKER_H_
