// tools/analyses/node_metrics.h: node metrics (`gpscope-analyze metrics`): what the GPUs
// of a node did, window by window, from the metric samples of node monitor
// files (gpscope-monitor) or of any trace with metric samples (the
// collector's sampler). Per window (default 1 min, aligned to the wall
// clock) and per GPU: utilization (NVML gpu_util, GPM SM/tensor/DRAM),
// memory, power, throttling (nvml.clock_event_reasons: SwPowerCap 0x4,
// HwSlowdown 0x8, SwThermal 0x20, HwThermal 0x40, PowerBrake 0x80) and the
// processes on it; per process: SM utilization and memory, when it was
// first and last seen. Derived: idle GPUs (utilization below a threshold
// and no process), which processes shared a GPU, and each GPU's trend.
//
//   MetricsReport r = CollectMetrics({"node/gpscope-monitor_a_...gpscope"}, {});
//   for (const GpuSeries& g : r.gpus) { GpuSummary s = Summarize(g, 5.0); ... }
//   (render/metrics_render.h writes it as text or JSON)
//
// Monitor files written with `--traces` also hold the summaries of the
// capture windows of the processes the monitor followed (WindowSummary,
// window_summary.h): they are listed as read, by window end.
//
// GPUs are keyed by (host, UUID), processes by (host, GPU, pid, name), so the
// rotated files of one monitor (a new process_uid each) join into one series.
// Reading streams the files once; memory grows with windows x series, not
// with samples.
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYSES_NODE_METRICS_H_
#define GPSCOPE_TOOLS_ANALYSES_NODE_METRICS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tools/analyses/window_summary.h"
#include "tools/reader/timebase.h"
#include "tools/reader/trace_index.h"

namespace gpscope::analyses {

// A GPU's utilization trend (percent per hour) is a least-squares slope
// over its windows; over a short span it is noise extrapolated to an hour
// (28 s of data gave "+4271.8% per hour"). It is stated only when the GPU's
// samples span at least this long, and at least 3 windows; otherwise the
// output says how much data there was.
inline constexpr uint64_t kMinTrendSpanNs = 10ull * 60 * 1000000000ull;
inline constexpr size_t kMinTrendWindows = 3;

struct MetricsOptions {
  uint64_t window_ns = 60ull * 1000000000ull;
  double idle_util_pct = 5.0;  // a window below this, with no process, is idle
};

// The throttle reasons reported (nvmlClocksEventReason* bits).
struct ThrottleReason {
  uint64_t mask;
  const char* name;
};
inline constexpr ThrottleReason kThrottleReasons[] = {
    {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},  {0x20, "sw_thermal"},
    {0x40, "hw_thermal"},  {0x80, "power_brake"},
};
inline constexpr int kThrottleReasonCount = 5;

struct Accumulator {
  double sum = 0;
  double max = 0;
  uint64_t count = 0;
  void Add(double v) {
    max = count == 0 ? v : (v > max ? v : max);
    sum += v;
    ++count;
  }
  double mean() const { return count ? sum / static_cast<double>(count) : 0; }
};

struct GpuWindow {
  Accumulator util, sm, tensor, dram, memory_used, power, temperature, sm_clock;
  uint64_t reason_samples = 0;  // clock_event_reasons samples in the window
  uint64_t reason_hits[kThrottleReasonCount] = {};
  std::set<uint32_t> pids;  // processes seen on the GPU in the window
};

struct GpuSeries {
  std::string host;
  std::string uuid;  // "" when the trace had none
  std::string name;  // "NVIDIA H200" when known
  uint32_t index = 0;
  uint64_t first_ns = 0, last_ns = 0;
  std::map<int64_t, GpuWindow> windows;  // by window index (realtime / window)
};

struct ProcessWindow {
  Accumulator sm, memory;
};

struct ProcessSeries {
  std::string host;
  std::string gpu_uuid;
  uint32_t gpu = 0;
  uint32_t pid = 0;
  std::string name;
  uint64_t first_ns = 0, last_ns = 0;
  Accumulator sm, memory;
  std::map<int64_t, ProcessWindow> windows;
};

struct MetricsReport {
  reader::TraceIndex index;
  reader::Timebase timebase;  // the time origin every command prints
  MetricsOptions options;
  uint64_t samples = 0;           // metric samples read
  uint64_t first_ns = 0, last_ns = 0;
  std::set<std::string> replayed;  // monitor files whose GPU readings were replayed (no GPU)
  std::vector<GpuSeries> gpus;          // by host, then GPU index
  std::vector<ProcessSeries> processes;  // by host, GPU, first seen
  // The monitor's capture-window summaries (--traces), by window end; at
  // most kMaxWindowSummaries, the rest counted.
  std::vector<WindowSummary> window_summaries;
  uint64_t window_summaries_omitted = 0;
  // Summaries of a window already listed (the same process and first
  // activity, from another monitor file: a restarted monitor summarizes the
  // windows of the traces still in its directory again), left out.
  uint64_t window_summaries_repeated = 0;
};
inline constexpr size_t kMaxWindowSummaries = 100000;

MetricsReport CollectMetrics(const std::vector<std::string>& paths, const MetricsOptions& options);

// ------------------------------------------------------------- derivations --
// Pure functions of one GPU's series.

// A window with no process on it whose mean utilization (NVML's, else GPM
// SM utilization) is below `threshold` percent; unknown windows are not idle.
bool IsIdle(const GpuWindow& w, double threshold);

// The utilization trend in percent per hour: least squares over the
// windows' mean utilization (GPM SM utilization where NVML's is missing).
// Not computed (false) over less than kMinTrendSpanNs of samples or fewer
// than kMinTrendWindows windows: a slope there is noise, not a trend.
bool Trend(const GpuSeries& g, uint64_t window_ns, double* pct_per_hour);

// The whole series: every window's accumulators merged, idle windows counted.
struct GpuSummary {
  Accumulator util, sm, tensor, dram, memory_used, power, temperature;
  uint64_t reason_samples = 0;
  uint64_t reason_hits[kThrottleReasonCount] = {};
  uint64_t idle_windows = 0;
  std::set<uint32_t> pids;
};
GpuSummary Summarize(const GpuSeries& g, double idle_threshold);

// Sets of two or more processes seen on the GPU in the same window: how
// many windows each set shared it, the first and last such window.
struct Sharing {
  std::set<uint32_t> pids;
  uint64_t windows = 0;
  int64_t first = 0, last = 0;
};
std::vector<Sharing> SharedWindows(const GpuSeries& g);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_NODE_METRICS_H_
