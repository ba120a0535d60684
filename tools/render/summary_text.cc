// tools/render/summary_text.cc: summary as text (see summary_render.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpscope/trace.pb.h"
#include "proto/metric_names.h"
#include "tools/analyses/capture_windows.h"
#include "tools/analyses/names.h"
#include "tools/render/enum_names.h"
#include "tools/render/read_status.h"
#include "tools/render/sites_render.h"
#include "tools/render/summary_render.h"
#include "tools/render/text_block.h"
#include "tools/render/text_format.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/time_origin.h"

namespace gpscope::render {
namespace {

using analyses::CopyRow;
using analyses::Distribution;
using analyses::Finding;
using analyses::GpuReport;
using analyses::KernelRow;
using analyses::ProcessReport;
using analyses::SummaryResult;
using analyses::Utilization;

constexpr size_t kWidth = TextBlock::kDefaultWidth;
constexpr size_t kTextMaxWarnings = 20;
constexpr size_t kTextMaxStreams = 8;

// "+5.443 s": a CUPTI time of process `uid` as seconds since the time
// origin (reader/timebase.h), the one every output uses and prints.
std::string At(const reader::Timebase& tb, uint64_t uid, uint64_t cupti_ns) {
  return absl::StrFormat("%+.3f s", static_cast<double>(tb.ToOriginNs(uid, cupti_ns)) / 1e9);
}


std::string EvidenceValue(const analyses::EvidenceNumber& e) {
  if (e.unit == "ratio") return Percent(e.value);
  if (e.unit == "ns") return Time(e.value);
  if (e.unit == "bytes") return Bytes(e.value);
  if (e.unit == "GB/s") return absl::StrFormat("%.3g GB/s", e.value);
  if (e.unit == "per_step") return absl::StrFormat("%.2f/step", e.value);
  if (e.unit == "per_s") return absl::StrFormat("%.1f/s", e.value);
  if (e.unit == "bool") return e.value != 0 ? "yes" : "no";
  if (e.unit == "count") return Count(e.value);
  if (e.value == std::floor(e.value)) return Count(e.value);
  return absl::StrFormat("%.2f", e.value);
}


// An evidence key for people: "gap_idle_ns" -> "gap idle" (the value has its unit).
std::string EvidenceKey(const analyses::EvidenceNumber& e) {
  std::string key = e.key;
  for (std::string_view suffix : {"_ns", "_gb_per_s"}) {
    if (key.size() > suffix.size() &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      key.resize(key.size() - suffix.size());
    }
  }
  return Spaced(key);
}

std::string UtilText(const Utilization& u) {
  switch (u.source) {
    case Utilization::Source::kMeasured:
      return absl::StrCat(Percent(u.percent / 100), " (", u.basis, ")");
    case Utilization::Source::kEstimated:
      return absl::StrCat(Percent(u.percent / 100), " (ESTIMATE from launch shapes: ",
                          "min(blocks/SMs, 1) x duration / time; no hardware counters)");
    case Utilization::Source::kUnavailable:
      break;
  }
  return u.basis;
}

std::string DistText(const Distribution& d) {
  if (d.count == 0) return "none";
  return absl::StrCat("P50 ", Time(d.p50), ", P95 ", Time(d.p95), ", max ", Time(d.max), " over ",
                      Count(d.count));
}

const ProcessReport* ProcessOf(const SummaryResult& r, const GpuReport& g) {
  for (const ProcessReport& p : r.report.processes) {
    if (p.process->process_uid == g.gpu->process_uid) return &p;
  }
  return nullptr;
}

void RenderFindings(const SummaryResult& r, TextBlock& t) {
  const std::vector<Finding>& findings = r.findings;
  size_t shown = 0;
  for (const Finding& f : findings) shown += f.severity != analyses::Severity::kInfo ? 1 : 0;
  t.Line(absl::StrCat("FINDINGS (", findings.size(), "; ", shown,
                      " at warning level or above; most severe first, then most costly)"));
  if (findings.empty() && r.model.gpus.empty() && r.model.events > 0) {
    // A node monitor file (or a process that never used a GPU): the rules
    // judge traced GPU work, and there is none; the samples are metrics'.
    t.Line("  none: no GPU work was traced in these files, so no rule can judge it. For a");
    t.Line("  node monitor file (GPU metric samples), run `gpscope-analyze metrics FILE...`:");
    t.Line("  idle GPUs, shared GPUs and trends, window by window.");
    return;
  }
  if (findings.empty()) {
    t.Line("  none: no rule fired. See the numbers below.");
    return;
  }
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    std::string head = absl::StrFormat("%2d. %-8s %s: %s", i + 1,
                                       absl::AsciiStrToUpper(analyses::SeverityName(f.severity)),
                                       f.rule, f.title);
    const std::string cost = f.cost_ns == 0 ? std::string("cost n/a")
                                            : absl::StrCat("cost ~", Time(f.cost_ns));
    if (head.size() + 2 + cost.size() + 1 <= kWidth) {
      head.append(kWidth - 1 - head.size() - cost.size(), ' ');
      head += cost;
      t.Line(head);
    } else {
      t.Para(1, head.substr(0));
      t.Para(5, cost);
    }
    t.Para(5, f.scope);
    t.Para(5, f.summary);
    std::vector<std::string> evidence;
    for (const analyses::EvidenceNumber& e : f.evidence) {
      evidence.push_back(absl::StrCat(EvidenceKey(e), " ", EvidenceValue(e)));
    }
    if (!evidence.empty()) t.Row("evidence", absl::StrJoin(evidence, ", "), 5, 15);
    uint64_t uid = 0;
    if (f.gpu >= 0) {
      uid = r.report.gpus[static_cast<size_t>(f.gpu)].gpu->process_uid;
    } else if (f.process >= 0) {
      uid = r.report.processes[static_cast<size_t>(f.process)].process->process_uid;
    }
    std::vector<std::string> where;
    for (const analyses::TimeRange& range : f.ranges) {
      where.push_back(absl::StrCat(At(r.model.timebase, uid, range.start_ns), " for ",
                                   Time(range.end_ns - std::min(range.end_ns, range.start_ns)),
                                   range.note.empty() ? "" : " (", range.note,
                                   range.note.empty() ? "" : ")"));
    }
    if (!where.empty()) t.Row("where", absl::StrJoin(where, "; "), 5, 15);
    if (!f.sites.empty()) {  // call stacks (issue 20): the source sites behind it
      std::vector<std::string> at;
      for (const analyses::SiteCitation& s : f.sites) {
        at.push_back(absl::StrCat(s.label, " (", Time(s.value_ns), ")"));
      }
      t.Row("at", absl::StrJoin(at, "; "), 5, 15);
    }
    for (size_t k = 0; k < f.fixes.size(); ++k) {
      t.Row(k == 0 ? "fix" : "", absl::StrCat("- ", f.fixes[k]), 5, 15, /*hang_extra=*/2);
    }
    // Findings grouped under this cause: one line each (their numbers are
    // in --format json).
    for (size_t k = 0; k < f.grouped.size(); ++k) {
      const Finding& g = f.grouped[k];
      t.Row(k == 0 ? "grouped" : "",
            absl::StrCat("- ", absl::AsciiStrToUpper(analyses::SeverityName(g.severity)), " ",
                         g.rule, g.cost_ns > 0 ? absl::StrCat(" (cost ~", Time(g.cost_ns), ")") : "",
                         g.scope != f.scope ? absl::StrCat(" on ", g.scope) : "", ", ",
                         g.relation, ": ", g.summary),
            5, 15, /*hang_extra=*/2);
    }
  }
}

void RenderIdle(const GpuReport& g, uint64_t threshold_ns, TextBlock& t) {
  const double wlen = g.traced_window_ns();
  const std::string thr = Time(threshold_ns);
  t.Line(absl::StrFormat("  %-20s%22s%22s%22s", "idle (steady window)",
                         absl::StrCat("gaps >= ", thr), absl::StrCat("gaps < ", thr),
                         "per stream (HTA)"));
  auto cell = [wlen](double ns, bool present) {
    if (!present) return std::string("-");
    return absl::StrFormat("%s %6s", Time(ns), Percent(ns / wlen));
  };
  struct RowSpec {
    const char* name;
    double large, small, stream;
    bool has_large, has_small;
  };
  const RowSpec rows[] = {
      {"host wait", g.gap_idle.host_ns, g.short_gap_idle.host_ns, g.stream_idle.host_ns, true,
       true},
      {"sync wait", g.gap_idle.sync_ns, g.short_gap_idle.sync_ns, g.stream_idle.sync_ns, true,
       true},
      {"implicit sync", g.gap_idle.implicit_ns, g.short_gap_idle.implicit_ns,
       g.stream_idle.implicit_ns, true, true},
      {"kernel wait", 0, g.short_gap_idle.kernel_ns, g.stream_idle.kernel_ns, false, true},
      {"other", g.gap_idle.other_ns, 0, g.stream_idle.other_ns, true, false},
      {"total", g.gap_idle.total_ns(), g.short_gap_idle.total_ns(), g.stream_idle.total_ns(), true,
       true},
  };
  for (const RowSpec& row : rows) {
    t.Line(absl::StrFormat("    %-18s%22s%22s%22s", row.name, cell(row.large, row.has_large),
                           cell(row.small, row.has_small), Time(row.stream)));
  }
  t.Para(4,
         "% of the window. host wait: the launch call came after the GPU ran dry; sync wait: "
         "the host was blocked in a sync then; implicit sync: in an implicitly synchronizing "
         "call (allocation, free, synchronous or pageable copy, synchronous memset); kernel "
         "wait: work was queued (short gap); other: queued work waited >= the threshold. "
         "Per-stream idle sums over streams (HTA).");
}

void RenderKernels(const GpuReport& g, TextBlock& t) {
  t.Line(absl::StrCat("  top kernels by GPU time (", g.top_kernels.size(), " of ",
                      Count(g.kernel_names), " names; ", Count(g.kernel_count), " kernels, ",
                      Time(g.gpu->kernel_ns), " in all)"));
  if (g.top_kernels.empty()) return;
  t.Line(absl::StrFormat("  %3s %8s %9s %6s %8s %8s %8s %8s %8s %8s %8s", "#", "count", "total",
                         "share", "mean", "p50", "p95", "p99", "min", "max", "stddev"));
  for (size_t i = 0; i < g.top_kernels.size(); ++i) {
    const KernelRow& k = g.top_kernels[i];
    const Distribution& d = k.duration;
    t.Line(absl::StrFormat("  %3d %8s %9s %6s %8s %8s %8s %8s %8s %8s %8s", i + 1, Count(d.count),
                           Time(d.total), Percent(k.share), Time(d.mean), Time(d.p50),
                           Time(d.p95), Time(d.p99), Time(d.min), Time(d.max), Time(d.stddev)));
    t.Line(absl::StrCat("      ", analyses::Truncate(k.compact, kWidth - 6)));
  }
}

void RenderCopies(const GpuReport& g, TextBlock& t) {
  if (g.copies.empty() && g.memsets.empty()) {
    t.Row("copies", "none");
    return;
  }
  t.Line(absl::StrCat("  copies and memsets (whole run; share of kernel + copy + memset time; ",
                      "copies ", Percent(g.copy_share_of_gpu_time), ")"));
  t.Line(absl::StrFormat("    %-7s %-9s %9s %9s %9s %9s %7s %14s", "kind", "memory", "count",
                         "bytes", "time", "GB/s", "share", "synchronous"));
  auto row = [&t](const CopyRow& c) {
    t.Line(absl::StrFormat("    %-7s %-9s %9s %9s %9s %9s %7s %14s", c.direction,
                           analyses::Truncate(c.memory, 9), Count(c.count),
                           Bytes(static_cast<double>(c.bytes)), Time(c.duration_ns),
                           absl::StrFormat("%.3g", c.gb_per_s), Percent(c.share_of_gpu_time),
                           c.sync_count == 0 ? std::string("0") : Count(c.sync_count)));
  };
  for (const CopyRow& c : g.copies) row(c);
  for (const CopyRow& c : g.memsets) row(c);
}

void RenderHost(const SummaryResult& r, const GpuReport& g, TextBlock& t) {
  const ProcessReport* p = ProcessOf(r, g);
  t.Line("  host side");
  if (p != nullptr && p->launch_call.count > 0) {
    t.Row("launch calls",
          absl::StrCat(DistText(p->launch_call), " calls; ", Count(p->launch_call_outliers),
                       " over 50 us (HTA outliers)"),
          4, 18);
  } else {
    t.Row("launch calls", "no launch API records (GPSCOPE_API=0, or CUDA graphs only)", 4, 18);
  }
  if (g.queue_delay.count > 0) {
    t.Row("queue delay",
          absl::StrCat(DistText(g.queue_delay), " launches (call end -> kernel start); ",
                       Count(g.queue_delay_outliers), " over 100 us; ",
                       Count(g.launches_unmatched), " kernels without a launch record"),
          4, 18);
  }
  const double short_share =
      g.launches_matched > 0
          ? static_cast<double>(g.shorter_than_launch) / static_cast<double>(g.launches_matched)
          : 0;
  t.Row("short kernels",
        absl::StrCat(Count(g.tiny_kernels), " of ", Count(g.kernel_count), " kernels under 10 us (",
                     Percent(g.kernel_count > 0 ? static_cast<double>(g.tiny_kernels) /
                                                      static_cast<double>(g.kernel_count)
                                                : 0),
                     "); ", Count(g.shorter_than_launch), " (", Percent(short_share),
                     " of matched) ran shorter than their launch call (HTA short kernels)"),
        4, 18);
  std::string syncs = absl::StrCat(Count(g.sync_calls), " sync calls in the window");
  if (g.steps_in_window > 0) {
    absl::StrAppend(&syncs, absl::StrFormat(" (%.1f per step)", g.sync_calls / g.steps_in_window));
  }
  absl::StrAppend(&syncs, ", host blocked ", Time(g.sync_blocked_ns), "; ",
                  Count(g.d2h_copy_count), " D2H copies in the window");
  t.Row("syncs", syncs, 4, 18);
  for (size_t i = 0; i < g.implicit.size(); ++i) {
    const analyses::ImplicitGroupRow& row = g.implicit[i];
    t.Row(i == 0 ? "implicit syncs" : "",
          absl::StrCat(model::ImplicitGroupName(row.group), ": ", Count(row.calls),
                       " calls in the window, host blocked ", Time(row.blocked_ns),
                       ", GPU idle behind them ", Time(row.gpu_idle_ns),
                       row.top_call.empty()
                           ? ""
                           : absl::StrCat(" (mostly ", row.top_call, ": ",
                                          Count(row.top_call_calls), " calls, ",
                                          Time(row.top_call_blocked_ns), " whole run)")),
          4, 18);
  }
  if (g.long_launches > 0) {
    t.Row("sync launches",
          absl::StrCat(Count(g.long_launches_blocking), " of ", Count(g.long_launches),
                       " launches of kernels >= 50 us returned after their kernel ended (window)"),
          4, 18);
  }
  if (p != nullptr) {
    std::vector<std::pair<uint32_t, model::ThreadSyncStats>> threads(
        p->process->sync_by_thread.begin(), p->process->sync_by_thread.end());
    std::sort(threads.begin(), threads.end(),
              [](const auto& a, const auto& b) { return a.second.blocked_ns > b.second.blocked_ns; });
    for (size_t i = 0; i < threads.size() && i < 3; ++i) {
      const auto& [thread, s] = threads[i];
      t.Row(i == 0 ? (p->process->sync_from_records ? "blocked (recs)" : "blocked by") : "",
            absl::StrCat("thread ", thread == 0 ? std::string("?") : absl::StrCat(thread), ": ",
                         Count(s.calls), " calls, ", Time(s.blocked_ns), " (whole run, max ",
                         Time(s.max_ns), ")"),
            4, 18);
    }
  }
}

void RenderSteps(const SummaryResult& r, const GpuReport& g, TextBlock& t) {
  if (!g.has_steps) {
    t.Row("steps",
          "no step markers (NVTX ranges named like \"step N\", \"ProfilerStep#N\", "
          "\"iteration N\")");
    return;
  }
  std::string head =
      g.step_source == "inferred"
          ? absl::StrCat(Count(g.step_count), " inferred without NVTX markers from the period of \"",
                         analyses::Truncate(g.step_anchor_host
                                                ? g.step_anchor
                                                : analyses::CompactKernelName(g.step_anchor),
                                            g.step_anchor_host ? 48 : 40),
                         "\" (",
                         g.step_candidates, g.step_candidates == 1 ? " series" : " series agree", ")")
          : absl::StrCat(Count(g.step_count), " (\"", analyses::Truncate(g.step_example, 24),
                         "\", ...)");
  if (g.step_period.count > 0) {
    absl::StrAppend(&head, ": step time P50 ", Time(g.step_period.p50), ", P95 ",
                    Time(g.step_period.p95), " (start to next start",
                    g.step_range.count > 0 ? absl::StrCat("; annotated range P50 ", Time(g.step_range.p50))
                                           : std::string(),
                    ")");
  }
  t.Row("steps", head);
  if (g.step_period.count > 0) {
    const double period = std::max(1.0, g.step_period.mean);
    t.Row("", absl::StrCat("per step: compute ", Time(g.step_compute_ns), " (",
                           Percent(g.step_compute_ns / period), "), copy ",
                           Time(g.step_copy_ns), " (", Percent(g.step_copy_ns / period),
                           "), idle ", Time(g.step_idle_ns), " (",
                           Percent(g.step_idle_ns / period), ")",
                           g.has_comm ? absl::StrCat("; communication kernels ",
                                                     Time(g.step_comm_ns), " (",
                                                     Percent(g.step_comm_ns / period),
                                                     ", part of compute)")
                                      : std::string()));
  }
  std::vector<std::string> slow;
  for (const model::StepRecord& s : g.slowest_steps) {
    if (slow.size() >= 3) break;
    slow.push_back(absl::StrCat("#", s.index, " ", Time(s.period_ns()), " at ",
                                At(r.model.timebase, g.gpu->process_uid, s.start_ns)));
  }
  t.Row("", absl::StrCat("warm-up (first) step ", Time(g.warmup_step.period_ns()),
                         slow.empty() ? "" : "; slowest: ", absl::StrJoin(slow, ", ")));
}

void RenderComm(const GpuReport& g, TextBlock& t) {
  if (!g.has_comm) return;
  std::vector<std::string> kinds;
  for (const analyses::CollectiveRow& c : g.collectives) {
    if (kinds.size() >= 4) break;
    kinds.push_back(absl::StrCat(c.kind, " ", Count(c.count), " (", Percent(c.share_of_comm), ")"));
  }
  t.Row("comm", absl::StrCat(Percent(g.comm_share), " of the window in NCCL kernels (",
                             Time(g.comm_busy_ns), "), ",
                             g.comm_overlap >= 0 ? Percent(g.comm_overlap) : std::string("n/a"),
                             " of it overlapped by compute (HTA); ", absl::StrJoin(kinds, ", "),
                             g.comm_ranges > 0 ? absl::StrCat("; ", Count(g.comm_ranges),
                                                              " NCCL NVTX ranges")
                                               : std::string()));
}

// Capture windows that caught no GPU work: when they were (from the kept
// window-off intervals) and when the sampled metrics saw the GPU at work.
void RenderEmptyWindows(const model::TraceModel& m, TextBlock& t) {
  for (const model::ProcessModel& p : m.processes) {
    if (p.window_off_count == 0) continue;
    const std::vector<analyses::CaptureWindow> traced = analyses::CaptureWindows(p);
    std::vector<std::string> windows;
    for (const analyses::CaptureWindow& w : traced) {
      windows.push_back(absl::StrCat(At(m.timebase, p.process_uid, w.start_ns), " for ",
                                     Time(w.end_ns - w.start_ns)));
    }
    std::string text = absl::StrCat(
        "pid ", p.pid, ": traced in ", windows.empty() ? "no capture window" : "capture window ",
        absl::StrJoin(windows, ", "));
    // gpm.sm_util where the GPU has it (nvml.gpu_util also counts copies
    // and the driver's own set-up work).
    const int i = p.gpu_work_samples[0] > 0 ? 0 : 1;
    const char* metric = i == 0 ? metric_names::kGpmSmUtil : metric_names::kNvmlGpuUtil;
    const uint64_t first = p.first_gpu_work_ns[i], last = p.last_gpu_work_ns[i];
    if (p.gpu_work_samples[i] == 0) {
      absl::StrAppend(&text, "; no GPU utilization was sampled.");
    } else if (first == 0) {
      absl::StrAppend(&text, "; the sampled ", metric, " stayed below 1% throughout.");
    } else {
      bool inside = false;  // [first, last] reaches into a window
      for (const analyses::CaptureWindow& w : traced) inside |= first < w.end_ns && last >= w.start_ns;
      absl::StrAppend(&text, "; the sampled ", metric, " saw the GPU at work from ",
                      At(m.timebase, p.process_uid, first), " to ",
                      At(m.timebase, p.process_uid, last),
                      inside ? ", a span that includes the window although no CUDA work "
                               "of this process was traced in it (another process's work?)"
                             : ", outside the window: move it (a later --delay, or "
                               "--capture-range nvtx on a range the work runs in).");
    }
    t.Para(2, text, 4);
  }
}

// One line about the window table: the spread of busy share over windows.
void RenderWindowsLine(const GpuReport& g, TextBlock& t) {
  const analyses::WindowTable& w = g.windows;
  if (w.rows.size() < 2) return;
  std::vector<double> busy;
  for (const analyses::WindowRow& row : w.rows) {
    const double share = row.values[analyses::kColBusyShare];
    if (!std::isnan(share)) busy.push_back(share);  // NaN: untraced
  }
  if (busy.size() < 2) return;
  std::sort(busy.begin(), busy.end());
  auto at = [&busy](double q) { return busy[static_cast<size_t>(q * static_cast<double>(busy.size() - 1))]; };
  const std::string traced =
      busy.size() < w.rows.size()
          ? absl::StrCat(" (", Count(static_cast<uint64_t>(busy.size())), " traced)")
          : "";
  t.Row("windows", absl::StrCat(Count(static_cast<uint64_t>(w.rows.size())), " x ", Time(w.width_ns),
                                traced, w.coarsened ? " (coarsened: long run)" : "",
                                ": busy share P10 ", Percent(at(0.1)), ", P50 ",
                                Percent(at(0.5)), ", P90 ", Percent(at(0.9)),
                                " (csv: --table windows)"));
}

void RenderRanks(const SummaryResult& r, TextBlock& t) {
  const analyses::RankReport& ranks = r.report.ranks;
  if (ranks.rows.size() < 2) return;
  t.Para(0, absl::StrCat("RANKS (", ranks.rows.size(), " GPUs; ", Count(ranks.matched),
                      " collectives matched; clocks aligned with each process's snapshots",
                      ranks.matched > 0 ? absl::StrCat(", collective ends agree to ",
                                                       Time(ranks.end_spread_ns), " (P95 ",
                                                       Time(ranks.end_spread_p95_ns), ")")
                                        : std::string(),
                      ")"));
  t.Line(absl::StrFormat("  %-24s %9s %9s %9s %9s %6s %9s %6s %6s", "rank", "step P50",
                         "compute", "comm", "wait", "idle", "late", "last", "ovlap"));
  for (size_t i = 0; i < ranks.rows.size(); ++i) {
    const analyses::RankRow& row = ranks.rows[i];
    const double wlen = std::max(1.0, row.window_ns);
    t.Line(absl::StrFormat(
        "  %-24s %9s %9s %9s %9s %6s %9s %6s %6s",
        analyses::Truncate(absl::StrCat(static_cast<int>(i) == ranks.straggler ? "* " : "",
                                        row.label),
                           24),
        row.step_p50_ns > 0 ? Time(row.step_p50_ns) : std::string("-"), Time(row.compute_busy_ns),
        Time(row.comm_busy_ns), row.collectives > 0 ? Time(row.wait_ns) : std::string("-"),
        Percent(row.idle_ns / wlen),
        row.collectives > 0 ? absl::StrFormat("%+.3g ms", row.mean_late_ns / 1e6) : std::string("-"),
        row.collectives > 0 ? Percent(row.last_share) : std::string("-"),
        row.comm_overlap >= 0 ? Percent(row.comm_overlap) : std::string("-")));
  }
  t.Para(2,
         "compute/comm/idle: steady window; wait: time in collectives beyond the fastest rank's "
         "(TB); late: mean start after the other ranks' median; last: share of collectives "
         "started last; * the straggler.");
}

void RenderGpu(const SummaryResult& r, const GpuReport& g, TextBlock& t) {
  const model::GpuModel& m = *g.gpu;
  t.Line(absl::StrCat("== ", g.label, " ", std::string(kWidth > g.label.size() + 4
                                                           ? std::min<size_t>(kWidth - g.label.size() - 4, 60)
                                                           : 0,
                                                       '=')));
  t.Row("span", absl::StrCat(Time(g.span_ns), " of GPU activity; steady window ",
                             Time(g.window.length_ns()), " from ",
                             At(r.model.timebase, m.process_uid, g.window.start_ns), ": ",
                             g.window.basis,
                             g.untraced_ns > 0
                                 ? absl::StrCat("; ", Time(g.untraced_ns),
                                                " of it untraced (between capture windows or "
                                                "lost), left out of the shares")
                                 : ""));
  t.Row("SM util", UtilText(g.sm_util));
  t.Row("memory BW", UtilText(g.dram_util));
  t.Row("kernel time",
        g.kernel_duration.count > 0
            ? absl::StrCat("P50 ", Time(g.kernel_duration.p50), ", P95 ",
                           Time(g.kernel_duration.p95), " (", Count(g.kernel_count),
                           " kernels, whole run)")
            : "no kernels");
  t.Row("idle gaps",
        absl::StrCat(Percent(g.idle_gap_share), " of the steady window idle in gaps >= ",
                     Time(r.report.idle_gap_threshold_ns), " (", Count(g.gap_count), " gaps; ",
                     Percent(g.idle_gap_share_span), " over the whole span)"));
  t.Row("busy",
        absl::StrCat(Percent(g.busy_share), " of the window (", Time(g.busy_ns),
                     "; kernels ", Time(g.kernel_busy_ns), ", copies ", Time(g.copy_ns),
                     ", memsets ", Time(g.memset_ns), "); whole run busy ", Time(m.busy_ns)));
  if (g.est_sm_efficiency >= 0) {
    t.Row("SM efficiency", absl::StrCat(Percent(g.est_sm_efficiency),
                                        " of SMs get blocks, weighted by kernel time (estimate)"));
  }
  if (g.est_occupancy >= 0) {
    t.Row("occupancy",
          absl::StrCat(Percent(g.est_occupancy),
                       " theoretical, from launch shapes, weighted by kernel time (",
                       Percent(g.occupancy_known_share), " of it",
                       g.library_share > 0
                           ? absl::StrCat("; library and generated kernels, ",
                                          Percent(g.library_share), ", left out")
                           : std::string(),
                       g.large_tile_share > 0
                           ? absl::StrCat("; large-tile GEMM/attention launches, ",
                                          Percent(g.large_tile_share), ", left out")
                           : std::string(),
                       ")"));
  } else if (g.large_tile_share > 0 || g.library_share > 0) {
    t.Row("occupancy",
          absl::StrCat("n/a: library and generated kernels (", Percent(g.library_share),
                       " of kernel time) and large-tile launches (>= 64 KiB shared memory per "
                       "block, ", Percent(g.large_tile_share), ")"));
  }
  if (g.throttled_share >= 0) {
    t.Row("clocks", absl::StrCat("power/thermal slowdown in ", Percent(g.throttled_share), " of ",
                                 Count(g.clock_reason_samples), " samples (window)"));
  }
  if (!g.other_processes.empty()) {
    std::vector<std::string> others;
    for (size_t i = 0; i < g.other_processes.size() && i < 4; ++i) {
      const GpuReport::Other& o = g.other_processes[i];
      others.push_back(absl::StrFormat("pid %d%s%s %.0f%% SM (max %.0f%%)", o.pid,
                                       o.label.empty() ? "" : " ", o.label, o.mean_sm_util,
                                       o.max_sm_util));
    }
    t.Row("other procs", absl::StrCat(absl::StrJoin(others, ", "), " (NVML, whole run)"));
  }
  RenderComm(g, t);
  RenderWindowsLine(g, t);
  t.Line();
  RenderIdle(g, r.report.idle_gap_threshold_ns, t);
  t.Line();
  RenderKernels(g, t);
  t.Line();
  RenderCopies(g, t);
  t.Line();
  RenderHost(r, g, t);
  t.Line();
  RenderSteps(r, g, t);
  if (m.streams.size() > 1) {
    std::vector<model::StreamModel> streams = m.streams;
    std::sort(streams.begin(), streams.end(),
              [](const auto& a, const auto& b) { return a.busy_ns > b.busy_ns; });
    std::vector<std::string> items;
    for (size_t i = 0; i < streams.size() && i < kTextMaxStreams; ++i) {
      items.push_back(absl::StrCat(streams[i].stream_id, ": ", Count(streams[i].ops), " ops ",
                                   Time(streams[i].busy_ns)));
    }
    if (streams.size() > kTextMaxStreams) items.push_back("...");
    t.Row("streams", absl::StrJoin(items, ", "));
  }
}

void RenderCompleteness(const SummaryResult& r, TextBlock& t) {
  t.Line("DATA COMPLETENESS");
  for (const reader::FileInfo& f : r.model.index.files) {
    if (!f.status.ok()) {
      t.Para(2, absl::StrCat("file NOT READ: ", f.status.message()), 4);
    } else if (f.damaged_regions > 0 || f.truncated || f.bad_chunks > 0) {
      t.Para(2,
             absl::StrCat("file ", f.path, ": DAMAGED: ", Count(f.damaged_regions),
                          " damaged regions, ", Count(f.bad_chunks), " undecodable frames, ",
                          Count(f.skipped_bytes), " bytes skipped",
                          f.truncated ? ", ends in a truncated frame" : ""),
             4);
    }
  }
  for (const ProcessReport& pr : r.report.processes) {
    const model::ProcessModel& p = *pr.process;
    std::vector<std::string> parts;
    if (pr.dropped == 0) {
      parts.push_back("0 dropped");
    } else {
      std::vector<std::string> reasons;
      for (const auto& [reason, n] : p.dropped) {
        if (reason == proto::DROP_STACKS) continue;
        reasons.push_back(absl::StrCat(Spaced(DropName(reason)), " ", Count(n)));
      }
      parts.push_back(absl::StrCat(Count(pr.dropped), " DROPPED (", absl::StrJoin(reasons, ", "),
                                   ")"));
    }
    if (pr.stacks_dropped > 0) {
      parts.push_back(absl::StrCat(Count(pr.stacks_dropped),
                                   " call stacks not kept (their API records are)"));
    }
    const uint64_t lost_count = p.lost_interval_count - p.window_off_count;
    parts.push_back(lost_count == 0
                        ? std::string("no lost intervals")
                        : absl::StrCat(Count(lost_count), " LOST intervals (",
                                       Time(p.lost_interval_ns - p.window_off_ns), ")"));
    if (p.window_off_count > 0) {
      parts.push_back(absl::StrCat(Time(p.window_off_ns), " outside capture windows (by choice)"));
    }
    parts.push_back(p.lost_chunks == 0 ? std::string("0 lost frames")
                                       : absl::StrCat(Count(p.lost_chunks), " LOST frames"));
    if (p.undecodable_batches > 0) {
      parts.push_back(absl::StrCat(Count(p.undecodable_batches), " undecodable batches"));
    }
    if (p.clean_end && p.end_reason == proto::END_WINDOW_CUT) {
      parts.push_back("window copied out whole by gpscope attach (the process ran on)");
    } else {
      parts.push_back(p.clean_end
                          ? absl::StrCat("clean end (", EndName(p.end_reason), ")")
                          : std::string("NO END RECORD (killed, crashed or still running)"));
    }
    t.Para(2,
           absl::StrCat(pr.label, ": ", pr.complete ? "complete: " : "INCOMPLETE: ",
                        absl::StrJoin(parts, ", "), "; ", Count(p.events), " events"),
           4);
    for (const proto::LostInterval& l : p.lost_intervals) {
      t.Para(4, absl::StrCat("lost at ", At(r.model.timebase, p.process_uid, l.start_ns()), " ",
                             l.end_ns() == 0 ? std::string("to the end")
                                             : absl::StrCat("for ", Time(l.end_ns() - std::min(l.end_ns(), l.start_ns()))),
                             ": ", Spaced(LostName(l.reason())),
                             l.detail().empty() ? "" : ": ", l.detail()),
             6);
    }
    for (const std::string& u : p.unavailable) t.Para(4, absl::StrCat("unavailable: ", u), 6);
    for (const proto::CuptiClientRefusal& c : p.cupti_refusals) {
      // gpscope's data is complete; the application's own profiler got none.
      t.Para(4,
             absl::StrCat("another profiler REFUSED: ", c.api(), " from ",
                          c.caller().empty() ? std::string("an unknown library") : c.caller(),
                          ", ", Count(c.count()), c.count() == 1 ? " call" : " calls",
                          " from ", At(r.model.timebase, p.process_uid, c.first_ns()),
                          " (gpscope held CUPTI; that profiler recorded no GPU events: "
                          "GPSCOPE_CUPTI_MODE=yield leaves CUPTI to it)"),
             6);
    }
    if (p.collector_cpu.samples > 0) {
      t.Para(4,
             absl::StrFormat("collector cost: gpscope's threads used %.2f%% of one core on average "
                             "(max %.1f%%; the metrics sampler %.2f%%)",
                             p.collector_cpu.mean_pct(), p.collector_cpu.pct_max,
                             p.sampler_cpu.mean_pct()),
             6);
    } else if (p.sampler_cpu.samples > 0) {
      t.Para(4,
             absl::StrFormat("collector cost: the metrics sampler used %.2f%% of one core on "
                             "average (this trace has no total for gpscope's threads)",
                             p.sampler_cpu.mean_pct()),
             6);
    }
  }
  if (r.report.late_ops > 0) {
    t.Para(2,
           absl::StrCat(Count(r.report.late_ops),
                        " GPU records arrived more than the reorder window after their time "
                        "was swept; idle accounting around them is approximate."),
           4);
  }
  const reader::TraceIndex& index = r.model.index;
  const uint64_t warnings = index.warnings.size() + index.warnings_omitted;
  if (warnings > 0) {
    t.Line(absl::StrCat("  warnings (", Count(warnings), "):"));
    for (size_t i = 0; i < index.warnings.size() && i < kTextMaxWarnings; ++i) {
      t.Para(4, index.warnings[i], 6);
    }
    if (warnings > kTextMaxWarnings) {
      t.Line(absl::StrCat("    ... ", Count(warnings - kTextMaxWarnings),
                          " more (--format json lists them)"));
    }
  }
}


}  // namespace

