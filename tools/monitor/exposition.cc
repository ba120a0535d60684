// tools/monitor/exposition.cc: see exposition.h.
#include "tools/monitor/exposition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "proto/metric_names.h"

namespace gpscope::monitor {
namespace {

// proto MetricScope values (metrics/sampler.h kScope*).
constexpr uint32_t kDevice = 1;
constexpr uint32_t kProcess = 2;
constexpr uint32_t kHost = 3;

struct Known {
  const char* trace_name;
  uint32_t scope;
  const char* family;
  double scale;
  const char* help;
};

// The documented families (README "Node monitor" lists the same).
constexpr Known kKnown[] = {
    {metric_names::kNvmlGpuUtil, kDevice, "gpscope_gpu_util_percent", 1,
     "Percent of the last sample period in which a kernel ran (NVML utilization.gpu)."},
    {metric_names::kNvmlMemUtil, kDevice, "gpscope_gpu_memory_util_percent", 1,
     "Percent of the last sample period in which device memory was read or written."},
    {metric_names::kNvmlSmClockMhz, kDevice, "gpscope_gpu_sm_clock_hertz", 1e6, "SM clock."},
    {metric_names::kNvmlMemClockMhz, kDevice, "gpscope_gpu_memory_clock_hertz", 1e6,
     "Memory clock."},
    {metric_names::kNvmlClockEventReasons, kDevice, "gpscope_gpu_clock_event_reasons", 1,
     "Bitmask of NVML clock event (throttle) reasons; see gpscope_gpu_clock_event_active."},
    {metric_names::kNvmlPowerW, kDevice, "gpscope_gpu_power_watts", 1, "Power draw."},
    {metric_names::kNvmlPowerLimitW, kDevice, "gpscope_gpu_power_limit_watts", 1,
     "Enforced power limit."},
    {metric_names::kNvmlTemperatureC, kDevice, "gpscope_gpu_temperature_celsius", 1,
     "GPU temperature."},
    {metric_names::kNvmlMemoryUsedBytes, kDevice, "gpscope_gpu_memory_used_bytes", 1,
     "Device memory in use."},
    {metric_names::kNvmlPcieTxBytesPerS, kDevice, "gpscope_gpu_nvml_pcie_tx_bytes_per_second", 1,
     "PCIe transmit throughput (NVML counter, opt-in)."},
    {metric_names::kNvmlPcieRxBytesPerS, kDevice, "gpscope_gpu_nvml_pcie_rx_bytes_per_second", 1,
     "PCIe receive throughput (NVML counter, opt-in)."},
    {metric_names::kGpmSmUtil, kDevice, "gpscope_gpu_sm_util_percent", 1,
     "Percent of SMs busy, averaged over the last sample period (GPM)."},
    {metric_names::kGpmSmOccupancy, kDevice, "gpscope_gpu_sm_occupancy_percent", 1,
     "Achieved warp occupancy of the SMs (GPM)."},
    {metric_names::kGpmTensorUtil, kDevice, "gpscope_gpu_tensor_util_percent", 1,
     "Tensor pipe utilization, any precision (GPM)."},
    {metric_names::kGpmDramBwUtil, kDevice, "gpscope_gpu_dram_bandwidth_util_percent", 1,
     "Percent of peak DRAM bandwidth used (GPM)."},
    {metric_names::kGpmFp16Util, kDevice, "gpscope_gpu_fp16_util_percent", 1,
     "FP16 pipe utilization (GPM)."},
    {metric_names::kGpmFp32Util, kDevice, "gpscope_gpu_fp32_util_percent", 1,
     "FP32 pipe utilization (GPM)."},
    {metric_names::kGpmFp64Util, kDevice, "gpscope_gpu_fp64_util_percent", 1,
     "FP64 pipe utilization (GPM)."},
    {metric_names::kGpmPcieTxBytesPerS, kDevice, "gpscope_gpu_pcie_tx_bytes_per_second", 1,
     "PCIe transmit throughput (GPM)."},
    {metric_names::kGpmPcieRxBytesPerS, kDevice, "gpscope_gpu_pcie_rx_bytes_per_second", 1,
     "PCIe receive throughput (GPM)."},
    {metric_names::kGpmNvlinkTxBytesPerS, kDevice, "gpscope_gpu_nvlink_tx_bytes_per_second", 1,
     "NVLink transmit throughput, all links (GPM)."},
    {metric_names::kGpmNvlinkRxBytesPerS, kDevice, "gpscope_gpu_nvlink_rx_bytes_per_second", 1,
     "NVLink receive throughput, all links (GPM)."},
    {metric_names::kNvmlProcessMemoryBytes, kProcess, "gpscope_gpu_process_memory_bytes", 1,
     "Device memory used by a process on a GPU."},
    {metric_names::kNvmlProcessSmUtil, kProcess, "gpscope_gpu_process_sm_util_percent", 1,
     "SM utilization of a process on a GPU over the last sample period (NVML)."},
    {metric_names::kHostProcessCpuUserPct, kProcess, "gpscope_monitor_cpu_user_percent", 1,
     "The monitor's own user CPU time, percent of one core."},
    {metric_names::kHostProcessCpuSystemPct, kProcess, "gpscope_monitor_cpu_system_percent", 1,
     "The monitor's own system CPU time, percent of one core."},
    {metric_names::kHostRssBytes, kProcess, "gpscope_monitor_resident_memory_bytes", 1,
     "The monitor's resident memory."},
    {metric_names::kGpscopeSamplerCpuPct, kProcess, "gpscope_monitor_sampler_cpu_percent", 1,
     "CPU time spent sampling, percent of one core."},
    {metric_names::kHostCpuUtilPct, kHost, "gpscope_node_cpu_util_percent", 1,
     "Busy share of all CPUs of the node."},
    {metric_names::kHostIowaitPct, kHost, "gpscope_node_iowait_percent", 1,
     "Iowait share of all CPUs of the node."},
};

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

std::string EscapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].first;
    out += "=\"";
    out += EscapeLabelValue(labels[i].second);
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace

bool MapTraceMetric(std::string_view trace_name, uint32_t scope, FamilySpec* out) {
  if (trace_name == metric_names::kHostThreadCpuPct) return false;
  for (const Known& k : kKnown) {
    if (trace_name == k.trace_name && scope == k.scope) {
      *out = FamilySpec{k.family, k.help, MetricType::kGauge, k.scale, false};
      return true;
    }
  }
  std::string name = "gpscope_";
  for (char c : trace_name) name += IsNameChar(c, false) && c != ':' ? c : '_';
  *out = FamilySpec{name, "gpscope metric " + std::string(trace_name) + " (not documented).",
                    MetricType::kGauge, 1, false};
  return true;
}

FamilySpec ClockEventActiveFamily() {
  return FamilySpec{"gpscope_gpu_clock_event_active",
                    "1 while an NVML clock event (throttle) reason holds the clocks down.",
                    MetricType::kGauge, 1, false};
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0)) return false;
  }
  return true;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    // Shortest text that reads back to the same double.
    for (int precision = 6; precision < 17; ++precision) {
      char shorter[32];
      std::snprintf(shorter, sizeof(shorter), "%.*g", precision, value);
      if (std::strtod(shorter, nullptr) == value) {
        std::snprintf(buf, sizeof(buf), "%s", shorter);
        break;
      }
    }
  }
  return buf;
}

