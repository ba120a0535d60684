// tools/render/report_data.cc: see report_data.h.
#include "tools/render/report_data.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/metric_names.h"
#include "tools/analyses/names.h"
#include "tools/reader/timebase.h"
#include "tools/render/json_writer.h"
#include "tools/render/report_blob.h"
#include "tools/render/report_stacks.h"

namespace gpscope::render {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A column of the blob: [offset, bytes].
JsonWriter& Ref(JsonWriter& j, const ColumnRef& c) {
  return j.BeginArray().Uint(c.offset).Uint(c.bytes).EndArray();
}

std::string Hex(uint64_t v) { return absl::StrFormat("%016x", v); }

struct Span {
  uint64_t start = 0;
  uint64_t end = 0;
};

// Sorted, disjoint union of spans (input in any order).
std::vector<Span> Union(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  // In place: a 10 M-event timeline has millions of spans.
  size_t n = 0;
  for (const Span& s : spans) {
    if (n > 0 && s.start <= spans[n - 1].end) {
      spans[n - 1].end = std::max(spans[n - 1].end, s.end);
    } else {
      spans[n++] = s;
    }
  }
  spans.resize(n);
  return spans;
}

// Length of the union `u` inside [a, b); `cursor` advances monotonically
// when successive queries move forward.
uint64_t Covered(const std::vector<Span>& u, uint64_t a, uint64_t b, size_t* cursor) {
  while (*cursor < u.size() && u[*cursor].end <= a) ++*cursor;
  uint64_t total = 0;
  for (size_t i = *cursor; i < u.size() && u[i].start < b; ++i) {
    const uint64_t s = std::max(u[i].start, a), e = std::min(u[i].end, b);
    if (e > s) total += e - s;
  }
  return total;
}

// Log-spaced histogram: 4 buckets per decade.
struct LogBins {
  std::vector<double> edges;
  std::vector<uint64_t> counts;
  std::vector<double> total;
};
// `for_each(f)` calls f(value) for every value; it is called twice (range,
// then counts), so the values need not be copied.
template <typename ForEach>
LogBins MakeLogBinsOf(ForEach&& for_each) {
  LogBins b;
  uint64_t min_value = std::numeric_limits<uint64_t>::max(), max_value = 0;
  size_t n = 0;
  for_each([&](uint64_t v) {
    min_value = std::min(min_value, v);
    max_value = std::max(max_value, v);
    ++n;
  });
  if (n == 0) return b;
  const double lo = std::max<double>(1, static_cast<double>(min_value));
  const double hi = std::max<double>(lo * 1.0001, static_cast<double>(max_value));
  const int k0 = static_cast<int>(std::floor(4 * std::log10(lo)));
  const int k1 = std::max(k0 + 1, static_cast<int>(std::ceil(4 * std::log10(hi) + 1e-9)));
  for (int k = k0; k <= k1; ++k) b.edges.push_back(std::round(std::pow(10.0, k / 4.0)));
  b.counts.assign(b.edges.size() - 1, 0);
  b.total.assign(b.edges.size() - 1, 0);
  for_each([&](uint64_t v) {
    const double x = std::max<double>(1, static_cast<double>(v));
    int i = static_cast<int>(std::floor(4 * std::log10(x) + 1e-9)) - k0;
    i = std::clamp(i, 0, static_cast<int>(b.counts.size()) - 1);
    ++b.counts[i];
    b.total[i] += static_cast<double>(v);
  });
  return b;
}


void WriteLogBins(JsonWriter& j, const LogBins& b) {
  j.BeginObject().Key("edges_ns").Doubles(b.edges).Key("counts").Uints(b.counts);
  j.Key("total_ns").Doubles(b.total).EndObject();
}

// The lanes of GPU (process, device) in the timeline: its streams.
std::vector<const TimelineLane*> StreamLanes(const TimelineData& t, size_t process,
                                             uint32_t device) {
  std::vector<const TimelineLane*> out;
  for (const TimelineLane& l : t.lanes) {
    if (l.process == process && l.kind == LaneKind::kStream && l.device_id == device)
      out.push_back(&l);
  }
  return out;
}

bool IsKernel(EventCategory c) {
  return c == EventCategory::kKernel || c == EventCategory::kCommKernel;
}

// The union of the events' spans of `lanes` (each sorted by start; only
// kernels with `kernels_only`), produced in order, one disjoint span at a
// time, by merging the lanes: nothing is copied (a 10 M-event timeline has
// millions of spans).
class UnionStream {
 public:
  UnionStream(const std::vector<const TimelineLane*>& lanes, bool kernels_only)
      : lanes_(lanes), at_(lanes.size(), 0), kernels_only_(kernels_only) {}

  bool Next(Span* out) {
    Span s;
    while (NextEvent(&s)) {
      if (!pending_) {
        span_ = s;
        pending_ = true;
      } else if (s.start <= span_.end) {
        span_.end = std::max(span_.end, s.end);
      } else {
        *out = span_;
        span_ = s;
        return true;
      }
    }
    if (!pending_) return false;
    *out = span_;
    pending_ = false;
    return true;
  }

 private:
  bool NextEvent(Span* out) {
    size_t best = lanes_.size();
    uint64_t best_start = 0;
    for (size_t k = 0; k < lanes_.size(); ++k) {
      const std::deque<TimelineEvent>& ev = lanes_[k]->events;
      while (kernels_only_ && at_[k] < ev.size() && !IsKernel(ev[at_[k]].category)) ++at_[k];
      if (at_[k] < ev.size() && (best == lanes_.size() || ev[at_[k]].start_ns < best_start)) {
        best = k;
        best_start = ev[at_[k]].start_ns;
      }
    }
    if (best == lanes_.size()) return false;
    const TimelineEvent& e = lanes_[best]->events[at_[best]++];
    *out = {e.start_ns, e.start_ns + e.duration_ns};
    return true;
  }

