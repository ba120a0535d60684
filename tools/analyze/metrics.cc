// tools/analyze/metrics.cc: see metrics.h.
#include "tools/analyze/metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "tools/analyze/cli.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/event_reader.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/time_origin.h"

namespace gpscope::analyze {
namespace {

constexpr uint32_t kScopeDevice = 1;   // proto SCOPE_DEVICE
constexpr uint32_t kScopeProcess = 2;  // proto SCOPE_PROCESS

enum class Field { kUtil, kSm, kTensor, kDram, kMemoryUsed, kPower, kTemperature, kSmClock,
                   kReasons, kProcSm, kProcMemory };

struct FieldName {
  const char* name;
  uint32_t scope;
  Field field;
};
constexpr FieldName kFields[] = {
    {"nvml.gpu_util", kScopeDevice, Field::kUtil},
    {"gpm.sm_util", kScopeDevice, Field::kSm},
    {"gpm.tensor_util", kScopeDevice, Field::kTensor},
    {"gpm.dram_bw_util", kScopeDevice, Field::kDram},
    {"nvml.memory_used_bytes", kScopeDevice, Field::kMemoryUsed},
    {"nvml.power_w", kScopeDevice, Field::kPower},
    {"nvml.temperature_c", kScopeDevice, Field::kTemperature},
    {"nvml.sm_clock_mhz", kScopeDevice, Field::kSmClock},
    {"nvml.clock_event_reasons", kScopeDevice, Field::kReasons},
    {"nvml.process_sm_util", kScopeProcess, Field::kProcSm},
    {"nvml.process_memory_bytes", kScopeProcess, Field::kProcMemory},
};

// An event sink of the reader's pass: devices, metric descriptors and the
// clock alignment are the reader's tables'. A sample goes to CLOCK_REALTIME
// through the alignment of the snapshots read so far (windows are a minute
// wide; later snapshots move a sample by microseconds).
class MetricsCollector : public reader::EventSink {
 public:
  explicit MetricsCollector(const MetricsOptions& options) : options_(options) {}

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h,
                const reader::ChunkPlace& place) override {
    Process& p = Of(t);
    p.host = h.hostname();
    std::string backend, replay;
    for (const proto::KeyValue& kv : h.config()) {
      if (kv.key() == "backend") backend = kv.value();
      if (kv.key() == "replay") replay = kv.value();
    }
    if (backend == "replay") replayed_.insert(replay.empty() ? place.file->path : replay);
  }

  void OnBatch(const reader::ResolvedBatch& rb) override {
    Process& p = Of(rb.tables);
    const proto::EventBatch& b = rb.batch;
    for (const proto::MetricDescriptor& d : b.metric_descriptors()) {
      if (const proto::MetricDescriptor* kept = rb.tables.Metric(d.id())) Define(p, *kept);
    }
    if (b.metrics().metric_id_size() > 0) {
      if (!rb.decode_status.ok()) {
        Warn(absl::StrCat(rb.place.file->path, ": offset ", rb.place.offset, ": ",
                          rb.decode_status.message(), "; metric samples skipped"));
        return;
      }
      for (const format::MetricSample& s : rb.events.metrics) Add(p, s);
    }
  }

  void OnWarning(std::string_view warning) override { Warn(std::string(warning)); }

  MetricsReport Finish(reader::ReadResult read) {
    MetricsReport r;
    reader::TraceIndex& index = read.index;
    index.warnings = std::move(warnings_);
    r.index = std::move(index);
    r.timebase = std::move(read.timebase);
    r.options = options_;
    r.samples = sample_count_;
    r.first_ns = first_ns_;
    r.last_ns = last_ns_;
    r.replayed = std::move(replayed_);
    r.gpus = std::move(gpus_);
    r.processes = std::move(procs_);
    std::sort(r.gpus.begin(), r.gpus.end(), [](const GpuSeries& a, const GpuSeries& b) {
      return std::tie(a.host, a.index, a.uuid) < std::tie(b.host, b.index, b.uuid);
    });
    std::sort(r.processes.begin(), r.processes.end(),
              [](const ProcessSeries& a, const ProcessSeries& b) {
                return std::tie(a.host, a.gpu, a.first_ns, a.pid) <
                       std::tie(b.host, b.gpu, b.first_ns, b.pid);
              });
    return r;
  }

