// tests/tools/diff_test.cc: `gpscope-analyze diff BASE NEW` on synthetic
// runs and the bundled traces: an unchanged run and a recorded trace diffed
// against itself (no change), the same loop run for twice the steps (no
// change per step), a slower one (regression, exit 3 only with
// --fail-on-regression), a faster run with a new warning (not a
// regression), --metrics, new and vanished kernels, the JSON keys and usage
// errors.
#include "tools/analyze/diff.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/synth.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"
#include "tools/render/diff_render.h"

namespace gpscope::analyze {
namespace {

using testing::Synth;
using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "diff_test." + std::to_string(getpid()) + "." + name + ".gpscope";
}

struct Output {
  int code;
  std::string out, err;
};

Output RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = Run(args, out, err);
  return {code, out.str(), err.str()};
}

// A training loop; `slow` stretches the kernels, `extra` adds a kernel name,
// `starve` adds a data-loading wait per step.
std::string WriteRun(const std::string& name, double slow, const char* extra, uint64_t starve_ns) {
  TraceBuilder trace;
  Synth s(trace);
  testing::LoopOptions o;
  o.kernel_ns = static_cast<uint64_t>(1'900 * kUs * slow);
  o.step_ns = static_cast<uint64_t>(19 * kMs * slow) + starve_ns;
  if (starve_ns == 0) {
    testing::HealthyLoop(s, o);
  } else {
    uint64_t h = 2'000'000'000;
    for (int step = 0; step < 40; ++step) {
      const uint64_t start = h;
      // The batch the slow loader delivered: its copy is the input evidence.
      uint64_t t = s.Copy(h, 20 * kUs, 1 << 20, proto::MEMCPY_HTOD, proto::MEMORY_PINNED);
      for (int k = 0; k < 4; ++k) t = s.Kernel(t + 2 * kUs, o.kernel_ns, "gemm_bf16_tn");
      s.Step(start, t + 50 * kUs, static_cast<uint64_t>(step));
      h = std::max(t, s.gpu_free_ns()) + starve_ns;
    }
  }
  if (extra != nullptr) {
    for (int i = 0; i < 10; ++i) s.Kernel(3'000'000'000 + i * kMs, 100 * kUs, extra);
  }
  s.p().WriteEnd();
  const std::string path = TempPath(name);
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

TEST(DiffTest, SameRunHasNoChangesAndNoRegression) {
  const std::string a = WriteRun("same", 1.0, nullptr, 0);
  const Output o = RunCli({"diff", "--fail-on-regression", "1", a, a});
  EXPECT_EQ(o.code, kExitOk) << o.err << o.out;
  EXPECT_NE(o.out.find("REGRESSIONS: none"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("0 changed, 0 new, 0 vanished"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("FINDINGS: 0 appeared, 0 disappeared, 0 changed severity"),
            std::string::npos);
  for (const std::string line : {"step time P50", "GPU busy share", "kernel time"}) {
    EXPECT_NE(o.out.find(line), std::string::npos) << line;
  }
  for (const std::string& l : std::vector<std::string>{o.out}) {
    size_t start = 0;
    while (start < l.size()) {
      const size_t end = l.find('\n', start);
      EXPECT_LE(end - start, 100u) << l.substr(start, end - start);
      start = end + 1;
    }
  }
  unlink(a.c_str());
}

TEST(DiffTest, SlowerRunIsARegressionOnlyBeyondTheThreshold) {
  const std::string base = WriteRun("base", 1.0, "vanishing_kernel", 0);
  const std::string slow = WriteRun("slow", 1.3, "new_kernel", 0);
  const std::unique_ptr<SummaryResult> b =
      ComputeSummaryResult({base}, model::ModelOptions{}, analyses::ReportOptions{});
  const std::unique_ptr<SummaryResult> n =
      ComputeSummaryResult({slow}, model::ModelOptions{}, analyses::ReportOptions{});
  const RunDiff d = ComputeDiff(*b, *n, DiffOptions{});
  const DiffNumber& p50 = d.numbers[0];
  ASSERT_EQ(p50.key, "step_p50_ns");
  ASSERT_TRUE(p50.base.known && p50.now.known);
  EXPECT_NEAR(p50.now.value / p50.base.value, 1.3, 0.02);
  EXPECT_EQ(d.new_kernels, 1u);
  EXPECT_EQ(d.vanished_kernels, 1u);
  bool saw_new = false, saw_vanished = false;
  for (const KernelDiff& k : d.kernels) {
    saw_new |= k.name == "new_kernel" && k.status == "new" && k.now.count == 10;
    saw_vanished |= k.name == "vanishing_kernel" && k.status == "vanished" && k.base.count == 10;
    if (k.name == "gemm_bf16_tn") {
      EXPECT_EQ(k.status, "changed");
      EXPECT_NEAR(static_cast<double>(k.now.total_ns) / static_cast<double>(k.base.total_ns), 1.3,
                  0.01);
    }
  }
  EXPECT_TRUE(saw_new && saw_vanished);
  ASSERT_FALSE(d.regressions.empty());
  EXPECT_EQ(d.regressions[0].metric, "step_time");
  EXPECT_NE(render::RegressionText(d.regressions[0]).find("step time P50 grew 3"),
            std::string::npos)
      << render::RegressionText(d.regressions[0]);
  // Listed always; exit 3 only with the option and beyond its threshold.
  EXPECT_EQ(RunCli({"diff", base, slow}).code, kExitOk);
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "10", base, slow}).code, kExitRegression);
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "50", base, slow}).code, kExitOk);
  // Faster is not a regression.
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "10", slow, base}).code, kExitOk);
  unlink(base.c_str());
  unlink(slow.c_str());
}