  const std::vector<const TimelineLane*>& lanes_;
  std::vector<size_t> at_;
  bool kernels_only_;
  bool pending_ = false;
  Span span_{};
};

// Covered() over a UnionStream, for windows [a, b) that move forward.
class CoveredCursor {
 public:
  CoveredCursor(const std::vector<const TimelineLane*>& lanes, bool kernels_only)
      : union_(lanes, kernels_only) {}

  uint64_t Covered(uint64_t a, uint64_t b) {
    while (!held_.empty() && held_.front().end <= a) held_.pop_front();
    while (!done_ && (held_.empty() || held_.back().start < b)) {
      Span s;
      if (!union_.Next(&s)) {
        done_ = true;
      } else if (s.end > a) {
        held_.push_back(s);
      }
    }
    uint64_t total = 0;
    for (const Span& s : held_) {
      if (s.start >= b) break;
      const uint64_t lo = std::max(s.start, a), hi = std::min(s.end, b);
      if (hi > lo) total += hi - lo;
    }
    return total;
  }

 private:
  UnionStream union_;
  std::deque<Span> held_;
  bool done_ = false;
};

// Sampled metrics have windows without a sample when windows are shorter
// than the sampling interval: hold the last value there (between the first
// and the last sample), as the metric did.
void HoldGaps(std::vector<double>* values) {
  size_t last = values->size();
  for (size_t i = 0; i < values->size(); ++i) {
    if (std::isfinite((*values)[i])) {
      if (last < i) {
        for (size_t j = last + 1; j < i; ++j) (*values)[j] = (*values)[last];
      }
      last = i;
    }
  }
}

// Per-window mean of a counter lane's samples over [start, start + n*width).
std::vector<double> CounterMeans(const TimelineLane& lane, uint64_t start, uint64_t width,
                                 size_t n) {
  std::vector<double> sum(n, 0), count(n, 0);
  for (const CounterSample& s : lane.samples) {
    if (s.t_ns < start || width == 0) continue;
    const uint64_t i = (s.t_ns - start) / width;
    if (i >= n) continue;
    sum[i] += s.value;
    count[i] += 1;
  }
  std::vector<double> out(n, kNaN);
  for (size_t i = 0; i < n; ++i) {
    if (count[i] > 0) out[i] = sum[i] / count[i];
  }
  HoldGaps(&out);
  return out;
}

// The host-CPU series of a process: its own CPU (user + system) when
// sampled, else the whole host's.
std::vector<double> HostCpu(const TimelineData& t, size_t process, uint64_t start, uint64_t width,
                            size_t n) {
  const TimelineLane* user = nullptr;
  const TimelineLane* system = nullptr;
  const TimelineLane* host = nullptr;
  for (const TimelineLane& l : t.lanes) {
    if (l.process != process || l.kind != LaneKind::kCounter) continue;
    if (l.metric_name == metric_names::kHostProcessCpuUserPct) user = &l;
    if (l.metric_name == metric_names::kHostProcessCpuSystemPct) system = &l;
    if (l.metric_name == metric_names::kHostCpuUtilPct) host = &l;
  }
  if (user != nullptr) {
    std::vector<double> out = CounterMeans(*user, start, width, n);
    if (system != nullptr) {
      const std::vector<double> sys = CounterMeans(*system, start, width, n);
      for (size_t i = 0; i < n; ++i) out[i] += std::isfinite(sys[i]) ? sys[i] : 0;
    }
    return out;
  }
  if (host != nullptr) return CounterMeans(*host, start, width, n);
  return {};
}

const model::ProcessModel* FindModelProcess(const model::TraceModel& m, uint64_t uid) {
  for (const model::ProcessModel& p : m.processes) {
    if (p.process_uid == uid) return &p;
  }
  return nullptr;
}

// Window series of one GPU from the analyzer's Timeline counters.
struct Series {
  std::string key, label, unit;
  std::vector<double> values;
};

// Windows of one GPU's series: n windows of width_ns from from_ns (CUPTI ns
// of its process; the last one ends at to_ns at the latest), the first
// starting at report ns start_report_ns.
struct Grid {
  uint64_t from_ns = 0;
  uint64_t to_ns = 0;
  uint64_t start_report_ns = 0;
  uint64_t width_ns = 0;
  size_t n = 0;
};

// `n` windows over [from_ns, to_ns), none narrower than half the analyzer's
// timeline resolution (narrower ones would only repeat its windows).
Grid SpanGrid(const TimelineData& t, size_t process, const model::Timeline& tl, uint64_t from_ns,
              uint64_t to_ns, size_t n) {
  Grid grid;
  const uint64_t span = to_ns > from_ns ? to_ns - from_ns : 0;
  if (n == 0 || span == 0 || !tl.valid()) return grid;
  n = std::max<size_t>(1,
                       std::min<size_t>(n, span / std::max<uint64_t>(1, tl.window_ns() / 2) + 1));
  grid.from_ns = from_ns;
  grid.to_ns = to_ns;
  grid.start_report_ns = t.ToReportNs(process, from_ns);
  grid.width_ns = std::max<uint64_t>(1, (span + n - 1) / n);
  grid.n = n;
  return grid;
}

// The trend windows of every GPU share one width and sit on multiples of it
// in report time, so the charts of all GPUs and ranks line up window by
// window: width = the report span / `windows`, but no narrower than half the
// coarsest analyzer timeline resolution among the GPUs.
uint64_t SharedTrendWidth(const ReportInputs& in, size_t windows) {
  uint64_t width = std::max<uint64_t>(
      1, (in.timeline->span_ns + std::max<size_t>(1, windows) - 1) / std::max<size_t>(1, windows));
  for (const analyses::GpuReport& g : in.summary->gpus) {
    const model::Timeline& tl = g.gpu->timeline;
    if (tl.valid()) width = std::max<uint64_t>(width, tl.window_ns() / 2);
  }
  return width;
}

// A GPU's windows of the shared width over its activity [first_ns, last_ns].
// CUPTI and report ns advance at the same rate between clock snapshots (the
// drift is microseconds per second), so a window boundary moves by the same
// delta on both clocks.
// At most `max_n` windows: a GPU's activity lies inside the report span, which
// is `windows` widths long, unless hostile clock snapshots map it outside.
Grid SharedGrid(const TimelineData& t, size_t process, const model::GpuModel& gpu, uint64_t width,
                size_t max_n) {
  Grid grid;
  if (width == 0 || gpu.last_ns <= gpu.first_ns || !gpu.timeline.valid()) return grid;
  const uint64_t first_r = t.ToReportNs(process, gpu.first_ns);
  const uint64_t last_r = std::max(first_r + 1, t.ToReportNs(process, gpu.last_ns));
  const uint64_t i0 = first_r / width;
  const uint64_t i1 = (last_r + width - 1) / width;
  grid.start_report_ns = i0 * width;
  const uint64_t lead = first_r - grid.start_report_ns;
  grid.from_ns = gpu.first_ns > lead ? gpu.first_ns - lead : 0;
  grid.width_ns = width;
  grid.n = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(1, i1 - i0), max_n));
  grid.to_ns = grid.from_ns + grid.n * width;
  return grid;
}

