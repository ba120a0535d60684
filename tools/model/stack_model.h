// tools/model/stack_model.h: what the model knows about call stacks (issue
// 20; trace.proto StackFrame / Stack / StackSamples; docs/stacks.md): per
// process, the stacks that cost something, their frames resolved to text,
// and what each cost. Filled by StackBuilder (stack_builder.h) during the
// model's one pass; read by analyses/sites.h.
//
// Attribution (the weights of WeightedStack are whole-run, per process):
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
// Time-resolved attribution: a finding judges a GPU's steady window, known
// only after the pass (analyses/gpu_report.h), so every contribution to the
// weights that a finding quotes (a stacked sync call; a gap's sync and
// implicit part, its host part after a sync or before a launch) is also
// kept as a StackCharge with its time, and analyses/sites.h SitesInWindow()
// sums those inside [start, end) with StackWeights::Add, the function the
// whole-run weights are summed with. A charge's time is spread over its own
// span, as the model's timeline spreads the same part (model_builder's
// ApplyGap lays a gap out as sync, implicit, then host wait from its start;
// a sync call's blocked time over the call), so a window takes the share of
// it that lies inside, and its counts (calls, gaps) go by the start. Launch
// counts and sampled kernel time are whole-run only: no finding quotes them,
// and at one sample per millisecond per thread they would be most of the
// charges. Charges are bounded (ModelOptions::max_stack_charges, by default
// kMaxStackCharges of 32 B each); past
// the bound they are counted (charges_dropped) and a window's sites fall
// back to the whole-run ones, saying so.
//
// Thread model: plain data.
#ifndef GPSCOPE_TOOLS_MODEL_STACK_MODEL_H_
#define GPSCOPE_TOOLS_MODEL_STACK_MODEL_H_

#include <cstddef>
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

struct StackCharge;

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
  // Adds `ns` of charge `c`'s time (all of it, or the part inside a
  // window) and, when `counted`, its calls and gaps.
  void Add(const StackCharge& c, uint64_t ns, bool counted);
  StackWeights& operator+=(const StackWeights& o);
};

// Timed charges kept per process (32 MiB): about a million stacked syncs
// and attributed gap parts, hours of a training loop that syncs a few times
// per step. Past it they are counted (StackModel::charges_dropped) and
// findings cite whole-run sites.
inline constexpr size_t kMaxStackCharges = size_t{1} << 20;

// One timed contribution to a stack's weights (see the header).
struct StackCharge {
  enum Kind : uint8_t {
    kSyncCall,       // a stacked (implicitly) synchronizing call: its blocked time
    kGapSync,        // a gap's sync and implicit parts, to the sync it began in
    kGapHostAfter,   // a gap's host part, to the sync or read-back it began in
    kGapHostBefore,  // a gap's host part, to the launch that ended it
  };
  // flags
  static constexpr uint8_t kImplicit = 1;    // kSyncCall, kGapSync: an implicit sync
  static constexpr uint8_t kMainThread = 2;  // kSyncCall: STACK_SYNC_MAIN_THREAD
  static constexpr uint8_t kCountsGap = 4;   // kGapHostAfter: the gap is counted here
  static constexpr uint8_t kReadback = 8;    // kGapHostAfter: after a read-back
  static constexpr uint8_t kEdge = 16;       // kGapHost*: an edge (from -> to) of the gap

  uint64_t start_ns = 0;
  uint64_t length_ns = 0;        // the time charged, spread over [start_ns, start_ns + length_ns)
  uint64_t host_between_ns = 0;  // kEdge: host time between the edge's two calls
  uint32_t stack = 0;            // the stack charged
  // kEdge: the edge's other stack (the launch after a kGapHostAfter, the
  // call before a kGapHostBefore); stack ids are <= reader::kMaxStackId.
  uint32_t other : 24;
  uint32_t kind : 3;
  uint32_t flags : 5;
  StackCharge() : other(0), kind(0), flags(0) {}
  uint64_t end_ns() const { return start_ns + length_ns; }
};
static_assert(sizeof(StackCharge) == 32, "a charge is 32 bytes");

inline void StackWeights::Add(const StackCharge& c, uint64_t ns, bool counted) {
  const bool implicit = (c.flags & StackCharge::kImplicit) != 0;
  switch (c.kind) {
    case StackCharge::kSyncCall:
      sync_blocked_ns += ns;
      if (implicit) implicit_blocked_ns += ns;
      if (!counted) return;
      ++sync_calls;
      if (implicit) ++implicit_calls;
      if ((c.flags & StackCharge::kMainThread) != 0) ++main_thread_syncs;
      return;
    case StackCharge::kGapSync:
      gpu_sync_idle_ns += ns;
      if (implicit) gpu_implicit_idle_ns += ns;
      if (counted) ++gaps;
      return;
    case StackCharge::kGapHostAfter:
      gpu_host_after_ns += ns;
      if (counted && (c.flags & StackCharge::kCountsGap) != 0) ++gaps;
      if (counted && (c.flags & StackCharge::kReadback) != 0) ++readback_gaps;
      return;
    case StackCharge::kGapHostBefore:
      gpu_host_before_ns += ns;
      if (counted) ++gaps;
      return;
  }
}

inline StackWeights& StackWeights::operator+=(const StackWeights& o) {
  sync_calls += o.sync_calls;
  sync_blocked_ns += o.sync_blocked_ns;
  implicit_calls += o.implicit_calls;
  implicit_blocked_ns += o.implicit_blocked_ns;
  main_thread_syncs += o.main_thread_syncs;
  gpu_sync_idle_ns += o.gpu_sync_idle_ns;
  gpu_implicit_idle_ns += o.gpu_implicit_idle_ns;
  gpu_host_after_ns += o.gpu_host_after_ns;
  gpu_host_before_ns += o.gpu_host_before_ns;
  gaps += o.gaps;
  readback_gaps += o.readback_gaps;
  launches += o.launches;
  samples += o.samples;
  sampled_kernel_ns += o.sampled_kernel_ns;
  sampled_kernel_ns2 += o.sampled_kernel_ns2;
  return *this;
}

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
  uint64_t key() const { return (uint64_t{from_stack} << 32) | to_stack; }
};
// The order of StackModel::edges: GPU idle, largest first, then the stacks.
inline bool EdgeBefore(const StackEdge& x, const StackEdge& y) {
  if (x.gpu_host_ns != y.gpu_host_ns) return x.gpu_host_ns > y.gpu_host_ns;
  if (x.from_stack != y.from_stack) return x.from_stack < y.from_stack;
  return x.to_stack < y.to_stack;
}

struct StackModel {
  bool present = false;  // the process sent stack tables or samples
  std::vector<StackFrameText> frames;   // the frames of `stacks`, each once
  std::vector<WeightedStack> stacks;    // stacks that cost something, by id
  std::vector<StackEdge> edges;         // by GPU idle, largest first (EdgeBefore)
  // The timed charges (see the header), by start; the longest one's length
  // (a window looks back that far for charges that reach into it).
  std::vector<StackCharge> charges;
  uint64_t longest_charge_ns = 0;
  uint64_t charges_dropped = 0;  // past ModelOptions::max_stack_charges: not kept
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
