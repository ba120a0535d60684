// tools/analyze/diff.h: `gpscope-analyze diff BASE NEW`: what changed
// between two runs, for regression checks: step time P50/P95, GPU busy and
// idle-gap share, the four numbers, communication, top kernels by total
// time with deltas (and kernels that appeared or vanished), copies by
// direction and memory, and findings that appeared, disappeared or changed
// severity.
//
//   gpscope-analyze diff base.gpscope new.gpscope
//   gpscope-analyze diff --format json --fail-on-regression 5 a1.gpscope,a2.gpscope b.gpscope
//   gpscope-analyze diff --rank 0 --rank 1 node.gpscope   // two ranks of one node file
//
// BASE and NEW are each a trace file, or several joined by commas (the files
// of one multi-node run). Both are summarised as `summary` does (same
// options); how GPUs combine, the per-step basis and the noise floor are
// defined in tools/analyses/diff.h.
//
// Regressions (`--fail-on-regression PCT`, `--metrics M[,M]`): a watched
// metric (default step_time,step_p95; analyses::DiffMetrics() lists them)
// got worse by more than PCT percent (percentage points for shares) and
// beyond its noise floor. When a run has no steps, total kernel time stands
// in for the step times. A finding that appears is listed, never a
// regression. Regressions are listed in every output (without the option,
// beyond kDefaultRegressionPct = 5%); the exit status reflects them only
// with the option.
//
// JSON schema ("schema": "gpscope.diff/2"; keys stable, new keys may be
// added; /2: per-step basis, noise floor, regressions as objects):
//   schema, options {idle_gap_threshold_ns, window_ns, top_kernels,
//     fail_on_regression_pct (null), metrics[], threshold_pct}
//   base, new             {files[], gpus, events, steps (null without steps)}
//   basis                 "per_step" (both runs have steps) or "total"
//   noise_floor           {step_rel, percentile_rel_min, rule (text)}
//   numbers[]             {key, unit ("ns"|"ratio"|"percent"|"bytes"|"count"),
//                          per_step (amount divided by the run's steps), base, new
//                          (null when not measured in that run), delta (new - base, or
//                          null), change (delta / base, or null), noise (relative),
//                          significant (the change exceeds the noise floor)}
//                          keys: step_p50_ns, step_p95_ns, busy_share, idle_gap_share,
//                          sm_util_pct, dram_bw_util_pct, kernel_p50_ns, kernel_p95_ns,
//                          comm_share, comm_overlap, kernel_ns, kernel_count,
//                          copy_ns, copy_bytes
//   kernels               {rows[]: {name, demangled, status ("same"|"changed"|"new"|
//                          "vanished"), base: {count, total_ns, mean_ns, calls_per_step,
//                          ns_per_step (null on totals)}, new: {...}, delta_ns (totals),
//                          change (on the basis; null for new), noise}, changed_count,
//                          new_count, vanished_count}
//                          rows: the top N by the larger time on the basis
//   copies[]              {direction, memory, base: {count, bytes, duration_ns,
//                          ns_per_step}, new: {...}, delta_ns, change (on the basis)}
//   findings              {appeared[], disappeared[], changed[]}: {rule, gpu (index or
//                          null), process (index or null), scope, severity (changed:
//                          base_severity and severity), cost_ns}; findings are matched
//                          by rule and GPU/process index (pids differ between runs)
//   regressions[]         {metric, key, base, new, worse_by_pct or worse_by_pt,
//                          threshold, noise, stand_in, text}
//
// Exit status: 0 ok; 3 with --fail-on-regression when a regression was
// found; 1 a file could not be read; 2 usage error.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_DIFF_H_
#define GPSCOPE_TOOLS_ANALYZE_DIFF_H_

#include <ostream>
#include <string>
#include <vector>

#include "tools/analyses/diff.h"
#include "tools/analyze/summary.h"

namespace gpscope::analyze {

inline constexpr int kExitRegression = 3;

using analyses::CopyDiff;
using analyses::DiffNumber;
using analyses::DiffOptions;
using analyses::FindingRef;
using analyses::kDefaultRegressionPct;
using analyses::KernelDiff;
using analyses::KernelTotals;
using analyses::Regression;
using analyses::RunDiff;
using analyses::RunValue;

// analyses::ComputeDiff of two summarised runs.
inline RunDiff ComputeDiff(const SummaryResult& base, const SummaryResult& now,
                           const DiffOptions& options) {
  return analyses::ComputeDiff({&base.model, &base.report, &base.findings},
                               {&now.model, &now.report, &now.findings}, options);
}

// The command: `diff [--format text|json] [--idle-gap-ms MS] [--window-ms MS] [--top N]
// [--fail-on-regression PCT] BASE NEW`.
int RunDiffCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_DIFF_H_