// The synchronizing API calls of a process (any of its threads), as a
// union in report ns: "host blocked in sync" is the share of a window in
// which some thread was blocked, so it cannot exceed the window (the
// model's kSyncBlockedNs is the same union, spread over its windows).
std::vector<Span> SyncBlocked(const TimelineData& t, size_t process) {
  std::vector<Span> spans;
  for (const TimelineLane& l : t.lanes) {
    if (l.process != process || l.kind != LaneKind::kApi) continue;
    for (const TimelineEvent& e : l.events) {
      if (e.category == EventCategory::kApiSync && e.duration_ns > 0) {
        spans.push_back({e.start_ns, e.start_ns + e.duration_ns});
      }
    }
  }
  return Union(std::move(spans));
}

std::vector<Series> GpuSeries(const ReportInputs& in, const analyses::GpuReport& g, size_t process,
                              const Grid& grid) {
  const model::GpuModel& gpu = *g.gpu;
  const model::Timeline& tl = gpu.timeline;
  const model::ProcessModel* pm = FindModelProcess(*in.model, gpu.process_uid);
  const size_t n = grid.n;
  if (n == 0 || grid.width_ns == 0 || !tl.valid()) return {};
  const uint64_t from_ns = grid.from_ns, to_ns = grid.to_ns, width = grid.width_ns;
  auto make = [&](std::string key, std::string label, std::string unit) {
    Series s{std::move(key), std::move(label), std::move(unit), std::vector<double>(n, kNaN)};
    return s;
  };
  Series busy = make("busy_share", "GPU busy", "ratio");
  Series kernel_busy = make("kernel_busy_share", "kernels running", "ratio");
  Series idle_gap = make("idle_gap_share", "idle in long gaps", "ratio");
  Series host_wait = make("host_wait_share", "idle: host wait", "ratio");
  Series sync_wait = make("sync_wait_share", "idle: sync wait", "ratio");
  Series sm =
      make("sm_util", gpu.has_sm_util ? "SM util (measured)" : "SM util (estimate)", "percent");
  Series dram = make("dram_util", "memory BW util", "percent");
  Series copy = make("copy_share", "copy time", "ratio");
  Series launches = make("launches_per_s", "kernel launches", "per_s");
  Series blocked = make("sync_blocked_share", "host blocked in sync", "ratio");
  for (size_t i = 0; i < n; ++i) {
    const uint64_t a = from_ns + i * width;
    const uint64_t b = std::min(to_ns, a + width);
    if (b <= a) continue;
    // Shares of the traced part; a bucket with almost nothing traced
    // (between capture windows) stays NaN: a gap in the chart.
    const double w =
        analyses::TracedRowNs(static_cast<double>(b - a), tl.Sum(model::kUntracedNs, a, b));
    if (std::isnan(w)) continue;
    using model::GpuField;
    busy.values[i] = tl.Sum(model::kBusyNs, a, b) / w;
    kernel_busy.values[i] = tl.Sum(model::kKernelBusyNs, a, b) / w;
    idle_gap.values[i] = (tl.Sum(model::kGapHostNs, a, b) + tl.Sum(model::kGapSyncNs, a, b) +
                          tl.Sum(model::kGapOtherNs, a, b)) /
                         w;
    host_wait.values[i] =
        (tl.Sum(model::kGapHostNs, a, b) + tl.Sum(model::kShortGapHostNs, a, b)) / w;
    sync_wait.values[i] =
        (tl.Sum(model::kGapSyncNs, a, b) + tl.Sum(model::kShortGapSyncNs, a, b)) / w;
    if (gpu.has_sm_util) {
      const double samples = tl.Sum(model::kSmUtilSamples, a, b);
      if (samples > 0) sm.values[i] = tl.Sum(model::kSmUtilSum, a, b) / samples;
    } else if (gpu.shape_known_ns > 0) {
      sm.values[i] = 100 * tl.Sum(model::kEstSmNs, a, b) / w;
    }
    if (gpu.has_dram_util) {
      const double samples = tl.Sum(model::kDramUtilSamples, a, b);
      if (samples > 0) dram.values[i] = tl.Sum(model::kDramUtilSum, a, b) / samples;
    }
    copy.values[i] = tl.Sum(model::kCopyNs, a, b) / w;
    launches.values[i] = tl.Sum(model::kKernelCount, a, b) / (w / 1e9);
  }
  // Host blocked in sync: exact calls from the timeline, over the same
  // windows in report time, of the traced part (as the shares above).
  const std::vector<Span> sync_blocked = SyncBlocked(*in.timeline, process);
  size_t cursor = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t a = from_ns + i * width;
    const uint64_t b = std::min(to_ns, a + width);
    if (b <= a || std::isnan(busy.values[i])) continue;
    const double w =
        analyses::TracedRowNs(static_cast<double>(b - a), tl.Sum(model::kUntracedNs, a, b));
    const uint64_t ra = grid.start_report_ns + i * width;
    blocked.values[i] =
        std::min(1.0, static_cast<double>(Covered(sync_blocked, ra, ra + (b - a), &cursor)) / w);
  }
  if (gpu.has_sm_util) HoldGaps(&sm.values);
  if (gpu.has_dram_util) HoldGaps(&dram.values);
  std::vector<Series> out = {busy, kernel_busy, idle_gap, host_wait, sync_wait, sm};
  if (gpu.has_dram_util) out.push_back(dram);
  out.push_back(copy);
  out.push_back(launches);
  if (pm != nullptr) out.push_back(blocked);
  // Host CPU, when this process sampled it: window means in report time.
  std::vector<double> cpu = HostCpu(*in.timeline, process, grid.start_report_ns, width, n);
  if (!cpu.empty()) {
    Series s = make("host_cpu", "host CPU", "percent");
    s.values = std::move(cpu);
    out.push_back(std::move(s));
  }
  return out;
}