TEST(DiffTest, AppearedFindingIsListedAndJsonHasTheDocumentedKeys) {
  const std::string base = WriteRun("healthy", 1.0, nullptr, 0);
  const std::string starved = WriteRun("starved", 1.0, nullptr, 25 * kMs);
  const Output o = RunCli({"diff", "--format", "json", base, starved});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  for (const char* key : {"\"schema\": \"gpscope.diff/2\"", "\"numbers\"", "\"kernels\"",
                          "\"copies\"", "\"findings\"", "\"appeared\"", "\"disappeared\"",
                          "\"changed\"", "\"regressions\"", "\"key\": \"step_p95_ns\"",
                          "\"fail_on_regression_pct\": null", "\"basis\": \"per_step\"",
                          "\"noise_floor\"", "\"significant\"", "\"metrics\""}) {
    EXPECT_NE(o.out.find(key), std::string::npos) << key;
  }
  const std::unique_ptr<SummaryResult> b =
      ComputeSummaryResult({base}, model::ModelOptions{}, analyses::ReportOptions{});
  const std::unique_ptr<SummaryResult> n =
      ComputeSummaryResult({starved}, model::ModelOptions{}, analyses::ReportOptions{});
  const RunDiff d = ComputeDiff(*b, *n, DiffOptions{});
  ASSERT_FALSE(d.appeared.empty());
  EXPECT_TRUE(std::any_of(d.appeared.begin(), d.appeared.end(),
                          [](const FindingRef& f) { return f.rule == "data-starvation"; }));
  // A finding that appeared is listed, never a regression: only the step
  // time (which grew, by less than 1000%) is watched.
  for (const Regression& r : d.regressions) EXPECT_EQ(r.metric.rfind("step_", 0), 0u) << r.metric;
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "1000", base, starved}).code, kExitOk);
  unlink(base.c_str());
  unlink(starved.c_str());
}