 private:
  struct Target {
    Field field;
    size_t gpu = SIZE_MAX;   // gpus_ index
    size_t proc = SIZE_MAX;  // procs_ index
  };
  struct Process {
    std::string host;
    const reader::ProcessTables* tables = nullptr;  // devices, clocks
    absl::flat_hash_map<uint32_t, Target> targets;  // metric id -> where
  };

  Process& Of(const reader::ProcessTables& t) {
    Process& p = processes_[t.process_uid()];
    p.tables = &t;
    return p;
  }

  void Warn(std::string w) {
    if (warnings_.size() < 1000) warnings_.push_back(std::move(w));
  }

  size_t GpuSlot(const Process& p, uint32_t device_id, std::string uuid) {
    std::string name;
    if (const proto::DeviceInfo* dev = p.tables->Device(device_id)) {
      if (uuid.empty()) uuid = dev->uuid();
      name = dev->name();
    }
    const std::string key = absl::StrCat(p.host, "\n", uuid.empty() ? absl::StrCat("#", device_id)
                                                                    : uuid);
    auto [it, inserted] = gpu_slots_.try_emplace(key, gpus_.size());
    if (inserted) {
      GpuSeries g;
      g.host = p.host;
      g.uuid = uuid;
      g.name = name;
      g.index = device_id;
      gpus_.push_back(std::move(g));
    } else if (gpus_[it->second].name.empty()) {
      gpus_[it->second].name = name;
    }
    return it->second;
  }

  void Define(Process& p, const proto::MetricDescriptor& d) {
    for (const FieldName& f : kFields) {
      if (d.name() != f.name || d.scope() != static_cast<int>(f.scope)) continue;
      Target t{f.field};
      if (f.scope == kScopeDevice) {
        t.gpu = GpuSlot(p, d.device_id(), d.label());
      } else {
        t.gpu = GpuSlot(p, d.device_id(), "");
        const std::string key = absl::StrCat(p.host, "\n", gpus_[t.gpu].uuid, "\n",
                                             d.device_id(), "\n", d.pid(), "\n", d.label());
        auto [it, inserted] = proc_slots_.try_emplace(key, procs_.size());
        if (inserted) {
          ProcessSeries s;
          s.host = p.host;
          s.gpu_uuid = gpus_[t.gpu].uuid;
          s.gpu = d.device_id();
          s.pid = d.pid();
          s.name = d.label();
          procs_.push_back(std::move(s));
        }
        t.proc = it->second;
      }
      p.targets[d.id()] = t;
      return;
    }
  }

  void Add(Process& p, const format::MetricSample& s) {
    auto it = p.targets.find(s.metric_id);
    if (it == p.targets.end()) return;
    const Target& t = it->second;
    const uint64_t ts = p.tables->clocks().ToRealtimeNs(s.timestamp_ns);
    ++sample_count_;
    first_ns_ = first_ns_ == 0 ? ts : std::min(first_ns_, ts);
    last_ns_ = std::max(last_ns_, ts);
    const int64_t w = static_cast<int64_t>(ts / options_.window_ns);
    GpuSeries& g = gpus_[t.gpu];
    g.first_ns = g.first_ns == 0 ? ts : std::min(g.first_ns, ts);
    g.last_ns = std::max(g.last_ns, ts);
    const double v = s.value;
    if (!std::isfinite(v)) return;  // not a reading (a hostile or broken sample)
    GpuWindow& gw = g.windows[w];
    switch (t.field) {
      case Field::kUtil: gw.util.Add(v); break;
      case Field::kSm: gw.sm.Add(v); break;
      case Field::kTensor: gw.tensor.Add(v); break;
      case Field::kDram: gw.dram.Add(v); break;
      case Field::kMemoryUsed: gw.memory_used.Add(v); break;
      case Field::kPower: gw.power.Add(v); break;
      case Field::kTemperature: gw.temperature.Add(v); break;
      case Field::kSmClock: gw.sm_clock.Add(v); break;
      case Field::kReasons: {
        ++gw.reason_samples;
        const uint64_t bits = v >= 0 && v < 1.8e19 ? static_cast<uint64_t>(v) : 0;
        for (int r = 0; r < kThrottleReasonCount; ++r) {
          if (bits & kThrottleReasons[r].mask) ++gw.reason_hits[r];
        }
        break;
      }
      case Field::kProcSm:
      case Field::kProcMemory: {
        ProcessSeries& ps = procs_[t.proc];
        ps.first_ns = ps.first_ns == 0 ? ts : std::min(ps.first_ns, ts);
        ps.last_ns = std::max(ps.last_ns, ts);
        ProcessWindow& pw = ps.windows[w];
        if (t.field == Field::kProcSm) {
          ps.sm.Add(v);
          pw.sm.Add(v);
        } else {
          ps.memory.Add(v);
          pw.memory.Add(v);
        }
        gw.pids.insert(ps.pid);
        break;
      }
    }
  }