// ---------------------------------------------------------------- blob --

// Events [from, to) of a lane as columns: start (varint deltas from 0) or,
// with `gaps`, gap (zigzag varint: start minus the previous event's end, the
// first from 0; back-to-back events compress to almost nothing), dur, name,
// cat, and row / aux when the lane has them.
void WriteEventColumns(JsonWriter& j, BlobWriter& blob, const std::deque<TimelineEvent>& ev,
                       size_t from, size_t to, bool rows, bool aux, bool gaps = false) {
  j.BeginObject();
  if (gaps) {
    Ref(j.Key("gap"), blob.Column([&](BlobWriter& w) {
      uint64_t previous_end = 0;
      for (size_t i = from; i < to; ++i) {
        const uint64_t start = ev[i].start_ns;
        w.Varint(start >= previous_end ? (start - previous_end) << 1
                                       : ((previous_end - start) << 1) - 1);
        previous_end = start + ev[i].duration_ns;
      }
    }));
  } else {
    Ref(j.Key("start"), blob.Column([&](BlobWriter& w) {
      uint64_t previous = 0;
      for (size_t i = from; i < to; ++i) {
        w.Varint(ev[i].start_ns - previous);
        previous = ev[i].start_ns;
      }
    }));
  }
  Ref(j.Key("dur"), blob.Column([&](BlobWriter& w) {
    for (size_t i = from; i < to; ++i) w.Varint(ev[i].duration_ns);
  }));
  Ref(j.Key("name"), blob.Column([&](BlobWriter& w) {
    for (size_t i = from; i < to; ++i) w.Varint(ev[i].name);
  }));
  Ref(j.Key("cat"), blob.Column([&](BlobWriter& w) {
    for (size_t i = from; i < to; ++i) w.Byte(static_cast<uint8_t>(ev[i].category));
  }));
  if (rows) {
    Ref(j.Key("row"), blob.Column([&](BlobWriter& w) {
      for (size_t i = from; i < to; ++i) w.Byte(ev[i].row);
    }));
  }
  if (aux) {
    Ref(j.Key("aux"), blob.Column([&](BlobWriter& w) {
      for (size_t i = from; i < to; ++i) w.Varint(ev[i].aux);
    }));
  }
  j.EndObject();
}

// A lane's events summarized in n equal bins of width_ns from 0: covered
// time, events overlapping, the name with the most time (weighted majority
// vote, Boyer-Moore: exact when one name holds more than half the bin's
// time, else a plausible one) and its category.
struct LaneBins {
  std::vector<uint64_t> busy, count, weight;
  std::vector<uint32_t> top;
  std::vector<uint8_t> cat;
};

LaneBins ComputeBins(const std::deque<TimelineEvent>& ev, uint32_t n, uint64_t width) {
  LaneBins out;
  out.busy.assign(n, 0);
  out.count.assign(n, 0);
  out.weight.assign(n, 0);
  out.top.assign(n, 0);
  out.cat.assign(n, 0);
  for (const TimelineEvent& e : ev) {
    const uint64_t end = e.start_ns + e.duration_ns;
    const size_t first = std::min<uint64_t>(n - 1, e.start_ns / width);
    const size_t last = std::min<uint64_t>(n - 1, end > e.start_ns ? (end - 1) / width : first);
    for (size_t b = first; b <= last; ++b) {
      const uint64_t lo = std::max<uint64_t>(e.start_ns, b * width);
      const uint64_t hi = std::min<uint64_t>(end, (b + 1) * width);
      const uint64_t piece = hi > lo ? hi - lo : 0;
      out.busy[b] += piece;
      ++out.count[b];
      const uint64_t vote = std::max<uint64_t>(1, piece);
      if (out.weight[b] == 0 || out.top[b] == e.name) {
        out.top[b] = e.name;
        out.cat[b] = static_cast<uint8_t>(e.category);
        out.weight[b] += vote;
      } else if (out.weight[b] >= vote) {
        out.weight[b] -= vote;
      } else {
        out.top[b] = e.name;
        out.cat[b] = static_cast<uint8_t>(e.category);
        out.weight[b] = vote - out.weight[b];
      }
    }
  }
  return out;
}

void WriteBinColumns(JsonWriter& j, BlobWriter& blob, const LaneBins& bins, uint64_t width) {
  const size_t n = bins.busy.size();
  j.BeginObject();
  Ref(j.Key("busy"), blob.Column([&](BlobWriter& w) {
    for (size_t b = 0; b < n; ++b) {
      const double share =
          std::min(1.0, static_cast<double>(bins.busy[b]) / static_cast<double>(width));
      // Any activity shows as at least 1/255.
      w.Byte(bins.count[b] == 0 ? 0
                                : static_cast<uint8_t>(std::max(1.0, std::round(255 * share))));
    }
  }));
  Ref(j.Key("count"), blob.Column([&](BlobWriter& w) {
    for (size_t b = 0; b < n; ++b) w.Varint(bins.count[b]);
  }));
  Ref(j.Key("top"), blob.Column([&](BlobWriter& w) {
    for (size_t b = 0; b < n; ++b) w.Varint(bins.top[b]);
  }));
  Ref(j.Key("cat"), blob.Column([&](BlobWriter& w) {
    for (size_t b = 0; b < n; ++b) w.Byte(bins.cat[b]);
  }));
  j.EndObject();
}

