// tests/inject/stacks/fake_chain.h: thread states, frames and code objects
// laid out in heap memory as a CPython layout table says, for the frame
// walker's tests (python_walker_test) and the capture's (stack_capture_test).
#ifndef GPSCOPE_TESTS_INJECT_STACKS_FAKE_CHAIN_H_
#define GPSCOPE_TESTS_INJECT_STACKS_FAKE_CHAIN_H_

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "inject/stacks/python_layout.h"
#include "inject/stacks/python_walker.h"

namespace gpscope::inject::stacks {

// Builds a thread state, optional _PyCFrame, frames and code objects laid
// out as `layout` says, in 16-byte-aligned heap blocks.
class FakeChain {
 public:
  explicit FakeChain(const PythonLayout& layout) : l_(layout) {
    tstate_ = Block(256);
    if (l_.tstate_cframe >= 0) {
      cframe_ = Block(64);
      Put<uint64_t>(tstate_, l_.tstate_cframe, Addr(cframe_));
    }
  }

  PyWalkTarget target() const {
    return {&l_, Addr(code_type_), l_.frame_owner < 0 ? Addr(frame_type_) : 0};
  }
  uint64_t tstate() const { return Addr(tstate_); }

  // A code object with `units` code units of bytecode.
  uint8_t* Code(int first_line, int units = 100, int first_traceable = 0) {
    uint8_t* c = Block(l_.code_basicsize + 2 * units + 64);
    Put<uint64_t>(c, l_.ob_type, Addr(code_type_));
    Put<int64_t>(c, l_.ob_size, units);
    Put<int32_t>(c, l_.code_firstlineno, first_line);
    if (l_.code_firsttraceable >= 0) Put<int32_t>(c, l_.code_firsttraceable, first_traceable);
    if (l_.code_code >= 0) {  // 3.9/3.10: the bytecode is a separate bytes object
      uint8_t* bytes = Block(64 + 2 * units);
      Put<int64_t>(bytes, l_.ob_size, 2 * units);
      Put<uint64_t>(c, l_.code_code, Addr(bytes));
    }
    return c;
  }

  // Pushes a new innermost frame running `code` at code unit `unit`.
  uint8_t* Push(uint8_t* code, int unit, int owner = 0) {
    uint8_t* f = Block(256);
    Put<uint64_t>(f, l_.frame_code, Addr(code));
    Put<uint64_t>(f, l_.frame_previous, Addr(top_));
    if (l_.frame_owner >= 0) {
      Put<int8_t>(f, l_.frame_owner, static_cast<int8_t>(owner));
      Put<uint64_t>(f, l_.frame_instr, Addr(code) + l_.code_adaptive + 2 * unit);
    } else {
      Put<uint64_t>(f, l_.ob_type, Addr(frame_type_));
      Put<int32_t>(f, l_.frame_instr, l_.instr_kind == InstrKind::kLastiUnits ? unit : 2 * unit);
    }
    top_ = f;
    SetTop(f);
    return f;
  }

  void SetTop(const void* frame) {
    if (cframe_ != nullptr) {
      Put<uint64_t>(cframe_, l_.tstate_frame, Addr(frame));
    } else {
      Put<uint64_t>(tstate_, l_.tstate_frame, Addr(frame));
    }
  }
  void SetPrevious(uint8_t* frame, uint64_t previous) { Put<uint64_t>(frame, l_.frame_previous, previous); }
  void SetCode(uint8_t* frame, uint64_t code) { Put<uint64_t>(frame, l_.frame_code, code); }
  // Moves `frame` (running `code`) to code unit `unit`.
  void SetUnit(uint8_t* frame, const uint8_t* code, int unit) {
    if (l_.frame_owner >= 0) {
      Put<uint64_t>(frame, l_.frame_instr, Addr(code) + l_.code_adaptive + 2 * unit);
    } else {
      Put<int32_t>(frame, l_.frame_instr, l_.instr_kind == InstrKind::kLastiUnits ? unit : 2 * unit);
    }
  }

  template <typename T>
  static void Put(void* base, int offset, T v) {
    std::memcpy(static_cast<uint8_t*>(base) + offset, &v, sizeof v);
  }
  static uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

  uint8_t* Block(size_t n) {
    blocks_.emplace_back((n + 15) / 16);
    return reinterpret_cast<uint8_t*>(blocks_.back().data());
  }

 private:
  struct alignas(16) Chunk {
    uint8_t b[16];
  };
  PythonLayout l_;
  std::deque<std::vector<Chunk>> blocks_;
  uint8_t* tstate_ = nullptr;
  uint8_t* cframe_ = nullptr;
  uint8_t* top_ = nullptr;
  alignas(16) uint8_t code_type_[64] = {};
  alignas(16) uint8_t frame_type_[64] = {};
};

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_TESTS_INJECT_STACKS_FAKE_CHAIN_H_
