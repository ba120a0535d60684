// tools/analyses/stats.h: the summary tables users know from `nsys stats`
// (issue 23), computed exactly (every duration kept, sorted once):
//
//   nvtx_sum           NVTX ranges by (name, domain): count, total, mean,
//                      median, P95, min, max, stddev
//   nvtx_gpu_proj      NVTX ranges projected onto the GPU (nsys
//                      nvtx_gpu_proj_sum): the GPU ops (kernels, copies,
//                      memsets) whose launching CUDA API call began inside
//                      the range on the range's thread; a range's projection
//                      runs from the first such op's start to the last one's
//                      end. Ranges that launched nothing are not projected.
//   cuda_api_sum       CUDA API calls by name
//   cuda_gpu_kern_sum  kernels by name
//   cuda_gpu_mem_sum   copies by direction and memsets (time and bytes)
//
//   StatsCollector stats;                              // an EventSink
//   reader::ReadEvents(paths, {&stats});
//   StatsReport r = stats.Finish({.names = NameStyle::kBase});
//
// Percentiles: the median is the middle value (the mean of the two middle
// ones for an even count); P95 is the nearest-rank value (the
// ceil(0.95 n)-th smallest). stddev is the sample standard deviation (n - 1;
// 0 for one value), as nsys prints it. Rows are by total time, largest
// first, then by name. All processes of the pass are summed, like nsys's
// one report per run.
//
// Memory: every duration (8 bytes per range, call and GPU op: an exact
// median needs them all) and, for the projection, 24 bytes per range, 16
// per API call and a hash-map entry per correlation id of GPU work.
//
// Thread model: the reader's one thread, then Finish().
#ifndef GPSCOPE_TOOLS_ANALYSES_STATS_H_
#define GPSCOPE_TOOLS_ANALYSES_STATS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tools/reader/event_sink.h"

namespace gpscope::analyses {

// --names: how a kernel name is shown. kFull: demangled in full; kShort:
// CompactKernelName (no return type, parameters or namespaces); kBase:
// KernelBaseName (the function's own name, no templates or arguments).
enum class NameStyle { kFull, kShort, kBase };
std::string StyledName(std::string_view name, NameStyle style);

struct StatsOptions {
  NameStyle names = NameStyle::kFull;
};

// Durations of one group, in ns.
struct DurationSummary {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  double mean_ns = 0;
  double median_ns = 0;
  uint64_t p95_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  double stddev_ns = 0;
};
// Sorts `durations` and describes them (all zero when empty).
DurationSummary Summarize(std::vector<uint64_t>& durations);

struct StatsRow {
  std::string name;    // NVTX range text, API name, kernel name (styled), copy direction
  std::string domain;  // NVTX domain ("" the default); copies: "memcpy" or "memset"
  double share = 0;    // of the table's total time
  DurationSummary time;
  uint64_t bytes = 0;  // cuda_gpu_mem_sum only
};

struct ProjectionRow {
  std::string name;
  std::string domain;
  uint64_t ranges = 0;          // range instances that launched GPU work
  uint64_t total_range_ns = 0;  // CPU durations of those ranges
  DurationSummary projected;    // projected GPU durations
  uint64_t gpu_ops = 0;
  double mean_gpu_ops = 0;
};

struct StatsReport {
  std::vector<StatsRow> nvtx_sum;
  std::vector<ProjectionRow> nvtx_gpu_proj;
  std::vector<StatsRow> cuda_api_sum;
  std::vector<StatsRow> cuda_gpu_kern_sum;
  std::vector<StatsRow> cuda_gpu_mem_sum;
  uint64_t processes = 0;
};

class StatsCollector : public reader::EventSink {
 public:
  void OnBatch(const reader::ResolvedBatch& batch) override;
  // Computes the tables; call once, after the pass.
  StatsReport Finish(const StatsOptions& options);

 private:
  struct Range {
    uint64_t start_ns, end_ns;
    uint32_t thread_id;
    uint32_t group;  // index into nvtx_groups_
  };
  struct Call {
    uint64_t start_ns;
    uint32_t thread_id;
    uint32_t correlation_id;
  };
  struct OpSpan {
    uint64_t start_ns = UINT64_MAX, end_ns = 0;
    uint64_t ops = 0;
  };
  struct Process {
    std::vector<Range> ranges;
    std::vector<Call> calls;  // calls that may launch (any call with a correlation id)
    absl::flat_hash_map<uint32_t, OpSpan> ops;  // by correlation id
  };
  struct Group {
    std::string name, domain;
    std::vector<uint64_t> durations;
    uint64_t bytes = 0;
  };
  // The index in `groups` of (name, domain), added on first use.
  uint32_t GroupOf(absl::flat_hash_map<std::string, uint32_t>& index, std::vector<Group>& groups,
                   std::string_view name, std::string_view domain);

  absl::flat_hash_map<uint64_t, Process> processes_;
  absl::flat_hash_map<std::string, uint32_t> nvtx_index_, api_index_, kernel_index_, mem_index_;
  std::vector<Group> nvtx_groups_, api_groups_, kernel_groups_, mem_groups_;
};

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_STATS_H_