  MetricsOptions options_;
  absl::flat_hash_map<uint64_t, Process> processes_;  // by process_uid
  absl::flat_hash_map<std::string, size_t> gpu_slots_;
  absl::flat_hash_map<std::string, size_t> proc_slots_;
  std::vector<GpuSeries> gpus_;
  std::vector<ProcessSeries> procs_;
  std::vector<std::string> warnings_;
  std::set<std::string> replayed_;
  uint64_t sample_count_ = 0;
  uint64_t first_ns_ = 0, last_ns_ = 0;
};

// ------------------------------------------------------------- derivations --

bool IsIdle(const GpuWindow& w, double threshold) {
  if (!w.pids.empty()) return false;
  if (w.util.count > 0) return w.util.mean() < threshold;
  if (w.sm.count > 0) return w.sm.mean() < threshold;
  return false;  // nothing known about the window
}

// The utilization trend in percent per hour: least squares over the
// windows' mean utilization (GPM SM utilization where NVML's is missing).
// Not computed (false) over less than kMinTrendSpanNs of samples or fewer
// than kMinTrendWindows windows: a slope there is noise, not a trend.
bool Trend(const GpuSeries& g, uint64_t window_ns, double* pct_per_hour) {
  if (g.last_ns < g.first_ns + kMinTrendSpanNs || g.windows.size() < kMinTrendWindows) {
    return false;
  }
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [w, gw] : g.windows) {
    const Accumulator& a = gw.util.count > 0 ? gw.util : gw.sm;
    if (a.count == 0) continue;
    const double x = static_cast<double>(w) * static_cast<double>(window_ns) / 3.6e12;  // hours
    n += 1;
    sx += x;
    sy += a.mean();
    sxx += x * x;
    sxy += x * a.mean();
  }
  const double den = n * sxx - sx * sx;
  if (n < 2 || den <= 0) return false;
  *pct_per_hour = (n * sxy - sx * sy) / den;
  return true;
}

struct GpuSummary {
  Accumulator util, sm, tensor, dram, memory_used, power, temperature;
  uint64_t reason_samples = 0;
  uint64_t reason_hits[kThrottleReasonCount] = {};
  uint64_t idle_windows = 0;
  std::set<uint32_t> pids;
};

void Merge(Accumulator& into, const Accumulator& a) {
  if (a.count == 0) return;
  into.max = into.count == 0 ? a.max : std::max(into.max, a.max);
  into.sum += a.sum;
  into.count += a.count;
}

GpuSummary Summarize(const GpuSeries& g, double idle_threshold) {
  GpuSummary s;
  for (const auto& [w, gw] : g.windows) {
    Merge(s.util, gw.util);
    Merge(s.sm, gw.sm);
    Merge(s.tensor, gw.tensor);
    Merge(s.dram, gw.dram);
    Merge(s.memory_used, gw.memory_used);
    Merge(s.power, gw.power);
    Merge(s.temperature, gw.temperature);
    s.reason_samples += gw.reason_samples;
    for (int r = 0; r < kThrottleReasonCount; ++r) s.reason_hits[r] += gw.reason_hits[r];
    if (IsIdle(gw, idle_threshold)) ++s.idle_windows;
    s.pids.insert(gw.pids.begin(), gw.pids.end());
  }
  return s;
}

