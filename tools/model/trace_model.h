// tools/model/trace_model.h: what gpscope-analyze knows about a set of trace
// files after one streaming pass: per process and per GPU, aggregates in
// bounded memory (histograms, counters over time, the few largest items for
// evidence), never the events themselves. Built by ModelBuilder
// (model_builder.h); read by the pure analyses in tools/analyses/.
//
// A "GPU" here is one device as seen by one process (process_uid + device
// id): several processes sharing a device are several GpuModels, which lets a
// rule notice the sharing. Times are CUPTI ns (CLOCK_REALTIME-based).
//
// Idle time is classified like HTA's idle breakdown, extended by sync wait:
//   host wait   the call that launched the op after the gap started after the
//               gap began: the GPU ran dry waiting for the host;
//   sync wait   as host wait, but the host was blocked in a synchronizing call
//               (cuda*Synchronize, or a sync record) when the GPU ran dry:
//               the gap up to the sync's return plus kSyncRelaunchNs counts
//               as sync wait, the rest as host wait;
//   kernel wait the op was already queued (or its launch is unknown) and the
//               gap is shorter than the idle-gap threshold: back-to-back
//               launch latency (HTA uses 30 us here; we use the threshold);
//   implicit    as host wait, but for the part of the gap in which the host
//               was blocked in an implicitly synchronizing call (allocation,
//               free, a synchronous or pageable copy, a synchronous memset;
//               host_calls.h): the host could not launch then either;
//   other       queued work that still waited >= the threshold (cross-stream
//               or event dependencies, another process on the GPU).
//
// Long gaps (>= ModelOptions::long_gap_ns) after which the GPU runs code it
// has never run before (a kernel name seen for the first time) are one-time
// start-up work (JIT compilation, autotuning, lazy module loading): their
// time goes to kOneTimeGapNs, not to the idle fields, and rules leave it out
// of the steady state.
//
// Thread model: plain data.
#ifndef GPSCOPE_TOOLS_MODEL_TRACE_MODEL_H_
#define GPSCOPE_TOOLS_MODEL_TRACE_MODEL_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <memory>
#include <vector>

#include "gpscope/trace.pb.h"
#include "tools/reader/clock_align.h"
#include "tools/model/collectives.h"
#include "tools/model/host_calls.h"
#include "tools/model/interval_union.h"
#include "tools/model/log_histogram.h"
#include "tools/model/stack_model.h"
#include "tools/model/timeline.h"
#include "tools/reader/process_tables.h"
#include "tools/reader/timebase.h"
#include "tools/reader/trace_index.h"

