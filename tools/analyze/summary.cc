// tools/analyze/summary.cc: see summary.h.
#include "tools/analyze/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/names.h"
#include "tools/analyze/cli.h"
#include "tools/model/model_builder.h"
#include "tools/render/csv_writer.h"
#include "tools/render/json_writer.h"
#include "tools/render/sites_render.h"
#include "tools/render/text_format.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/time_origin.h"

namespace gpscope::analyze {
namespace {

using analyses::CopyRow;
using analyses::Distribution;
using analyses::Finding;
using analyses::GpuReport;
using analyses::KernelRow;
using analyses::ProcessReport;
using analyses::Utilization;
using render::Bytes;
using render::Count;
using render::CsvWriter;
using render::JsonWriter;
using render::Percent;
using render::Time;

constexpr size_t kWidth = 100;
constexpr size_t kLabel = 16;  // "  kernel time   " column for GPU rows
constexpr size_t kTextMaxWarnings = 20;
constexpr size_t kTextMaxStreams = 8;

// ------------------------------------------------------------- formatting --

// "+5.443 s": a CUPTI time of process `uid` as seconds since the time
// origin (reader/timebase.h), the one every output uses and prints.
std::string At(const reader::Timebase& tb, uint64_t uid, uint64_t cupti_ns) {
  return absl::StrFormat("%+.3f s", static_cast<double>(tb.ToOriginNs(uid, cupti_ns)) / 1e9);
}

std::string Uid(uint64_t uid) { return absl::StrFormat("%016x", uid); }

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

std::string Spaced(std::string key) {
  std::replace(key.begin(), key.end(), '_', ' ');
  return key;
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

std::string DropName(int reason) {
  if (!proto::DropReason_IsValid(reason)) return absl::StrCat("reason_", reason);
  std::string n = proto::DropReason_Name(static_cast<proto::DropReason>(reason));
  return absl::AsciiStrToLower(n.rfind("DROP_", 0) == 0 ? n.substr(5) : n);
}
std::string LostName(int reason) {
  if (!proto::LostReason_IsValid(reason)) return absl::StrCat("reason_", reason);
  std::string n = proto::LostReason_Name(static_cast<proto::LostReason>(reason));
  return absl::AsciiStrToLower(n.rfind("LOST_", 0) == 0 ? n.substr(5) : n);
}
std::string EndName(int reason) {
  if (!proto::EndReason_IsValid(reason)) return absl::StrCat("reason_", reason);
  std::string n = proto::EndReason_Name(static_cast<proto::EndReason>(reason));
  return absl::AsciiStrToLower(n.rfind("END_", 0) == 0 ? n.substr(4) : n);
}

// ------------------------------------------------------------------- text --

class Text {
 public:
  // `text` at `indent`, wrapped at spaces to kWidth; continuation lines at
  // `hang` (default: indent). Control characters from the trace are
  // escaped (render::Printable); lines break on character boundaries.
  void Para(size_t indent, std::string_view raw, size_t hang = std::string::npos) {
    if (hang == std::string::npos) hang = indent;
    const std::string printable = render::Printable(raw);
    std::string_view text = printable;
    size_t at = indent;
    bool first = true;
    while (first || !text.empty()) {
      const size_t room = kWidth - at;
      std::string_view line = render::CutUtf8(text, room);
      if (line.empty() && !text.empty()) line = render::CutUtf8(text, room + 4);  // one character
      if (text.size() > room) {
        const size_t space = line.rfind(' ');
        if (space != std::string_view::npos && space > 0) line = line.substr(0, space);
      }
      out_.append(at, ' ');
      out_.append(line.data(), line.size());
      out_.push_back('\n');
      text.remove_prefix(line.size());
      while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
      first = false;
      at = hang;
    }
  }
  // "  label         value", the value wrapped under itself.
  void Row(std::string_view label, std::string_view value, size_t indent = 2,
           size_t label_width = kLabel, size_t hang_extra = 0) {
    std::string head(indent, ' ');
    head.append(label.data(), label.size());
    if (head.size() < label_width) {
      head.append(label_width - head.size(), ' ');
    } else {
      head.push_back(' ');
    }
    const size_t hang = head.size() + hang_extra;
    std::string line = head + std::string(value);
    // Para indents by itself: pass the row as text at column 0.
    Para(0, line, hang);
  }
  void Line(std::string_view s = "") {
    out_.append(s.data(), s.size());
    out_.push_back('\n');
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

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

void RenderFindings(const SummaryResult& r, Text& t) {
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

void RenderIdle(const GpuReport& g, uint64_t threshold_ns, Text& t) {
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

void RenderKernels(const GpuReport& g, Text& t) {
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

void RenderCopies(const GpuReport& g, Text& t) {
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

void RenderHost(const SummaryResult& r, const GpuReport& g, Text& t) {
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

void RenderSteps(const SummaryResult& r, const GpuReport& g, Text& t) {
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

void RenderComm(const GpuReport& g, Text& t) {
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
void RenderEmptyWindows(const model::TraceModel& m, Text& t) {
  for (const model::ProcessModel& p : m.processes) {
    if (p.window_off_count == 0) continue;
    std::vector<std::pair<uint64_t, uint64_t>> off;
    for (const proto::LostInterval& l : p.lost_intervals) {
      if (l.reason() != proto::LOST_TRACING_DISABLED) continue;
      off.push_back({l.start_ns(), l.end_ns() == 0 ? p.last_ns : l.end_ns()});
    }
    std::sort(off.begin(), off.end());
    // The traced spans between them: the capture windows.
    std::vector<std::pair<uint64_t, uint64_t>> traced;
    uint64_t at = p.first_ns;
    for (const auto& [a, b] : off) {
      if (a > at) traced.push_back({at, a});
      at = std::max(at, b);
    }
    if (at < p.last_ns) traced.push_back({at, p.last_ns});
    std::vector<std::string> windows;
    for (const auto& [a, b] : traced) {
      windows.push_back(absl::StrCat(At(m.timebase, p.process_uid, a), " for ", Time(b - a)));
    }
    std::string text = absl::StrCat(
        "pid ", p.pid, ": traced in ", windows.empty() ? "no capture window" : "capture window ",
        absl::StrJoin(windows, ", "));
    // gpm.sm_util where the GPU has it (nvml.gpu_util also counts copies
    // and the driver's own set-up work).
    const int i = p.gpu_work_samples[0] > 0 ? 0 : 1;
    const char* metric = i == 0 ? "gpm.sm_util" : "nvml.gpu_util";
    const uint64_t first = p.first_gpu_work_ns[i], last = p.last_gpu_work_ns[i];
    if (p.gpu_work_samples[i] == 0) {
      absl::StrAppend(&text, "; no GPU utilization was sampled.");
    } else if (first == 0) {
      absl::StrAppend(&text, "; the sampled ", metric, " stayed below 1% throughout.");
    } else {
      bool inside = false;  // [first, last] reaches into a window
      for (const auto& [a, b] : traced) inside |= first < b && last >= a;
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
void RenderWindowsLine(const GpuReport& g, Text& t) {
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

void RenderRanks(const SummaryResult& r, Text& t) {
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

void RenderGpu(const SummaryResult& r, const GpuReport& g, Text& t) {
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

void RenderCompleteness(const SummaryResult& r, Text& t) {
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

// ------------------------------------------------------------------- json --

void Dist(JsonWriter& j, const Distribution& d) {
  j.BeginObject();
  j.Key("count").Uint(d.count).Key("total").Uint(d.total).Key("mean").Double(d.mean);
  j.Key("stddev").Double(d.stddev).Key("min").Double(d.min).Key("p50").Double(d.p50);
  j.Key("p95").Double(d.p95).Key("p99").Double(d.p99).Key("max").Double(d.max);
  j.EndObject();
}

void Util(JsonWriter& j, const Utilization& u) {
  j.BeginObject();
  if (u.source == Utilization::Source::kUnavailable) {
    j.Key("percent").Null();
  } else {
    j.Key("percent").Double(u.percent);
  }
  j.Key("source").String(u.source == Utilization::Source::kMeasured    ? "measured"
                         : u.source == Utilization::Source::kEstimated ? "estimated"
                                                                       : "unavailable");
  j.Key("basis").String(u.basis);
  j.EndObject();
}

void Step(JsonWriter& j, const model::StepRecord& s) {
  j.BeginObject();
  j.Key("index").Uint(s.index).Key("start_ns").Uint(s.start_ns).Key("end_ns").Uint(s.end_ns);
  j.Key("period_ns").Uint(s.period_ns()).Key("range_ns").Uint(s.range_ns);
  j.Key("compute_ns").Uint(s.compute_ns).Key("copy_ns").Uint(s.copy_ns);
  j.Key("idle_ns").Uint(s.idle_ns).Key("comm_ns").Uint(s.comm_ns);
  j.EndObject();
}

void WindowTableJson(JsonWriter& j, const analyses::WindowTable& w) {
  j.BeginObject();
  j.Key("requested_ns").Uint(w.requested_ns).Key("width_ns").Uint(w.width_ns);
  j.Key("coarsened").Bool(w.coarsened);
  j.Key("columns").BeginInlineArray().String("start_ns").String("end_ns");
  for (int c = 0; c < analyses::kWindowColumns; ++c) j.String(analyses::WindowColumnName(c));
  j.EndArray();
  j.Key("rows").BeginArray();
  for (const analyses::WindowRow& row : w.rows) {
    j.BeginInlineArray().Uint(row.start_ns).Uint(row.end_ns);
    for (double v : row.values) j.Double(v);
    j.EndArray();
  }
  j.EndArray();
  j.EndObject();
}

void CommJson(JsonWriter& j, const GpuReport& g) {
  j.BeginObject();
  j.Key("kernels").Uint(g.comm_kernels).Key("kernel_ns").Uint(g.comm_kernel_ns);
  j.Key("busy_ns").Double(g.comm_busy_ns).Key("share").Double(g.comm_share);
  j.Key("overlap_ns").Double(g.comm_overlap_ns);
  j.Key("overlap").NonNegativeOrNull(g.comm_overlap);
  j.Key("compute_busy_ns").Double(g.compute_busy_ns);
  j.Key("collectives").BeginArray();
  for (const analyses::CollectiveRow& c : g.collectives) {
    j.BeginObject().Key("kind").String(c.kind).Key("count").Uint(c.count);
    j.Key("kernel_ns").Uint(c.kernel_ns).Key("share_of_comm").Double(c.share_of_comm).EndObject();
  }
  j.EndArray();
  j.Key("nvtx_ranges").BeginObject().Key("count").Uint(g.comm_ranges);
  j.Key("total_ns").Uint(g.comm_range_ns).EndObject();
  j.EndObject();
}

void CopyJson(JsonWriter& j, const CopyRow& c) {
  j.BeginObject();
  j.Key("direction").String(c.direction).Key("memory").String(c.memory);
  j.Key("count").Uint(c.count).Key("bytes").Uint(c.bytes).Key("duration_ns").Uint(c.duration_ns);
  j.Key("gb_per_s").Double(c.gb_per_s).Key("share_of_gpu_time").Double(c.share_of_gpu_time);
  j.Key("sync").BeginObject();
  j.Key("count").Uint(c.sync_count).Key("bytes").Uint(c.sync_bytes);
  j.Key("duration_ns").Uint(c.sync_duration_ns);
  j.EndObject();
  j.EndObject();
}

void FindingJson(const SummaryResult& r, JsonWriter& j, const Finding& f) {
  j.BeginObject();
  j.Key("rule").String(f.rule).Key("title").String(f.title);
  j.Key("severity").String(analyses::SeverityName(f.severity));
  j.Key("cost_ns").Uint(f.cost_ns);
  j.Key("gpu").IndexOrNull(f.gpu).Key("process").IndexOrNull(f.process);
  j.Key("scope").String(f.scope).Key("summary").String(f.summary);
  j.Key("evidence").BeginArray();
  for (const analyses::EvidenceNumber& e : f.evidence) {
    j.BeginObject().Key("key").String(e.key).Key("value").Double(e.value);
    j.Key("unit").String(e.unit).EndObject();
  }
  j.EndArray();
  uint64_t uid = 0;
  if (f.gpu >= 0) uid = r.report.gpus[static_cast<size_t>(f.gpu)].gpu->process_uid;
  if (f.gpu < 0 && f.process >= 0) {
    uid = r.report.processes[static_cast<size_t>(f.process)].process->process_uid;
  }
  j.Key("ranges").BeginArray();
  for (const analyses::TimeRange& range : f.ranges) {
    j.BeginObject().Key("start_ns").Uint(range.start_ns).Key("end_ns").Uint(range.end_ns);
    // ns since the time origin (time_origin at the top): the report's,
    // export's and dump's time of the same instant.
    j.Key("offset_ns").Uint(r.model.timebase.ToOriginNs(uid, range.start_ns));
    j.Key("note").String(range.note).EndObject();
  }
  j.EndArray();
  j.Key("fixes").BeginArray();
  for (const std::string& fix : f.fixes) j.String(fix);
  j.EndArray();
  if (!f.sites.empty()) {  // call stacks (issue 20): index into source_lines.sites
    j.Key("sites").BeginArray();
    for (const analyses::SiteCitation& s : f.sites) {
      j.BeginObject().Key("site").Uint(s.site).Key("label").String(s.label);
      j.Key("role").String(s.role).Key("value_ns").Uint(s.value_ns).EndObject();
    }
    j.EndArray();
  }
  if (f.relation.empty()) {  // a top-level finding: what is grouped under it
    j.Key("grouped").BeginArray();
    for (const Finding& g : f.grouped) FindingJson(r, j, g);
    j.EndArray();
  } else {
    j.Key("relation").String(f.relation);
  }
  j.EndObject();
}

void GpuJson(const SummaryResult& r, JsonWriter& j, const GpuReport& g) {
  const model::GpuModel& m = *g.gpu;
  j.BeginObject();
  j.Key("index").Uint(g.gpu_index).Key("label").String(g.label);
  j.Key("process_uid").String(Uid(m.process_uid)).Key("pid").Uint(m.pid);
  j.Key("hostname").String(m.hostname).Key("device_id").Uint(m.device_id);
  if (m.has_device_info) {
    const proto::DeviceInfo& d = m.device;
    j.Key("device").BeginObject();
    j.Key("name").String(d.name()).Key("uuid").String(d.uuid());
    j.Key("pci_bus_id").String(d.pci_bus_id()).Key("sm_count").Uint(d.sm_count());
    j.Key("compute_capability")
        .String(absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()));
    j.Key("global_memory_bytes").Uint(d.global_memory_bytes());
    j.EndObject();
  } else {
    j.Key("device").Null();
  }
  j.Key("span").BeginObject();
  j.Key("first_ns").Uint(m.first_ns).Key("last_ns").Uint(m.last_ns).Key("length_ns").Uint(g.span_ns);
  j.EndObject();
  j.Key("window").BeginObject();
  j.Key("start_ns").Uint(g.window.start_ns).Key("end_ns").Uint(g.window.end_ns);
  j.Key("length_ns").Uint(g.window.length_ns()).Key("basis").String(g.window.basis);
  j.Key("untraced_ns").Uint(static_cast<uint64_t>(g.untraced_ns));
  j.EndObject();

  j.Key("four_numbers").BeginObject();
  j.Key("sm_util");
  Util(j, g.sm_util);
  j.Key("dram_bw_util");
  Util(j, g.dram_util);
  j.Key("kernel_duration_ns").BeginObject();
  j.Key("p50").Double(g.kernel_duration.p50).Key("p95").Double(g.kernel_duration.p95);
  j.EndObject();
  j.Key("idle_gap_share").Double(g.idle_gap_share);
  j.Key("idle_gap_share_span").Double(g.idle_gap_share_span);
  j.EndObject();

  j.Key("sampled").BeginObject();
  j.Key("throttled_share").NonNegativeOrNull(g.throttled_share);
  j.Key("clock_reason_samples").Double(g.clock_reason_samples);
  j.Key("other_process_sm_util").NonNegativeOrNull(g.other_process_sm);
  j.Key("other_processes").BeginArray();
  for (const GpuReport::Other& o : g.other_processes) {
    j.BeginObject().Key("pid").Uint(o.pid).Key("label").String(o.label);
    j.Key("mean_sm_util").Double(o.mean_sm_util).Key("max_sm_util").Double(o.max_sm_util);
    j.Key("samples").Uint(o.samples).EndObject();
  }
  j.EndArray();
  j.EndObject();

  j.Key("busy").BeginObject();
  j.Key("busy_ns").Double(g.busy_ns).Key("kernel_busy_ns").Double(g.kernel_busy_ns);
  j.Key("kernel_ns").Double(g.kernel_ns).Key("copy_ns").Double(g.copy_ns);
  j.Key("memset_ns").Double(g.memset_ns).Key("busy_share").Double(g.busy_share);
  j.EndObject();

  j.Key("idle").BeginObject();
  j.Key("gaps_at_least_threshold").BeginObject();
  j.Key("host_wait_ns").Double(g.gap_idle.host_ns).Key("sync_wait_ns").Double(g.gap_idle.sync_ns);
  j.Key("other_ns").Double(g.gap_idle.other_ns).Key("count").Double(g.gap_count);
  j.Key("implicit_sync_ns").Double(g.gap_idle.implicit_ns);
  j.Key("input_host_wait_ns").Double(g.input_host_ns);
  j.Key("after_sync_host_wait_ns").Double(g.after_sync_host_ns);
  j.EndObject();
  j.Key("gaps_below_threshold").BeginObject();
  j.Key("host_wait_ns").Double(g.short_gap_idle.host_ns);
  j.Key("sync_wait_ns").Double(g.short_gap_idle.sync_ns);
  j.Key("kernel_wait_ns").Double(g.short_gap_idle.kernel_ns);
  j.Key("implicit_sync_ns").Double(g.short_gap_idle.implicit_ns);
  j.Key("after_sync_host_wait_ns").Double(g.short_after_sync_host_ns);
  j.EndObject();
  j.Key("long_gaps").BeginObject();
  j.Key("count").Double(g.long_gap_count).Key("total_ns").Double(g.long_gap_ns);
  j.EndObject();
  j.Key("pauses").BeginObject();
  j.Key("count").Double(g.pause_count).Key("total_ns").Double(g.pause_ns);
  j.Key("copy_ns").Double(g.pause_copy_ns);
  j.EndObject();
  j.Key("one_time").BeginObject();
  j.Key("count").Double(g.one_time_count).Key("total_ns").Double(g.one_time_ns);
  j.EndObject();
  j.Key("per_stream").BeginObject();
  j.Key("host_wait_ns").Double(g.stream_idle.host_ns);
  j.Key("sync_wait_ns").Double(g.stream_idle.sync_ns);
  j.Key("kernel_wait_ns").Double(g.stream_idle.kernel_ns);
  j.Key("other_ns").Double(g.stream_idle.other_ns);
  j.Key("implicit_sync_ns").Double(g.stream_idle.implicit_ns);
  j.EndObject();
  j.Key("streams").BeginArray();
  for (const model::StreamModel& s : m.streams) {
    j.BeginObject();
    j.Key("context_id").Uint(s.context_id).Key("stream_id").Uint(s.stream_id);
    j.Key("ops").Uint(s.ops).Key("busy_ns").Uint(s.busy_ns);
    j.Key("first_ns").Uint(s.first_ns).Key("last_ns").Uint(s.last_ns);
    j.Key("idle_ns").BeginObject();
    j.Key("host_wait").Uint(s.idle_ns[0]).Key("sync_wait").Uint(s.idle_ns[1]);
    j.Key("kernel_wait").Uint(s.idle_ns[2]).Key("other").Uint(s.idle_ns[3]);
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();

  j.Key("kernels").BeginObject();
  j.Key("count").Uint(g.kernel_count).Key("names").Uint(g.kernel_names);
  j.Key("tiny_count").Uint(g.tiny_kernels).Key("shorter_than_launch").Uint(g.shorter_than_launch);
  j.Key("launches_matched").Uint(g.launches_matched);
  j.Key("est_sm_efficiency").NonNegativeOrNull(g.est_sm_efficiency);
  j.Key("duration_ns");
  Dist(j, g.kernel_duration);
  j.Key("est_occupancy").NonNegativeOrNull(g.est_occupancy);
  j.Key("occupancy_known_share").Double(g.occupancy_known_share);
  j.Key("large_tile_share").Double(g.large_tile_share);
  j.Key("library_share").Double(g.library_share);
  j.Key("top").BeginArray();
  for (const KernelRow& k : g.top_kernels) {
    const Distribution& d = k.duration;
    j.BeginObject();
    j.Key("name").String(k.name).Key("demangled").String(k.demangled);
    j.Key("count").Uint(d.count).Key("total_ns").Uint(d.total).Key("share").Double(k.share);
    j.Key("mean_ns").Double(d.mean).Key("median_ns").Double(d.p50).Key("min_ns").Double(d.min);
    j.Key("max_ns").Double(d.max).Key("p95_ns").Double(d.p95).Key("p99_ns").Double(d.p99);
    j.Key("stddev_ns").Double(d.stddev).Key("tiny_count").Uint(k.tiny);
    j.Key("shorter_than_launch").Uint(k.shorter_than_launch);
    j.Key("est_sm_efficiency").NonNegativeOrNull(k.est_sm_efficiency);
    j.Key("blocks").BeginObject().Key("min").Uint(k.min_blocks).Key("max").Uint(k.max_blocks);
    j.EndObject();
    if (k.collective.empty()) {
      j.Key("collective").Null();
    } else {
      j.Key("collective").String(k.collective);
    }
    j.Key("est_occupancy").NonNegativeOrNull(k.est_occupancy);
    j.Key("library").String(k.library);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();

  j.Key("copies").BeginObject();
  j.Key("share_of_gpu_time").Double(g.copy_share_of_gpu_time);
  j.Key("rows").BeginArray();
  for (const CopyRow& c : g.copies) CopyJson(j, c);
  j.EndArray();
  j.Key("memsets").BeginArray();
  for (const CopyRow& c : g.memsets) CopyJson(j, c);
  j.EndArray();
  j.Key("window").BeginObject();
  j.Key("pageable_count").Double(g.pageable_copy_count);
  j.Key("pageable_ns").Double(g.pageable_copy_ns).Key("d2h_count").Double(g.d2h_copy_count);
  j.EndObject();
  j.EndObject();

  j.Key("host").BeginObject();
  j.Key("queue_delay_ns");
  Dist(j, g.queue_delay);
  j.Key("queue_delay_outliers").Uint(g.queue_delay_outliers);
  j.Key("launches_unmatched").Uint(g.launches_unmatched);
  j.Key("sync_calls").Double(g.sync_calls).Key("sync_blocked_ns").Double(g.sync_blocked_ns);
  j.Key("implicit_syncs").BeginArray();
  for (const analyses::ImplicitGroupRow& row : g.implicit) {
    j.BeginObject().Key("group").String(model::ImplicitGroupKey(row.group));
    j.Key("calls").Double(row.calls).Key("blocked_ns").Double(row.blocked_ns);
    j.Key("gpu_idle_ns").Double(row.gpu_idle_ns).Key("top_call").String(row.top_call);
    j.EndObject();
  }
  j.EndArray();
  j.Key("long_launches").Double(g.long_launches);
  j.Key("long_launches_blocking").Double(g.long_launches_blocking);
  j.EndObject();

  if (g.has_steps) {
    j.Key("steps").BeginObject();
    j.Key("count").Uint(g.step_count).Key("example_name").String(g.step_example);
    j.Key("period_ns");
    Dist(j, g.step_period);
    j.Key("range_ns");
    Dist(j, g.step_range);
    j.Key("per_step").BeginObject();
    j.Key("compute_ns").Double(g.step_compute_ns).Key("copy_ns").Double(g.step_copy_ns);
    j.Key("idle_ns").Double(g.step_idle_ns).Key("comm_ns").Double(g.step_comm_ns);
    j.EndObject();
    j.Key("warmup");
    Step(j, g.warmup_step);
    j.Key("slowest").BeginArray();
    for (const model::StepRecord& s : g.slowest_steps) Step(j, s);
    j.EndArray();
    j.Key("source").String(g.step_source);
    if (g.step_source == "inferred") {
      j.Key("anchor").String(g.step_anchor).Key("candidates").Uint(g.step_candidates);
    } else {
      j.Key("anchor").Null().Key("candidates").Null();
    }
    j.EndObject();
  } else {
    j.Key("steps").Null();
  }
  j.Key("late_ops").Uint(m.late_ops);
  j.Key("communication");
  CommJson(j, g);
  j.Key("windows");
  WindowTableJson(j, g.windows);
  j.Key("minutes");
  WindowTableJson(j, g.minutes);
  (void)r;
  j.EndObject();
}

void ProcessJson(const SummaryResult& r, JsonWriter& j, const ProcessReport& pr) {
  (void)r;
  const model::ProcessModel& p = *pr.process;
  j.BeginObject();
  j.Key("index").Uint(pr.process_index).Key("process_uid").String(Uid(p.process_uid));
  j.Key("pid").Uint(p.pid).Key("hostname").String(p.hostname).Key("path").String(p.path);
  j.Key("cmdline").BeginArray();
  for (const std::string& a : p.cmdline) j.String(a);
  j.EndArray();
  j.Key("events").Uint(p.events).Key("api_calls").Uint(p.api_calls);
  j.Key("gpus").BeginArray();
  for (size_t g : p.gpus) j.Uint(g);
  j.EndArray();
  j.Key("launch_call_ns");
  Dist(j, pr.launch_call);
  j.Key("launch_call_outliers").Uint(pr.launch_call_outliers);
  j.Key("sync").BeginObject();
  j.Key("source").String(p.sync_from_records ? "records" : "api");
  j.Key("threads").BeginArray();
  for (const auto& [thread, s] : p.sync_by_thread) {
    j.BeginObject().Key("thread_id").Uint(thread).Key("calls").Uint(s.calls);
    j.Key("blocked_ns").Uint(s.blocked_ns).Key("max_ns").Uint(s.max_ns).EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.Key("completeness").BeginObject();
  j.Key("complete").Bool(pr.complete);
  j.Key("dropped").BeginObject();
  for (const auto& [reason, n] : p.dropped) j.Key(DropName(reason)).Uint(n);
  j.EndObject();
  j.Key("dropped_total").Uint(pr.dropped);
  j.Key("lost_intervals").BeginObject();
  j.Key("count").Uint(p.lost_interval_count).Key("total_ns").Uint(p.lost_interval_ns);
  // Of those, outside capture windows (reason TRACING_DISABLED): by choice.
  j.Key("outside_window_count").Uint(p.window_off_count);
  j.Key("outside_window_ns").Uint(p.window_off_ns);
  j.Key("first").BeginArray();
  for (const proto::LostInterval& l : p.lost_intervals) {
    j.BeginObject().Key("start_ns").Uint(l.start_ns()).Key("end_ns").Uint(l.end_ns());
    j.Key("reason").String(LostName(l.reason())).Key("detail").String(l.detail()).EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.Key("lost_frames").Uint(p.lost_chunks);
  j.Key("undecodable_batches").Uint(p.undecodable_batches);
  j.Key("clean_exit").Bool(p.clean_end);
  if (p.clean_end) {
    j.Key("end_reason").String(EndName(p.end_reason));
  } else {
    j.Key("end_reason").Null();
  }
  j.Key("unavailable").BeginArray();
  for (const std::string& u : p.unavailable) j.String(u);
  j.EndArray();
  if (!p.cupti_refusals.empty()) {  // only then: the goldens' key lists stay as they were
    j.Key("cupti_refusals").BeginArray();
    for (const proto::CuptiClientRefusal& c : p.cupti_refusals) {
      j.BeginObject().Key("api").String(c.api()).Key("caller").String(c.caller());
      j.Key("count").Uint(c.count()).Key("first_ns").Uint(c.first_ns());
      j.Key("last_ns").Uint(c.last_ns()).Key("result").Uint(c.result()).EndObject();
    }
    j.EndArray();
  }
  j.EndObject();
  // What the collector cost (its own samples), percent of one core; null
  // where the trace has no such samples.
  j.Key("collector").BeginObject();
  for (const auto& [key, c] : {std::pair<const char*, const model::CpuSeries*>{"all_threads", &p.collector_cpu},
                               {"sampler", &p.sampler_cpu}}) {
    j.Key(key).BeginObject();
    if (c->samples > 0) {
      j.Key("cpu_pct_mean").Double(c->mean_pct()).Key("cpu_pct_max").Double(c->pct_max);
    } else {
      j.Key("cpu_pct_mean").Null().Key("cpu_pct_max").Null();
    }
    j.Key("samples").Uint(c->samples).EndObject();
  }
  j.EndObject();
  j.Key("identity").BeginObject();
  j.Key("rank").Int(p.rank).Key("local_rank").Int(p.local_rank);
  j.Key("world_size").Int(p.world_size).Key("job_id").String(p.job_id);
  j.EndObject();
  j.Key("clocks").BeginObject();
  j.Key("snapshots").Uint(p.clocks.size()).Key("offset_ns").Int(p.clocks.offset_ns());
  j.Key("drift_ns").Uint(p.clocks.drift_ns());
  j.EndObject();
  j.EndObject();
}

void RanksJson(JsonWriter& j, const analyses::RankReport& ranks) {
  j.BeginObject();
  j.Key("matched_collectives").Uint(ranks.matched).Key("stride").Uint(ranks.stride);
  j.Key("end_spread_ns").Double(ranks.end_spread_ns);
  j.Key("end_spread_p95_ns").Double(ranks.end_spread_p95_ns);
  j.Key("end_spread_max_ns").Double(ranks.end_spread_max_ns);
  j.Key("straggler").IndexOrNull(ranks.straggler);
  j.Key("late_order").BeginInlineArray();
  for (size_t i : ranks.late_order) j.Uint(i);
  j.EndArray();
  j.Key("rows").BeginArray();
  for (const analyses::RankRow& r : ranks.rows) {
    j.BeginObject();
    j.Key("gpu").Uint(r.gpu_index).Key("rank").Int(r.rank).Key("pid").Uint(r.pid);
    j.Key("hostname").String(r.hostname).Key("device_id").Uint(r.device_id);
    j.Key("label").String(r.label).Key("step_source").String(r.step_source);
    j.Key("step_p50_ns").Double(r.step_p50_ns).Key("step_p95_ns").Double(r.step_p95_ns);
    j.Key("window_ns").Double(r.window_ns).Key("compute_busy_ns").Double(r.compute_busy_ns);
    j.Key("comm_busy_ns").Double(r.comm_busy_ns).Key("busy_share").Double(r.busy_share);
    j.Key("idle_ns").Double(r.idle_ns);
    j.Key("comm_overlap").NonNegativeOrNull(r.comm_overlap);
    j.Key("collectives").Uint(r.collectives).Key("wait_ns").Double(r.wait_ns);
    j.Key("mean_late_ns").Double(r.mean_late_ns).Key("last_share").Double(r.last_share);
    j.Key("clock_offset_ns").Int(r.clock_offset_ns).Key("clock_drift_ns").Uint(r.clock_drift_ns);
    j.Key("clock_snapshots").Uint(r.clock_snapshots);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

// ------------------------------------------------------------------- csv --

int RankOf(const SummaryResult& r, const GpuReport& g) {
  for (const model::ProcessModel& p : r.model.processes) {
    if (p.process_uid == g.gpu->process_uid) return p.rank;
  }
  return -1;
}

void KernelsCsv(const SummaryResult& r, CsvWriter& csv) {
  csv.Row({"gpu", "rank", "name", "demangled", "count", "total_ns", "share", "mean_ns", "p50_ns",
           "p95_ns", "p99_ns", "min_ns", "max_ns", "stddev_ns", "tiny_count", "collective"});
  for (const GpuReport& g : r.report.gpus) {
    for (const KernelRow& k : g.top_kernels) {
      const Distribution& d = k.duration;
      csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(k.name).Field(k.demangled);
      csv.Field(d.count).Field(d.total).Field(k.share).Field(d.mean).Field(d.p50).Field(d.p95);
      csv.Field(d.p99).Field(d.min).Field(d.max).Field(d.stddev).Field(k.tiny);
      csv.Field(k.collective).EndRow();
    }
  }
}

void WindowsCsv(const SummaryResult& r, CsvWriter& csv, bool minutes) {
  // start_ns/end_ns: the process's CUPTI ns; since_origin_ns: the start on
  // the common timebase, ns since time_origin_utc (every output's origin).
  csv.Field("gpu").Field("rank").Field("start_ns").Field("end_ns").Field("since_origin_ns");
  csv.Field("time_origin_utc");
  for (int c = 0; c < analyses::kWindowColumns; ++c) csv.Field(analyses::WindowColumnName(c));
  csv.EndRow();
  const std::string origin = r.model.timebase.OriginUtc();
  for (const GpuReport& g : r.report.gpus) {
    for (const analyses::WindowRow& row : (minutes ? g.minutes : g.windows).rows) {
      csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(row.start_ns).Field(row.end_ns);
      csv.Field(r.model.timebase.ToOriginNs(g.gpu->process_uid, row.start_ns)).Field(origin);
      for (double v : row.values) csv.Field(v);
      csv.EndRow();
    }
  }
}

void CopiesCsv(const SummaryResult& r, CsvWriter& csv) {
  csv.Row({"gpu", "rank", "direction", "memory", "count", "bytes", "duration_ns", "gb_per_s",
           "share_of_gpu_time", "sync_count", "sync_bytes", "sync_duration_ns"});
  for (const GpuReport& g : r.report.gpus) {
    for (const std::vector<CopyRow>* rows : {&g.copies, &g.memsets}) {
      for (const CopyRow& c : *rows) {
        csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(c.direction).Field(c.memory);
        csv.Field(c.count).Field(c.bytes).Field(c.duration_ns).Field(c.gb_per_s);
        csv.Field(c.share_of_gpu_time).Field(c.sync_count).Field(c.sync_bytes);
        csv.Field(c.sync_duration_ns).EndRow();
      }
    }
  }
}

void StepsCsv(const SummaryResult& r, CsvWriter& csv) {
  csv.Row({"gpu", "rank", "source", "anchor", "count", "period_p50_ns", "period_p95_ns",
           "period_mean_ns", "compute_ns", "copy_ns", "comm_ns", "idle_ns", "warmup_period_ns"});
  for (const GpuReport& g : r.report.gpus) {
    if (!g.has_steps) continue;
    csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(g.step_source).Field(g.step_anchor);
    csv.Field(g.step_count).Field(g.step_period.p50).Field(g.step_period.p95);
    csv.Field(g.step_period.mean).Field(g.step_compute_ns).Field(g.step_copy_ns);
    csv.Field(g.step_comm_ns).Field(g.step_idle_ns).Field(g.warmup_step.period_ns()).EndRow();
  }
}

void RanksCsv(const SummaryResult& r, CsvWriter& csv) {
  const analyses::RankReport& ranks = r.report.ranks;
  csv.Row({"gpu", "rank", "pid", "hostname", "device_id", "step_source", "step_p50_ns",
           "step_p95_ns", "window_ns", "compute_busy_ns", "comm_busy_ns", "idle_ns",
           "busy_share", "comm_overlap", "collectives", "wait_ns", "mean_late_ns", "last_share",
           "straggler", "clock_offset_ns", "clock_drift_ns"});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < ranks.rows.size(); ++i) {
    const analyses::RankRow& row = ranks.rows[i];
    csv.Field(row.gpu_index).Field(row.rank).Field(row.pid).Field(row.hostname);
    csv.Field(row.device_id).Field(row.step_source).Field(row.step_p50_ns).Field(row.step_p95_ns);
    csv.Field(row.window_ns).Field(row.compute_busy_ns).Field(row.comm_busy_ns);
    csv.Field(row.idle_ns).Field(row.busy_share);
    csv.Field(row.comm_overlap >= 0 ? row.comm_overlap : nan).Field(row.collectives);
    csv.Field(row.wait_ns).Field(row.mean_late_ns).Field(row.last_share);
    csv.Field(static_cast<int>(i) == ranks.straggler ? 1 : 0).Field(row.clock_offset_ns);
    csv.Field(row.clock_drift_ns).EndRow();
  }
}

constexpr const char* kCsvTables[] = {"kernels", "windows", "minutes", "copies",
                                      "steps",   "ranks",   "lines"};

constexpr char kUsage[] =
    "usage: gpscope-analyze summary [--format text|json|csv] [--table T] [--idle-gap-ms MS]\n"
    "                               [--window-ms MS] [--top N] FILE...\n"
    "\n"
    "Why is the GPU idle or slow, and what to change: findings ranked by the GPU time\n"
    "they likely cost, then per GPU the four numbers (SM utilization, memory-bandwidth\n"
    "utilization, kernel duration P50/P95, idle-gap share), idle breakdown, top kernels,\n"
    "copies, host-side launch and sync statistics, steps, and data completeness.\n"
    "\n"
    "  --format text|json|csv  output format (default text, 100 columns; json has every\n"
    "                      number, with the stable keys documented in summary.h; csv\n"
    "                      writes one table, chosen with --table)\n"
    "  --table T           csv table: kernels (top --top per GPU), windows, minutes,\n"
    "                      copies, steps, ranks, lines (source lines from call\n"
    "                      stacks); columns documented in summary.h\n"
    "  --idle-gap-ms MS    gaps at least this long count as idle gaps (default 5)\n"
    "  --window-ms MS      width of the windows table, 50..200 (default 100)\n"
    "  --top N             kernels listed per GPU (default 10)\n"
    "  --rules             list the findings rules and their thresholds\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit status: 0 ok (also when data was damaged: see completeness), 1 a file could\n"
    "not be read, 2 usage error.\n";

std::string RulesText() {
  Text t;
  t.Line("findings rules (gpscope-analyze summary):");
  for (const analyses::RuleInfo& r : analyses::RuleCatalogue()) {
    t.Line("");
    t.Para(2, absl::StrCat(r.id, ": ", r.title));
    t.Row("trigger", r.trigger, 4, 14);
    t.Row("source", r.source, 4, 14);
  }
  return t.Take();
}

}  // namespace

std::unique_ptr<SummaryResult> ComputeSummaryResult(const std::vector<std::string>& paths,
                                                    const model::ModelOptions& model_options,
                                                    const analyses::ReportOptions& options,
                                                    const std::vector<reader::EventSink*>& more_sinks) {
  auto result = std::make_unique<SummaryResult>();
  result->model = model::BuildModel(paths, model_options, more_sinks);
  result->report = analyses::ComputeSummary(result->model, options);
  result->findings = analyses::EvaluateRules(result->model, result->report);
  return result;
}

std::string RenderSummaryText(const SummaryResult& r) {
  Text t;
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

std::string ParseCommonFlags(const ParsedArgs& parsed, model::ModelOptions* model_options,
                             size_t* top) {
  if (parsed.has("idle-gap-ms")) {
    const std::string& v = parsed.flags.at("idle-gap-ms");
    double ms = 0;
    if (!absl::SimpleAtod(v, &ms) || !(ms > 0) || ms > 3.6e6) {
      return absl::StrCat("--idle-gap-ms must be a number of milliseconds > 0, not '", v, "'");
    }
    model_options->idle_gap_threshold_ns = static_cast<uint64_t>(ms * 1e6);
  }
  if (parsed.has("window-ms")) {
    const std::string& v = parsed.flags.at("window-ms");
    uint32_t ms = 0;
    if (!absl::SimpleAtoi(v, &ms) || ms < 50 || ms > 200) {
      return absl::StrCat("--window-ms must be a whole number 50..200, not '", v, "'");
    }
    model_options->window_ns = uint64_t{ms} * 1'000'000;
  }
  if (parsed.has("top")) {
    const std::string& v = parsed.flags.at("top");
    uint32_t n = 0;
    if (!absl::SimpleAtoi(v, &n) || n > 10000) {
      return absl::StrCat("--top must be a whole number 0..10000, not '", v, "'");
    }
    *top = n;
  }
  return "";
}

bool IsSummaryCsvTable(std::string_view table) {
  for (const char* t : kCsvTables) {
    if (table == t) return true;
  }
  return false;
}

std::string RenderSummaryCsv(const SummaryResult& r, std::string_view table) {
  std::string out;
  CsvWriter csv(&out);
  if (table == "kernels") KernelsCsv(r, csv);
  if (table == "windows" || table == "minutes") WindowsCsv(r, csv, table == "minutes");
  if (table == "copies") CopiesCsv(r, csv);
  if (table == "steps") StepsCsv(r, csv);
  if (table == "ranks") RanksCsv(r, csv);
  if (table == "lines") render::SitesCsv(r.model, r.report, csv);
  return out;
}

std::string RenderSummaryJson(const SummaryResult& r) {
  std::string out;
  JsonWriter j(&out);
  const model::TraceModel& m = r.model;
  j.BeginObject();
  j.Key("schema").String("gpscope.summary/1");
  render::WriteTimeOrigin(m.timebase, j);
  WritePartialJson(m.index, j);
  j.Key("options").BeginObject();
  j.Key("idle_gap_threshold_ns").Uint(r.report.idle_gap_threshold_ns);
  j.Key("long_gap_ns").Uint(r.report.long_gap_ns);
  j.Key("top_kernels").Uint(r.report.options.top_kernels);
  j.Key("window_ns").Uint(r.model.options.window_ns);
  j.EndObject();
  j.Key("events").Uint(m.events);
  j.Key("files").BeginArray();
  for (const reader::FileInfo& f : m.index.files) {
    j.BeginObject().Key("path").String(f.path);
    if (f.status.ok()) {
      j.Key("error").Null();
    } else {
      j.Key("error").String(std::string(f.status.message()));
    }
    j.Key("frames").Uint(f.frames).Key("damaged_regions").Uint(f.damaged_regions);
    j.Key("skipped_bytes").Uint(f.skipped_bytes).Key("truncated").Bool(f.truncated);
    j.EndObject();
  }
  j.EndArray();
  j.Key("findings").BeginArray();
  for (const Finding& f : r.findings) FindingJson(r, j, f);
  j.EndArray();
  j.Key("rules").BeginArray();
  for (const analyses::RuleInfo& rule : analyses::RuleCatalogue()) {
    j.BeginObject().Key("id").String(rule.id).Key("title").String(rule.title);
    j.Key("trigger").String(rule.trigger).Key("source").String(rule.source).EndObject();
  }
  j.EndArray();
  j.Key("gpus").BeginArray();
  for (const GpuReport& g : r.report.gpus) GpuJson(r, j, g);
  j.EndArray();
  j.Key("processes").BeginArray();
  for (const ProcessReport& p : r.report.processes) ProcessJson(r, j, p);
  j.EndArray();
  j.Key("ranks");
  RanksJson(j, r.report.ranks);
  render::SitesJson(m, r.report, j);  // "source_lines", only with call stacks
  j.Key("warnings").BeginArray();
  for (const std::string& w : m.index.warnings) j.String(w);
  j.EndArray();
  j.Key("warnings_omitted").Uint(m.index.warnings_omitted);
  j.EndObject();
  out.push_back('\n');
  return out;
}

int RunSummary(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {"format", "idle-gap-ms", "top", "window-ms", "table"}, {"help", "rules"});
  if (!parsed.ok()) {
    err << kProgram << " summary: " << parsed.status().message() << "; run '" << kProgram
        << " summary --help'\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    out << kUsage;
    return kExitOk;
  }
  if (parsed->has("rules")) {
    out << RulesText();
    return kExitOk;
  }
  const std::string format = parsed->has("format") ? parsed->flags.at("format") : "text";
  if (format != "text" && format != "json" && format != "csv") {
    err << kProgram << " summary: --format must be text, json or csv, not '" << format << "'\n";
    return kExitUsage;
  }
  const std::string table = parsed->has("table") ? parsed->flags.at("table") : "";
  if (format == "csv" && !IsSummaryCsvTable(table)) {
    err << kProgram << " summary: --format csv needs --table kernels|windows|minutes|copies|"
        << "steps|ranks|lines" << (table.empty() ? "" : absl::StrCat(", not '", table, "'")) << "\n";
    return kExitUsage;
  }
  if (format != "csv" && !table.empty()) {
    err << kProgram << " summary: --table goes with --format csv\n";
    return kExitUsage;
  }
  model::ModelOptions model_options;
  analyses::ReportOptions options;
  size_t top = options.top_kernels;
  if (const std::string error = ParseCommonFlags(*parsed, &model_options, &top); !error.empty()) {
    err << kProgram << " summary: " << error << "\n";
    return kExitUsage;
  }
  options.top_kernels = top;
  if (parsed->positional.empty()) {
    err << kProgram << " summary: no trace files given; usage: " << kProgram
        << " summary [--format text|json|csv] [--table T] [--idle-gap-ms MS] [--window-ms MS] "
        << "[--top N] FILE...\n";
    return kExitUsage;
  }
  const std::unique_ptr<SummaryResult> result =
      ComputeSummaryResult(parsed->positional, model_options, options);
  int code = kExitOk;
  size_t readable = 0;
  for (const reader::FileInfo& f : result->model.index.files) {
    if (f.status.ok()) {
      ++readable;
    } else {
      err << kProgram << ": " << f.status.message() << "\n";
      code = kExitFailed;
    }
  }
  if (ReportPartial(result->model.index, err)) code = kExitFailed;
  if (readable > 0) {
    out << (format == "json"  ? RenderSummaryJson(*result)
            : format == "csv" ? render::SanitizeTerminal(RenderSummaryCsv(*result, table))
                              : render::SanitizeTerminal(RenderSummaryText(*result)));
  }
  return code;
}

}  // namespace gpscope::analyze
