// tools/analyses/gpu_report.h: the per-GPU numbers of `gpscope-analyze
// summary`, computed from a TraceModel by pure functions: the steady-state
// window, the "four numbers" (SM utilization, memory-bandwidth utilization,
// kernel duration P50/P95, idle-gap share), busy time, idle breakdown, top
// kernels, copies, host-side launch and sync statistics, steps, and data
// completeness per process.
//
//   model::TraceModel model = model::BuildModel(paths, options);
//   SummaryReport report = ComputeSummary(model, {.top_kernels = 10});
//   std::vector<Finding> findings = EvaluateRules(model, report);  // rules.h
//
// Steady state. Start-up (CUDA/cuBLAS initialisation, lazy module loading,
// the first step's autotuning) and tear-down leave the GPU idle for seconds
// and would swamp every ratio, so ratios are taken over a steady window:
//   - with >= 3 NVTX steps: from the start of the second step to the start
//     of the last (the first step is warm-up; the last has no next start);
//   - else with >= 3 inferred steps (model::InferredSteps), the same over
//     the inferred steps, after any one-time start-up work among them,
//     unless the run has phases (another regular series runs outside them);
//   - otherwise the GPU span (first to last GPU activity), minus a first or
//     last long gap (>= 500 ms) that lies in the first or last 10% of it.
// Inside the window, one-time start-up work (a long gap after which the GPU
// runs code it never ran before: compilation, autotuning, lazy loading;
// trace_model.h) is left out of the shares like untraced time.
// Counts and distributions (kernels, copies) cover the whole run.
//
// Thread model: pure functions over const data.
#ifndef GPSCOPE_TOOLS_ANALYSES_GPU_REPORT_H_
#define GPSCOPE_TOOLS_ANALYSES_GPU_REPORT_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/analyses/ranks.h"
#include "tools/analyses/windows.h"
#include "tools/model/log_histogram.h"
#include "tools/model/trace_model.h"

namespace gpscope::analyses {

struct ReportOptions {
  size_t top_kernels = 10;
};

// Summary statistics of a LogHistogram (ns or bytes).
struct Distribution {
  uint64_t count = 0;
  uint64_t total = 0;
  double mean = 0, stddev = 0, min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
};
Distribution Describe(const model::LogHistogram& h);

// A utilization figure that may be measured, estimated or unavailable.
struct Utilization {
  enum class Source { kUnavailable, kMeasured, kEstimated };
  Source source = Source::kUnavailable;
  double percent = 0;
  std::string basis;  // "gpm.sm_util, 512 samples", "estimate from launch shapes", "n/a (...)"
};

struct Window {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string basis;  // how it was chosen, for people
  uint64_t length_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

struct KernelRow {
  std::string name;       // mangled, as recorded
  std::string demangled;
  std::string compact;    // for 100-column text
  Distribution duration;  // ns
  double share = 0;       // of all kernel time on this GPU
  uint64_t tiny = 0;      // < 10 us
  uint64_t shorter_than_launch = 0;
  uint64_t launches_matched = 0;
  double est_sm_efficiency = -1;  // min(blocks/SMs,1) weighted by time; -1 unknown
  uint64_t min_blocks = 0, max_blocks = 0;
  model::Interval longest;
  std::string collective;  // "all_reduce", ... for communication kernels, else ""
  double est_occupancy = -1;  // theoretical occupancy, time-weighted; -1 unknown
  bool large_tile = false;    // mostly launched with >= 64 KiB shared memory per block
  std::string library;        // "cuBLAS", "cuDNN", ..., "generated" (names.h), "" own code
};

struct CopyRow {
  std::string direction;  // "H2D", "D2H", "D2D", "P2P", "H2H", "H2A"..., or "memset"
  std::string memory;     // host side: "pageable", "pinned", "managed", "device", ...
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t duration_ns = 0;
  double gb_per_s = 0;       // bytes / GPU time
  double share_of_gpu_time = 0;  // of kernel + copy + memset time
  uint64_t sync_count = 0;   // issued without the async flag
  uint64_t sync_bytes = 0;
  uint64_t sync_duration_ns = 0;
  model::Interval longest;
};

// Communication kernels of one kind (whole run).
struct CollectiveRow {
  std::string kind;  // "all_reduce", ... (model::CollectiveName)
  uint64_t count = 0;
  uint64_t kernel_ns = 0;
  double share_of_comm = 0;  // of all communication kernel time
};

// Idle time split by cause (ns); implicit: the host was blocked in an
// implicitly synchronizing call (model/host_calls.h).
struct IdleSplit {
  double host_ns = 0, sync_ns = 0, kernel_ns = 0, other_ns = 0, implicit_ns = 0;
  double total_ns() const { return host_ns + sync_ns + kernel_ns + other_ns + implicit_ns; }
};

// Implicitly synchronizing calls of one group in the window.
struct ImplicitGroupRow {
  int group = 0;  // model::ImplicitGroup
  double calls = 0;
  double blocked_ns = 0;   // host time in them
  double gpu_idle_ns = 0;  // device idle while the host was blocked in them
  std::string top_call;    // the API name with the most host time (whole run)
  uint64_t top_call_calls = 0;
  uint64_t top_call_blocked_ns = 0;
};

struct GpuReport {
  size_t gpu_index = 0;  // into TraceModel::gpus
  const model::GpuModel* gpu = nullptr;
  std::string label;     // "GPU 0 (NVIDIA H200) of pid 846 on vm"
  uint64_t span_ns = 0;  // first to last GPU activity
  Window window;         // steady state