namespace gpscope::model {

// After a sync returns, the host needs a moment to launch again; the part of
// a gap beyond the sync's return plus this much is the host's own delay.
inline constexpr uint64_t kSyncRelaunchNs = 500'000;
// A sync that starts this soon after the GPU ran dry still caused the gap:
// .item() is a blocking D2H copy followed at once by cudaStreamSynchronize.
inline constexpr uint64_t kSyncSlackNs = 100'000;
// Kernels shorter than this are "tiny" (seed rule: > 10,000 launches with a
// mean below 10 us).
inline constexpr uint64_t kTinyKernelNs = 10'000;
// HTA launch statistics: a CPU launch call above 50 us is an outlier, and a
// kernel counts as "short" only when its launch call is at most this long.
inline constexpr uint64_t kLaunchCallOutlierNs = 50'000;
// HTA: launch delay (launch call end -> GPU start) above 100 us is an outlier.
inline constexpr uint64_t kQueueDelayOutlierNs = 100'000;
// A host-to-device copy larger than this, issued while the GPU was idle, is
// an input copy: evidence that the step waited for data (nsys's synchronous
// memcpy rule ignores H2D copies of 64 KB or less as not worth reporting).
inline constexpr uint64_t kInputCopyMinBytes = 64 * 1024;
// NVML clock event reasons that mean the GPU slowed its clocks for power or
// heat (nvmlClocksEventReason*: SwPowerCap 0x4, HwSlowdown 0x8,
// SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80).
inline constexpr uint64_t kThrottleReasonMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

// Counters a GpuModel keeps over time (Timeline fields). "Gap" fields are
// device-level idle (no kernel, copy or memset running); "StreamIdle" fields
// are HTA's per-stream idle summed over the GPU's streams.
enum GpuField : int {
  kBusyNs = 0,        // union of kernels, copies and memsets
  kKernelBusyNs,      // union of kernels
  kKernelNs,          // sum of kernel durations (at their start)
  kKernelCount,
  kCopyNs,            // sum of memcpy durations
  kCopyCount,
  kMemsetNs,
  kPageableCopyNs,    // copies to or from pageable host memory
  kPageableCopyCount,
  kD2hCopyCount,
  kEstSmNs,           // sum of min(blocks / SMs, 1) x duration (TB's est. SM efficiency)
  kGapHostNs,         // device idle in gaps >= the threshold, by cause
  kGapSyncNs,
  kGapOtherNs,
  kGapCount,          // gaps >= the threshold (at their start)
  kShortGapHostNs,    // device idle in gaps < the threshold, by cause
  kShortGapSyncNs,
  kShortGapKernelNs,
  kLongGapNs,         // device idle in gaps >= ModelOptions::long_gap_ns (nsys: 500 ms)
  kLongGapCount,
  kStreamIdleHostNs,  // HTA idle breakdown, summed over streams
  kStreamIdleKernelNs,
  kStreamIdleSyncNs,
  kStreamIdleOtherNs,
  kSmUtilSum,         // sampled SM utilization (percent), sum and count
  kSmUtilSamples,
  kDramUtilSum,       // sampled DRAM bandwidth utilization (percent)
  kDramUtilSamples,
  kClockReasonSamples,   // nvml.clock_event_reasons samples...
  kThrottledSamples,     // ...with a power or thermal slowdown reason set
  kOtherProcessSmSum,    // nvml.process_sm_util of other processes (percent)
  kOtherProcessSmSamples,
  kCommBusyNs,           // union of communication (NCCL) kernels
  kCommOverlapNs,        // non-communication kernels running while communication runs
  kComputeBusyNs,        // union of non-communication kernels
  kUntracedNs,           // device gaps inside the process's lost intervals (outside capture
                         // windows, yielded to another profiler...): unknown, not idle
  kGapImplicitNs,        // device idle in gaps >= the threshold while the host was blocked in
  kShortGapImplicitNs,   // an implicitly synchronizing call (and in shorter gaps)
  kStreamIdleImplicitNs,
  kImplicitIdleFirst,    // kImplicitIdleFirst + ImplicitGroup: the same idle by group, any gap
  kImplicitIdleLast = kImplicitIdleFirst + kImplicitGroups - 1,
  kGapInputHostNs,       // host wait of gaps >= the threshold during which an input copy
                         // (H2D > kInputCopyMinBytes) was issued: the step waited for data
  kGapAfterSyncHostNs,   // host wait of gaps that began in a sync (the host's own code after
  kShortGapAfterSyncHostNs,  // the sync returned), in gaps >= the threshold and shorter ones
  kOneTimeGapNs,         // long gaps followed by code never run before (see the header)
  kOneTimeGapCount,
  kPauseNs,              // kernel-free intervals >= long_gap_ns (idle or copies only) that are
  kPauseCount,           // not one-time: checkpoints, evaluation, pauses in the steady state
  kLongLaunches,         // matched launches of kernels running >= kLaunchCallOutlierNs...
  kLongLaunchesBlocking,  // ...whose launch call returned only after the kernel ended
  kGpuFieldCount
};

// Counters of GpuModel::windows: one row per window of ModelOptions::window_ns
// (the `windows` table of summary --format json/csv).
enum WindowField : int {
  kWinBusyNs = 0,      // union of kernels, copies and memsets
  kWinKernelCount,     // kernels starting in the window
  kWinKernelNs,        // their summed durations
  kWinH2dBytes,        // copy bytes by direction (at the copy's start)
  kWinD2hBytes,
  kWinD2dBytes,
  kWinOtherCopyBytes,  // P2P, H2H, arrays
  kWinGapNs,           // device idle in gaps >= the idle-gap threshold
  kWinCommBusyNs,      // union of communication kernels
  kWinSmUtilSum,       // sampled gpm.sm_util (percent), sum and count
  kWinSmUtilSamples,
  kWinDramUtilSum,     // gpm.dram_bw_util
  kWinDramUtilSamples,
  kWinTensorUtilSum,   // gpm.tensor_util
  kWinTensorUtilSamples,
  kWinUntracedNs,      // device gaps inside lost intervals (kUntracedNs)
  kWindowFieldCount
};

// Counters of ProcessModel::windows (same width and anchor as the GPUs').
enum ProcessWindowField : int {
  kPWinCpuUserSum = 0,  // host.process_cpu_user_pct samples (percent of one core)
  kPWinCpuUserSamples,
  kPWinCpuSystemSum,    // host.process_cpu_system_pct
  kPWinCpuSystemSamples,
  kProcessWindowFieldCount
};
// Windows beyond this many merge pairwise (the width doubles): 16384 x 100 ms
// is 27 minutes at the default width; memory stays fields x this x 8 bytes.
inline constexpr size_t kMaxWindowRows = 16384;

// Counters a ProcessModel keeps over time (host-side events).
enum ProcessField : int {
  kSyncCalls = 0,     // blocking sync API calls (at their start)
  kSyncBlockedNs,     // time some thread was blocked in one (union over threads, spread by time)
  kSyncRecords,       // CUPTI synchronization records (cudaStreamWaitEvent excluded)
  kCommRangeCount,    // NVTX ranges in NCCL's domain (host side of collectives)
  kCommRangeNs,
  kImplicitCallsFirst,  // + ImplicitGroup: implicitly synchronizing calls (at their start)
  kImplicitCallsLast = kImplicitCallsFirst + kImplicitGroups - 1,
  kImplicitBlockedFirst,  // + ImplicitGroup: host time in them
  kImplicitBlockedLast = kImplicitBlockedFirst + kImplicitGroups - 1,
  kProcessFieldCount
};

enum class GapCause : uint8_t { kHost, kSync, kKernel, kOther };
const char* GapCauseName(GapCause cause);  // "host_wait", "sync_wait", ...

// One device-level idle gap kept as evidence.
struct GapRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t host_ns = 0;  // how the gap splits by cause
  uint64_t sync_ns = 0;
  uint64_t other_ns = 0;  // kernel wait or other, by the gap's length
  uint64_t implicit_ns = 0;  // host blocked in implicitly synchronizing calls
  bool input = false;     // an input copy was issued in it (kGapInputHostNs)
  bool one_time = false;  // a long gap followed by code never run before (kOneTimeGapNs)
  uint64_t length_ns() const { return end_ns - start_ns; }
};

