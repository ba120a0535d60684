// tools/analyses/ranks.h: the per-rank comparison of a multi-process job
// (one row per GPU, with its rank from the process header; -1 when the
// launcher did not say) and the straggler ranking.
//
// Time base: each process's CUPTI times are mapped to CLOCK_REALTIME with its
// own clock snapshots (reader::ClockAlign: interpolated between snapshots), so
// processes of different nodes line up to within the nodes' clock agreement.
// The residual is measured, not assumed: a collective ends on all ranks at
// nearly the same moment (the last arrival releases everyone), so the spread
// of matched collectives' end times (`end_spread_ns`, median over the
// all-reduce, all-gather, reduce-scatter and all-to-all collectives: a
// broadcast's root may leave early) bounds the alignment error; lateness
// below twice that is not trusted. Measured on one H200 node (2 GPUs, DDP,
// NCCL 2.28): median 22-27 us, P95 ~40 us, the sign changing from run to
// run (each process maps its GPU's timestamps to host time on its own).
//
// Collectives are matched across GPUs by (kind, sequence number of that kind
// on the GPU): the n-th all-reduce of every rank is the same collective when
// the ranks share one communicator (data parallelism); a collective missing
// on any GPU is left out. Per GPU and matched collective:
//   late  = its start - the median start of the other GPUs (aligned clocks);
//   last  = it started last;
//   wait  = its duration - the shortest duration of that collective on any
//           GPU: TB's "synchronizing" time, immune to clock skew.
// The straggler is the GPU with the largest mean lateness when it starts
// last in >= kStragglerLastShare of the matched collectives and its mean
// lateness is >= kStragglerMinLateNs, >= kStragglerStepShare of its median
// step time (when steps are known) and >= twice the end spread (rules.cc,
// rule "straggler-rank"). Records are sampled on long runs (every
// model::CollectiveRecord stride-th collective); wait and cost are scaled by
// the stride.
//
//   RankReport ranks = ComputeRanks(model, summary);  // summary.gpus filled
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_RANKS_H_
#define GPSCOPE_TOOLS_ANALYSES_RANKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/model/collectives.h"
#include "tools/model/trace_model.h"

namespace gpscope::analyses {

struct SummaryReport;

inline constexpr uint64_t kStragglerMinCollectives = 5;
inline constexpr double kStragglerLastShare = 0.5;
inline constexpr double kStragglerMinLateNs = 500'000;  // ours: above NTP-level clock error
inline constexpr double kStragglerStepShare = 0.05;     // ours: 5% of a step
inline constexpr size_t kLateCollectivesKept = 5;         // per GPU: WHERE links of a finding

// A matched collective that a GPU started late: where a straggler shows on
// the timeline (the other ranks sit in the collective, this one is not there
// yet). Times are CUPTI ns of this GPU's process.
struct LateCollective {
  uint64_t others_start_ns = 0;  // the earliest other GPU's start, on this GPU's clock
  uint64_t start_ns = 0;         // this GPU's start and end
  uint64_t end_ns = 0;
  double late_ns = 0;  // start - the median start of the other GPUs (as RankRow::mean_late_ns)
  model::CollectiveKind kind = model::CollectiveKind::kNone;
  uint32_t seq = 0;  // the seq-th collective of its kind on the GPU
};

struct RankRow {
  size_t gpu_index = 0;  // into SummaryReport::gpus / TraceModel::gpus
  int32_t rank = -1;
  uint32_t pid = 0;
  std::string hostname;
  uint32_t device_id = 0;
  std::string label;     // "rank 3 (GPU 0 on node7)" or "pid 42 GPU 0 on node7"
  std::string step_source;
  double step_p50_ns = 0, step_p95_ns = 0;  // 0 without steps
  double window_ns = 0;                     // the GPU's steady window
  double compute_busy_ns = 0;               // non-communication kernels, window
  double comm_busy_ns = 0;                  // communication kernels, window
  double busy_share = 0;
  double idle_ns = 0;                       // window - busy
  double comm_overlap = -1;                 // -1 without communication
  // Matched collectives (0 when fewer than two GPUs communicate).
  uint64_t collectives = 0;
  double wait_ns = 0;       // estimated over the whole run (stride-scaled)
  double mean_late_ns = 0;
  double last_share = 0;
  std::vector<LateCollective> latest;  // its kLateCollectivesKept latest starts in its
                                       // steady window, latest first
  // Clocks of the GPU's process.
  int64_t clock_offset_ns = 0;   // realtime - CUPTI at the first snapshot
  uint64_t clock_drift_ns = 0;
  uint64_t clock_snapshots = 0;
};

struct RankReport {
  std::vector<RankRow> rows;       // by rank (unknown last), then pid, device
  uint64_t matched = 0;            // collectives matched across every communicating GPU
  uint32_t stride = 1;             // sampling of the matched collectives
  double end_spread_ns = 0;        // median over matched collectives of max - min end
  double end_spread_p95_ns = 0;    // its 95th percentile and maximum: the alignment
  double end_spread_max_ns = 0;    // tolerance a multi-rank timeline can claim
  int straggler = -1;              // index into rows, or -1
  std::vector<size_t> late_order;  // the straggler ranking: rows with matched collectives,
                                   // latest mean start first
  double straggler_excess_compute = 0;  // its compute / median of the others' - 1
};

RankReport ComputeRanks(const model::TraceModel& model, const SummaryReport& summary);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_RANKS_H_