  // Sampled hardware state (window); -1 when not sampled.
  double throttled_share = -1;     // clock-reason samples with a power/thermal slowdown
  double clock_reason_samples = 0;
  double other_process_sm = -1;    // mean SM utilization of other processes (percent)
  double other_process_samples = 0;
  struct Other {
    uint32_t pid = 0;
    std::string label;
    double mean_sm_util = 0;  // percent, whole run
    double max_sm_util = 0;
    uint64_t samples = 0;
  };
  std::vector<Other> other_processes;  // busiest first

  // The four numbers.
  Utilization sm_util;
  Utilization dram_util;
  Distribution kernel_duration;  // all kernels, ns
  double idle_gap_share = 0;        // idle in gaps >= threshold / window
  double idle_gap_share_span = 0;   // the same over the whole span

  // Busy and idle (window).
  double busy_ns = 0;         // union of kernels, copies, memsets
  double kernel_busy_ns = 0;  // union of kernels
  double kernel_ns = 0, copy_ns = 0, memset_ns = 0;  // summed durations
  double busy_share = 0;      // busy / traced window
  // Device time in the window inside the process's lost intervals (between
  // capture windows, yielded to another profiler): neither busy nor idle.
  double untraced_ns = 0;
  // One-time start-up gaps inside the window (trace_model.h): neither.
  double one_time_ns = 0;
  double one_time_count = 0;
  // The window's traced steady length (at least 1 ns): the denominator of
  // its shares.
  double traced_window_ns() const {
    return std::max(1.0, static_cast<double>(window.length_ns()) - untraced_ns - one_time_ns);
  }
  IdleSplit gap_idle;         // device idle in gaps >= threshold, by cause
  IdleSplit short_gap_idle;   // device idle in shorter gaps, by cause
  double long_gap_ns = 0;     // in gaps >= the long-gap threshold
  double long_gap_count = 0;
  double gap_count = 0;       // gaps >= threshold
  IdleSplit stream_idle;      // HTA: per stream, summed over streams
  // Evidence that separates the causes of host wait (ANALYSIS-NOTES.md):
  double input_host_ns = 0;        // host wait of gaps >= threshold with an input copy in them
  double after_sync_host_ns = 0;   // host wait of gaps >= threshold that began in a sync
  double short_after_sync_host_ns = 0;  // the same in shorter gaps
  // Pauses: kernel-free intervals >= the long-gap threshold (not one-time).
  double pause_ns = 0;
  double pause_count = 0;
  double pause_copy_ns = 0;  // copies/memsets running inside the pauses (model::GpuModel::pauses)
  // Implicitly synchronizing calls in the window, by group (only groups seen).
  std::vector<ImplicitGroupRow> implicit;
  double implicit_blocked_ns = 0;
  double implicit_idle_ns = 0;  // = gap_idle.implicit_ns + short_gap_idle.implicit_ns
  // Synchronous launches: launches of kernels >= 50 us (window) and those
  // whose call returned after the kernel ended.
  double long_launches = 0;
  double long_launches_blocking = 0;