// The period of a repeating event (a kernel name, D2H copies, GPU restarts
// after an idle gap), for finding steps without NVTX markers: instance
// times in start order; the interval from the first instance (warm-up) is
// left out of `interval_ns`.
// The kLongestIntervals longest intervals are kept with their times, so
// that step inference can leave out the few that hold a pause (a checkpoint,
// a compilation) when it judges how regular the series is.
struct PeriodTracker {
  static constexpr size_t kLongestIntervals = 8;
  struct Kept {
    Interval interval;
    uint64_t index = 0;  // instances before the interval's end (its end is instance index)
  };
  uint64_t count = 0;
  uint64_t first_ns = 0;
  uint64_t second_ns = 0;
  uint64_t last_ns = 0;
  LogHistogram interval_ns;  // second -> third, ...: count - 2 intervals
  std::vector<Kept> longest;  // up to kLongestIntervals, unordered
  void Add(uint64_t t_ns) {
    if (count > 0 && t_ns < last_ns) return;  // a late record: order unknown
    if (count == 0) first_ns = t_ns;
    if (count == 1) second_ns = t_ns;
    if (count >= 2) {
      interval_ns.Add(t_ns - last_ns);
      KeepLongest({{last_ns, t_ns}, count});
    }
    last_ns = t_ns;
    ++count;
  }
  // LogHistogram::Prefetch for the interval an Add(t_ns) would count.
  void Prefetch(uint64_t t_ns) const {
    if (count >= 2 && t_ns >= last_ns) interval_ns.Prefetch(t_ns - last_ns);
  }
  void KeepLongest(const Kept& k) {
    if (longest.size() < kLongestIntervals) {
      longest.push_back(k);
      if (longest.size() == kLongestIntervals) FindShortest();
      return;
    }
    // Per instance: against the kept shortest (the first of the minimal
    // ones, as a scan finds it), rescanned only when it is replaced. Its
    // length is kept here too: reading it from `longest` (a heap block per
    // tracker, one per kernel name) missed the cache per instance.
    if (k.interval.length_ns() > shortest_ns_) {
      longest[shortest_] = k;
      FindShortest();
    }
  }