uint32_t MetricStore::AddSeries(const FamilySpec& family, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t f = 0;
  while (f < families_.size() && families_[f].spec.name != family.name) ++f;
  if (f == families_.size()) families_.push_back(Family{family, {}});
  uint32_t handle;
  if (!free_.empty()) {  // a removed series' slot: the table does not grow with churn
    handle = free_.back();
    free_.pop_back();
    series_[handle] = Series{f, RenderLabels(labels)};
  } else {
    handle = static_cast<uint32_t>(series_.size());
    series_.push_back(Series{f, RenderLabels(labels)});
  }
  families_[f].series.push_back(handle);
  return handle;
}

void MetricStore::RemoveSeries(uint32_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (handle >= series_.size() || series_[handle].removed) return;
  Series& s = series_[handle];
  s.removed = true;
  std::vector<uint32_t>& list = families_[s.family].series;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == handle) {
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  s.labels.clear();
  s.labels.shrink_to_fit();
  free_.push_back(handle);
  // A value staged for it this round must not land on the slot's next owner.
  staged_.erase(std::remove_if(staged_.begin(), staged_.end(),
                               [handle](const std::pair<uint32_t, double>& v) {
                                 return v.first == handle;
                               }),
                staged_.end());
}

void MetricStore::Stage(uint32_t handle, double value) { staged_.emplace_back(handle, value); }

void MetricStore::Commit() {
  std::lock_guard<std::mutex> lock(mu_);
  ++round_;
  for (const auto& [handle, value] : staged_) {
    if (handle >= series_.size()) continue;
    Series& s = series_[handle];
    s.value = value * families_[s.family].spec.scale;
    s.round = round_;
  }
  staged_.clear();
}

std::string MetricStore::Render(ExpositionFormat format) {
  const bool om = format == ExpositionFormat::kOpenMetrics;
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  ++scrapes_;
  out.reserve(series_.size() * 96 + families_.size() * 128);
  for (const Family& f : families_) {
    bool header = false;
    for (uint32_t h : f.series) {
      const Series& s = series_[h];
      if (s.round == 0) continue;
      const uint64_t stale = f.spec.stale_rounds != 0 ? f.spec.stale_rounds : stale_rounds_;
      if (!f.spec.never_stale && s.round + stale <= round_) continue;
      if (!header) {
        std::string family_name = f.spec.name;
        // OpenMetrics names a counter family without its _total suffix.
        if (om && f.spec.type == MetricType::kCounter && family_name.size() > 6 &&
            family_name.compare(family_name.size() - 6, 6, "_total") == 0) {
          family_name.resize(family_name.size() - 6);
        }
        out += "# HELP " + family_name + " " + EscapeHelp(f.spec.help) + "\n";
        out += "# TYPE " + family_name +
               (f.spec.type == MetricType::kCounter ? " counter\n" : " gauge\n");
        header = true;
      }
      out += f.spec.name;
      out += s.labels;
      out += ' ';
      out += FormatValue(s.value);
      out += '\n';
    }
  }
  if (om) out += "# EOF\n";
  return out;
}