TEST(DiffTest, BadUsageExitsTwoWithOneLine) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"diff"},
           {"diff", "a"},
           {"diff", "a", "b", "c"},
           {"diff", "--format", "xml", "a", "b"},
           {"diff", "--fail-on-regression", "-1", "a", "b"},
           {"diff", "--window-ms", "500", "a", "b"},
           {"diff", "--metrics", "step_time,bogus", "a", "b"},
           {"diff", "--metrics", ",", "a", "b"}}) {
    const Output o = RunCli(args);
    EXPECT_EQ(o.code, kExitUsage) << args.back();
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  EXPECT_EQ(RunCli({"diff", "/nonexistent/a.gpscope", "/nonexistent/b.gpscope"}).code, kExitFailed);
  EXPECT_NE(RunCli({"diff", "--help"}).out.find("--fail-on-regression"), std::string::npos);
  EXPECT_NE(RunCli({"--help"}).out.find("diff"), std::string::npos);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"diff", "--rank", "0", "a"},                           // one rank
           {"diff", "--rank", "0", "--rank", "1", "a", "b"},       // two files
           {"diff", "--rank", "x", "--rank", "1", "a"},            // not a number
           {"diff", "--rank", "0", "--rank", "1", "--rank", "2", "a"},
           {"diff", "a", "--rank"}}) {
    const Output o = RunCli(args);
    EXPECT_EQ(o.code, kExitUsage) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

// A node file holds every rank of the node: `diff --rank A --rank B FILE`
// compares two of them (the straggler's fix names it).
TEST(DiffTest, TwoRanksOfOneNodeFile) {
  TraceBuilder trace;
  auto rank = [](int r) {
    return [r](proto::ProcessHeader& h) {
      h.mutable_identity()->set_rank(r);
      h.mutable_identity()->set_world_size(2);
    };
  };
  Synth fast(trace, 0xA0, 100, {}, rank(0));
  Synth slow(trace, 0xA1, 101, {}, rank(1));
  testing::LoopOptions o;
  testing::HealthyLoop(fast, o);
  o.kernel_ns = 1'900 * kUs * 3 / 2;  // rank 1's kernels take 50% longer
  o.step_ns = 19 * kMs * 3 / 2;
  testing::HealthyLoop(slow, o);
  fast.p().WriteEnd();
  slow.p().WriteEnd();
  const std::string node = TempPath("node");
  ASSERT_TRUE(trace.WriteFile(node));
  const Output d = RunCli({"diff", "--format", "json", "--rank", "0", "--rank=1", node});
  ASSERT_EQ(d.code, kExitOk) << d.err;
  EXPECT_NE(d.out.find("\"key\": \"step_p50_ns\""), std::string::npos);
  // Each side holds one process: its own GPU, and the slow one's steps.
  const std::unique_ptr<SummaryResult> base = ComputeSummaryResult(
      {node}, [] { model::ModelOptions m; m.only_rank = 0; return m; }(), analyses::ReportOptions{});
  const std::unique_ptr<SummaryResult> now = ComputeSummaryResult(
      {node}, [] { model::ModelOptions m; m.only_rank = 1; return m; }(), analyses::ReportOptions{});
  ASSERT_EQ(base->model.processes.size(), 1u);
  ASSERT_EQ(now->model.processes.size(), 1u);
  EXPECT_EQ(base->model.processes[0].pid, 100u);
  EXPECT_EQ(now->model.processes[0].pid, 101u);
  const RunDiff diff = ComputeDiff(*base, *now, DiffOptions{});
  ASSERT_FALSE(diff.regressions.empty());
  EXPECT_NE(render::RegressionText(diff.regressions[0]).find("step time P50 grew 5"),
            std::string::npos)
      << render::RegressionText(diff.regressions[0]);
  // A rank the file does not hold: one line, exit 1.
  const Output missing = RunCli({"diff", "--rank", "0", "--rank", "7", node});
  EXPECT_EQ(missing.code, kExitFailed);
  EXPECT_NE(missing.err.find("no process of rank 7"), std::string::npos) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  unlink(node.c_str());
}

// A loop of `steps` steps of 10 kernels (two names) with no NVTX ranges:
// the steps are inferred from the repeating pattern.
std::string WriteLoop(const std::string& name, int steps, double slow = 1.0) {
  TraceBuilder trace;
  Synth s(trace);
  testing::LoopOptions o;
  o.steps = steps;
  o.emit_steps = false;
  o.kernel_ns = static_cast<uint64_t>(1'900 * kUs * slow);
  o.step_ns = static_cast<uint64_t>(19 * kMs * slow);
  testing::HealthyLoop(s, o);
  s.p().WriteEnd();
  const std::string path = TempPath(name);
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

RunDiff DiffFiles(const std::string& base, const std::string& now,
                  const DiffOptions& options = DiffOptions{}) {
  const std::unique_ptr<SummaryResult> b =
      ComputeSummaryResult({base}, model::ModelOptions{}, analyses::ReportOptions{});
  const std::unique_ptr<SummaryResult> n =
      ComputeSummaryResult({now}, model::ModelOptions{}, analyses::ReportOptions{});
  return ComputeDiff(*b, *n, options);
}

const DiffNumber& Number(const RunDiff& d, const std::string& key) {
  for (const DiffNumber& n : d.numbers) {
    if (n.key == key) return n;
  }
  ADD_FAILURE() << "no number " << key;
  return d.numbers.front();
}

// Issue 23: 100 vs 200 steps of one loop showed every kernel at +100%.
TEST(DiffTest, TwiceTheStepsOfOneLoopIsNoChangePerStep) {
  const std::string a = WriteLoop("steps50", 50);
  const std::string b = WriteLoop("steps100", 100);
  const RunDiff d = DiffFiles(a, b);
  ASSERT_TRUE(d.per_step);
  // (Inference may find a shorter period than the loop's: the kernel pair
  // repeats inside a step. Either way the second run has twice as many.)
  ASSERT_GE(d.base_steps, 50u);
  EXPECT_NEAR(static_cast<double>(d.new_steps) / static_cast<double>(d.base_steps), 2.0, 0.05);
  ASSERT_FALSE(d.kernels.empty());
  for (const KernelDiff& k : d.kernels) {
    // The totals doubled; per step nothing changed.
    EXPECT_NEAR(static_cast<double>(k.now.total_ns) / static_cast<double>(k.base.total_ns), 2.0,
                0.05) << k.name;
    EXPECT_EQ(k.status, "same") << k.name << " " << k.base_value << " -> " << k.now_value;
    EXPECT_NEAR(k.now_calls / k.base_calls, 1.0, 0.01) << k.name;
  }
  EXPECT_EQ(d.changed_kernels, 0u);
  EXPECT_FALSE(Number(d, "kernel_ns").significant);
  EXPECT_TRUE(Number(d, "kernel_ns").per_step);
  EXPECT_FALSE(Number(d, "step_p50_ns").significant);
  EXPECT_TRUE(d.regressions.empty());
  const Output o = RunCli({"diff", "--fail-on-regression", "0", "--metrics",
                           "step_time,step_p95,kernel_time,kernel_p95,idle_share,copy_time", a, b});
  EXPECT_EQ(o.code, kExitOk) << o.out;
  EXPECT_NE(o.out.find("basis per step (base"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("TOP KERNELS by time per step"), std::string::npos) << o.out;
  unlink(a.c_str());
  unlink(b.c_str());
}

// The same bytes twice: no number, kernel or copy changed, nothing to fail.
TEST(DiffTest, RecordedTraceAgainstItselfIsNoChange) {
  const std::string t = std::string(GPSCOPE_TEST_DATA_DIR) + "/torch_train.gpscope";
  const RunDiff d = DiffFiles(t, t);
  EXPECT_TRUE(d.per_step);
  EXPECT_GT(d.step_noise, 0);  // a recorded loop has step-time variance
  for (const DiffNumber& n : d.numbers) {
    EXPECT_FALSE(n.significant) << n.key;
    EXPECT_EQ(n.base.value, n.now.value) << n.key;
  }
  EXPECT_EQ(d.changed_kernels, 0u);
  for (const KernelDiff& k : d.kernels) EXPECT_EQ(k.status, "same") << k.name;
  EXPECT_TRUE(d.regressions.empty());
  DiffOptions all;
  for (const analyses::DiffMetric& m : analyses::DiffMetrics()) all.metrics.push_back(m.name);
  all.fail_on_regression_pct = 0;
  EXPECT_TRUE(DiffFiles(t, t, all).regressions.empty());
  const Output o = RunCli({"diff", "--fail-on-regression", "0", "--metrics",
                           "step_time,kernel_p95,idle_share,busy_share", t, t});
  EXPECT_EQ(o.code, kExitOk) << o.out;
  EXPECT_EQ(o.out.find("changed\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("0 changed, 0 new, 0 vanished"), std::string::npos) << o.out;
  const Output j = RunCli({"diff", "--format", "json", t, t});
  EXPECT_EQ(j.out.find("\"significant\": true"), std::string::npos);
  EXPECT_EQ(j.out.find("\"status\": \"changed\""), std::string::npos);
}

// Issue 23: a 4x faster run failed --fail-on-regression because a warning
// appeared. The warning is listed; the run passes on the default metrics and
// fails only on a metric that did get worse (idle share, when asked).
TEST(DiffTest, FasterRunWithANewWarningIsNotARegression) {
  const std::string slow = WriteRun("slow44", 4.4, nullptr, 0);
  const std::string fast = WriteRun("fast_starved", 1.0, nullptr, 10 * kMs);
  const RunDiff d = DiffFiles(slow, fast);
  const DiffNumber& p50 = Number(d, "step_p50_ns");
  ASSERT_TRUE(p50.base.known && p50.now.known);
  EXPECT_GT(p50.base.value / p50.now.value, 3.5) << p50.base.value << " " << p50.now.value;
  EXPECT_TRUE(std::any_of(d.appeared.begin(), d.appeared.end(), [](const FindingRef& f) {
    return f.severity >= analyses::Severity::kWarning;
  }));
  EXPECT_TRUE(d.regressions.empty());
  const Output o = RunCli({"diff", "--fail-on-regression", "5", slow, fast});
  EXPECT_EQ(o.code, kExitOk) << o.out;
  EXPECT_NE(o.out.find("+ warning"), std::string::npos) << o.out;  // listed
  const Output idle =
      RunCli({"diff", "--fail-on-regression", "5", "--metrics", "idle_share", slow, fast});
  EXPECT_EQ(idle.code, kExitRegression) << idle.out;
  EXPECT_NE(idle.out.find("idle_share: idle-gap share rose"), std::string::npos) << idle.out;
  // Backwards (4x slower) it is a step-time regression.
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "5", fast, slow}).code, kExitRegression);
  unlink(slow.c_str());
  unlink(fast.c_str());
}

// Chosen metrics: a kernel_p95 regression is found only when watched; on
// totals (no steps in a run) kernel time stands in for the step times.
TEST(DiffTest, MetricsChooseWhatFails) {
  const std::string a = WriteLoop("m_base", 50);
  const std::string b = WriteLoop("m_slow", 50, 1.2);
  DiffOptions p95;
  p95.metrics = {"kernel_p95"};
  const RunDiff d = DiffFiles(a, b, p95);
  ASSERT_EQ(d.regressions.size(), 1u);
  EXPECT_EQ(d.regressions[0].metric, "kernel_p95");
  EXPECT_NEAR(analyses::Change(d.regressions[0].number.base, d.regressions[0].number.now), 0.2, 0.02);
  DiffOptions busy;
  busy.metrics = {"busy_share"};  // unchanged (both loops keep the GPU busy)
  EXPECT_TRUE(DiffFiles(a, b, busy).regressions.empty());
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "10", "--metrics", "kernel_p95", a, b}).code,
            kExitRegression);
  EXPECT_EQ(RunCli({"diff", "--fail-on-regression", "30", "--metrics", "kernel_p95", a, b}).code,
            kExitOk);
  // Without steps (one trace of single kernels), totals and the stand-in.
  TraceBuilder t1, t2;
  Synth s1(t1), s2(t2);
  for (int i = 0; i < 3; ++i) s1.Kernel(2'000'000'000 + i * 10 * kMs, 1 * kMs, "lone");
  for (int i = 0; i < 3; ++i) s2.Kernel(2'000'000'000 + i * 10 * kMs, 2 * kMs, "lone");
  s1.p().WriteEnd();
  s2.p().WriteEnd();
  const std::string n1 = TempPath("nosteps1"), n2 = TempPath("nosteps2");
  ASSERT_TRUE(t1.WriteFile(n1) && t2.WriteFile(n2));
  const RunDiff tot = DiffFiles(n1, n2);
  EXPECT_FALSE(tot.per_step);
  ASSERT_EQ(tot.regressions.size(), 1u);
  EXPECT_TRUE(tot.regressions[0].stand_in);
  EXPECT_EQ(tot.regressions[0].number.key, "kernel_ns");
  const Output o = RunCli({"diff", n1, n2});
  EXPECT_NE(o.out.find("basis whole-run totals (neither run has steps)"), std::string::npos)
      << o.out;
  for (const std::string& f : {a, b, n1, n2}) unlink(f.c_str());
}

}  // namespace
}  // namespace gpscope::analyze