 private:
  void FindShortest() {
    shortest_ = 0;
    for (size_t i = 1; i < longest.size(); ++i) {
      if (longest[i].interval.length_ns() < longest[shortest_].interval.length_ns()) shortest_ = i;
    }
    shortest_ns_ = longest[shortest_].interval.length_ns();
  }
  size_t shortest_ = 0;       // index in `longest` of its shortest, once full
  uint64_t shortest_ns_ = 0;  // its length
};

struct KernelStats {
  std::string name;             // as recorded (mangled)
  LogHistogram duration_ns;
  uint64_t tiny = 0;            // shorter than kTinyKernelNs
  uint64_t launches_matched = 0;
  uint64_t shorter_than_launch = 0;  // HTA short kernel: GPU time < launch call <= 50 us
  double est_sm_ns = 0;         // sum of min(blocks / SMs, 1) x duration
  bool shape_known = false;     // a launch config and the SM count were known
  uint64_t max_blocks = 0;
  uint64_t min_blocks = 0;
  Interval longest;             // the longest instance
  double occupancy_ns = 0;       // sum of theoretical occupancy x duration (occupancy.h)
  uint64_t occupancy_known_ns = 0;  // kernel time whose occupancy was known
  uint64_t large_tile_ns = 0;    // time with >= kLargeTileSharedBytes shared memory per block
  double small_occupancy_ns = 0;  // occupancy_ns without the large-tile launches...
  uint64_t small_known_ns = 0;    // ...and their time (what GpuModel::occupancy_ns sums)
  CollectiveKind collective = CollectiveKind::kNone;  // communication (NCCL) or not
  PeriodTracker period;         // instances in start order
  // Launches through the driver API (cuLaunchKernel...): code built at run
  // time (Triton, XLA, CuPy, Numba, NVRTC) whose registers and tiles its
  // compiler chooses, not __launch_bounds__.
  uint64_t driver_launches = 0;
};

// Copies (or memsets) of one kind: count, bytes, GPU time; `sync_*` for the
// ones issued without the async flag.
struct CopyStats {
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t duration_ns = 0;
  uint64_t sync_count = 0;
  uint64_t sync_bytes = 0;
  uint64_t sync_duration_ns = 0;
  Interval longest;
};

inline constexpr int kCopyKinds = 11;    // proto::MemcpyKind values
inline constexpr int kMemoryKinds = 8;   // proto::MemoryKind values

