// tools/analyze/diff.cc: see diff.h. Flags -> analyses::ComputeDiff ->
// render/diff_render.
#include "tools/analyze/diff.h"

#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/analyze/cli.h"
#include "tools/render/diff_render.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {
namespace {

constexpr char kUsage[] =
    "usage: gpscope-analyze diff [--format text|json] [--fail-on-regression PCT]\n"
    "                            [--metrics M[,M]] [--top N] [--idle-gap-ms MS]\n"
    "                            [--window-ms MS] BASE NEW\n"
    "       gpscope-analyze diff [options] --rank A --rank B FILE\n"
    "\n"
    "What changed between two runs: step time P50/P95, GPU busy and idle-gap share, the\n"
    "four numbers, communication, top kernels (new and vanished ones), copies, and\n"
    "findings that appeared or disappeared. BASE and NEW are trace files, or several\n"
    "files of one run joined by commas. With --rank twice, BASE is rank A and NEW\n"
    "rank B of the same FILE (a node file holds every rank of the node).\n"
    "\n"
    "Basis: when both runs have steps (NVTX or inferred), kernel time, calls and\n"
    "copies are compared per step (a loop run for 100 and for 200 steps is the same\n"
    "loop); otherwise whole-run totals. The output says which.\n"
    "Noise floor: a number changed only when |new - base| > noise x max(|base|,|new|),\n"
    "noise = 2 standard errors of the relative difference of the mean step time\n"
    "(a kernel: of its mean duration; percentiles: never below 1/64, the histogram's\n"
    "resolution). Without step variance it is 0: identical runs show no change, any\n"
    "other difference counts. Text marks a change within the floor with ~.\n"
    "\n"
    "  --format text|json        output format (default text; json keys in diff.h)\n"
    "  --fail-on-regression PCT  exit 3 when a watched metric got worse by more than\n"
    "                            PCT percent (percentage points for shares) and beyond\n"
    "                            its noise floor; findings that appear are listed,\n"
    "                            never a regression\n"
    "  --metrics M[,M]           the watched metrics (default step_time,step_p95; when\n"
    "                            a run has no steps, total kernel time stands in):\n"
    "                            step_time, step_p95, kernel_time, kernel_p50,\n"
    "                            kernel_p95, idle_share, busy_share (a fall),\n"
    "                            comm_share, copy_time\n"
    "  --top N                   kernels listed (default 15)\n"
    "  --idle-gap-ms MS          as for summary (default 5)\n"
    "  --window-ms MS            as for summary, 50..200 (default 100)\n"
    "  --rank A --rank B         compare two ranks of one run (Identity.rank)\n"
    "  -h, --help                this help\n"
    "\n"
    "Exit status: 0 ok (regressions beyond 5% are listed but do not fail without the\n"
    "option), 3 regression with --fail-on-regression, 1 a file could not be read,\n"
    "2 usage error.\n";

int Usage(std::ostream& err, const std::string& message) {
  err << kProgram << " diff: " << message << "; run '" << kProgram << " diff --help'\n";
  return kExitUsage;
}

}  // namespace

