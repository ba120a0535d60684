// tools/model/stack_builder.h: reads a process's call-stack tables (issue 20;
// trace.proto StackFrame, Stack, StackSamples) and attributes host blocked
// time, GPU idle and sampled kernel time to stacks (stack_model.h), inside
// the model's one streaming pass. ModelBuilder owns one per process and
// calls it from four marked places: the tables of each batch, each API
// call, each device gap, each swept kernel.
//
// Joining: a StackSamples row names its API call by (thread id,
// correlation id). The collector drains its capture rings before it
// converts CUPTI's buffers, so a row arrives in the batch of its call or an
// earlier one; rows wait in a table (bounded: kMaxPendingSamples, and
// ModelOptions::api_retention_ns of API time) until their call comes. A
// row whose call never comes is counted (StackModel::unjoined).
//
// Hostile input: every id is checked against what the trace defined
// (reader/limits.h bounds them: kMaxStackFrameId, kMaxStackId,
// kMaxFramesPerStack); a stack naming an undefined frame shows it as
// unknown, a row naming an undefined stack counts as unknown; the frame
// references of all stacks are bounded (kMaxFrameRefs), as are the threads
// tracked, the edges and every waiting table. Nothing here is sized by a
// value from the trace beyond those bounds.
//
// Finish() symbolizes the native frames of the stacks it keeps from the
// modules' files on this machine (symbolizer.h: by path, --symbols, build id).
//
// FrameRecord and FrameText() turn a StackFrame row into the frame's text
// (stack_model.h StackFrameText); the exports' stack tree
// (render/chrome_stacks.h) reads frames with them too, so both see the same
// frame.
//
// Thread model: one thread, like ModelBuilder.
#ifndef GPSCOPE_TOOLS_MODEL_STACK_BUILDER_H_
#define GPSCOPE_TOOLS_MODEL_STACK_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "gpscope/trace.pb.h"
#include "proto/events.h"
#include "tools/model/stack_model.h"
#include "tools/reader/batch_decode.h"

namespace gpscope::model {

// A StackFrame row as read (trace.proto): its strings are ids into the
// process's InternedString table.
struct FrameRecord {
  uint8_t kind = 0;  // proto::FrameKind; 0 for a value outside the enum
  bool defined = false;
  uint32_t line = 0;
  uint32_t file_id = 0, function_id = 0, qualname_id = 0, build_id_id = 0;
  uint64_t module_offset = 0;
};
FrameRecord ReadFrameRecord(const proto::StackFrame& f);

// Frame text kept (file, function, qualname, build id): any one string at
// most kFrameTextBytes; once the caller's running total passes
// kMaxFrameTextBytes each string is cut to kCutFrameTextBytes, so a hostile
// trace of many frames naming one huge string stays small.
inline constexpr size_t kMaxFrameTextBytes = 64u << 20;
inline constexpr size_t kFrameTextBytes = 4096;
inline constexpr size_t kCutFrameTextBytes = 256;

// Frame `id` as text, its strings from `string_of` (id -> text, "" unknown)
// cut at a UTF-8 boundary (an ellipsis marks a cut); `record` null: a frame
// never defined. Adds the bytes kept to *text_bytes.
StackFrameText FrameText(uint32_t id, const FrameRecord* record,
                         absl::FunctionRef<std::string_view(uint32_t)> string_of,
                         size_t* text_bytes);

// What a device gap's stacks are, found when the gap is swept and applied
// when its accounting is final (one-time start-up gaps are not applied).
struct GapStacks {
  uint64_t start_ns = 0;      // the gap's start: its parts are laid out from it
  uint32_t sync_stack = 0;    // the stacked (implicit) sync the gap began in or overlapped
  bool sync_implicit = false;  // that call is implicitly synchronizing
  bool began_in_sync = false;  // the gap began in it (not only overlapped it), or
                               // when its copy to the host ended (readback)
  bool readback = false;
  uint32_t launch_stack = 0;  // the launch that ended the gap
  uint32_t from_stack = 0;    // the last CUDA call before it on the launching thread
  uint64_t host_between_ns = 0;  // host time from that call's end to the launch's start
  bool launch_known = false;     // the ending launch was stacked
};

class StackBuilder {
 public:
  static constexpr size_t kMaxPendingSamples = 1 << 18;
  static constexpr size_t kMaxLaunches = 1 << 18;
  static constexpr size_t kMaxSyncCalls = 1 << 16;
  static constexpr size_t kMaxThreads = 4096;
  static constexpr size_t kMaxEdges = 1 << 16;
  static constexpr size_t kMaxFrameRefs = 1 << 24;  // 64 MiB of frame ids over all stacks