struct StreamModel {
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint64_t ops = 0;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint64_t busy_ns = 0;  // sum of op durations
  std::array<uint64_t, 4> idle_ns{};  // by GapCause
};

struct StepRecord {
  uint64_t index = 0;  // 0 = the first step seen
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;  // period end: the next step's start (or this range's end)
  uint64_t range_ns = 0;  // the annotated range itself
  uint64_t compute_ns = 0;  // kernels running
  uint64_t copy_ns = 0;     // only copies/memsets running
  uint64_t idle_ns = 0;
  uint64_t comm_ns = 0;     // communication kernels running (part of compute_ns)
  uint64_t period_ns() const { return end_ns - start_ns; }
};

// Steps from NVTX ranges with step-like names. A step's period runs from its
// start to the next step's start, so time the loop spends outside the
// annotated range (e.g. waiting for data) belongs to the step. The first
// step is warm-up (lazy loading, autotuning) and is kept apart; the last one
// has no next start, so only its start is kept. Distributions and sums
// cover the steps in between.
struct StepStats {
  uint64_t count = 0;        // all steps, warm-up included
  std::string example_name;  // e.g. "step 0"
  StepRecord warmup;         // the first step
  LogHistogram period_ns;    // steps after the first
  LogHistogram range_ns;
  uint64_t compute_ns = 0;   // sums over steps after the first
  uint64_t copy_ns = 0;
  uint64_t idle_ns = 0;
  uint64_t comm_ns = 0;
  std::vector<StepRecord> slowest;  // up to 5, longest period first
  uint64_t second_start_ns = 0;     // start of the steady state
  uint64_t last_start_ns = 0;       // start of the last step: end of the steady state
  uint64_t last_end_ns = 0;
};

// Steps found without NVTX markers, from the period of a repeating event:
// each regular series (a kernel name, D2H copies, H2D copies, GPU restarts
// after an idle gap >= the threshold) with >= kMinInferredSteps instances,
// at most half of the GPU's ops (a step holds more than its marker),
// a median period >= kMinInferredPeriodNs, covering >= half the GPU span,
// whose mean period is within 25% of its median and whose P95 is at most
// twice it, is a candidate; candidates with periods within 5% of each other
// form a group, and the group with the most members wins (ties: the longer
// period): many once-per-step kernels share the step's period, while a
// once-per-evaluation kernel stands alone. The first instance is warm-up;
// periods run from the second instance to the last.
inline constexpr uint64_t kMinInferredSteps = 5;
inline constexpr uint64_t kMinInferredPeriodNs = 100'000;
//
// Host series count too: the calls of one thread to one synchronizing or
// graph-launching API (cudaStreamSynchronize, cudaMemcpy, cuGraphLaunch...),
// for loops whose GPU work is too short or too irregular to repeat on its
// own (a host-bound loop with a sync per step, tiny kernels).
// Regularity is judged without the up to PeriodTracker::kLongestIntervals
// intervals that hold a pause (a kernel-free interval >= long_gap_ns:
// compilation, a checkpoint), and the span a series must cover is the GPU
// span minus those pauses. A one-time gap inside a series before half of
// its instances is start-up: the steady state begins after it.
struct InferredSteps {
  bool found = false;
  std::string anchor;        // the kernel name, or "D2H copy", "H2D copy", "GPU restart after
                             // idle", or a host series: "cudaStreamSynchronize calls"
  uint64_t count = 0;        // instances (steps), warm-up included
  uint64_t candidates = 0;   // series in the winning group
  LogHistogram period_ns;    // after the first step
  uint64_t first_start_ns = 0;
  uint64_t second_start_ns = 0;
  uint64_t last_start_ns = 0;
  bool host = false;         // the anchor is a host series
  // The end of the last one-time gap (start-up: compilation, loading) that
  // lies inside the series before most of its steps; 0 if none. The steady
  // state starts there, not at the second instance.
  uint64_t steady_start_ns = 0;
  // Another regular series runs mostly outside this one's span: the run
  // has phases (a benchmark's, evaluation after training), and the steady
  // window is not cut to these steps.
  bool phased = false;
};

