// tools/analyses/diff.h: what changed between two runs (`gpscope-analyze
// diff`, tools/analyze/diff.h): run-level numbers, kernels by name, copies
// by direction and memory, findings matched by rule and GPU/process index,
// and the regressions of chosen metrics. A pure function of two summarised
// runs; rendering is in render/diff_render.h.
//
//   const DiffRun base{&a->model, &a->report, &a->findings};
//   const DiffRun now{&b->model, &b->report, &b->findings};
//   RunDiff d = ComputeDiff(base, now, DiffOptions{});
//
// Basis. Two runs of one loop that ran 100 and 200 steps differ in every
// total, not in what a step does. When both runs have steps (NVTX step
// ranges or steps inferred from the repeating pattern, GpuReport::has_steps)
// amounts are compared per step: kernel time, kernel calls, copy time and
// bytes, each kernel's time and calls, each copy kind's time, divided by the
// run's step count (the most steps of any of its GPUs, warm-up included:
// the GPUs of one synchronous job run the same steps). Otherwise whole-run
// totals are compared, and `basis` says so.
//
// Run-level numbers combine the GPUs: shares are window-weighted means, step
// times are the slowest GPU's (a synchronous job runs at its slowest rank's
// pace), kernel and copy amounts are sums over GPUs, kernel duration
// percentiles come from the merged histograms.
//
// Noise floor. A number changed only when |new - base| exceeds
// noise x max(|base|, |new|), where `noise` (relative) comes from the data:
//   - step-based (per-step amounts, shares, step times): two standard
//     errors of the relative difference of the mean step time,
//     2 sqrt(cv_b^2 / n_b + cv_n^2 / n_n), cv = stddev / mean of the step
//     periods of the slowest GPU, n their count;
//   - kernel duration percentiles: the same from the merged kernel
//     durations;
//   - a kernel row: the same from that kernel's durations, plus the
//     step-time term when compared per step;
//   - percentiles (step and kernel P50/P95) are never finer than the log
//     histogram's resolution, 1/64 of the value (model/log_histogram.h).
// Whole-run totals (no per-step basis) and runs without step variance
// (e.g. identical synthetic steps) have a floor of 0: any difference
// counts. Identical inputs give identical numbers, so `diff X X` reports
// no change whatever the floor.
//
// Regressions: a chosen metric (DiffOptions::metrics) got worse by more
// than the threshold (percent; percentage points for shares) and beyond
// its noise floor. Findings that appear are listed, never regressions.
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_DIFF_H_
#define GPSCOPE_TOOLS_ANALYSES_DIFF_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/analyses/gpu_report.h"
#include "tools/analyses/rules.h"
#include "tools/model/trace_model.h"

namespace gpscope::analyses {

// Without --fail-on-regression, regressions beyond this are still listed.
inline constexpr double kDefaultRegressionPct = 5.0;
// A percentile read from a model::LogHistogram: 64 buckets per power of two.
inline constexpr double kHistogramResolution = 1.0 / 64;

// A metric that --fail-on-regression can watch: its name, the number it
// reads (DiffNumber::key), whether higher is worse, and whether it is a
// share (threshold in percentage points) rather than an amount (percent).
struct DiffMetric {
  const char* name;
  const char* key;
  bool higher_is_worse;
  bool share;
  const char* what;
};
// step_time, step_p95, kernel_time, kernel_p50, kernel_p95, idle_share,
// busy_share, comm_share, copy_time.
const std::vector<DiffMetric>& DiffMetrics();
const DiffMetric* FindDiffMetric(std::string_view name);
// The default watch list: "step_time,step_p95" (without steps in either
// run, kernel_time on totals stands in for them).
inline constexpr char kDefaultDiffMetrics[] = "step_time,step_p95";

struct DiffOptions {
  size_t top_kernels = 15;
  std::optional<double> fail_on_regression_pct;
  std::vector<std::string> metrics = {"step_time", "step_p95"};  // DiffMetric names
};

// One side of the diff: a summarised run (all three point into one result).
struct DiffRun {
  const model::TraceModel* model = nullptr;
  const SummaryReport* report = nullptr;
  const std::vector<Finding>* findings = nullptr;
};

// A number of one run; `known` false when the run did not measure it.
struct RunValue {
  bool known = false;
  double value = 0;
};

struct DiffNumber {
  std::string key;
  std::string unit;   // "ns", "ratio", "percent", "bytes", "count"
  RunValue base, now;
  bool per_step = false;  // an amount divided by the run's steps
  double noise = 0;       // relative noise floor (see the header comment)
  bool significant = false;  // both known and the change exceeds the floor
};

struct KernelTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  double mean_ns() const { return count > 0 ? static_cast<double>(total_ns) / count : 0; }
};

struct KernelDiff {
  std::string name;
  std::string status;  // "same" (within the noise floor), "changed", "new", "vanished"
  KernelTotals base, now;
  double base_value = 0, now_value = 0;  // time on the basis: ns per step, or total ns
  double base_calls = 0, now_calls = 0;  // calls on the basis
  double noise = 0;
};

struct CopyDiff {
  std::string direction, memory;
  uint64_t base_count = 0, base_bytes = 0, base_ns = 0;
  uint64_t new_count = 0, new_bytes = 0, new_ns = 0;
  double base_value = 0, now_value = 0;  // time on the basis
};

struct FindingRef {
  std::string rule;
  int gpu = -1, process = -1;
  std::string scope;
  Severity severity = Severity::kInfo;
  Severity base_severity = Severity::kInfo;  // "changed" only
  uint64_t cost_ns = 0;
};

// A chosen metric got worse beyond the threshold and its noise floor.
struct Regression {
  std::string metric;     // DiffMetric name
  DiffNumber number;
  double threshold = 0;   // percent, or percentage points for a share
  bool share = false;
  bool stand_in = false;  // kernel_time on totals standing in for step times
};

struct RunDiff {
  bool per_step = false;               // the basis (see the header comment)
  uint64_t base_steps = 0, new_steps = 0;  // 0 without steps
  double step_noise = 0;               // the step-based relative noise floor
  std::vector<DiffNumber> numbers;
  std::vector<KernelDiff> kernels;     // top N
  uint64_t new_kernels = 0, vanished_kernels = 0, changed_kernels = 0;
  std::vector<CopyDiff> copies;
  std::vector<FindingRef> appeared, disappeared, changed;
  std::vector<std::string> metrics;    // watched, as given
  double threshold_pct = kDefaultRegressionPct;
  std::vector<Regression> regressions;
};

// (now - base) / base; NaN when either is unknown or base is 0.
double Change(const RunValue& base, const RunValue& now);

RunDiff ComputeDiff(const DiffRun& base, const DiffRun& now, const DiffOptions& options);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_DIFF_H_