  // kLaunch: a kernel or graph launch (sampled in time); kImplicit: host_calls.h.
  enum class Call { kOther, kLaunch, kSync, kImplicit };

  // `max_charges`: the timed charges kept (stack_model.h, kMaxStackCharges).
  StackBuilder(uint64_t retention_ns, size_t max_charges)
      : retention_ns_(retention_ns), max_charges_(max_charges) {}

  // Whether this process sent any stack table: when not, every hook is a no-op.
  bool active() const { return model_.present; }

  void AddTables(const proto::EventBatch& batch);
  // Whether `batch` holds any of the tables AddTables reads.
  static bool HasTables(const proto::EventBatch& batch) {
    return batch.stack_frames_size() > 0 || batch.stacks_size() > 0 || batch.has_stack_samples();
  }
  // `issues_work`: the call enqueues a GPU op (a launch, copy or memset),
  // which may end a gap: its stack is kept for that gap.
  void OnApiCall(const format::ApiCallEvent& a, Call call, bool issues_work);
  // A device gap [a, b) before the op of `correlation_id`; sync_ns is the
  // sync and implicit parts of its split. `readback_correlation` (non-zero):
  // the gap began when that call's copy to the host ended; when no stacked
  // sync began the gap, that call's stack did (its host code after it).
  GapStacks ResolveGap(uint64_t a, uint64_t b, uint64_t sync_ns, bool after_sync,
                       uint32_t correlation_id, uint32_t readback_correlation = 0);
  void ApplyGap(const GapStacks& s, uint64_t sync_ns, uint64_t host_ns, bool after_sync);
  // A kernel swept (in start order); `watermark_ns`: the latest op start
  // swept, for retiring launches whose kernels are all in.
  void OnKernelSwept(uint32_t correlation_id, uint64_t duration_ns, uint64_t watermark_ns);
  // `strings`: the process's InternedString table, by id.
  StackModel Finish(const std::vector<std::string>& strings);

 private:
  struct Stack {
    uint32_t offset = 0;  // into frame_refs_
    uint16_t count = 0;
    bool defined = false;
    bool truncated = false;
  };
  struct Pending {
    uint64_t timestamp_ns = 0;
    uint32_t thread_id = 0;
    uint32_t stack_id = 0;
    uint32_t trigger = 0;  // proto::StackTrigger
  };
  struct Launch {
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint64_t prev_end_ns = 0;
    uint32_t stack_id = 0;
    uint32_t prev_stack = 0;
    bool sampled = false;
    double kernel_ns = 0;
  };
  struct SyncCall {
    uint64_t start_ns = 0, end_ns = 0;
    uint32_t stack_id = 0;
    bool implicit = false;
  };
  struct LastCall {
    uint64_t start_ns = 0, end_ns = 0;
    uint32_t stack_id = 0;
  };

  bool StackDefined(uint32_t id) const { return id < stacks_.size() && stacks_[id].defined; }
  // Adds `c` to its stack's whole-run weights and keeps it, timed, while
  // under max_charges_.
  void Charge(const StackCharge& c);
  void RetireLaunch(const Launch& l);
  void PruneLaunches(uint64_t before_ns);

  uint64_t retention_ns_;
  size_t max_charges_;
  StackModel model_;
  std::vector<FrameRecord> frames_;  // by id (frame text: the frames of costly stacks)
  std::vector<Stack> stacks_;  // by id
  std::vector<uint32_t> frame_refs_;
  std::vector<reader::StackSampleEvent> rows_;  // reused per batch
  absl::flat_hash_map<uint32_t, Pending> pending_;  // by correlation id
  std::deque<uint32_t> pending_order_;
  absl::flat_hash_map<uint32_t, Launch> launches_;  // stacked launch calls, by correlation id
  std::deque<uint32_t> launch_order_;
  std::deque<SyncCall> syncs_;  // stacked sync calls, by start
  absl::flat_hash_map<uint32_t, LastCall> last_call_;  // by thread
  absl::flat_hash_map<uint32_t, StackWeights> weights_;  // by stack id
  absl::flat_hash_map<uint64_t, StackEdge> edges_;       // by StackEdge::key()
  std::vector<StackCharge> charges_;
  uint64_t latest_api_ns_ = 0;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_STACK_BUILDER_H_