// Communication kernels of one kind on one GPU.
struct CollectiveStats {
  uint64_t count = 0;
  uint64_t kernel_ns = 0;  // summed durations
};

struct CommStats {
  uint64_t kernels = 0;
  uint64_t kernel_ns = 0;
  uint64_t busy_ns = 0;          // union of communication kernels
  uint64_t compute_busy_ns = 0;  // union of the other kernels
  uint64_t overlap_ns = 0;       // both at once (HTA's overlap numerator)
  std::array<CollectiveStats, kCollectiveKinds> by_kind{};
};

// One communication kernel, for matching collectives across ranks: the
// seq-th kernel of its kind on this GPU (in start order). Kept for seq %
// stride == 0 only; the stride doubles when kMaxCollectiveRecords fill.
struct CollectiveRecord {
  uint64_t start_ns = 0;  // CUPTI ns of this process
  uint64_t end_ns = 0;
  uint32_t seq = 0;
  CollectiveKind kind = CollectiveKind::kNone;
};
inline constexpr size_t kMaxCollectiveRecords = 1 << 16;

// Another process seen on this GPU by NVML (nvml.process_sm_util).
struct OtherProcess {
  std::string label;  // its name
  uint64_t samples = 0;
  double sm_util_sum = 0;  // percent
  double max_sm_util = 0;
};

struct GpuModel {
  uint64_t process_uid = 0;
  uint32_t pid = 0;
  std::string hostname;
  uint32_t device_id = 0;
  bool has_device_info = false;
  proto::DeviceInfo device;

  uint64_t ops = 0;           // kernels + copies + memsets
  uint64_t first_ns = 0;      // first GPU activity
  uint64_t last_ns = 0;       // end of the last
  uint64_t busy_ns = 0;       // union of all ops
  uint64_t kernel_busy_ns = 0;
  uint64_t kernel_count = 0;
  uint64_t kernel_ns = 0;
  uint64_t tiny_kernels = 0;
  double est_sm_ns = 0;
  uint64_t shape_known_ns = 0;  // kernel time whose launch shape was known
  // Sum of theoretical occupancy x duration, without large-tile launches
  // (occupancy.h: kLargeTileSharedBytes), which are counted apart.
  double occupancy_ns = 0;
  uint64_t occupancy_known_ns = 0;
  uint64_t large_tile_ns = 0;
  std::vector<KernelStats> kernels;  // by name, only names seen; unordered
  LogHistogram kernel_duration_ns;   // all kernels
  std::array<std::array<CopyStats, kMemoryKinds>, kCopyKinds> copies{};  // [copy kind][host memory kind]
  std::array<CopyStats, kMemoryKinds> memsets{};
  std::vector<StreamModel> streams;

  // Launches matched to their API call by correlation id.
  uint64_t launches_matched = 0;
  // Of those, launches of kernels that ran >= kLaunchCallOutlierNs, and the
  // ones whose launch call returned only after the kernel had ended: an
  // asynchronous launch returns in microseconds (HTA: 5-20 us), so a kernel
  // that long cannot end first unless launches are synchronous
  // (CUDA_LAUNCH_BLOCKING=1, a debugger, a sanitizer).
  uint64_t long_launches = 0;
  uint64_t long_launches_blocking = 0;
  uint64_t launches_unmatched = 0;
  uint64_t shorter_than_launch = 0;
  LogHistogram queue_delay_ns;       // launch call end -> GPU start, clipped at 0
  uint64_t queue_delay_outliers = 0; // > kQueueDelayOutlierNs

