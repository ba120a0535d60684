// tools/analyses/gpu_report.cc: see gpu_report.h.
#include "tools/analyses/gpu_report.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/analyses/names.h"

namespace gpscope::analyses {
namespace {

using model::GpuModel;
using model::Timeline;

// Without steps, a long gap this close to either end of the span is start-up
// or tear-down (model loading, compilation, checkpoint at exit).
constexpr double kEdgeFraction = 0.10;
constexpr int kMinStepsForWindow = 3;
// GPU work after the last inferred step starts, in steps: the last step
// itself and a margin (a final sync, a last evaluation's few kernels).
constexpr double kTailSteps = 3;

std::string GpuLabel(const GpuModel& g) {
  std::string name = g.has_device_info && !g.device.name().empty() ? g.device.name() : "";
  return absl::StrCat("GPU ", g.device_id, name.empty() ? "" : " (", name, name.empty() ? "" : ")",
                      " of pid ", g.pid, g.hostname.empty() ? "" : " on ", g.hostname);
}

}  // namespace

const char* CopyDirectionName(int copy_kind) {
  static constexpr const char* kNames[] = {"unknown", "H2D", "D2H", "H2A", "A2H", "A2A",
                                           "A2D",     "D2A", "D2D", "H2H", "P2P"};
  return copy_kind >= 0 && copy_kind < 11 ? kNames[copy_kind] : "unknown";
}

const char* MemoryKindName(int memory_kind) {
  static constexpr const char* kNames[] = {"unknown", "pageable", "pinned",         "device",
                                           "array",   "managed",  "device static", "managed static"};
  return memory_kind >= 0 && memory_kind < 8 ? kNames[memory_kind] : "unknown";
}

Distribution Describe(const model::LogHistogram& h) {
  Distribution d;
  d.count = h.count();
  d.total = h.sum();
  if (d.count == 0) return d;
  d.mean = h.mean();
  d.stddev = h.stddev();
  d.min = static_cast<double>(h.min());
  d.max = static_cast<double>(h.max());
  d.p50 = h.Percentile(50);
  d.p95 = h.Percentile(95);
  d.p99 = h.Percentile(99);
  return d;
}

Window SteadyWindow(const GpuModel& g) {
  Window w{g.first_ns, std::max(g.first_ns, g.last_ns), "GPU span"};
  const model::StepStats& s = g.steps;
  if (s.count >= kMinStepsForWindow && s.second_start_ns > 0 &&
      s.last_start_ns > s.second_start_ns) {
    const uint64_t start = std::max(s.second_start_ns, g.first_ns);
    const uint64_t end = std::min(s.last_start_ns, g.last_ns);
    if (end > start) {
      return {start, end,
              absl::StrCat("steps 2 to ", s.count - 1,
                           " of ", s.count, " (the first is warm-up, the last has no next start)")};
    }
  }
  const model::InferredSteps& in = g.inferred_steps;
  // The steps end with the run's work: after the last step starts, the GPU
  // does about one step's work (that step) and little else. Much more
  // (ours: above kTailSteps steps' worth) means the run went on with other
  // work, a later phase, that the window must not cut away.
  bool tail_ok = false;
  if (in.found && in.period_ns.count() > 0 && in.last_start_ns > in.second_start_ns) {
    const double per_step = g.timeline.Sum(model::kBusyNs, in.second_start_ns, in.last_start_ns) /
                            static_cast<double>(in.period_ns.count());
    const double tail = g.timeline.Sum(model::kBusyNs, in.last_start_ns, g.last_ns + 1);
    tail_ok = tail <= kTailSteps * std::max(per_step, 1.0);
  }
  if (s.count == 0 && in.found && !in.phased && tail_ok && in.count >= kMinStepsForWindow &&
      in.last_start_ns > in.second_start_ns) {
    const uint64_t start =
        std::max({in.second_start_ns, in.steady_start_ns, g.first_ns});
    const uint64_t end = std::min(in.last_start_ns, g.last_ns);
    if (end > start) {
      return {start, end,
              in.steady_start_ns > in.second_start_ns
                  ? absl::StrCat("inferred steps after one-time start-up work, to the last of ",
                                 in.count)
                  : absl::StrCat("inferred steps 2 to ", in.count - 1, " of ", in.count,
                                 " (the first is warm-up, the last has no next start)")};
    }
  }
  const uint64_t span = w.length_ns();
  const uint64_t edge = static_cast<uint64_t>(static_cast<double>(span) * kEdgeFraction);
  std::vector<std::string> cut;
  if (!g.long_gaps_edge.empty()) {
    const model::GapRecord& first = g.long_gaps_edge.front();
    const model::GapRecord& last = g.long_gaps_edge.back();
    if (first.start_ns - w.start_ns <= edge && first.end_ns < w.end_ns) {
      w.start_ns = first.end_ns;
      cut.push_back(absl::StrFormat("a %.2f s start-up gap",
                                    static_cast<double>(first.length_ns()) / 1e9));
    }
    if (w.end_ns - last.end_ns <= edge && last.start_ns > w.start_ns) {
      w.end_ns = last.start_ns;
      cut.push_back(absl::StrFormat("a %.2f s tear-down gap",
                                    static_cast<double>(last.length_ns()) / 1e9));
    }
  }
  if (!cut.empty()) {
    w.basis = absl::StrCat("GPU span without ", cut[0], cut.size() > 1 ? " and " : "",
                           cut.size() > 1 ? cut[1] : "");
  } else {
    w.basis = "GPU span (no step markers)";
  }
  return w;
}

namespace {

// Steps without NVTX: periods from the model; the per-step breakdown from
// the timeline between the second and the last instance (the first is
// warm-up, the last has no next start), like NVTX steps.
void InferredStepsReport(const GpuModel& g, GpuReport& r) {
  const model::InferredSteps& in = g.inferred_steps;
  r.has_steps = true;
  r.step_source = "inferred";
  r.step_anchor = in.anchor;
  r.step_anchor_host = in.host;
  r.step_candidates = in.candidates;
  r.step_count = in.count;
  r.step_example = in.anchor;
  r.step_period = Describe(in.period_ns);
  const Timeline& t = g.timeline;
  auto split = [&t](uint64_t a, uint64_t b, model::StepRecord* out) {
    const double busy = t.Sum(model::kBusyNs, a, b);
    const double kernels = std::min(busy, t.Sum(model::kKernelBusyNs, a, b));
    out->compute_ns = static_cast<uint64_t>(kernels);
    out->copy_ns = static_cast<uint64_t>(busy - kernels);
    out->idle_ns = static_cast<uint64_t>(std::max(0.0, static_cast<double>(b - a) - busy));
    out->comm_ns = static_cast<uint64_t>(std::min(kernels, t.Sum(model::kCommBusyNs, a, b)));
  };
  r.warmup_step.index = 0;
  r.warmup_step.start_ns = in.first_start_ns;
  r.warmup_step.end_ns = in.second_start_ns;
  split(in.first_start_ns, in.second_start_ns, &r.warmup_step);
  if (in.period_ns.count() == 0 || in.last_start_ns <= in.second_start_ns) return;
  model::StepRecord all;
  split(in.second_start_ns, in.last_start_ns, &all);
  const double n = static_cast<double>(in.period_ns.count());
  r.step_compute_ns = static_cast<double>(all.compute_ns) / n;
  r.step_copy_ns = static_cast<double>(all.copy_ns) / n;
  r.step_idle_ns = static_cast<double>(all.idle_ns) / n;
  r.step_comm_ns = static_cast<double>(all.comm_ns) / n;
  // Per-step rates: the inferred periods that lie in the window.
  const uint64_t lo = std::max(in.second_start_ns, r.window.start_ns);
  const uint64_t hi = std::min(in.last_start_ns, r.window.end_ns);
  if (hi > lo) {
    r.steps_in_window =
        n * static_cast<double>(hi - lo) / static_cast<double>(in.last_start_ns - in.second_start_ns);
  }
}

GpuReport ComputeGpu(const model::TraceModel& model, size_t index, const ReportOptions& options) {
  const GpuModel& g = model.gpus[index];
  GpuReport r;
  r.gpu_index = index;
  r.gpu = &g;
  r.label = GpuLabel(g);
  r.span_ns = g.last_ns > g.first_ns ? g.last_ns - g.first_ns : 0;
  r.window = SteadyWindow(g);
  const uint64_t w0 = r.window.start_ns;
  const uint64_t w1 = r.window.end_ns;
  const Timeline& t = g.timeline;
  auto sum = [&](int field) { return t.Sum(field, w0, w1); };
  // A count of events is whole: the timeline shares a bucket's counts out
  // by time at the window's edges (evidence read "156.15 gaps").
  auto count = [&](int field) { return std::round(t.Sum(field, w0, w1)); };
  // Time between capture windows (or otherwise untraced) is neither busy nor
  // idle: shares are of the traced time.
  r.untraced_ns = sum(model::kUntracedNs);
  r.one_time_ns = sum(model::kOneTimeGapNs);
  r.one_time_count = count(model::kOneTimeGapCount);
  const double wlen = r.traced_window_ns();

  // Busy and idle.
  r.busy_ns = sum(model::kBusyNs);
  r.kernel_busy_ns = sum(model::kKernelBusyNs);
  r.kernel_ns = sum(model::kKernelNs);
  r.copy_ns = sum(model::kCopyNs);
  r.memset_ns = sum(model::kMemsetNs);
  r.busy_share = r.busy_ns / wlen;
  r.gap_idle = {sum(model::kGapHostNs), sum(model::kGapSyncNs), 0, sum(model::kGapOtherNs),
                sum(model::kGapImplicitNs)};
  r.short_gap_idle = {sum(model::kShortGapHostNs), sum(model::kShortGapSyncNs),
                      sum(model::kShortGapKernelNs), 0, sum(model::kShortGapImplicitNs)};
  r.long_gap_ns = sum(model::kLongGapNs);
  r.long_gap_count = count(model::kLongGapCount);
  r.gap_count = count(model::kGapCount);
  r.stream_idle = {sum(model::kStreamIdleHostNs), sum(model::kStreamIdleSyncNs),
                   sum(model::kStreamIdleKernelNs), sum(model::kStreamIdleOtherNs),
                   sum(model::kStreamIdleImplicitNs)};
  r.input_host_ns = sum(model::kGapInputHostNs);
  r.after_sync_host_ns = sum(model::kGapAfterSyncHostNs);
  r.short_after_sync_host_ns = sum(model::kShortGapAfterSyncHostNs);
  r.pause_ns = sum(model::kPauseNs);
  r.pause_count = count(model::kPauseCount);
  for (const model::Interval& pause : g.pauses) {
    const uint64_t a = std::max(pause.start_ns, w0), b = std::min(pause.end_ns, w1);
    if (b > a) r.pause_copy_ns += t.Sum(model::kBusyNs, a, b);
  }
  r.implicit_idle_ns = r.gap_idle.implicit_ns + r.short_gap_idle.implicit_ns;
  r.long_launches = sum(model::kLongLaunches);
  r.long_launches_blocking = sum(model::kLongLaunchesBlocking);

  // The four numbers.
  r.idle_gap_share = r.gap_idle.total_ns() / wlen;
  {
    const double span = std::max(1.0, static_cast<double>(r.span_ns) -
                                          t.Total(model::kUntracedNs) -
                                          t.Total(model::kOneTimeGapNs));
    r.idle_gap_share_span =
        (t.Total(model::kGapHostNs) + t.Total(model::kGapSyncNs) + t.Total(model::kGapOtherNs) +
         t.Total(model::kGapImplicitNs)) /
        span;
  }
  const double sm_samples = sum(model::kSmUtilSamples);
  if (sm_samples > 0) {
    r.sm_util = {Utilization::Source::kMeasured, sum(model::kSmUtilSum) / sm_samples,
                 absl::StrFormat("sampled SM utilization, %.0f samples", sm_samples)};
  } else if (g.shape_known_ns > 0) {
    r.sm_util = {Utilization::Source::kEstimated, 100.0 * sum(model::kEstSmNs) / wlen,
                 "estimate from launch shapes: sum of min(blocks/SMs, 1) x duration / time"};
  } else {
    r.sm_util = {Utilization::Source::kUnavailable, 0,
                 "n/a (no hardware counters, launch shapes unknown)"};
  }
  const double dram_samples = sum(model::kDramUtilSamples);
  if (dram_samples > 0) {
    r.dram_util = {Utilization::Source::kMeasured, sum(model::kDramUtilSum) / dram_samples,
                   absl::StrFormat("sampled DRAM bandwidth utilization, %.0f samples",
                                   dram_samples)};
  } else {
    r.dram_util = {Utilization::Source::kUnavailable, 0, "n/a (no hardware counters)"};
  }
  r.kernel_duration = Describe(g.kernel_duration_ns);
  r.clock_reason_samples = sum(model::kClockReasonSamples);
  if (r.clock_reason_samples > 0) {
    r.throttled_share = sum(model::kThrottledSamples) / r.clock_reason_samples;
  }
  r.other_process_samples = sum(model::kOtherProcessSmSamples);
  if (r.other_process_samples > 0) {
    r.other_process_sm = sum(model::kOtherProcessSmSum) / r.other_process_samples;
  }
  for (const auto& [pid, o] : g.other_processes) {
    if (o.samples == 0) continue;
    r.other_processes.push_back(
        {pid, o.label, o.sm_util_sum / static_cast<double>(o.samples), o.max_sm_util, o.samples});
  }
  std::sort(r.other_processes.begin(), r.other_processes.end(),
            [](const GpuReport::Other& a, const GpuReport::Other& b) {
              return a.mean_sm_util != b.mean_sm_util ? a.mean_sm_util > b.mean_sm_util
                                                      : a.pid < b.pid;
            });

  // Kernels.
  r.kernel_count = g.kernel_count;
  r.kernel_names = g.kernels.size();
  r.tiny_kernels = g.tiny_kernels;
  r.shorter_than_launch = g.shorter_than_launch;
  r.launches_matched = g.launches_matched;
  if (g.shape_known_ns > 0) r.est_sm_efficiency = g.est_sm_ns / static_cast<double>(g.shape_known_ns);
  {
    // Theoretical occupancy over the program's own kernels: library and
    // generated kernels choose their registers and tiles themselves.
    double occupancy_ns = 0, known_ns = 0, library_ns = 0;
    for (const model::KernelStats& k : g.kernels) {
      const bool driver = k.driver_launches * 2 > k.launches_matched && k.launches_matched > 0;
      if (!LibraryOf(k.name, driver).empty()) {
        library_ns += static_cast<double>(k.duration_ns.sum());
        continue;
      }
      occupancy_ns += k.small_occupancy_ns;
      known_ns += static_cast<double>(k.small_known_ns);
    }
    const double all_ns = static_cast<double>(std::max<uint64_t>(1, g.kernel_ns));
    r.library_share = library_ns / all_ns;
    if (known_ns > 0) {
      r.est_occupancy = occupancy_ns / known_ns;
      r.occupancy_known_share = known_ns / all_ns;
    }
  }
  r.large_tile_share =
      static_cast<double>(g.large_tile_ns) / static_cast<double>(std::max<uint64_t>(1, g.kernel_ns));
  std::vector<const model::KernelStats*> kernels;
  for (const model::KernelStats& k : g.kernels) kernels.push_back(&k);
  std::sort(kernels.begin(), kernels.end(), [](const auto* a, const auto* b) {
    return a->duration_ns.sum() != b->duration_ns.sum() ? a->duration_ns.sum() > b->duration_ns.sum()
                                                        : a->name < b->name;
  });
  const double all_kernel_ns = static_cast<double>(std::max<uint64_t>(1, g.kernel_ns));
  for (size_t i = 0; i < kernels.size() && i < options.top_kernels; ++i) {
    const model::KernelStats& k = *kernels[i];
    KernelRow row;
    row.name = k.name;
    row.demangled = Demangle(k.name);
    row.compact = CompactKernelName(k.name);
    row.duration = Describe(k.duration_ns);
    row.share = static_cast<double>(k.duration_ns.sum()) / all_kernel_ns;
    row.tiny = k.tiny;
    row.shorter_than_launch = k.shorter_than_launch;
    row.launches_matched = k.launches_matched;
    if (k.shape_known && k.duration_ns.sum() > 0) {
      row.est_sm_efficiency = k.est_sm_ns / static_cast<double>(k.duration_ns.sum());
    }
    row.min_blocks = k.min_blocks;
    row.max_blocks = k.max_blocks;
    row.longest = k.longest;
    if (k.collective != model::CollectiveKind::kNone) row.collective = model::CollectiveName(k.collective);
    if (k.occupancy_known_ns > 0) {
      row.est_occupancy = k.occupancy_ns / static_cast<double>(k.occupancy_known_ns);
      row.large_tile = k.large_tile_ns * 2 > k.occupancy_known_ns;
    }
    row.library = LibraryOf(k.name, k.launches_matched > 0 && k.driver_launches * 2 > k.launches_matched);
    r.top_kernels.push_back(std::move(row));
  }

  // Copies and memsets.
  uint64_t copy_total_ns = 0, memset_total_ns = 0;
  for (const auto& by_memory : g.copies) {
    for (const model::CopyStats& c : by_memory) copy_total_ns += c.duration_ns;
  }
  for (const model::CopyStats& c : g.memsets) memset_total_ns += c.duration_ns;
  const double gpu_time =
      static_cast<double>(std::max<uint64_t>(1, g.kernel_ns + copy_total_ns + memset_total_ns));
  auto row_of = [gpu_time](const model::CopyStats& c, std::string direction, std::string memory) {
    CopyRow row;
    row.direction = std::move(direction);
    row.memory = std::move(memory);
    row.count = c.count;
    row.bytes = c.bytes;
    row.duration_ns = c.duration_ns;
    row.gb_per_s = c.duration_ns > 0 ? static_cast<double>(c.bytes) / c.duration_ns : 0;
    row.share_of_gpu_time = static_cast<double>(c.duration_ns) / gpu_time;
    row.sync_count = c.sync_count;
    row.sync_bytes = c.sync_bytes;
    row.sync_duration_ns = c.sync_duration_ns;
    row.longest = c.longest;
    return row;
  };
  for (int kind = 0; kind < model::kCopyKinds; ++kind) {
    for (int memory = 0; memory < model::kMemoryKinds; ++memory) {
      const model::CopyStats& c = g.copies[kind][memory];
      if (c.count == 0) continue;
      r.copies.push_back(row_of(c, CopyDirectionName(kind), MemoryKindName(memory)));
    }
  }
  for (int memory = 0; memory < model::kMemoryKinds; ++memory) {
    const model::CopyStats& c = g.memsets[memory];
    if (c.count > 0) r.memsets.push_back(row_of(c, "memset", MemoryKindName(memory)));
  }
  auto by_time = [](const CopyRow& a, const CopyRow& b) {
    return a.duration_ns != b.duration_ns ? a.duration_ns > b.duration_ns
                                          : std::tie(a.direction, a.memory) <
                                                std::tie(b.direction, b.memory);
  };
  std::sort(r.copies.begin(), r.copies.end(), by_time);
  std::sort(r.memsets.begin(), r.memsets.end(), by_time);
  r.copy_share_of_gpu_time = static_cast<double>(copy_total_ns) / gpu_time;
  r.pageable_copy_ns = sum(model::kPageableCopyNs);
  r.pageable_copy_count = count(model::kPageableCopyCount);
  r.d2h_copy_count = count(model::kD2hCopyCount);

  // Host side.
  r.queue_delay = Describe(g.queue_delay_ns);
  r.queue_delay_outliers = g.queue_delay_outliers;
  r.launches_unmatched = g.launches_unmatched;
  for (const model::ProcessModel& p : model.processes) {
    if (p.process_uid != g.process_uid) continue;
    const Timeline& pt = p.timeline;
    // The timeline shares a bucket's counts out by time at the window's
    // edges; a count of calls is whole.
    r.sync_calls = std::round(pt.Sum(model::kSyncCalls, w0, w1));
    r.sync_blocked_ns = pt.Sum(model::kSyncBlockedNs, w0, w1);
    if (r.sync_calls == 0) r.sync_calls = std::round(pt.Sum(model::kSyncRecords, w0, w1));
    for (int k = 0; k < model::kImplicitGroups; ++k) {
      ImplicitGroupRow row;
      row.group = k;
      row.calls = std::round(pt.Sum(model::kImplicitCallsFirst + k, w0, w1));
      row.blocked_ns = pt.Sum(model::kImplicitBlockedFirst + k, w0, w1);
      row.gpu_idle_ns = sum(model::kImplicitIdleFirst + k);
      if (row.calls == 0 && row.gpu_idle_ns <= 0) continue;
      for (const auto& [name, c] : p.implicit_calls) {
        if (c.group == k && c.blocked_ns > row.top_call_blocked_ns) {
          row.top_call = name;
          row.top_call_calls = c.calls;
          row.top_call_blocked_ns = c.blocked_ns;
        }
      }
      r.implicit_blocked_ns += row.blocked_ns;
      r.implicit.push_back(std::move(row));
    }
    std::sort(r.implicit.begin(), r.implicit.end(),
              [](const ImplicitGroupRow& a, const ImplicitGroupRow& b) {
                return a.blocked_ns != b.blocked_ns ? a.blocked_ns > b.blocked_ns : a.group < b.group;
              });
  }

  // Communication.
  const model::CommStats& comm = g.comm;
  r.has_comm = comm.kernels > 0;
  r.comm_busy_ns = sum(model::kCommBusyNs);
  r.comm_share = r.comm_busy_ns / wlen;
  r.comm_overlap_ns = sum(model::kCommOverlapNs);
  r.compute_busy_ns = sum(model::kComputeBusyNs);
  if (r.comm_busy_ns > 0) r.comm_overlap = std::min(1.0, r.comm_overlap_ns / r.comm_busy_ns);
  r.comm_kernels = comm.kernels;
  r.comm_kernel_ns = comm.kernel_ns;
  for (int kind = 1; kind < model::kCollectiveKinds; ++kind) {
    const model::CollectiveStats& c = comm.by_kind[static_cast<size_t>(kind)];
    if (c.count == 0) continue;
    r.collectives.push_back(
        {model::CollectiveName(static_cast<model::CollectiveKind>(kind)), c.count, c.kernel_ns,
         static_cast<double>(c.kernel_ns) / static_cast<double>(std::max<uint64_t>(1, comm.kernel_ns))});
  }
  std::sort(r.collectives.begin(), r.collectives.end(),
            [](const CollectiveRow& a, const CollectiveRow& b) {
              return a.kernel_ns != b.kernel_ns ? a.kernel_ns > b.kernel_ns : a.kind < b.kind;
            });
  for (const model::ProcessModel& p : model.processes) {
    if (p.process_uid != g.process_uid) continue;
    r.comm_ranges = p.comm_ranges;
    r.comm_range_ns = p.comm_range_ns;
  }

  // Steps.
  const model::StepStats& s = g.steps;
  r.has_steps = s.count > 0;
  r.step_source = r.has_steps ? "nvtx" : "";
  r.step_count = s.count;
  r.step_example = s.example_name;
  r.step_period = Describe(s.period_ns);
  r.step_range = Describe(s.range_ns);
  if (s.period_ns.count() > 0) {
    const double n = static_cast<double>(s.period_ns.count());
    r.step_compute_ns = static_cast<double>(s.compute_ns) / n;
    r.step_copy_ns = static_cast<double>(s.copy_ns) / n;
    r.step_idle_ns = static_cast<double>(s.idle_ns) / n;
    r.step_comm_ns = static_cast<double>(s.comm_ns) / n;
    r.steps_in_window = n;
  }
  r.warmup_step = s.warmup;
  r.slowest_steps = s.slowest;
  if (!r.has_steps && g.inferred_steps.found) InferredStepsReport(g, r);
  r.windows = ComputeWindows(model, index);
  r.minutes = ComputeMinutes(model, index);
  return r;
}

}  // namespace

SummaryReport ComputeSummary(const model::TraceModel& model, const ReportOptions& options) {
  SummaryReport report;
  report.options = options;
  report.idle_gap_threshold_ns = model.options.idle_gap_threshold_ns;
  report.long_gap_ns = model.options.long_gap_ns;
  report.events = model.events;
  for (size_t i = 0; i < model.gpus.size(); ++i) {
    report.gpus.push_back(ComputeGpu(model, i, options));
    report.late_ops += model.gpus[i].late_ops;
  }
  for (size_t i = 0; i < model.processes.size(); ++i) {
    const model::ProcessModel& p = model.processes[i];
    ProcessReport r;
    r.process_index = i;
    r.process = &p;
    r.label = absl::StrCat("pid ", p.pid, p.hostname.empty() ? "" : " on ", p.hostname);
    r.launch_call = Describe(p.launch_call_ns);
    r.launch_call_outliers = p.launch_call_outliers;
    // A lost call stack loses no event (its API record is kept): it does
    // not make the trace incomplete.
    for (const auto& [reason, n] : p.dropped) {
      (reason == proto::DROP_STACKS ? r.stacks_dropped : r.dropped) += n;
    }
    // Time outside a capture window was left out on purpose: not a loss.
    r.complete = r.dropped == 0 && p.lost_interval_count == p.window_off_count &&
                 p.lost_chunks == 0 && p.clean_end && p.undecodable_batches == 0;
    report.processes.push_back(std::move(r));
  }
  report.ranks = ComputeRanks(model, report);
  report.sites = ComputeSites(model);
  return report;
}

}  // namespace gpscope::analyses
