// tools/model/stack_model.h: what the model knows about call stacks (issue
// 20; trace.proto StackFrame / Stack / StackSamples; docs/stacks.md): per
// process, the stacks that cost something, their frames resolved to text,
// and what each cost. Filled by StackBuilder (stack_builder.h) during the
// model's one pass; read by analyses/sites.h.
//
// Attribution (every number is whole-run, per process):
//   sync_calls / sync_blocked_ns: synchronizing and implicitly
//     synchronizing API calls (model_builder's kApiSync, host_calls.h) whose
//     stack was taken, and the host time blocked in them; a call of a
//     thread without Python carries the main Python thread's stack
//     (main_thread_syncs counts those);
//   gpu_sync_idle_ns: device idle while the host was blocked in this call
//     (the sync and implicit parts of a gap, GapSplit, that began in it, or
//     else overlapped it most); implicit_* / gpu_implicit_idle_ns: the part
//     of those from implicitly synchronizing calls;
//   gpu_host_after_ns: the host-wait part of a gap that began in this call:
//     the host's own code after the sync returned, up to the next launch;
//     or, when no stacked sync began the gap and it began as this call's
//     copy to the host ended (a read-back nothing synchronized with: JAX's
//     float(), event polling), the host's code after that read-back;
//   gpu_host_before_ns: the host-wait part of a gap that did not begin in a
//     (stacked) sync, given to the launch that ended it: the host code that
//     ran before this launch kept the GPU waiting;
//   samples / sampled_kernel_ns / sampled_kernel_ns2: launches sampled in
//     time (STACK_SAMPLED) at this stack, the GPU time of their kernels and
//     its square (for the ratio estimate's error, analyses/sites.h).
// A gap lies between the last CUDA call of the launching thread before it
// (`from`) and the launch that ended it (`to`): StackEdge keeps both stacks,
// the GPU idle between them and the host time between the two calls.
//
// Thread model: plain data.
#ifndef GPSCOPE_TOOLS_MODEL_STACK_MODEL_H_
#define GPSCOPE_TOOLS_MODEL_STACK_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gpscope::model {

struct StackFrameText {
  uint32_t id = 0;
  int kind = 0;              // proto::FrameKind
  bool defined = false;      // a StackFrame record with this id was read
  std::string file;          // Python co_filename; native: the module's path
  std::string function;      // Python co_name; native: the symbol as recorded (mangled)
  std::string qualname;      // Python 3.11+ co_qualname
  std::string build_id;      // native module's GNU build id
  uint32_t line = 0;         // Python source line; 0 unknown
  uint64_t module_offset = 0;
  // Native frames symbolized offline (symbolizer.h), from the module's file
  // on the analysing machine: its ELF symbol (mangled) and DWARF line.
  std::string symbol;
  std::string source_file;
  uint32_t source_line = 0;  // 0 unknown
};

// A module whose frames could not be symbolized although a file was there
// (symbolizer.h): its build id differs, it is unreadable, its line table
// is compressed.
struct SymbolNote {
  std::string module;  // as recorded
  std::string text;    // "prog: the file's build id ab12.. differs from the trace's cd34..; ..."
};

struct StackWeights {
  uint64_t sync_calls = 0;      // explicit and implicit
  uint64_t sync_blocked_ns = 0;
  uint64_t implicit_calls = 0;  // of those, implicitly synchronizing (host_calls.h)
  uint64_t implicit_blocked_ns = 0;
  // Of sync_calls, calls made by threads without Python (XLA's, PyTorch's
  // autograd threads) that carry the main Python thread's stack
  // (STACK_SYNC_MAIN_THREAD): the main thread was here while they waited.
  uint64_t main_thread_syncs = 0;
  uint64_t gpu_sync_idle_ns = 0;
  uint64_t gpu_implicit_idle_ns = 0;  // of gpu_sync_idle_ns, behind an implicit call
  uint64_t gpu_host_after_ns = 0;
  uint64_t gpu_host_before_ns = 0;
  uint64_t gaps = 0;          // gaps given to this stack (any part)
  uint64_t readback_gaps = 0;  // of them, host code after this call's copy to the host ended
  uint64_t launches = 0;      // launch calls seen with this stack (any trigger)
  uint64_t samples = 0;       // STACK_SAMPLED launches
  double sampled_kernel_ns = 0;
  double sampled_kernel_ns2 = 0;
  uint64_t gpu_lost_ns() const { return gpu_sync_idle_ns + gpu_host_after_ns + gpu_host_before_ns; }
};

struct WeightedStack {
  uint32_t id = 0;
  std::vector<uint32_t> frames;  // indexes into StackModel::frames, innermost first
  bool truncated = false;
  bool defined = false;          // a Stack record with this id was read
  StackWeights w;
};

struct StackEdge {
  uint32_t from_stack = 0;  // 0: the previous call had no stack, or there was none
  uint32_t to_stack = 0;    // 0: the launch had no stack
  uint64_t gaps = 0;
  uint64_t gpu_host_ns = 0;  // host-wait GPU idle between them
  uint64_t host_ns = 0;      // host time from the end of `from`'s call to the start of `to`'s
};

struct StackModel {
  bool present = false;  // the process sent stack tables or samples
  std::vector<StackFrameText> frames;   // the frames of `stacks`, each once
  std::vector<WeightedStack> stacks;    // stacks that cost something, by id
  std::vector<StackEdge> edges;         // by GPU idle, largest first
  // Sampled launches of the whole process: count, GPU time and its square.
  uint64_t samples = 0;
  double sampled_kernel_ns = 0;
  double sampled_kernel_ns2 = 0;
  // What could not be attributed, and why (the numbers are still counted
  // elsewhere in the model).
  uint64_t stack_samples = 0;      // rows read
  uint64_t joined = 0;             // rows joined to their API call
  uint64_t unjoined = 0;           // rows whose API call never came (or on another thread)
  uint64_t no_stack = 0;           // rows with stack id 0 (the collector could not keep it)
  uint64_t unknown_stack_ids = 0;  // rows naming a stack never defined
  uint64_t unknown_frame_ids = 0;  // stack entries naming a frame never defined
  uint64_t tables_dropped = 0;     // frames / stacks / rows past the bounds (stack_builder.h)
  uint64_t undecodable = 0;        // StackSamples whose columns did not match
  uint64_t sync_calls_unstacked = 0;   // synchronizing calls without a stack
  uint64_t sync_blocked_unstacked_ns = 0;
  uint64_t gpu_idle_unattributed_ns = 0;  // host/sync/implicit gap time with no stacked call
  uint64_t gpu_idle_attributed_ns = 0;
  uint64_t frames_symbolized = 0;         // native frames given a function or line offline
  std::vector<SymbolNote> symbol_notes;   // one per module
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_STACK_MODEL_H_