  Timeline timeline;  // GpuField counters
  std::vector<GapRecord> largest_gaps;    // gaps >= threshold, longest first (up to 32)
  std::vector<GapRecord> sync_gaps;       // gaps with sync wait, most sync wait first (up to 16)
  std::vector<GapRecord> long_gaps_edge;  // first and last gap >= long_gap_ns, in time order
  std::vector<Interval> pageable_copies;  // longest pageable copies (up to 5)
  std::vector<GapRecord> one_time_gaps;  // long gaps followed by new code, in time order (up to 16)
  // Kernel-free intervals >= long_gap_ns that are not one-time (idle, or
  // copies only: a checkpoint saving tensors), longest first (up to 16).
  std::vector<Interval> pauses;
  uint64_t late_ops = 0;      // arrived after their time was swept (beyond the reorder window)
  uint64_t late_ns = 0;
  StepStats steps;
  bool has_sm_util = false;
  bool has_dram_util = false;
  bool has_tensor_util = false;
  Timeline windows;        // WindowField counters at ModelOptions::window_ns
  CommStats comm;
  std::vector<CollectiveRecord> collectives;  // in start order, sampled (see above)
  uint32_t collective_stride = 1;
  InferredSteps inferred_steps;  // filled only without NVTX steps
  uint64_t throttle_reasons_seen = 0;   // OR of every clock event reasons sample
  std::map<uint32_t, OtherProcess> other_processes;  // by pid
};

struct ThreadSyncStats {
  uint64_t calls = 0;
  uint64_t blocked_ns = 0;
  uint64_t max_ns = 0;
};

// Implicitly synchronizing calls of one API name (host_calls.h), whole run.
struct ImplicitCallStats {
  int group = 0;  // ImplicitGroup
  uint64_t calls = 0;
  uint64_t blocked_ns = 0;
  uint64_t max_ns = 0;
};

// A CPU-share series (percent of one core), e.g. gpscope.collector_cpu_pct.
struct CpuSeries {
  double pct_sum = 0;  // percent of one core, summed over samples
  double pct_max = 0;
  uint64_t samples = 0;
  double mean_pct() const { return samples == 0 ? 0 : pct_sum / static_cast<double>(samples); }
};

struct ProcessModel {
  uint64_t process_uid = 0;
  uint32_t pid = 0;
  std::string path;
  bool has_header = false;
  std::string hostname;
  std::vector<std::string> cmdline;
  std::string exe_path;
  int32_t rank = -1;        // Identity: -1 when unknown
  int32_t local_rank = -1;
  int32_t world_size = 0;
  std::string job_id;
  // The allow-listed environment the collector recorded (ProcessHeader.env:
  // CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF, NCCL_*...), in order.
  std::vector<std::pair<std::string, std::string>> env;
  reader::ClockAlign clocks;  // CUPTI ns -> CLOCK_REALTIME (header, flushes, end)
  Timeline windows;         // ProcessWindowField counters, like GpuModel::windows
  bool has_cpu_samples = false;
  uint64_t comm_ranges = 0;     // NVTX ranges in NCCL's domain
  uint64_t comm_range_ns = 0;
  bool clean_end = false;
  int end_reason = 0;  // proto::EndReason
  uint64_t chunks = 0;
  uint64_t lost_chunks = 0;
  uint64_t undecodable_batches = 0;
  uint64_t events = 0;
  uint64_t first_ns = 0;  // any event
  uint64_t last_ns = 0;
  std::map<int, uint64_t> dropped;  // proto::DropReason -> records
  uint64_t lost_interval_count = 0;
  uint64_t lost_interval_ns = 0;    // open-ended intervals count up to last_ns
  // Of those, the time outside capture windows (LOST_TRACING_DISABLED): not
  // traced by the user's choice (delay, duration, standby, attach).
  uint64_t window_off_count = 0;
  uint64_t window_off_ns = 0;
  std::vector<proto::LostInterval> lost_intervals;  // the first 16
  std::vector<std::string> unavailable;  // "gpm: not supported"
  // Another CUPTI client's calls the collector refused while it held CUPTI
  // (its profiler got no GPU events): the latest notice per (api, caller).
  std::vector<proto::CuptiClientRefusal> cupti_refusals;
  // The collector ran in a PID namespace (capability nvml.process_pids
  // unavailable): NVML's process pids are the host's, not comparable to pid.
  bool foreign_nvml_pids = false;
  // What the collector cost this process, from its own samples:
  // gpscope.collector_cpu_pct (all gpscope-* threads, every thread scan) and
  // gpscope.sampler_cpu_pct (the metrics sampler alone; older traces have
  // only this one).
  CpuSeries collector_cpu;
  CpuSeries sampler_cpu;
  // When the sampled metrics saw this process's GPUs at work (>= 1%): first
  // and last such sample of gpm.sm_util ([0]) and of nvml.gpu_util ([1]), 0
  // if none; says where the GPU work was when a capture window caught none.
  // gpu_work_samples: samples of each metric, at work or not.
  uint64_t first_gpu_work_ns[2] = {}, last_gpu_work_ns[2] = {}, gpu_work_samples[2] = {};

