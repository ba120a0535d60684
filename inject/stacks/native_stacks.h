// inject/stacks/native_stacks.h: native (C/C++) stacks of the calling thread,
// for threads without Python (CUDA C++ programs, XLA's thread pools), and
// their symbolization off the hot path.
//
//   // Hot path (the CUPTI API-enter callback, on the application thread):
//   NativeCaptureResult r = CaptureNativeStack(c->frames, kMaxStackDepth, /*skip=*/1);
//   // Writer thread, later:
//   NativeSymbolizer sym;
//   NativeFrameInfo f = sym.Symbolize(c->frames[i].addr);
//   // f.module->path, f.module->build_id, f.module_offset, f.function
//
// Three capture methods, measured in bench/stacks_bench.cc (docs/stacks.md):
//   CaptureNativeStack: the fast DWARF unwinder (fast_unwind.h): .eh_frame
//     call-frame information, each return address's unwind rule decoded
//     once and cached lock-free; it falls back to libgcc's _Unwind_Backtrace
//     for a stack whose rules it does not handle or when it cannot bound the
//     thread's stack. Exact like the unwinder exceptions use, whether or not
//     the code keeps frame pointers.
//   CaptureNativeStackUnwind: libgcc's _Unwind_Backtrace alone (libgcc_eh
//     when the collector links -static-libgcc). About 0.25 us per frame.
//   CaptureNativeStackFramePointers: follows saved frame pointers, a few ns
//     per frame, but only correct through code built with
//     -fno-omit-frame-pointer (most distribution and pip binaries,
//     libcuda/libcudart among them, are not): a frame without one ends the
//     chain or skips frames. Kept for comparison and for programs known to
//     keep frame pointers.
//
// Hot-path contract (all three): no heap allocation and no syscall in the
// common path. Locks: _Unwind_Backtrace (and the fast unwinder's first
// sight of a return address) find .eh_frame through glibc's
// _dl_find_object, which is lock-free (glibc >= 2.35: the H200's Ubuntu
// 24.04 has 2.39, this Debian 12 2.36); with an older glibc libgcc uses
// dl_iterate_phdr, which takes the loader's recursive lock. libgcc also
// takes its own object_mutex and may allocate on first use when some code
// registered frames with __register_frame (JIT compilers such as LLVM's
// ORC in XLA do). None of these locks is held across a call into CUDA.
// The frame-pointer walk reads only inside the given stack bounds.
//
// Symbolization (NativeSymbolizer) is for the writer thread only: it takes
// the loader lock (dl_iterate_phdr, dladdr) and allocates.
#ifndef GPSCOPE_INJECT_STACKS_NATIVE_STACKS_H_
#define GPSCOPE_INJECT_STACKS_NATIVE_STACKS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "inject/stacks/capture_record.h"

namespace gpscope::inject::stacks {

struct NativeCaptureResult {
  int depth = 0;
  bool truncated = false;  // more frames than max_frames
  bool slow_path = false;  // CaptureNativeStack fell back to _Unwind_Backtrace
};

// The calling thread's stack, [lo, hi). Cold: pthread_getattr_np, which
// allocates and (for the main thread) reads /proc/self/maps; call it once
// per thread and keep the result with the thread's other state.
struct StackBounds {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool Contains(uint64_t a, uint64_t n) const { return a >= lo && a <= hi && hi - a >= n; }
};
bool CurrentThreadStackBounds(StackBounds* out);

// Return addresses of the calling thread, innermost first, into
// out[i].addr (offset and check are 0). `skip` frames above the caller of
// the capture function are left out (the collector skips its own callback
// frames). With bounds of the calling thread, the fast unwinder runs; with
// empty bounds (lo == hi == 0) this is CaptureNativeStackUnwind.
NativeCaptureResult CaptureNativeStack(FrameRef* out, int max_frames, int skip,
                                       const StackBounds& bounds);
NativeCaptureResult CaptureNativeStackUnwind(FrameRef* out, int max_frames, int skip);
NativeCaptureResult CaptureNativeStackFramePointers(FrameRef* out, int max_frames, int skip,
                                                    const StackBounds& bounds);

// A loaded ELF object.
struct NativeModule {
  std::string path;      // the file (the main program's from /proc/self/exe)
  std::string build_id;  // NT_GNU_BUILD_ID as lowercase hex, "" when it has none
  uint64_t bias = 0;     // load bias: address = bias + ELF virtual address
  uint64_t start = 0;    // lowest and highest address of its executable segments
  uint64_t end = 0;
};

struct NativeFrameInfo {
  const NativeModule* module = nullptr;  // nullptr: no loaded module holds the address
  // Return address - 1 - bias: an address inside the call instruction, in
  // the module's own ELF addresses (what addr2line -e <module> takes).
  uint64_t module_offset = 0;
  std::string function;  // dladdr's symbol (mangled) when the module exports one, else ""
  uint64_t function_offset = 0;
};

// Snapshot of the loaded modules (dl_iterate_phdr), re-read when an address
// falls outside all of them (a library loaded since).
class ModuleMap {
 public:
  void Refresh();
  // The module whose executable segments hold `addr`, or nullptr.
  const NativeModule* Find(uint64_t addr);
  size_t size() const { return modules_.size(); }

 private:
  const NativeModule* Lookup(uint64_t addr) const;
  std::vector<std::unique_ptr<NativeModule>> modules_;  // sorted by start; stable addresses
  // Modules that were unloaded since (kept so earlier results stay valid).
  std::vector<std::unique_ptr<NativeModule>> retired_;
};

class NativeSymbolizer {
 public:
  // `return_address`: as captured (the frame's return address).
  NativeFrameInfo Symbolize(uint64_t return_address);
  ModuleMap& modules() { return modules_; }

 private:
  ModuleMap modules_;
  std::unordered_map<uint64_t, NativeFrameInfo> cache_;
};

// Reads NT_GNU_BUILD_ID from the notes of the object at `bias` (its
// program headers `phdr`, `phnum`): lowercase hex, "" if none. Exposed for
// tests.
std::string BuildIdFromNotes(const void* phdr, int phnum, uint64_t bias);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_NATIVE_STACKS_H_
