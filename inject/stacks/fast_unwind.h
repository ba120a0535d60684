// inject/stacks/fast_unwind.h: a DWARF call-frame unwinder for x86-64 with a
// lock-free cache of per-address unwind rules, for native stacks inside
// CUDA callbacks within the 1 us budget.
//
// libgcc's _Unwind_Backtrace re-finds and re-interprets each frame's
// .eh_frame entry on every call (about 0.25 us per frame here). Here the
// rule for each return address (how to find the caller's frame: CFA =
// rsp or rbp + offset, where the return address and the saved rbp lie
// relative to it) is computed once from the module's .eh_frame_hdr search
// table and the CIE/FDE call-frame program, then kept in a fixed table
// (16384 slots, insert-only); later stacks through the same code cost a
// hash probe and two loads per frame.
//
// Handled: the CFA defined as rsp or rbp plus an offset; rbp and the return
// address saved at CFA-relative slots (or rbp unchanged / undefined); the
// return address undefined (the outermost frame). Everything else (a CFA
// expression, a CFA in another register as after stack realignment, signal
// trampolines, rules this code does not parse, a module without
// .eh_frame_hdr in the usual sorted-table form) makes FastUnwind return
// ok=false, and the caller uses _Unwind_Backtrace for that stack; the rule
// is cached as "unsupported" so the decision is quick the next time.
//
// Safety: every stack read is checked against the thread's bounds
// (StackBounds), so even a wrong rule cannot read outside the stack.
// .eh_frame data is read only from modules that glibc's _dl_find_object
// (lock-free, glibc >= 2.35, found with dlsym by InitFastUnwind) reports
// as loaded at that address; an address no module holds ends the walk
// without reading anything. A cached rule for an address whose module was
// unloaded and replaced by another at the same address could give a wrong
// (never unsafe) stack.
//
// Thread model: InitFastUnwind once (cold); FastUnwind from any thread
// (no allocation, no lock, no syscall; the first sight of an address runs
// the CFI program, a few microseconds).
#ifndef GPSCOPE_INJECT_STACKS_FAST_UNWIND_H_
#define GPSCOPE_INJECT_STACKS_FAST_UNWIND_H_

#include <cstdint>
#include <string>

#include "inject/stacks/capture_record.h"

namespace gpscope::inject::stacks {

struct StackBounds;

// Cold. False (with *why) where the fast unwinder cannot run: not x86-64,
// or no _dl_find_object (glibc < 2.35). Then FastUnwind always returns
// ok=false.
bool InitFastUnwind(std::string* why);

struct FastUnwindResult {
  bool ok = false;  // false: use another unwinder for this stack
  int depth = 0;
  bool truncated = false;
};

// Return addresses innermost first; `skip` of them are dropped, the first
// being the one into FastUnwind's caller.
FastUnwindResult FastUnwind(FrameRef* out, int max_frames, int skip, const StackBounds& bounds);

// One decoded rule (exposed for tests).
struct UnwindRule {
  enum Kind : uint8_t { kUnknown = 0, kFrame = 1, kOutermost = 2, kUnsupported = 3 };
  Kind kind = kUnknown;
  bool cfa_from_rbp = false;  // CFA = (rbp or rsp) + cfa_offset
  int32_t cfa_offset = 0;
  enum RbpKind : uint8_t { kRbpSame = 0, kRbpSaved = 1, kRbpUndefined = 2 };
  RbpKind rbp = kRbpSame;
  int16_t rbp_offset = 0;  // kRbpSaved: rbp is at CFA + rbp_offset
  int16_t ra_offset = 0;   // the return address is at CFA + ra_offset
};

// The rule at `pc` (an instruction address: pass return address - 1), from
// .eh_frame, not cached.
UnwindRule ComputeUnwindRule(uint64_t pc);

struct FastUnwindStats {
  uint64_t rules_cached;   // slots in use
  uint64_t cache_full;     // rules computed but not stored (table full)
};
FastUnwindStats GetFastUnwindStats();

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_FAST_UNWIND_H_