std::string RenderRulesText() {
  TextBlock t;
  t.Line("findings rules (gpscope-analyze summary):");
  for (const analyses::RuleInfo& r : analyses::RuleCatalogue()) {
    t.Line("");
    t.Para(2, absl::StrCat(r.id, ": ", r.title));
    t.Row("trigger", r.trigger, 4, 14);
    t.Row("source", r.source, 4, 14);
  }
  return t.Take();
}


std::string RenderSummaryText(const SummaryResult& r) {
  TextBlock t;
  const model::TraceModel& m = r.model;
  t.Line(absl::StrFormat("gpscope summary: %d %s, %d %s, %d %s, %s events", m.index.files.size(),
                         m.index.files.size() == 1 ? "file" : "files", m.processes.size(),
                         m.processes.size() == 1 ? "process" : "processes", m.gpus.size(),
                         m.gpus.size() == 1 ? "GPU" : "GPUs", Count(m.events)));
  t.Line(render::TimeOriginText(m.timebase));
  if (m.index.partial) t.Para(0, PartialText(m.index));
  t.Para(0,
         absl::StrCat("Ratios are over each GPU's steady window (start-up and the first step "
                      "excluded); idle gaps are gaps >= ",
                      Time(r.report.idle_gap_threshold_ns), " (--idle-gap-ms)."));
  bool incomplete = false;
  for (const ProcessReport& p : r.report.processes) incomplete |= !p.complete;
  for (const reader::FileInfo& f : m.index.files) {
    incomplete |= !f.status.ok() || f.damaged_regions > 0 || f.truncated || f.bad_chunks > 0;
  }
  if (incomplete) {
    t.Para(0, "NOTE: the data is incomplete (see DATA COMPLETENESS at the end); numbers "
              "undercount.");
  }
  t.Line();
  RenderFindings(r, t);
  if (r.report.sites.present) {  // call stacks (issue 20)
    t.Line();
    for (const std::string& line :
         render::SitesText(m, r.report, std::max<size_t>(r.report.options.top_kernels, 1))) {
      t.Line(line);
    }
  }
  if (m.gpus.empty()) {
    t.Line();
    t.Line("No GPU activity (kernels, copies, memsets) in these files.");
    RenderEmptyWindows(m, t);
  }
  for (const GpuReport& g : r.report.gpus) {
    t.Line();
    RenderGpu(r, g, t);
  }
  if (r.report.ranks.rows.size() >= 2) {
    t.Line();
    RenderRanks(r, t);
  }
  t.Line();
  RenderCompleteness(r, t);
  return t.Take();
}

}  // namespace gpscope::render
