// tools/render/metrics_render.cc: see metrics_render.h.
#include "tools/render/metrics_render.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "tools/render/json_writer.h"
#include "tools/render/read_status.h"
#include "tools/render/text_format.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/time_origin.h"

namespace gpscope::render {
namespace {

using analyses::Accumulator;
using analyses::GpuSeries;
using analyses::GpuSummary;
using analyses::GpuWindow;
using analyses::MetricsReport;
using analyses::ProcessSeries;
using analyses::Sharing;
using analyses::kMinTrendSpanNs;
using analyses::kMinTrendWindows;
using analyses::kThrottleReasonCount;
using analyses::kThrottleReasons;

absl::Time Wall(uint64_t ns) {
  return absl::FromUnixNanos(static_cast<int64_t>(std::min<uint64_t>(ns, INT64_MAX)));
}
std::string Iso(uint64_t ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", Wall(ns), absl::UTCTimeZone());
}
std::string Clock(uint64_t ns) {
  return absl::FormatTime("%H:%M:%S", Wall(ns), absl::UTCTimeZone());
}
std::string Day(uint64_t ns) {
  return absl::FormatTime("%Y-%m-%d", Wall(ns), absl::UTCTimeZone());
}
uint64_t WindowStart(int64_t w, uint64_t window_ns) {
  return static_cast<uint64_t>(w) * window_ns;
}

std::string GiB(double bytes) { return absl::StrFormat("%.1f GiB", bytes / (1024.0 * 1024 * 1024)); }

std::string Pct(const Accumulator& a) {
  return a.count ? absl::StrFormat("%.0f", a.mean()) : std::string("-");
}

std::string GpuName(const GpuSeries& g, bool many_hosts) {
  std::string s = absl::StrCat("GPU ", g.index);
  if (many_hosts) s = absl::StrCat(g.host, " ", s);
  return s;
}

std::string PidList(const std::set<uint32_t>& pids) { return absl::StrJoin(pids, ", "); }

// A window summary's utilization: "-" when not available, "~" marks an
// estimate from launch shapes.
std::string UtilText(double pct, bool estimated) {
  if (pct < 0) return "-";
  return absl::StrFormat("%s%.0f", estimated ? "~" : "", pct);
}

// The monitor's capture-window summaries (--traces): one line per window
// and GPU, the most recent last.
std::string WindowSummariesText(const MetricsReport& r) {
  constexpr size_t kShown = 60;
  std::string out =
      "\nCapture windows summarized by the monitor (--traces; idle = idle-gap share, ~ = "
      "estimated)\n";
  out += absl::StrFormat("  %-8s %-16s %-12s %4s %8s %3s %5s %5s %4s %5s %9s %9s  %s\n",
                         "end UTC", "job", "host", "rank", "pid", "gpu", "idle%", "busy%", "sm%",
                         "dram%", "p50", "p95", "top finding (cost share)");
  const size_t n = r.window_summaries.size();
  if (n > kShown || r.window_summaries_omitted > 0) {
    out += absl::StrFormat("  ... %d earlier window(s) (--format json has the first %d)\n",
                           n - std::min(n, kShown) + r.window_summaries_omitted, n);
  }
  if (r.window_summaries_repeated > 0) {
    out += absl::StrFormat(
        "  (%d summaries of windows listed here came again from another monitor file, e.g. "
        "after a monitor restart: each window is listed once)\n",
        r.window_summaries_repeated);
  }
  for (size_t i = n - std::min(n, kShown); i < n; ++i) {
    const analyses::WindowSummary& w = r.window_summaries[i];
    std::string top = w.top_rule.empty()
                          ? "none"
                          : absl::StrFormat("%s (%s, %.0f%%)", w.top_rule, w.top_severity,
                                            100 * w.top_cost_share);
    if (w.events_not_analysed > 0) {
      absl::StrAppend(&top, "; ", Count(w.events_not_analysed), " events not analysed");
    }
    const std::string rank = w.rank >= 0 ? absl::StrCat(w.rank) : "-";
    if (w.gpus.empty()) {
      out += absl::StrFormat("  %-8s %-16s %-12s %4s %8d %3s %5s %5s %4s %5s %9s %9s  %s\n",
                             Clock(w.end_realtime_ns), Ellipsize(w.job_id, 16),
                             Ellipsize(w.hostname, 12), rank, w.pid, "-", "-", "-", "-", "-", "-",
                             "-", top);
    }
    for (size_t g = 0; g < w.gpus.size(); ++g) {
      const analyses::WindowGpuSummary& x = w.gpus[g];
      out += absl::StrFormat(
          "  %-8s %-16s %-12s %4s %8d %3d %5.1f %5.1f %4s %5s %9s %9s  %s\n",
          Clock(w.end_realtime_ns), Ellipsize(w.job_id, 16), Ellipsize(w.hostname, 12), rank,
          w.pid, x.device_id, 100 * x.idle_share, 100 * x.busy_share,
          UtilText(x.sm_util_pct, x.sm_util_estimated), UtilText(x.mem_bw_util_pct, false),
          x.kernels ? Time(x.kernel_p50_ns) : "-", x.kernels ? Time(x.kernel_p95_ns) : "-",
          g == 0 ? top : "");
    }
  }
  return out;
}


}  // namespace

std::string RenderMetricsText(const MetricsReport& r) {
  const uint64_t wns = r.options.window_ns;
  std::set<std::string> hosts;
  for (const GpuSeries& g : r.gpus) hosts.insert(g.host);
  const bool many_hosts = hosts.size() > 1;
  std::string out = absl::StrFormat(
      "gpscope metrics: %d file(s), %s, %d GPU(s), %d process(es) on them, window %s\n",
      r.index.files.size(), hosts.empty() ? "no host" : absl::StrJoin(hosts, ", "), r.gpus.size(),
      r.processes.size(),
      wns % 60000000000ull == 0 ? absl::StrCat(wns / 60000000000ull, " min")
                                : absl::StrCat(wns / 1000000000ull, " s"));
  absl::StrAppend(&out, "  ", TimeOriginText(r.timebase), "\n");
  if (r.index.partial) absl::StrAppend(&out, "  ", PartialText(r.index), "\n");
  if (r.samples == 0) {
    out += "  no GPU metric samples in these files\n";
  } else {
    out += absl::StrFormat("  %s %s .. %s UTC, %d samples\n", Day(r.first_ns), Clock(r.first_ns),
                           Clock(r.last_ns), r.samples);
  }
  for (const std::string& src : r.replayed) {
    out += "  NOTE: GPU readings REPLAYED from " + src + " (no GPU): not real hardware\n";
  }
  for (const std::string& w : r.index.warnings) out += "  warning: " + w + "\n";

  if (!r.gpus.empty()) {
    out += "\nGPUs (means over the whole span)\n";
    out += absl::StrFormat("  %-10s %-44s %5s %5s %7s %5s %10s %7s  %s\n", "gpu", "uuid", "util%",
                           "sm%", "tensor%", "dram%", "mem max", "power W", "idle windows");
    for (const GpuSeries& g : r.gpus) {
      const GpuSummary s = Summarize(g, r.options.idle_util_pct);
      out += absl::StrFormat(
          "  %-10s %-44s %5s %5s %7s %5s %10s %7s  %d/%d\n", GpuName(g, many_hosts), g.uuid,
          Pct(s.util), Pct(s.sm), Pct(s.tensor), Pct(s.dram),
          s.memory_used.count ? GiB(s.memory_used.max) : "-",
          s.power.count ? absl::StrFormat("%.0f", s.power.mean()) : "-", s.idle_windows,
          g.windows.size());
    }
  }

  std::string idle;
  for (const GpuSeries& g : r.gpus) {
    const GpuSummary s = Summarize(g, r.options.idle_util_pct);
    if (s.idle_windows == 0) continue;
    std::vector<std::string> when;
    for (const auto& [w, gw] : g.windows) {
      if (IsIdle(gw, r.options.idle_util_pct) && when.size() < 12) when.push_back(Clock(WindowStart(w, wns)));
    }
    idle += absl::StrFormat("  %s: idle in %d of %d windows%s (from %s)\n", GpuName(g, many_hosts),
                            s.idle_windows, g.windows.size(),
                            s.idle_windows == g.windows.size() ? " (the whole time)" : "",
                            absl::StrJoin(when, ", "));
  }
  out += absl::StrFormat("\nIdle GPUs (utilization below %.0f%% and no process)\n", r.options.idle_util_pct);
  out += idle.empty() ? "  none\n" : idle;

  std::string throttle;
  for (const GpuSeries& g : r.gpus) {
    const GpuSummary s = Summarize(g, r.options.idle_util_pct);
    for (int k = 0; k < kThrottleReasonCount; ++k) {
      if (s.reason_hits[k] == 0) continue;
      std::vector<std::string> when;
      for (const auto& [w, gw] : g.windows) {
        if (gw.reason_hits[k] > 0 && when.size() < 12) when.push_back(Clock(WindowStart(w, wns)));
      }
      throttle += absl::StrFormat("  %s: %s in %.0f%% of samples (windows from %s)\n",
                                  GpuName(g, many_hosts), kThrottleReasons[k].name,
                                  100.0 * static_cast<double>(s.reason_hits[k]) /
                                      static_cast<double>(s.reason_samples),
                                  absl::StrJoin(when, ", "));
    }
  }
  out += "\nThrottling (clock event reasons: power cap, slowdown, thermal, power brake)\n";
  out += throttle.empty() ? "  none\n" : throttle;

  out += "\nProcesses on GPUs\n";
  if (r.processes.empty()) {
    out += "  none seen\n";
  } else {
    out += absl::StrFormat("  %-8s %-18s %-6s %-19s %8s %8s %10s\n", "pid", "name", "gpu",
                           "seen (UTC)", "sm% mean", "sm% max", "mem max");
    for (const ProcessSeries& p : r.processes) {
      out += absl::StrFormat("  %-8d %-18s %-6d %-19s %8s %8s %10s\n", p.pid,
                             Ellipsize(p.name, 18), p.gpu,
                             absl::StrCat(Clock(p.first_ns), "..", Clock(p.last_ns)), Pct(p.sm),
                             p.sm.count ? absl::StrFormat("%.0f", p.sm.max) : "-",
                             p.memory.count ? GiB(p.memory.max) : "-");
    }
  }

  std::string shared;
  for (const GpuSeries& g : r.gpus) {
    for (const Sharing& s : SharedWindows(g)) {
      shared += absl::StrFormat("  %s: pids %s together in %d window(s), %s .. %s\n",
                                GpuName(g, many_hosts), PidList(s.pids), s.windows,
                                Clock(WindowStart(s.first, wns)),
                                Clock(WindowStart(s.last, wns) + wns));
    }
  }
  out += "\nShared GPUs (more than one process in a window)\n";
  out += shared.empty() ? "  none\n" : shared;

  out += "\nTrend per window: utilization% / SM% / memory used / processes\n";
  for (const GpuSeries& g : r.gpus) {
    double slope = 0;
    std::string trend;
    if (Trend(g, wns, &slope)) {
      trend = absl::StrFormat(" (trend %+.1f%% utilization per hour)", slope);
    } else if (!g.windows.empty()) {
      trend = absl::StrFormat(" (no trend: %.0f s of samples; a trend needs %d min and %d windows)",
                              static_cast<double>(g.last_ns - g.first_ns) / 1e9,
                              kMinTrendSpanNs / 60000000000ull, kMinTrendWindows);
    }
    out += absl::StrFormat("  %s%s\n", GpuName(g, many_hosts), trend);
    size_t shown = 0;
    for (const auto& [w, gw] : g.windows) {
      if (++shown > 60) {
        out += absl::StrFormat("    ... %d more windows (--format json has them all)\n",
                               g.windows.size() - 60);
        break;
      }
      out += absl::StrFormat("    %s  %4s / %4s / %10s / %s\n", Clock(WindowStart(w, wns)),
                             Pct(gw.util), Pct(gw.sm),
                             gw.memory_used.count ? GiB(gw.memory_used.mean()) : "-",
                             gw.pids.empty() ? "-" : PidList(gw.pids));
    }
  }
  if (!r.window_summaries.empty()) out += WindowSummariesText(r);
  return out;
}

std::string RenderMetricsJson(const MetricsReport& r) {
  const uint64_t wns = r.options.window_ns;
  std::string out;
  JsonWriter j(&out);
  auto mean_or_null = [&j](const Accumulator& a) {
    if (a.count) {
      j.Double(a.mean());
    } else {
      j.Null();
    }
  };
  j.BeginObject();
  WriteTimeOrigin(r.timebase, j);
  WritePartialJson(r.index, j);
  j.Key("window_s").Double(static_cast<double>(wns) / 1e9);
  j.Key("idle_below_pct").Double(r.options.idle_util_pct);
  j.Key("gpu_readings").String(r.replayed.empty() ? "recorded" : "replayed (no GPU)");
  j.Key("replayed_from").BeginArray();
  for (const std::string& s : r.replayed) j.String(s);
  j.EndArray();
  j.Key("files").BeginArray();
  for (const reader::FileInfo& f : r.index.files) {
    j.BeginObject().Key("path").String(f.path).Key("frames").Uint(f.frames);
    j.Key("error").String(f.status.ok() ? "" : std::string(f.status.message())).EndObject();
  }
  j.EndArray();
  j.Key("warnings").BeginArray();
  for (const std::string& w : r.index.warnings) j.String(w);
  j.EndArray();
  j.Key("samples").Uint(r.samples);
  j.Key("start_ns").Uint(r.first_ns).Key("end_ns").Uint(r.last_ns);
  j.Key("start").String(r.samples ? Iso(r.first_ns) : "");
  j.Key("end").String(r.samples ? Iso(r.last_ns) : "");

  j.Key("gpus").BeginArray();
  for (const GpuSeries& g : r.gpus) {
    const GpuSummary s = Summarize(g, r.options.idle_util_pct);
    j.BeginObject();
    j.Key("host").String(g.host).Key("gpu").Uint(g.index).Key("uuid").String(g.uuid);
    j.Key("name").String(g.name);
    j.Key("first_ns").Uint(g.first_ns).Key("last_ns").Uint(g.last_ns);
    j.Key("windows").Uint(g.windows.size());
    j.Key("util_pct_mean");
    mean_or_null(s.util);
    j.Key("sm_util_pct_mean");
    mean_or_null(s.sm);
    j.Key("tensor_util_pct_mean");
    mean_or_null(s.tensor);
    j.Key("dram_bw_util_pct_mean");
    mean_or_null(s.dram);
    j.Key("memory_used_bytes_max");
    if (s.memory_used.count) j.Double(s.memory_used.max); else j.Null();
    j.Key("power_w_mean");
    mean_or_null(s.power);
    j.Key("temperature_c_max");
    if (s.temperature.count) j.Double(s.temperature.max); else j.Null();
    j.Key("idle_windows").Uint(s.idle_windows);
    j.Key("idle").Bool(!g.windows.empty() && s.idle_windows == g.windows.size());
    j.Key("throttle").BeginObject();
    for (int k = 0; k < kThrottleReasonCount; ++k) {
      j.Key(kThrottleReasons[k].name).BeginObject().Key("samples").Uint(s.reason_hits[k]);
      j.Key("fraction").Double(s.reason_samples ? static_cast<double>(s.reason_hits[k]) /
                                                      static_cast<double>(s.reason_samples)
                                                : 0);
      j.EndObject();
    }
    j.EndObject();
    double slope = 0;
    j.Key("trend_util_pct_per_hour");
    if (Trend(g, wns, &slope)) j.Double(slope); else j.Null();
    j.Key("pids").BeginArray();
    for (uint32_t pid : s.pids) j.Uint(pid);
    j.EndArray();
    j.Key("shared").BeginArray();
    for (const Sharing& sh : SharedWindows(g)) {
      j.BeginObject().Key("pids").BeginArray();
      for (uint32_t pid : sh.pids) j.Uint(pid);
      j.EndArray().Key("windows").Uint(sh.windows);
      j.Key("first").String(Iso(WindowStart(sh.first, wns)));
      j.Key("last").String(Iso(WindowStart(sh.last, wns) + wns)).EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();

  j.Key("processes").BeginArray();
  for (const ProcessSeries& p : r.processes) {
    j.BeginObject();
    j.Key("host").String(p.host).Key("pid").Uint(p.pid).Key("name").String(p.name);
    j.Key("gpu").Uint(p.gpu).Key("uuid").String(p.gpu_uuid);
    j.Key("first_ns").Uint(p.first_ns).Key("last_ns").Uint(p.last_ns);
    j.Key("first").String(Iso(p.first_ns)).Key("last").String(Iso(p.last_ns));
    j.Key("sm_util_samples").Uint(p.sm.count);
    j.Key("sm_util_pct_mean");
    mean_or_null(p.sm);
    j.Key("sm_util_pct_max");
    if (p.sm.count) j.Double(p.sm.max); else j.Null();
    j.Key("memory_samples").Uint(p.memory.count);
    j.Key("memory_bytes_max");
    if (p.memory.count) j.Double(p.memory.max); else j.Null();
    j.EndObject();
  }
  j.EndArray();

  // Per window, every GPU and process seen in it.
  std::map<int64_t, std::vector<std::pair<const GpuSeries*, const GpuWindow*>>> by_window;
  for (const GpuSeries& g : r.gpus) {
    for (const auto& [w, gw] : g.windows) by_window[w].emplace_back(&g, &gw);
  }
  j.Key("windows").BeginArray();
  for (const auto& [w, list] : by_window) {
    j.BeginObject();
    j.Key("start").String(Iso(WindowStart(w, wns))).Key("start_ns").Uint(WindowStart(w, wns));
    j.Key("gpus").BeginArray();
    for (const auto& [g, gw] : list) {
      j.BeginObject().Key("host").String(g->host).Key("gpu").Uint(g->index);
      j.Key("uuid").String(g->uuid);
      j.Key("util_pct");
      mean_or_null(gw->util);
      j.Key("sm_util_pct");
      mean_or_null(gw->sm);
      j.Key("tensor_util_pct");
      mean_or_null(gw->tensor);
      j.Key("memory_used_bytes");
      mean_or_null(gw->memory_used);
      j.Key("power_w");
      mean_or_null(gw->power);
      j.Key("idle").Bool(IsIdle(*gw, r.options.idle_util_pct));
      j.Key("throttle").BeginArray();
      for (int k = 0; k < kThrottleReasonCount; ++k) {
        if (gw->reason_hits[k] > 0) j.String(kThrottleReasons[k].name);
      }
      j.EndArray();
      j.Key("pids").BeginArray();
      for (uint32_t pid : gw->pids) j.Uint(pid);
      j.EndArray().EndObject();
    }
    j.EndArray();
    j.Key("processes").BeginArray();
    for (const ProcessSeries& p : r.processes) {
      auto it = p.windows.find(w);
      if (it == p.windows.end()) continue;
      j.BeginObject().Key("pid").Uint(p.pid).Key("gpu").Uint(p.gpu).Key("name").String(p.name);
      j.Key("sm_util_pct");
      mean_or_null(it->second.sm);
      j.Key("memory_bytes");
      mean_or_null(it->second.memory);
      j.EndObject();
    }
    j.EndArray().EndObject();
  }
  j.EndArray();
  if (!r.window_summaries.empty()) {
    // Only in monitor files written with --traces (older outputs stay as they were).
    j.Key("capture_windows").BeginArray();
    for (const analyses::WindowSummary& w : r.window_summaries) {
      j.BeginObject();
      j.Key("job").String(w.job_id).Key("host").String(w.hostname).Key("rank").Int(w.rank);
      j.Key("pid").Uint(w.pid).Key("process_uid").Uint(w.process_uid);
      j.Key("start_ns").Uint(w.start_realtime_ns).Key("end_ns").Uint(w.end_realtime_ns);
      j.Key("start").String(Iso(w.start_realtime_ns)).Key("end").String(Iso(w.end_realtime_ns));
      j.Key("close_reason").String(w.close_reason).Key("trace").String(w.trace_path);
      j.Key("events").Uint(w.events).Key("events_not_analysed").Uint(w.events_not_analysed);
      j.Key("events_dropped").Uint(w.events_dropped);
      j.Key("gpus").BeginArray();
      for (const analyses::WindowGpuSummary& g : w.gpus) {
        j.BeginObject().Key("gpu").Uint(g.device_id).Key("uuid").String(g.uuid);
        j.Key("idle_share").Double(g.idle_share).Key("busy_share").Double(g.busy_share);
        j.Key("sm_util_pct");
        if (g.sm_util_pct >= 0) {
          j.Double(g.sm_util_pct);
        } else {
          j.Null();
        }
        j.Key("sm_util_estimated").Bool(g.sm_util_estimated);
        j.Key("mem_bw_util_pct");
        if (g.mem_bw_util_pct >= 0) {
          j.Double(g.mem_bw_util_pct);
        } else {
          j.Null();
        }
        j.Key("kernels").Uint(g.kernels).Key("kernel_p50_ns").Uint(g.kernel_p50_ns);
        j.Key("kernel_p95_ns").Uint(g.kernel_p95_ns).Key("traced_ns").Uint(g.traced_ns);
        j.EndObject();
      }
      j.EndArray();
      j.Key("top_finding");
      if (w.top_rule.empty()) {
        j.Null();
      } else {
        j.BeginObject().Key("rule").String(w.top_rule).Key("severity").String(w.top_severity);
        j.Key("title").String(w.top_title).Key("cost_ns").Uint(w.top_cost_ns);
        j.Key("cost_share").Double(w.top_cost_share).EndObject();
      }
      j.EndObject();
    }
    j.EndArray();
    j.Key("capture_windows_omitted").Uint(r.window_summaries_omitted);
    j.Key("capture_windows_repeated").Uint(r.window_summaries_repeated);
  }
  j.EndObject();
  out += "\n";
  return out;
}

}  // namespace gpscope::render
