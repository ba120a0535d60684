// tools/analyze/summary.cc: see summary.h.
#include "tools/analyze/summary.h"

#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/analyze/cli.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {
namespace {

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

}  // namespace

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
    out << render::RenderRulesText();
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