// A piece of the page's data that decodes on its own: {bytes, data} with
// `data` the gzip (or, uncompressed, plain) bytes in base64. zlib level 1:
// on gen_trace's tiles 0.3% bigger than level 6 in half the time (a 10 M-
// event report compresses ~90 MB of columns).
void WritePacked(JsonWriter& j, const BlobWriter& blob, bool compress) {
  std::string packed;
  if (compress) packed = GzipCompress(blob.bytes(), 1);
  j.Key("bytes").Uint(blob.size());
  j.Key("data").String(Base64Encode(packed.empty() ? blob.bytes() : packed));
}

void WriteLaneColumns(JsonWriter& j, BlobWriter& blob, const TimelineLane& lane, const TimelineData& t,
                      const ReportDataOptions& options) {
  j.Key("cols");
  if (lane.kind == LaneKind::kCounter) {
    j.BeginObject();
    Ref(j.Key("t"), blob.Column([&](BlobWriter& w) {
      uint64_t previous = 0;
      for (const CounterSample& s : lane.samples) {
        w.Varint(s.t_ns - previous);
        previous = s.t_ns;
      }
    }));
    Ref(j.Key("v"), blob.Column([&](BlobWriter& w) {
      for (const CounterSample& s : lane.samples) w.Float64(s.value);
    }));
    j.EndObject();
    j.Key("bins").Null();
    return;
  }
  const std::deque<TimelineEvent>& ev = lane.events;
  const bool rows = lane.rows > 1;
  const bool aux =
      std::any_of(ev.begin(), ev.end(), [](const TimelineEvent& e) { return e.aux != 0; });
  const size_t tile = std::max<size_t>(1, options.tile_events);
  const bool tiled = ev.size() > std::max<uint64_t>(tile, options.tiled_above);
  if (!tiled) {
    WriteEventColumns(j, blob, ev, 0, ev.size(), rows, aux);
  } else {
    // Tiles: runs of `tile` events by start, each packed on its own, so the
    // page decodes only those a zoomed-in view needs.
    j.Null();
    j.Key("tiles").BeginObject().Key("events").Uint(tile).Key("rows").Bool(rows);
    j.Key("aux").Bool(aux).Key("first_ns").BeginArray();
    for (size_t i = 0; i < ev.size(); i += tile) j.Uint(ev[i].start_ns);
    j.EndArray().Key("parts").BeginArray();
    for (size_t i = 0; i < ev.size(); i += tile) {
      BlobWriter part;
      j.BeginObject().Key("cols");
      WriteEventColumns(j, part, ev, i, std::min(ev.size(), i + tile), rows, aux, /*gaps=*/true);
      WritePacked(j, part, options.compress);
      j.EndObject();
    }
    j.EndArray().EndObject();
  }

  // Bins for the zoomed-out view (in the blob), and for lanes with many
  // events finer levels (each packed on its own, decoded when a zoom needs
  // it): level l has bin_count * level_factor^l bins, added while the lane
  // has more than level_events events per level_factor^l.
  if (ev.size() <= options.bin_threshold || t.span_ns == 0) {
    j.Key("bins").Null();
    return;
  }
  const uint32_t n = options.bin_count;
  const uint64_t width = std::max<uint64_t>(1, (t.span_ns + n - 1) / n);
  j.Key("bins");
  WriteBinColumns(j, blob, ComputeBins(ev, n, width), width);
  // (No "levels" key without one: small reports stay as they were.)
  std::vector<std::pair<uint32_t, uint64_t>> levels;  // (bins, bin ns)
  uint64_t factor = 1;
  for (uint32_t level = 1; level < options.levels; ++level) {
    factor *= std::max<uint32_t>(2, options.level_factor);
    if (ev.size() / factor <= options.level_events) break;
    const uint64_t bins64 = uint64_t{n} * factor;
    const uint64_t level_width = std::max<uint64_t>(1, (t.span_ns + bins64 - 1) / bins64);
    const uint32_t level_bins =
        static_cast<uint32_t>(std::min<uint64_t>(bins64, (t.span_ns + level_width - 1) / level_width));
    if (level_width <= 1 || level_bins == 0) break;
    levels.emplace_back(level_bins, level_width);
  }
  if (levels.empty()) return;
  j.Key("levels").BeginArray();
  for (const auto& [level_bins, level_width] : levels) {
    BlobWriter part;
    j.BeginObject().Key("bin_count").Uint(level_bins).Key("bin_ns").Uint(level_width);
    j.Key("cols");
    WriteBinColumns(j, part, ComputeBins(ev, level_bins, level_width), level_width);
    WritePacked(j, part, options.compress);
    j.EndObject();
  }
  j.EndArray();
}

std::string DeviceLabel(const TimelineProcess& p, uint32_t device) {
  auto it = p.devices.find(device);
  if (it != p.devices.end() && !it->second.name().empty()) {
    return absl::StrCat("GPU ", device, " · ", it->second.name());
  }
  return absl::StrCat("GPU ", device);
}

std::string ProcessLabel(const TimelineProcess& p) {
  std::string label;
  if (p.rank >= 0) absl::StrAppend(&label, "rank ", p.rank, " · ");
  absl::StrAppend(&label, "pid ", p.pid);
  if (!p.hostname.empty()) absl::StrAppend(&label, " on ", p.hostname);
  return label;
}

}  // namespace

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    syy += y[i] * y[i];
    sxy += x[i] * y[i];
    n += 1;
  }
  if (n < 3) return kNaN;
  const double vx = sxx - sx * sx / n, vy = syy - sy * sy / n;
  if (!(vx > 1e-12 * std::max(1.0, sxx)) || !(vy > 1e-12 * std::max(1.0, syy))) return kNaN;
  return std::clamp((sxy - sx * sy / n) / std::sqrt(vx * vy), -1.0, 1.0);
}