int RunDiffCommand(const std::vector<std::string>& raw_args, std::ostream& out,
                   std::ostream& err) {
  // --rank may be given twice, which ParseArgs (one value per flag) does
  // not keep: take the ranks out first.
  std::vector<std::string> args;
  std::vector<int32_t> ranks;
  for (size_t i = 0; i < raw_args.size(); ++i) {
    const std::string& a = raw_args[i];
    if (a == "--") {
      args.insert(args.end(), raw_args.begin() + static_cast<std::ptrdiff_t>(i), raw_args.end());
      break;
    }
    std::string value;
    if (a == "--rank") {
      if (i + 1 >= raw_args.size()) return Usage(err, "--rank needs a value");
      value = raw_args[++i];
    } else if (a.rfind("--rank=", 0) == 0) {
      value = a.substr(7);
    } else {
      args.push_back(a);
      continue;
    }
    int32_t rank = -1;
    if (!absl::SimpleAtoi(value, &rank) || rank < 0) {
      return Usage(err, absl::StrCat("--rank must be a rank number >= 0, not '", value, "'"));
    }
    ranks.push_back(rank);
  }
  if (!ranks.empty() && ranks.size() != 2) {
    return Usage(err, absl::StrCat("--rank is given twice, BASE's rank then NEW's (got ",
                                   ranks.size(), ")"));
  }
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(
      args, {"format", "fail-on-regression", "metrics", "top", "idle-gap-ms", "window-ms"}, {"help"});
  if (!parsed.ok()) return Usage(err, std::string(parsed.status().message()));
  if (parsed->has("help")) {
    out << kUsage;
    return kExitOk;
  }
  const std::string format = parsed->has("format") ? parsed->flags.at("format") : "text";
  if (format != "text" && format != "json") {
    return Usage(err, absl::StrCat("--format must be text or json, not '", format, "'"));
  }
  DiffOptions options;
  model::ModelOptions model_options;
  if (parsed->has("fail-on-regression")) {
    double pct = 0;
    const std::string& v = parsed->flags.at("fail-on-regression");
    if (!absl::SimpleAtod(v, &pct) || !(pct >= 0) || pct > 1e6) {
      return Usage(err, absl::StrCat("--fail-on-regression must be a percentage >= 0, not '", v,
                                     "'"));
    }
    options.fail_on_regression_pct = pct;
  }
  if (parsed->has("metrics")) {
    options.metrics = absl::StrSplit(parsed->flags.at("metrics"), ',', absl::SkipEmpty());
    if (options.metrics.empty()) return Usage(err, "--metrics needs at least one metric");
    for (const std::string& m : options.metrics) {
      if (analyses::FindDiffMetric(m) == nullptr) {
        std::vector<std::string> names;
        for (const analyses::DiffMetric& d : analyses::DiffMetrics()) names.push_back(d.name);
        return Usage(err, absl::StrCat("--metrics: unknown metric '", m, "' (one of ",
                                       absl::StrJoin(names, ","), ")"));
      }
    }
  }
  if (const std::string error = ParseCommonFlags(*parsed, &model_options, &options.top_kernels);
      !error.empty()) {
    return Usage(err, error);
  }
  const size_t want = ranks.empty() ? 2 : 1;
  if (parsed->positional.size() != want) {
    return Usage(err, ranks.empty()
                          ? absl::StrCat("needs two runs, BASE and NEW (got ",
                                         parsed->positional.size(), ")")
                          : absl::StrCat("with --rank, needs one run, FILE (got ",
                                         parsed->positional.size(), ")"));
  }
  std::vector<std::string> files[2];
  std::unique_ptr<SummaryResult> results[2];
  int code = kExitOk;
  for (int side = 0; side < 2; ++side) {
    files[side] = absl::StrSplit(parsed->positional[ranks.empty() ? static_cast<size_t>(side) : 0],
                                 ',', absl::SkipEmpty());
    model::ModelOptions side_options = model_options;
    if (!ranks.empty()) side_options.only_rank = ranks[static_cast<size_t>(side)];
    results[side] = ComputeSummaryResult(files[side], side_options, analyses::ReportOptions{});
    size_t readable = 0;
    for (const reader::FileInfo& f : results[side]->model.index.files) {
      if (f.status.ok()) {
        ++readable;
      } else {
        err << kProgram << ": " << f.status.message() << "\n";
        code = kExitFailed;
      }
    }
    if (ReportPartial(results[side]->model.index, err)) code = kExitFailed;
    if (readable == 0) return kExitFailed;
    if (!ranks.empty() && results[side]->model.processes.empty()) {
      err << kProgram << ": " << absl::StrJoin(files[side], ",") << ": no process of rank "
          << ranks[static_cast<size_t>(side)]
          << " (the header's identity); check the ranks with gpscope-analyze info\n";
      return kExitFailed;
    }
  }
  const analyses::RunDiff d = ComputeDiff(*results[0], *results[1], options);
  render::DiffSide sides[2];
  for (int side = 0; side < 2; ++side) {
    const model::TraceModel& m = results[side]->model;
    sides[side] = {files[side], m.gpus.size(), m.events, PartialText(m.index),
                   [&m](render::JsonWriter& j) { WritePartialJson(m.index, j); }};
  }
  if (format == "json") {
    out << render::RenderDiffJson(
        d, {model_options.idle_gap_threshold_ns, model_options.window_ns, options}, sides[0],
        sides[1]);
  } else {
    out << render::SanitizeTerminal(render::RenderDiffText(d, sides[0], sides[1]));
  }
  if (code == kExitOk && options.fail_on_regression_pct && !d.regressions.empty()) {
    return kExitRegression;
  }
  return code;
}

}  // namespace gpscope::analyze
