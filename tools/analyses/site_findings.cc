#include "tools/analyses/site_findings.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpscope::analyses {
namespace {

// As rules.cc: "8.2 ms", "1.44 s", "94.2 us".
std::string Time(double ns) {
  if (ns < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (ns < 1e6) return absl::StrFormat("%.3g us", ns / 1e3);
  if (ns < 1e9) return absl::StrFormat("%.3g ms", ns / 1e6);
  return absl::StrFormat("%.3g s", ns / 1e9);
}
std::string Time(uint64_t ns) { return Time(static_cast<double>(ns)); }

std::string Count(uint64_t n) {
  std::string digits = absl::StrCat(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

SiteMeasure MeasureOf(SiteRole role) {
  switch (role) {
    case SiteRole::kSync:
      return SiteMeasure::kSyncIdle;
    case SiteRole::kImplicit:
      return SiteMeasure::kImplicitIdle;
    case SiteRole::kHostCode:
      return SiteMeasure::kHostCode;
    case SiteRole::kBeforeLaunch:
      return SiteMeasure::kHostBefore;
  }
  return SiteMeasure::kGpuLost;
}

const char* RoleName(SiteRole role) {
  switch (role) {
    case SiteRole::kSync:
      return "sync";
    case SiteRole::kImplicit:
      return "implicit-sync";
    case SiteRole::kHostCode:
      return "host-code";
    case SiteRole::kBeforeLaunch:
      return "launch-after-wait";
  }
  return "";
}

// "then the host ran 24 ms of its own code before train.py:37 (step)
// launched the next work"
std::string AfterText(const SiteRow& s) {
  if (s.next_label.empty()) return "";
  return absl::StrCat("; then the host ran ", Time(s.next_host_ns), " of its own code (mean) before ",
                      s.next_label, " launched the next work");
}

// "; 150 of these calls were made by threads without Python (XLA's,
// autograd's) while the main thread waited here"
std::string OtherThreadsText(const model::StackWeights& w) {
  if (w.main_thread_syncs == 0) return "";
  return absl::StrCat("; ", Count(w.main_thread_syncs),
                      " of these calls were made by threads without Python (XLA's, autograd's, "
                      "a library's) while the main thread waited here");
}

// What the host code came after: "train.py:42 (step) returned", or, for a
// site that made no sync (its gaps began when its copy to the host ended),
// "the copy to the host at train.py:42 (step) ended".
std::string AfterWhat(const SiteRow& s) {
  const bool readback = s.w.readback_gaps > 0 && s.w.sync_calls == 0;
  return readback ? absl::StrCat("the copy to the host at ", s.label, " ended")
                  : absl::StrCat(s.label, " returned");
}

// What a citation's value is: the GPU idle time its sentence names. Host
// code is ranked by both halves (after the call, before the launch) but the
// sentence names the larger one, which is also what the finding's cost
// counts (host-bound: the waits after syncs and read-backs), so the cited
// value never exceeds what the text says.
uint64_t CitedValue(const SiteRow& s, SiteRole role) {
  if (role == SiteRole::kHostCode) {
    return std::max(s.w.gpu_host_after_ns, s.w.gpu_host_before_ns);
  }
  return SiteValue(s, MeasureOf(role));
}

std::string Sentence(const SiteRow& s, SiteRole role) {
  const model::StackWeights& w = s.w;
  switch (role) {
    case SiteRole::kSync:
      return absl::StrCat(s.label, " syncs: ", Count(w.sync_calls - w.implicit_calls), " calls, ",
                          Time(w.sync_blocked_ns - w.implicit_blocked_ns),
                          " blocked, the GPU idle ",
                          Time(w.gpu_sync_idle_ns - w.gpu_implicit_idle_ns), " behind it",
                          OtherThreadsText(w), AfterText(s));
    case SiteRole::kImplicit:
      return absl::StrCat(s.label, " made ", Count(w.implicit_calls),
                          " implicitly synchronizing calls, ", Time(w.implicit_blocked_ns),
                          " blocked, the GPU idle ", Time(w.gpu_implicit_idle_ns), " behind them",
                          OtherThreadsText(w), AfterText(s));
    case SiteRole::kHostCode:
      if (w.gpu_host_after_ns >= w.gpu_host_before_ns) {
        return absl::StrCat("after ", AfterWhat(s), ", the GPU waited ",
                            Time(w.gpu_host_after_ns), " for the host's code",
                            s.next_label.empty()
                                ? std::string()
                                : absl::StrCat(" (", Time(s.next_host_ns), " per gap, mean) before ",
                                               s.next_label, " launched"));
      }
      return absl::StrCat("the GPU waited ", Time(w.gpu_host_before_ns), " for the host code before ",
                          s.label, " launched",
                          s.prev_label.empty()
                              ? std::string()
                              : absl::StrCat(" (", Time(s.prev_host_ns), " of host time after ",
                                             s.prev_label, ", mean)"));
    case SiteRole::kBeforeLaunch:
      return absl::StrCat("the GPU waited ", Time(w.gpu_host_before_ns), " before ", s.label,
                          " launched the next work (", Count(w.gaps), " gaps",
                          s.prev_label.empty() ? std::string()
                                               : absl::StrCat("; the call before it: ", s.prev_label),
                          ")");
  }
  return "";
}

std::string Fix(const SiteRow& s, SiteRole role) {
  const std::string where = absl::StrCat(s.label, " (stack: ", StackLine(s, 4), ")");
  switch (role) {
    case SiteRole::kSync:
      return absl::StrCat("Start at ", where,
                          ": this line waits for the GPU; read its result a step later or every "
                          "N steps, or keep the value on the GPU.");
    case SiteRole::kImplicit:
      return absl::StrCat("Start at ", where,
                          ": this line allocates, frees or copies synchronously; hoist it out of "
                          "the loop, reuse the buffer, or make the copy asynchronous from pinned "
                          "memory.");
    case SiteRole::kHostCode: {
      // Where the host's code ran: after the call (up to the next launch,
      // where one is known), or before the launch.
      std::string span = absl::StrCat("before ", s.label);
      if (s.w.gpu_host_after_ns >= s.w.gpu_host_before_ns) {
        span = s.next_label.empty() ? absl::StrCat("after ", AfterWhat(s))
                                    : absl::StrCat("between ", s.label, " and ", s.next_label);
      }
      return absl::StrCat("The host code on the critical path is ", span,
                          " (stack: ", StackLine(s, 4),
                          "); move it off the path (every N steps, a background thread, "
                          "vectorized) or queue the next step's GPU work before it runs.");
    }
    case SiteRole::kBeforeLaunch:
      return absl::StrCat("The loop waits before ", where,
                          ": what runs before that line (the next batch, its preprocessing) must "
                          "be ready ahead of time: prefetch it (DataLoader workers, pinned "
                          "memory, non_blocking copies).");
  }
  return "";
}

}  // namespace

std::string StackLine(const SiteRow& s, size_t n) {
  // From the call the user's innermost frame made (the library function it
  // called) outwards: a deep library stack (JAX's 30 frames of dispatch)
  // would otherwise fill the n frames before the user's line.
  size_t first = 0;
  for (size_t i = 0; i < s.stack.size(); ++i) {
    if (s.stack[i].user) {
      first = i > 0 ? i - 1 : 0;
      break;
    }
  }
  std::vector<std::string> parts;
  if (first > 0) parts.push_back("...");
  for (size_t i = first; i < s.stack.size() && i < first + n; ++i) parts.push_back(s.stack[i].text);
  std::string line = absl::StrJoin(parts, " <- ");
  if (s.stack.size() > first + n || s.truncated) absl::StrAppend(&line, " <- ...");
  return line;
}

bool CiteSites(const SummaryReport& report, const GpuReport& g, SiteRole role, Finding* f,
               int replace_fix) {
  if (!report.sites.present) return false;
  const uint64_t uid = g.gpu->process_uid;
  const WindowSites in = SitesInWindow(report.sites, uid, g.window.start_ns, g.window.end_ns);
  const std::vector<const SiteRow*> top = TopSites(in.rows, uid, MeasureOf(role), kMaxCitedSites);
  if (top.empty()) return false;
  std::vector<std::string> sentences;
  for (const SiteRow* s : top) {
    SiteCitation c;
    c.site = WholeRunRow(report.sites, *s);
    c.label = s->label;
    c.role = RoleName(role);
    c.value_ns = CitedValue(*s, role);
    f->sites.push_back(std::move(c));
    sentences.push_back(Sentence(*s, role));
  }
  const std::string basis =
      in.windowed ? "steady window"
                  : absl::StrCat("whole run, not the steady window: the analyzer keeps the "
                                 "times of ", Count(in.charges_kept),
                                 " stack costs per process and this one had ",
                                 Count(in.charges_not_kept), " more");
  absl::StrAppend(&f->summary, " Call stacks (", basis, "): ", absl::StrJoin(sentences, "; "), ".");
  std::string fix = Fix(*top.front(), role);
  if (replace_fix >= 0 && static_cast<size_t>(replace_fix) < f->fixes.size()) {
    f->fixes[static_cast<size_t>(replace_fix)] = std::move(fix);
  } else {
    f->fixes.insert(f->fixes.begin(), std::move(fix));
  }
  return true;
}

}  // namespace gpscope::analyses