std::string BuildReportJson(const ReportInputs& in, const ReportDataOptions& options) {
  const TimelineData& t = *in.timeline;
  const model::TraceModel& m = *in.model;
  const analyses::SummaryReport& summary = *in.summary;
  std::string out;
  JsonWriter j(&out, JsonStyle::kCompact);
  j.BeginObject();
  j.Key("schema").String("gpscope.report/1");
  j.Key("generator").String(in.generator);
  j.Key("files").BeginArray();
  for (const reader::FileInfo& f : m.index.files) {
    j.BeginObject().Key("path").String(f.path).Key("bytes").Uint(f.file_bytes).Key("error");
    if (f.status.ok()) {
      j.Null();
    } else {
      j.String(std::string(f.status.message()));
    }
    j.EndObject();
  }
  j.EndArray();
  // Report ns 0: the pass's time origin, the one every command prints.
  j.Key("t0_realtime_ns").String(absl::StrCat(t.t0_realtime_ns));
  j.Key("time_origin_utc").String(t.t0_realtime_ns == 0 ? "" : reader::UtcTime(t.t0_realtime_ns));
  j.Key("span_ns").Uint(t.span_ns);
  j.Key("summary").Raw(in.summary_json.empty() ? "null" : in.summary_json);

  // Timeline groups: per process, a group per GPU, one for host threads,
  // one for host metrics. Lanes point at their group.
  struct Group {
    std::string label, kind;
    int parent = -1;
    size_t process = 0;
    uint32_t device = 0;
  };
  std::vector<Group> groups;
  std::map<std::tuple<size_t, int, uint32_t>, size_t> group_of;  // (process, kind, device)
  std::vector<size_t> lane_group(t.lanes.size(), 0);
  std::vector<size_t> process_group(t.processes.size(), 0);
  for (size_t p = 0; p < t.processes.size(); ++p) {
    process_group[p] = groups.size();
    groups.push_back({ProcessLabel(t.processes[p]), "process", -1, p, 0});
  }
  for (size_t i = 0; i < t.lanes.size(); ++i) {
    const TimelineLane& l = t.lanes[i];
    int kind = 0;
    std::string label;
    std::string kind_name;
    if (l.has_device && l.kind == LaneKind::kCounter) {
      // A GPU's counters fold apart from its streams: ~20 lanes that would
      // push the next rank's streams a screen further down.
      kind = 3;
      label = absl::StrCat("GPU ", l.device_id, " · metrics");
      kind_name = "gpu_metrics";
    } else if (l.has_device) {
      kind = 0;
      label = DeviceLabel(t.processes[l.process], l.device_id);
      kind_name = "gpu";
    } else if (l.kind == LaneKind::kCounter) {
      kind = 2;
      label = "host metrics";
      kind_name = "metrics";
    } else {
      kind = 1;
      label = "host threads";
      kind_name = "threads";
    }
    const auto key =
        std::make_tuple(l.process, kind, kind == 0 || kind == 3 ? l.device_id : 0);
    auto [it, inserted] = group_of.try_emplace(key, groups.size());
    if (inserted) {
      groups.push_back(
          {label, kind_name, static_cast<int>(process_group[l.process]), l.process, l.device_id});
    }
    lane_group[i] = it->second;
  }
  auto gpu_group = [&](size_t process, uint32_t device) -> int64_t {
    auto it = group_of.find(std::make_tuple(process, 0, device));
    return it == group_of.end() ? -1 : static_cast<int64_t>(it->second);
  };

  // Processes.
  j.Key("processes").BeginArray();
  for (size_t p = 0; p < t.processes.size(); ++p) {
    const TimelineProcess& tp = t.processes[p];
    const reader::ProcessInfo* info = m.index.FindProcess(tp.process_uid);
    const proto::ProcessHeader* h = info != nullptr && info->header ? &*info->header : nullptr;
    int summary_index = -1;
    for (size_t s = 0; s < summary.processes.size(); ++s) {
      if (summary.processes[s].process->process_uid == tp.process_uid)
        summary_index = static_cast<int>(s);
    }
    j.BeginObject();
    j.Key("pid").Uint(tp.pid).Key("uid").String(Hex(tp.process_uid));
    j.Key("hostname").String(tp.hostname).Key("rank").Int(tp.rank);
    j.Key("local_rank").Int(h ? h->identity().local_rank() : -1);
    j.Key("world_size").Int(h ? h->identity().world_size() : 0);
    j.Key("job").String(h ? h->identity().job_id() : "");
    j.Key("launcher").String(h ? h->identity().launcher() : "");
    j.Key("cmdline").BeginArray();
    if (h) {
      for (const std::string& a : h->cmdline()) j.String(a);
    }
    j.EndArray();
    j.Key("exe").String(h ? h->exe_path() : "");
    j.Key("driver_version").String(h ? h->driver_version() : "");
    j.Key("cuda_driver_version").Uint(h ? h->cuda_driver_version() : 0);
    j.Key("cupti_version").Uint(h ? h->cupti_api_version() : 0);
    j.Key("gpscope_version").String(h ? h->gpscope_version() : "");
    j.Key("summary_index").Int(summary_index);
    j.Key("group").Uint(process_group[p]);
    j.Key("devices").BeginArray();
    for (const auto& [id, d] : tp.devices) {
      j.BeginObject().Key("id").Uint(id).Key("name").String(d.name()).Key("uuid").String(d.uuid());
      j.Key("cc").String(
          absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()));
      j.Key("sm_count").Uint(d.sm_count()).Key("memory_bytes").Uint(d.global_memory_bytes());
      j.EndObject();
    }
    j.EndArray();
    j.Key("lost").BeginArray();
    for (const proto::LostInterval& l : tp.lost) {
      j.BeginObject().Key("start_ns").Uint(l.start_ns()).Key("end_ns").Uint(l.end_ns());
      std::string reason = proto::LostReason_Name(l.reason());
      j.Key("reason").String(reason).Key("detail").String(l.detail()).EndObject();
    }
    j.EndArray();
    j.Key("lost_not_kept").Uint(tp.lost_not_kept);
    j.EndObject();
  }
  j.EndArray();

  // GPUs: trend windows, histograms, steps, correlation.
  const uint64_t trend_width = SharedTrendWidth(in, options.trend_windows);
  j.Key("gpus").BeginArray();
  for (const analyses::GpuReport& g : summary.gpus) {
    const model::GpuModel& gpu = *g.gpu;
    const int process = t.FindProcess(gpu.process_uid);
    j.BeginObject();
    j.Key("process").Int(process);
    j.Key("device_id").Uint(gpu.device_id);
    if (process < 0) {
      j.Key("group")
          .Int(-1)
          .Key("metrics_group")
          .Int(-1)
          .Key("window")
          .Null()
          .Key("trend")
          .Null()
          .Key("trend_keys")
          .BeginArray()
          .EndArray();
      j.Key("histograms").Null().Key("steps").Null().Key("correlation").Null();
      j.Key("counters").BeginArray().EndArray().EndObject();
      continue;
    }
    const size_t pi = static_cast<size_t>(process);
    j.Key("group").Int(gpu_group(pi, gpu.device_id));
    {
      auto it = group_of.find(std::make_tuple(pi, 3, gpu.device_id));
      j.Key("metrics_group").Int(it == group_of.end() ? -1 : static_cast<int64_t>(it->second));
    }
    j.Key("window").BeginObject().Key("start_ns").Uint(t.ToReportNs(pi, g.window.start_ns));
    j.Key("end_ns").Uint(t.ToReportNs(pi, g.window.end_ns)).EndObject();

    const Grid trend_grid = SharedGrid(t, pi, gpu, trend_width, options.trend_windows + 1);
    const std::vector<Series> trend = GpuSeries(in, g, pi, trend_grid);
    j.Key("trend").BeginObject().Key("start_ns").Uint(trend_grid.start_report_ns);
    j.Key("width_ns").Uint(trend.empty() ? 0 : trend_grid.width_ns);
    j.Key("series").BeginObject();
    for (const Series& s : trend) j.Key(s.key).Doubles(s.values);
    j.EndObject().EndObject();
    j.Key("trend_keys").BeginArray();
    for (const Series& s : trend) {
      j.BeginObject()
          .Key("key")
          .String(s.key)
          .Key("label")
          .String(s.label)
          .Key("unit")
          .String(s.unit)
          .EndObject();
    }
    j.EndArray();

    // Exact kernel durations and device-level idle gaps from the timeline.
    const std::vector<const TimelineLane*> streams = StreamLanes(t, pi, gpu.device_id);
    j.Key("histograms").BeginObject();
    j.Key("kernel_duration");
    WriteLogBins(j, MakeLogBinsOf([&](auto&& f) {
      for (const TimelineLane* l : streams) {
        for (const TimelineEvent& e : l->events) {
          if (IsKernel(e.category)) f(e.duration_ns);
        }
      }
    }));
    j.Key("idle_gap");
    WriteLogBins(j, MakeLogBinsOf([&](auto&& f) {
      UnionStream busy(streams, false);
      Span previous{}, s{};
      for (bool first = true; busy.Next(&s); first = false) {
        if (!first) f(s.start - previous.end);
        previous = s;
      }
    }));
    j.EndObject();

    // Steps: step-named NVTX ranges of this process (the thread with most).
    const TimelineLane* step_lane = nullptr;
    size_t most = 0;
    for (const TimelineLane& l : t.lanes) {
      if (l.process != pi || l.kind != LaneKind::kNvtx) continue;
      const size_t n = static_cast<size_t>(std::count_if(
          l.events.begin(), l.events.end(),
          [](const TimelineEvent& e) { return e.category == EventCategory::kNvtxStep; }));
      if (n > most) {
        most = n;
        step_lane = &l;
      }
    }
    if (step_lane == nullptr || most < 2) {
      j.Key("steps").Null();
    } else {
      std::vector<Span> steps;
      for (const TimelineEvent& e : step_lane->events) {
        if (e.category != EventCategory::kNvtxStep) continue;
        if (!steps.empty() && e.start_ns < steps.back().end) continue;  // nested or overlapping
        steps.push_back({e.start_ns, e.start_ns + e.duration_ns});
      }
      const size_t shown = std::min(steps.size(), options.max_steps);
      std::vector<uint64_t> start, period, compute, copy, idle;
      CoveredCursor busy(streams, false), kernel_busy(streams, true);
      for (size_t i = 0; i < shown; ++i) {
        // A step's period runs to the next step's start (time spent between
        // annotated ranges, e.g. waiting for data, belongs to the step).
        const uint64_t a = steps[i].start;
        const uint64_t b = i + 1 < steps.size() ? steps[i + 1].start : steps[i].end;
        const uint64_t all = busy.Covered(a, b);
        const uint64_t k = kernel_busy.Covered(a, b);
        start.push_back(a);
        period.push_back(b - a);
        compute.push_back(k);
        copy.push_back(all > k ? all - k : 0);
        idle.push_back(b - a > all ? b - a - all : 0);
      }
      j.Key("steps").BeginObject();
      j.Key("start_ns")
          .Uints(start)
          .Key("period_ns")
          .Uints(period)
          .Key("compute_ns")
          .Uints(compute);
      j.Key("copy_ns").Uints(copy).Key("idle_ns").Uints(idle);
      j.Key("not_shown").Uint(steps.size() - shown).EndObject();
    }

    // Correlation of window metrics over the steady window.
    const Grid steady_grid = SpanGrid(t, pi, gpu.timeline, g.window.start_ns, g.window.end_ns,
                                      options.correlation_windows);
    const std::vector<Series> steady = GpuSeries(in, g, pi, steady_grid);
    const uint64_t cw = steady.empty() ? 0 : steady_grid.width_ns;
    j.Key("correlation").BeginObject();
    std::vector<const Series*> usable;
    for (const Series& s : steady) {
      const size_t finite = static_cast<size_t>(std::count_if(
          s.values.begin(), s.values.end(), [](double v) { return std::isfinite(v); }));
      if (finite >= 3) usable.push_back(&s);
    }
    j.Key("keys").BeginArray();
    for (const Series* s : usable) j.String(s->key);
    j.EndArray().Key("labels").BeginArray();
    for (const Series* s : usable) j.String(s->label);
    j.EndArray();
    j.Key("windows").Uint(steady.empty() ? 0 : steady.front().values.size());
    j.Key("width_ns").Uint(cw);
    j.Key("r").BeginArray();
    for (const Series* a : usable) {
      j.BeginArray();
      for (const Series* b : usable) j.Double(Pearson(a->values, b->values));
      j.EndArray();
    }
    j.EndArray().EndObject();

    j.Key("counters").BeginArray();
    for (size_t i = 0; i < t.lanes.size(); ++i) {
      const TimelineLane& l = t.lanes[i];
      if (l.process == pi && l.kind == LaneKind::kCounter && l.has_device &&
          l.device_id == gpu.device_id) {
        j.Uint(i);
      }
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();

  // Findings: where on the timeline each holds.
  j.Key("findings").BeginArray();
  for (const analyses::Finding& f : *in.findings) {
    int process = -1;
    int64_t group = -1;
    if (f.gpu >= 0 && static_cast<size_t>(f.gpu) < summary.gpus.size()) {
      const model::GpuModel& gpu = *summary.gpus[f.gpu].gpu;
      process = t.FindProcess(gpu.process_uid);
      if (process >= 0) group = gpu_group(static_cast<size_t>(process), gpu.device_id);
    } else if (f.process >= 0 && static_cast<size_t>(f.process) < summary.processes.size()) {
      process = t.FindProcess(summary.processes[f.process].process->process_uid);
      if (process >= 0) group = static_cast<int64_t>(process_group[process]);
    }
    j.BeginObject().Key("group").Int(group).Key("ranges").BeginArray();
    if (process >= 0) {
      for (const analyses::TimeRange& r : f.ranges) {
        j.BeginObject().Key("start_ns").Uint(t.ToReportNs(process, r.start_ns));
        j.Key("end_ns")
            .Uint(t.ToReportNs(process, r.end_ns))
            .Key("note")
            .String(r.note)
            .EndObject();
      }
    }
    j.EndArray().EndObject();
  }
  j.EndArray();

  j.Key("completeness").BeginObject().Key("events_kept").Uint(t.events_kept);
  j.Key("events_not_kept").Uint(t.events_not_kept);
  j.Key("undecodable_batches").Uint(t.undecodable_batches).EndObject();
  WriteReportStacks(*in.model, summary, t, j);  // call stacks (issue 20): only with stacks

  // The timeline.
  BlobWriter blob;
  j.Key("timeline").BeginObject();
  j.Key("names").BeginArray();
  for (const std::string& n : t.names) j.String(n);
  j.EndArray();
  j.Key("short_names").BeginArray();
  for (const std::string& n : t.names) {
    // Kernel names are long templates; the short form is what fits a box.
    const std::string compact = n.find('(') != std::string::npos || n.find('<') != std::string::npos
                                    ? analyses::CompactKernelName(n)
                                    : n;
    j.String(compact == n ? "" : compact);
  }
  j.EndArray();
  j.Key("configs").BeginArray();
  for (const LaunchShape& c : t.configs) {
    j.BeginArray()
        .Uint(c.grid[0])
        .Uint(c.grid[1])
        .Uint(c.grid[2])
        .Uint(c.block[0])
        .Uint(c.block[1]);
    j.Uint(c.block[2]).Uint(c.registers_per_thread).Uint(c.shared_memory_bytes).EndArray();
  }
  j.EndArray();
  const uint32_t bins = std::max<uint32_t>(1, options.bin_count);
  j.Key("bin_count").Uint(bins);
  j.Key("bin_ns").Uint(std::max<uint64_t>(1, (t.span_ns + bins - 1) / bins));
  j.Key("groups").BeginArray();
  for (const Group& g : groups) {
    j.BeginObject().Key("label").String(g.label).Key("kind").String(g.kind).Key("parent").Int(
        g.parent);
    j.Key("process").Uint(g.process).Key("device_id").Uint(g.device).EndObject();
  }
  j.EndArray();
  j.Key("lanes").BeginArray();
  ReportDataOptions lane_options = options;
  lane_options.bin_count = bins;
  for (size_t i = 0; i < t.lanes.size(); ++i) {
    const TimelineLane& l = t.lanes[i];
    j.BeginObject();
    j.Key("group").Uint(lane_group[i]).Key("kind").String(LaneKindName(l.kind));
    j.Key("label").String(l.label);
    j.Key("count").Uint(l.kind == LaneKind::kCounter ? l.samples.size() : l.events.size());
    j.Key("rows").Uint(l.rows).Key("max_dur_ns").Uint(l.max_duration_ns);
    j.Key("not_kept")
        .Uint(l.not_kept)
        .Key("unit")
        .String(l.unit)
        .Key("metric")
        .String(l.metric_name);
    WriteLaneColumns(j, blob, l, t, lane_options);
    j.EndObject();
  }
  j.EndArray();
  std::string packed;
  if (options.compress) packed = GzipCompress(blob.bytes());
  const bool gzip = !packed.empty();
  j.Key("blob").BeginObject().Key("encoding").String(gzip ? "gzip+base64" : "base64");
  j.Key("bytes").Uint(blob.size());
  j.Key("data").String(Base64Encode(gzip ? packed : blob.bytes()));
  j.EndObject();
  j.EndObject();  // timeline
  j.EndObject();
  return out;
}

}  // namespace gpscope::render