  // Kernels (whole run).
  uint64_t kernel_count = 0;
  uint64_t kernel_names = 0;
  uint64_t tiny_kernels = 0;
  uint64_t shorter_than_launch = 0;
  uint64_t launches_matched = 0;
  double est_sm_efficiency = -1;  // over kernels with a known shape
  // Theoretical occupancy of the launch shapes (model/occupancy.h),
  // weighted by kernel time over the kernels where it is known, large-tile
  // launches (>= 64 KiB shared memory per block: GEMM/attention tiles, low
  // occupancy by design) left out; -1 unknown.
  // Library kernels (cuBLAS, cuDNN, CUTLASS, cuFFT, NCCL, flash attention,
  // generated code launched through the driver: names.h IsLibraryKernel)
  // choose their own registers and tiles: left out of est_occupancy too.
  double est_occupancy = -1;
  double occupancy_known_share = 0;  // of all kernel time
  double large_tile_share = 0;       // of all kernel time
  double library_share = 0;          // of all kernel time
  std::vector<KernelRow> top_kernels;

  // Copies and memsets (whole run), largest time first.
  std::vector<CopyRow> copies;
  std::vector<CopyRow> memsets;
  double copy_share_of_gpu_time = 0;  // whole run
  double pageable_copy_ns = 0;        // window
  double pageable_copy_count = 0;
  double d2h_copy_count = 0;          // window

  // Host side.
  Distribution queue_delay;  // launch call end -> kernel start, ns
  uint64_t queue_delay_outliers = 0;
  uint64_t launches_unmatched = 0;
  double sync_calls = 0;      // window (sync API calls, else sync records)
  double sync_blocked_ns = 0;

  // Communication (window unless said otherwise); HTA's definitions:
  // overlap = time compute kernels run while a communication kernel runs,
  // over communication time.
  bool has_comm = false;         // any communication kernel in the run
  double comm_busy_ns = 0;       // union of communication kernels
  double comm_share = 0;         // comm busy / window
  double comm_overlap_ns = 0;
  double comm_overlap = -1;      // overlap / comm busy; -1 without communication
  double compute_busy_ns = 0;    // union of the other kernels
  uint64_t comm_kernels = 0;     // whole run
  uint64_t comm_kernel_ns = 0;   // whole run, summed durations
  std::vector<CollectiveRow> collectives;  // whole run, most time first
  uint64_t comm_ranges = 0;      // NVTX ranges in NCCL's domain (the process, whole run)
  uint64_t comm_range_ns = 0;

  // Steps: from NVTX step ranges ("nvtx") or, without them, inferred from
  // the period of a repeating event ("inferred", model::InferredSteps).
  // steps_in_window (per-step rates of the rules) counts the steps of the
  // window, NVTX or inferred.
  bool has_steps = false;
  std::string step_source;   // "nvtx", "inferred" or "" (none)
  std::string step_anchor;   // inferred: the repeating event
  bool step_anchor_host = false;  // inferred from a host series (API calls of one thread)
  uint64_t step_candidates = 0;  // inferred: series that agreed on the period
  uint64_t step_count = 0;   // all, warm-up included
  std::string step_example;
  Distribution step_period;  // after the first step, ns
  Distribution step_range;
  double step_compute_ns = 0, step_copy_ns = 0, step_idle_ns = 0;  // mean per step
  double step_comm_ns = 0;   // communication kernels running, mean per step (part of compute)
  model::StepRecord warmup_step;
  std::vector<model::StepRecord> slowest_steps;
  double steps_in_window = 0;  // for "per step" rates (0 without steps)

  // Windows and minute trends (windows.h).
  WindowTable windows;
  WindowTable minutes;
};

struct ProcessReport {
  size_t process_index = 0;
  const model::ProcessModel* process = nullptr;
  std::string label;  // "pid 846 on vm"
  Distribution launch_call;  // CPU duration of launch calls
  uint64_t launch_call_outliers = 0;
  uint64_t dropped = 0;  // records, all reasons
  bool complete = true;  // nothing dropped or lost, clean end
};

struct SummaryReport {
  ReportOptions options;
  uint64_t idle_gap_threshold_ns = 0;
  uint64_t long_gap_ns = 0;
  std::vector<GpuReport> gpus;
  std::vector<ProcessReport> processes;
  uint64_t late_ops = 0;
  uint64_t events = 0;
  RankReport ranks;  // per-rank comparison and straggler ranking (ranks.h)
};

SummaryReport ComputeSummary(const model::TraceModel& model, const ReportOptions& options);

// The steady window of one GPU (see the header comment).
Window SteadyWindow(const model::GpuModel& gpu);

// "H2D" etc. for proto::MemcpyKind; "pageable" etc. for proto::MemoryKind.
const char* CopyDirectionName(int copy_kind);
const char* MemoryKindName(int memory_kind);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_GPU_REPORT_H_
