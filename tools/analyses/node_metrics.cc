// tools/analyses/node_metrics.cc: see node_metrics.h.
#include "tools/analyses/node_metrics.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "proto/metric_names.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/event_reader.h"

namespace gpscope::analyses {
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
    {metric_names::kNvmlGpuUtil, kScopeDevice, Field::kUtil},
    {metric_names::kGpmSmUtil, kScopeDevice, Field::kSm},
    {metric_names::kGpmTensorUtil, kScopeDevice, Field::kTensor},
    {metric_names::kGpmDramBwUtil, kScopeDevice, Field::kDram},
    {metric_names::kNvmlMemoryUsedBytes, kScopeDevice, Field::kMemoryUsed},
    {metric_names::kNvmlPowerW, kScopeDevice, Field::kPower},
    {metric_names::kNvmlTemperatureC, kScopeDevice, Field::kTemperature},
    {metric_names::kNvmlSmClockMhz, kScopeDevice, Field::kSmClock},
    {metric_names::kNvmlClockEventReasons, kScopeDevice, Field::kReasons},
    {metric_names::kNvmlProcessSmUtil, kScopeProcess, Field::kProcSm},
    {metric_names::kNvmlProcessMemoryBytes, kScopeProcess, Field::kProcMemory},
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
    for (const proto::WindowSummary& w : b.window_summaries()) {
      if (window_summaries_.size() < kMaxWindowSummaries) {
        window_summaries_.push_back(FromProto(w));
      } else {
        ++window_summaries_omitted_;
      }
    }
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
    r.window_summaries = std::move(window_summaries_);
    r.window_summaries_omitted = window_summaries_omitted_;
    std::stable_sort(r.window_summaries.begin(), r.window_summaries.end(),
                     [](const WindowSummary& a, const WindowSummary& b) {
                       return a.end_realtime_ns < b.end_realtime_ns;
                     });
    // A restarted monitor summarizes the windows of the job traces still in
    // its directory again: the same window (process, first activity) in two
    // monitor files is listed once, the first summary kept.
    std::set<std::pair<uint64_t, uint64_t>> seen;
    std::vector<WindowSummary> unique;
    unique.reserve(r.window_summaries.size());
    for (WindowSummary& w : r.window_summaries) {
      if (seen.insert({w.process_uid, w.start_realtime_ns}).second) {
        unique.push_back(std::move(w));
      } else {
        ++r.window_summaries_repeated;
      }
    }
    r.window_summaries = std::move(unique);
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
  std::vector<WindowSummary> window_summaries_;
  uint64_t window_summaries_omitted_ = 0;
};

}  // namespace

MetricsReport CollectMetrics(const std::vector<std::string>& paths, const MetricsOptions& options) {
  MetricsCollector collector(options);
  return collector.Finish(reader::ReadEvents(paths, {&collector}));
}

// ------------------------------------------------------------- derivations --

bool IsIdle(const GpuWindow& w, double threshold) {
  if (!w.pids.empty()) return false;
  if (w.util.count > 0) return w.util.mean() < threshold;
  if (w.sm.count > 0) return w.sm.mean() < threshold;
  return false;  // nothing known about the window
}

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

namespace {
void Merge(Accumulator& into, const Accumulator& a) {
  if (a.count == 0) return;
  into.max = into.count == 0 ? a.max : std::max(into.max, a.max);
  into.sum += a.sum;
  into.count += a.count;
}

}  // namespace

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

}  // namespace gpscope::analyses
