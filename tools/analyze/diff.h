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
// options); run-level numbers combine the GPUs: shares are window-weighted
// means, step times are the slowest GPU's (a synchronous job runs at its
// slowest rank's pace), kernel and copy totals are sums over GPUs (whole
// run), kernel duration percentiles come from the merged histograms.
//
// Regressions (`--fail-on-regression PCT`): step time P50 or P95 grew by
// more than PCT percent; or, when either run has no steps, the total kernel
// time grew by more than PCT percent; or a finding at warning level or above
// appeared. They are listed in every output (without the option, growth
// beyond kDefaultRegressionPct = 5%); the exit status reflects them only with
// the option.
//
// JSON schema ("schema": "gpscope.diff/1"; keys stable, new keys may be
// added):
//   schema, options {idle_gap_threshold_ns, window_ns, top_kernels,
//     fail_on_regression_pct (null)}
//   base, new             {files[], gpus, events}
//   numbers[]             {key, unit ("ns"|"ratio"|"percent"|"bytes"|"count"),
//                          base, new (null when not measured in that run), delta
//                          (new - base, or null), change (delta / base, or null)}
//                          keys: step_p50_ns, step_p95_ns, busy_share, idle_gap_share,
//                          sm_util_pct, dram_bw_util_pct, kernel_p50_ns, kernel_p95_ns,
//                          comm_share, comm_overlap, kernel_ns, kernel_count,
//                          copy_ns, copy_bytes
//   kernels               {rows[]: {name, demangled, status ("changed"|"new"|
//                          "vanished"), base: {count, total_ns, mean_ns}, new: {...},
//                          delta_ns, change (null for new)}, new_count, vanished_count}
//                          rows: the top N by the larger of the two totals
//   copies[]              {direction, memory, base: {count, bytes, duration_ns}, new:
//                          {...}, delta_ns}
//   findings              {appeared[], disappeared[], changed[]}: {rule, gpu (index or
//                          null), process (index or null), scope, severity (changed:
//                          base_severity and severity), cost_ns}; findings are matched
//                          by rule and GPU/process index (pids differ between runs)
//   regressions[]         text, one per regression found
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
