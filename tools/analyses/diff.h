// tools/analyses/diff.h: what changed between two runs (`gpscope-analyze
// diff`, tools/analyze/diff.h): run-level numbers, kernels by name, copies
// by direction and memory, findings matched by rule and GPU/process index,
// and the regressions among them. A pure function of two summarised runs;
// rendering is in render/diff_render.h.
//
//   const DiffRun base{&a->model, &a->report, &a->findings};
//   const DiffRun now{&b->model, &b->report, &b->findings};
//   RunDiff d = ComputeDiff(base, now, DiffOptions{});
//
// Run-level numbers combine the GPUs: shares are window-weighted means, step
// times are the slowest GPU's (a synchronous job runs at its slowest rank's
// pace), kernel and copy totals are sums over GPUs (whole run), kernel
// duration percentiles come from the merged histograms.
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_DIFF_H_
#define GPSCOPE_TOOLS_ANALYSES_DIFF_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/analyses/gpu_report.h"
#include "tools/analyses/rules.h"
#include "tools/model/trace_model.h"

namespace gpscope::analyses {

// Without --fail-on-regression, growth beyond this is still listed.
inline constexpr double kDefaultRegressionPct = 5.0;

struct DiffOptions {
  size_t top_kernels = 15;
  std::optional<double> fail_on_regression_pct;
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
  std::string unit;
  RunValue base, now;
};

struct KernelTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  double mean_ns() const { return count > 0 ? static_cast<double>(total_ns) / count : 0; }
};

struct KernelDiff {
  std::string name;
  std::string status;  // "changed", "new", "vanished"
  KernelTotals base, now;
};

struct CopyDiff {
  std::string direction, memory;
  uint64_t base_count = 0, base_bytes = 0, base_ns = 0;
  uint64_t new_count = 0, new_bytes = 0, new_ns = 0;
};

struct FindingRef {
  std::string rule;
  int gpu = -1, process = -1;
  std::string scope;
  Severity severity = Severity::kInfo;
  Severity base_severity = Severity::kInfo;  // "changed" only
  uint64_t cost_ns = 0;
};

// A regression: a number grew beyond the threshold, or a finding at
// warning level or above appeared. The renderers word it.
struct Regression {
  std::string key;        // the number's key; "" for a finding
  std::string unit;
  RunValue base, now;
  double threshold_pct = 0;
  bool no_steps = false;  // kernel_ns compared because a run has no steps
  FindingRef finding;     // key == ""
};

struct RunDiff {
  std::vector<DiffNumber> numbers;
  std::vector<KernelDiff> kernels;  // top N
  uint64_t new_kernels = 0, vanished_kernels = 0;
  std::vector<CopyDiff> copies;
  std::vector<FindingRef> appeared, disappeared, changed;
  std::vector<Regression> regressions;
};

// (now - base) / base; NaN when either is unknown or base is 0.
double Change(const RunValue& base, const RunValue& now);

RunDiff ComputeDiff(const DiffRun& base, const DiffRun& now, const DiffOptions& options);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_DIFF_H_
