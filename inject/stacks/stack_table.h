// inject/stacks/stack_table.h: the interned frame and stack tables the trace
// carries, built by the writer thread from the app threads' StackCaptures.
//
//   SelfMemoryReader mem;
//   PythonResolver py(*info.layout, info.types, &mem);   // when Python is on
//   NativeSymbolizer native;
//   ProcessFrameResolver resolver(&py, &native);
//   StackTable table(&resolver);
//   uint32_t stack_id = table.Intern(capture);            // per drained capture
//   table.TakeNew(&frames, &stacks);                      // per batch: rows to write
//
// Two levels of interning:
//   1. raw: the captured (kind, flags, FrameRef[]) array -> stack id, an
//      open-addressing table of 64-bit hashes whose entries keep the raw
//      frames (compared in full: no collision can merge two stacks). A
//      repeated stack (the common case: the same training step) costs one
//      hash and one compare, and resolves nothing.
//   2. resolved: a new raw stack is resolved frame by frame (Python: file,
//      function, line; native: module, build id, offset, symbol), each
//      frame interned by its content (frame id), and the list of frame ids
//      interned again (stack id), so raw stacks that differ only in
//      instruction offsets on the same lines share one stack id.
// Ids are dense from 1 per process, like InternedString; 0 means "no stack"
// (empty capture, or a table at its limit: counted in dropped()).
//
// Trace schema (proto/gpscope/trace.proto, docs/stacks.md): EventBatch's
// repeated StackFrame stack_frames = 21, repeated Stack stacks = 22 and
// StackSamples stack_samples = 23; TakeNew() returns exactly the rows of the
// first two.
//
// Thread model: single-threaded (the collector's writer thread). Allocates.
#ifndef GPSCOPE_INJECT_STACKS_STACK_TABLE_H_
#define GPSCOPE_INJECT_STACKS_STACK_TABLE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "inject/stacks/capture_record.h"
#include "proto/enums.h"

namespace gpscope::inject::stacks {

class PythonResolver;
class NativeSymbolizer;

enum class FrameKind : uint8_t {  // written as the trace's FrameKind
  kUnknown = wire::FRAME_UNKNOWN,
  kPython = wire::FRAME_PYTHON,
  kNative = wire::FRAME_NATIVE,
};

// One frame, resolved. Python: file = co_filename, function = co_name,
// qualname = co_qualname (3.11+), line (0 when the instruction has none).
// Native: file = module path, function = dladdr symbol (mangled, "" when
// not exported), build_id, module_offset (return address - 1 - load bias).
// A frame that could not be resolved keeps its kind with empty names
// (native: module_offset holds the absolute address).
struct ResolvedFrame {
  FrameKind kind = FrameKind::kUnknown;
  std::string file;
  std::string function;
  std::string qualname;
  int32_t line = 0;
  std::string build_id;
  uint64_t module_offset = 0;
  bool resolved = false;
};

// Turns one captured frame into a ResolvedFrame (tests substitute a fake).
class FrameResolver {
 public:
  virtual ~FrameResolver() = default;
  virtual ResolvedFrame Resolve(StackKind kind, const FrameRef& ref) = 0;
};

// The real one: Python frames through a PythonResolver (nullptr when
// Python stacks are off), native frames through a NativeSymbolizer.
class ProcessFrameResolver : public FrameResolver {
 public:
  ProcessFrameResolver(PythonResolver* python, NativeSymbolizer* native)
      : python_(python), native_(native) {}
  ResolvedFrame Resolve(StackKind kind, const FrameRef& ref) override;

 private:
  PythonResolver* python_;
  NativeSymbolizer* native_;
};

// A row of the trace's frame table.
struct StackFrameEntry {
  uint32_t id = 0;
  ResolvedFrame frame;
};

// A row of the trace's stack table: frame ids innermost first.
struct StackEntry {
  uint32_t id = 0;
  std::vector<uint32_t> frame_ids;
  bool truncated = false;
};

class StackTable {
 public:
  struct Limits {
    size_t max_stacks = 1 << 16;   // distinct resolved stacks
    size_t max_raw = 1 << 18;      // distinct raw stacks remembered
    size_t max_frames = 1 << 18;   // distinct frames
    // Native stacks lose their innermost frames while those lie in a
    // module whose file name (after the last '/') starts with one of
    // these: the collector's own callback and CUPTI's dispatch, e.g.
    // {"libgpscope_inject", "libcupti"}. Never all frames: one is kept.
    std::vector<std::string> drop_leading_native_modules;
  };

  explicit StackTable(FrameResolver* resolver) : StackTable(resolver, Limits()) {}
  StackTable(FrameResolver* resolver, const Limits& limits);

  // The stack id of `c`; 0 for an empty capture or when a limit is reached.
  uint32_t Intern(const StackCapture& c);

  // Appends the frames and stacks added since the last call (frames first
  // in id order; every frame a new stack uses is in this or an earlier call).
  void TakeNew(std::vector<StackFrameEntry>* frames, std::vector<StackEntry>* stacks);
  // After a lost chunk: the next TakeNew returns every entry again.
  void ResendAll();

  size_t stacks() const { return stacks_.size(); }
  size_t frames() const { return frames_.size(); }
  size_t raw_stacks() const { return raw_.size(); }
  uint64_t dropped() const { return dropped_; }                  // captures given id 0 by a limit
  uint64_t unresolved_frames() const { return unresolved_; }     // frames that did not resolve
  // Approximate heap bytes held (for the collector's memory accounting).
  size_t bytes() const;

 private:
  struct Raw {
    uint64_t hash;
    uint32_t first;  // index into arena_
    uint8_t depth;
    StackKind kind;
    uint8_t flags;
    uint32_t stack_id;
  };

  uint32_t Resolve(const StackCapture& c);
  uint32_t InternFrame(const ResolvedFrame& f);
  bool Dropped(const ResolvedFrame& f) const;
  bool SameRaw(const Raw& r, const StackCapture& c) const;
  void InsertSlot(uint32_t raw_index);
  void Grow();

  FrameResolver* resolver_;
  Limits limits_;
  std::vector<Raw> raw_;
  std::vector<FrameRef> arena_;
  std::vector<uint32_t> slots_;  // raw index + 1, 0 = empty; size a power of two
  std::unordered_map<std::string, uint32_t> frame_ids_;
  std::unordered_map<std::string, uint32_t> stack_ids_;
  std::vector<StackFrameEntry> frames_;  // by id - 1
  std::vector<StackEntry> stacks_;       // by id - 1
  size_t frames_sent_ = 0;
  size_t stacks_sent_ = 0;
  uint64_t dropped_ = 0;
  uint64_t unresolved_ = 0;
};

// The raw-stack hash (exposed for tests).
uint64_t HashCapture(const StackCapture& c);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_STACK_TABLE_H_