  uint64_t api_calls = 0;
  LogHistogram launch_call_ns;     // CPU duration of kernel launch calls
  uint64_t launch_call_outliers = 0;  // > kLaunchCallOutlierNs
  // Time blocked in synchronizing calls, per thread: from the sync API calls
  // when recorded, else from CUPTI sync records (thread 0 = unknown).
  std::map<uint32_t, ThreadSyncStats> sync_by_thread;
  bool sync_from_records = false;
  uint64_t sync_records = 0;
  // Implicitly synchronizing calls by normalized API name ("cudaFree"); the
  // pageable asynchronous copies under "async copy (pageable memory)".
  std::map<std::string, ImplicitCallStats> implicit_calls;
  Timeline timeline;  // ProcessField counters
  uint64_t steps_ignored = 0;  // step-like ranges overlapping a step or from other threads
  std::vector<size_t> gpus;    // indexes into TraceModel::gpus
  StackModel stacks;           // call stacks (issue 20; stack_model.h)
};

struct ModelOptions {
  uint64_t idle_gap_threshold_ns = 5'000'000;  // seed: gaps < 5 ms are normal switching
  uint64_t long_gap_ns = 500'000'000;          // nsys gpu_gaps
  uint64_t reorder_window_ns = 2'000'000'000;  // how late CUPTI records may arrive
  // A launch call waits this long (in swept GPU time) for its op; longer
  // queue delays leave the op unmatched.
  uint64_t api_retention_ns = 5'000'000'000;
  size_t max_warnings = 1000;
  // Width of the `windows` table (summary --window-ms, 50..200 ms).
  uint64_t window_ns = 100'000'000;
  // >= 0: keep only the processes of this rank (Identity.rank), e.g. to
  // compare two ranks of one node file (`diff --rank A --rank B FILE`).
  int32_t only_rank = -1;
  // Timed call-stack charges kept per process (stack_model.h); tests lower it.
  size_t max_stack_charges = kMaxStackCharges;
  // Threads the builder runs on (model_builder.h): 1, the reader's only;
  // 2, a sweep thread beside it; 0, 2 when the reader decodes on threads of
  // its own (reader::DefaultDecodeThreads() > 1), else 1.
  int threads = 0;
};

struct TraceModel {
  ModelOptions options;
  reader::TraceIndex index;  // files, reader warnings
  // The reader's per-process tables (names, devices, clocks), in order of
  // first appearance, and the common timebase with the time origin every
  // output prints (reader/timebase.h).
  std::vector<std::unique_ptr<reader::ProcessTables>> tables;
  reader::Timebase timebase;
  std::vector<ProcessModel> processes;  // in order of first appearance
  std::vector<GpuModel> gpus;           // by (process order, device id)
  uint64_t events = 0;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_TRACE_MODEL_H_
