// tools/monitor/exposition.h: the node monitor's Prometheus exposition. Maps
// the trace's metric names (proto/metric_names.h: "gpm.sm_util",
// "nvml.process_memory_bytes", ...) to documented Prometheus families
// ("gpscope_gpu_sm_util_percent") and renders the latest value of every live
// series as Prometheus text format 0.0.4 or OpenMetrics 1.0.0 text.
//
//   MetricStore store;
//   FamilySpec f;
//   MapTraceMetric("gpm.sm_util", kScopeDevice, &f);          // cold
//   uint32_t s = store.AddSeries(f, {{"gpu", "0"}, {"uuid", "GPU-..."}});
//   store.Stage(s, 87.5);                                     // every round
//   store.Commit();                                           // one lock
//   std::string page = store.Render(ExpositionFormat::kPrometheusText);
//
// Staleness: a series whose last value is older than `stale_rounds` commits
// is left out of the page (a process that left its GPU disappears from the
// next scrapes instead of showing its last reading forever). Counters and
// info series never go stale.
//
// Thread model: AddSeries/RemoveSeries/Stage/Commit on one thread (the
// monitor's sampling thread); Render() on any thread (the HTTP server's).
// Stage() touches only the sampling thread's staging vector; Commit(),
// AddSeries(), RemoveSeries() and Render() take mu_, so the sampling thread
// holds it only to copy one round of values, and a slow HTTP client never
// holds it (the page is rendered to a string before it is sent).
#ifndef GPSCOPE_TOOLS_MONITOR_EXPOSITION_H_
#define GPSCOPE_TOOLS_MONITOR_EXPOSITION_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/analyses/window_summary.h"

namespace gpscope::monitor {

enum class MetricType { kGauge, kCounter };
enum class ExpositionFormat { kPrometheusText, kOpenMetrics };

// One Prometheus metric family. Counter names end in "_total".
struct FamilySpec {
  std::string name;  // "gpscope_gpu_sm_util_percent"
  std::string help;
  MetricType type = MetricType::kGauge;
  double scale = 1.0;  // trace value * scale = exposed value (MHz -> Hz)
  bool never_stale = false;
  // Commits after which a series without a new value leaves the page; 0:
  // the store's default. Per-process series are read less often than
  // device ones (every SamplerOptions::process_interval_ms).
  uint32_t stale_rounds = 0;
};

// The family for a trace metric of `scope` (proto MetricScope). Known names
// map to the documented families (see README "Node monitor"); others to
// "gpscope_" + the name with non-[a-zA-Z0-9_] replaced by '_'. False for
// metrics the monitor does not expose (per-thread CPU).
bool MapTraceMetric(std::string_view trace_name, uint32_t scope, FamilySpec* out);

// nvml.clock_event_reasons bits exposed as gpscope_gpu_clock_event_active{reason=...}.
struct ClockEventBit {
  uint64_t mask;
  const char* reason;  // label value
};
inline constexpr ClockEventBit kClockEventBits[] = {
    {0x1, "gpu_idle"},     {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},
    {0x20, "sw_thermal"},  {0x40, "hw_thermal"},  {0x80, "power_brake"},
};
FamilySpec ClockEventActiveFamily();

// True for a valid Prometheus metric or label name.
bool IsValidMetricName(std::string_view name);
// A label value with \ " and newline escaped (both formats use this).
std::string EscapeLabelValue(std::string_view value);
// A sample value as both formats write it: "12", "0.5", "NaN", "+Inf".
std::string FormatValue(double value);

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricStore {
 public:
  explicit MetricStore(uint32_t stale_rounds = 2) : stale_rounds_(stale_rounds) {}
  MetricStore(const MetricStore&) = delete;
  MetricStore& operator=(const MetricStore&) = delete;

  // Sampling thread, cold. Families are matched by name (the first spec of a
  // name wins). Returns the series handle.
  uint32_t AddSeries(const FamilySpec& family, const Labels& labels);
  // Sampling thread, cold: the series leaves the page; a later AddSeries may
  // reuse its handle (values staged for it this round are dropped).
  void RemoveSeries(uint32_t handle);
  // Sampling thread: a value for the next Commit (scaled by the family's scale).
  void Stage(uint32_t handle, double value);
  // Sampling thread: publishes the staged values as one round.
  void Commit();

  // Any thread: the page. Counts itself in scrapes().
  std::string Render(ExpositionFormat format);
  uint64_t scrapes() const;
  size_t live_series() const;

 private:
  struct Series {
    uint32_t family;
    std::string labels;  // rendered: {gpu="0",uuid="GPU-1"} or ""
    double value = 0;
    uint64_t round = 0;  // commit in which the value was set; 0 = never
    bool removed = false;
  };
  struct Family {
    FamilySpec spec;
    std::vector<uint32_t> series;  // handles, in creation order
  };

  const uint32_t stale_rounds_;
  std::vector<std::pair<uint32_t, double>> staged_;  // sampling thread only
  mutable std::mutex mu_;
  std::vector<Family> families_;  // guarded by mu_
  std::vector<Series> series_;    // guarded by mu_
  std::vector<uint32_t> free_;    // removed slots; guarded by mu_
  uint64_t round_ = 0;            // guarded by mu_
  uint64_t scrapes_ = 0;          // guarded by mu_
};

// The latest capture-window summary of each traced process
// (window_tracker.h) as gauges (README "Node monitor" lists them). Per GPU,
// labels job, host, rank, pid, gpu, uuid:
//   gpscope_window_idle_share, gpscope_window_busy_share (0..1),
//   gpscope_window_sm_utilization_percent{source="gpm"|"estimate"},
//   gpscope_window_mem_bw_utilization_percent (only with GPM samples),
//   gpscope_window_kernel_p50_seconds, gpscope_window_kernel_p95_seconds;
// per process, labels job, host, rank, pid:
//   gpscope_window_start_timestamp_seconds, gpscope_window_end_timestamp_seconds,
//   gpscope_window_top_finding{rule, severity} = its cost share (none
//   without a finding), gpscope_window_events_not_analysed.
// A new summary of a process replaces its series; Forget() removes them.
// Thread model: the store's writer thread (the monitor's sampling thread).
class WindowGauges {
 public:
  explicit WindowGauges(MetricStore* store) : store_(store) {}
  WindowGauges(const WindowGauges&) = delete;
  WindowGauges& operator=(const WindowGauges&) = delete;

  void Publish(const analyses::WindowSummary& summary);
  void Forget(uint64_t process_uid);
  size_t processes() const { return handles_.size(); }

 private:
  MetricStore* store_;
  std::map<uint64_t, std::vector<uint32_t>> handles_;  // by process_uid
};

// Content-Type header values.
inline constexpr char kPrometheusTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr char kOpenMetricsContentType[] =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// Which format an Accept header asks for (OpenMetrics when it names it).
ExpositionFormat NegotiateFormat(std::string_view accept_header);

}  // namespace gpscope::monitor

#endif  // GPSCOPE_TOOLS_MONITOR_EXPOSITION_H_