struct Sharing {
  std::set<uint32_t> pids;
  uint64_t windows = 0;
  int64_t first = 0, last = 0;
};

std::vector<Sharing> SharedWindows(const GpuSeries& g) {
  std::vector<Sharing> out;
  for (const auto& [w, gw] : g.windows) {
    if (gw.pids.size() < 2) continue;
    const auto& pids = gw.pids;  // clang 14 cannot capture a structured binding
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Sharing& s) { return s.pids == pids; });
    if (it == out.end()) {
      out.push_back(Sharing{gw.pids, 0, w, w});
      it = out.end() - 1;
    }
    ++it->windows;
    it->last = w;
  }
  return out;
}

// ------------------------------------------------------------- formatting --

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

}  // namespace

MetricsReport CollectMetrics(const std::vector<std::string>& paths, const MetricsOptions& options) {
  MetricsCollector collector(options);
  return collector.Finish(reader::ReadEvents(paths, {&collector}));
}

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
  absl::StrAppend(&out, "  ", render::TimeOriginText(r.timebase), "\n");
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
                             render::Ellipsize(p.name, 18), p.gpu,
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
  return out;
}

std::string RenderMetricsJson(const MetricsReport& r) {
  const uint64_t wns = r.options.window_ns;
  std::string out;
  render::JsonWriter j(&out);
  auto mean_or_null = [&j](const Accumulator& a) {
    if (a.count) {
      j.Double(a.mean());
    } else {
      j.Null();
    }
  };
  j.BeginObject();
  render::WriteTimeOrigin(r.timebase, j);
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
  j.EndObject();
  out += "\n";
  return out;
}

int RunMetrics(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"format", "window", "idle-below"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " metrics: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    out << "usage: " << kProgram
        << " metrics [--window 60s] [--idle-below PCT] [--format text|json] FILE...\n\n"
           "Per window and GPU: utilization, memory, power, throttling, processes; idle GPUs,\n"
           "shared GPUs and trends. Reads node monitor files (gpscope-monitor) or any trace\n"
           "with metric samples. --window takes seconds or 30s, 5m, 1h (default 1m).\n";
    return kExitOk;
  }
  MetricsOptions options;
  std::string format = "text";
  if (parsed->has("format")) format = parsed->flags.at("format");
  if (format != "text" && format != "json") {
    err << kProgram << " metrics: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  if (parsed->has("window")) {
    std::string w = parsed->flags.at("window");
    uint64_t unit = 1000000000ull;
    if (!w.empty() && (w.back() == 's' || w.back() == 'm' || w.back() == 'h')) {
      unit = w.back() == 's' ? 1000000000ull : w.back() == 'm' ? 60000000000ull : 3600000000000ull;
      w.pop_back();
    }
    uint64_t n = 0;
    if (!absl::SimpleAtoi(w, &n) || n == 0 || n > 7 * 24 * 3600) {
      err << kProgram << " metrics: --window must be a duration such as 30s, 1m or 1h, not '"
          << parsed->flags.at("window") << "'\n";
      return kExitUsage;
    }
    options.window_ns = n * unit;
  }
  if (parsed->has("idle-below")) {
    double v = 0;
    if (!absl::SimpleAtod(parsed->flags.at("idle-below"), &v) || v < 0 || v > 100) {
      err << kProgram << " metrics: --idle-below must be a percentage in 0..100\n";
      return kExitUsage;
    }
    options.idle_util_pct = v;
  }
  if (parsed->positional.empty()) {
    err << kProgram << " metrics: no trace file given (usage: " << kProgram
        << " metrics [--window 1m] [--format text|json] FILE...)\n";
    return kExitUsage;
  }
  const MetricsReport report = CollectMetrics(parsed->positional, options);
  const absl::Status file_error = report.index.FirstFileError();
  out << (format == "json" ? RenderMetricsJson(report)
                           : render::SanitizeTerminal(RenderMetricsText(report)));
  const bool partial = ReportPartial(report.index, err);
  if (!file_error.ok()) {
    err << kProgram << " metrics: " << file_error.message() << "\n";
    return kExitFailed;
  }
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