uint64_t MetricStore::scrapes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scrapes_;
}

size_t MetricStore::live_series() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const Family& f : families_) n += f.series.size();
  return n;
}

ExpositionFormat NegotiateFormat(std::string_view accept_header) {
  return accept_header.find("application/openmetrics-text") != std::string_view::npos
             ? ExpositionFormat::kOpenMetrics
             : ExpositionFormat::kPrometheusText;
}

// ------------------------------------------------------- window gauges --

namespace {

FamilySpec WindowFamily(const char* name, const char* help) {
  FamilySpec f{name, help, MetricType::kGauge, 1, /*never_stale=*/true};
  return f;
}

}  // namespace

void WindowGauges::Publish(const analyses::WindowSummary& s) {
  Forget(s.process_uid);
  std::vector<uint32_t>& handles = handles_[s.process_uid];
  const Labels process = {{"job", s.job_id},
                          {"host", s.hostname},
                          {"rank", s.rank >= 0 ? std::to_string(s.rank) : ""},
                          {"pid", std::to_string(s.pid)}};
  auto set = [&](const FamilySpec& family, const Labels& labels, double value) {
    const uint32_t h = store_->AddSeries(family, labels);
    store_->Stage(h, value);
    handles.push_back(h);
  };
  static const FamilySpec kIdle = WindowFamily(
      "gpscope_window_idle_share",
      "Idle-gap share of the latest capture window: GPU time idle in gaps of 5 ms or more over "
      "the traced window (gpscope-analyze summary's idle-gap share), 0..1.");
  static const FamilySpec kBusy = WindowFamily(
      "gpscope_window_busy_share",
      "Share of the latest capture window in which kernels, copies or memsets ran, 0..1.");
  static const FamilySpec kSm = WindowFamily(
      "gpscope_window_sm_utilization_percent",
      "SM utilization over the latest capture window: measured (source=gpm, gpm.sm_util) or "
      "estimated from launch shapes (source=estimate).");
  static const FamilySpec kDram = WindowFamily(
      "gpscope_window_mem_bw_utilization_percent",
      "DRAM bandwidth utilization over the latest capture window (gpm.dram_bw_util; only when "
      "the traced process sampled GPM).");
  static const FamilySpec kP50 = WindowFamily(
      "gpscope_window_kernel_p50_seconds", "Median kernel duration in the latest capture window.");
  static const FamilySpec kP95 = WindowFamily(
      "gpscope_window_kernel_p95_seconds",
      "95th percentile kernel duration in the latest capture window.");
  static const FamilySpec kStart = WindowFamily(
      "gpscope_window_start_timestamp_seconds",
      "Unix time of the latest summarized capture window's first activity.");
  static const FamilySpec kEnd = WindowFamily("gpscope_window_end_timestamp_seconds",
                                              "Unix time of the latest summarized window's end.");
  static const FamilySpec kTop = WindowFamily(
      "gpscope_window_top_finding",
      "The latest capture window's top finding (gpscope-analyze's rules; rule, severity): its "
      "estimated cost over the traced window.");
  static const FamilySpec kNotAnalysed = WindowFamily(
      "gpscope_window_events_not_analysed",
      "Events of the latest capture window past the monitor's cap (--window-max-events): its "
      "numbers undercount when above 0.");
  for (const analyses::WindowGpuSummary& g : s.gpus) {
    Labels labels = process;
    labels.emplace_back("gpu", std::to_string(g.device_id));
    labels.emplace_back("uuid", g.uuid);
    set(kIdle, labels, g.idle_share);
    set(kBusy, labels, g.busy_share);
    if (g.sm_util_pct >= 0) {
      Labels sm = labels;
      sm.emplace_back("source", g.sm_util_estimated ? "estimate" : "gpm");
      set(kSm, sm, g.sm_util_pct);
    }
    if (g.mem_bw_util_pct >= 0) set(kDram, labels, g.mem_bw_util_pct);
    if (g.kernels > 0) {
      set(kP50, labels, static_cast<double>(g.kernel_p50_ns) * 1e-9);
      set(kP95, labels, static_cast<double>(g.kernel_p95_ns) * 1e-9);
    }
  }
  set(kStart, process, static_cast<double>(s.start_realtime_ns) * 1e-9);
  set(kEnd, process, static_cast<double>(s.end_realtime_ns) * 1e-9);
  set(kNotAnalysed, process, static_cast<double>(s.events_not_analysed));
  if (!s.top_rule.empty()) {
    Labels top = process;
    top.emplace_back("rule", s.top_rule);
    top.emplace_back("severity", s.top_severity);
    set(kTop, top, s.top_cost_share);
  }
}

void WindowGauges::Forget(uint64_t process_uid) {
  auto it = handles_.find(process_uid);
  if (it == handles_.end()) return;
  for (uint32_t h : it->second) store_->RemoveSeries(h);
  handles_.erase(it);
}

}  // namespace gpscope::monitor
