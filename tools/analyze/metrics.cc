// tools/analyze/metrics.cc: see metrics.h.
#include "tools/analyze/metrics.h"

#include "absl/strings/numbers.h"
#include "tools/analyze/cli.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {

int RunMetrics(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"format", "window", "idle-below"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " metrics: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    out << "usage: " << kProgram
        << " metrics [--window 60s] [--idle-below PCT] [--format text|json] FILE...\n\n"
           "Per window and GPU: utilization, memory, power, throttling, processes; idle GPUs,\n"
           "shared GPUs and trends. Reads node monitor files (gpscope-monitor) or any trace\n"
           "with metric samples. --window takes seconds or 30s, 5m, 1h (default 1m).\n"
           "Files of a monitor run with --traces also list the capture windows it summarized.\n";
    return kExitOk;
  }
  MetricsOptions options;
  std::string format = "text";
  if (parsed->has("format")) format = parsed->flags.at("format");
  if (format != "text" && format != "json") {
    err << kProgram << " metrics: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  if (parsed->has("window")) {
    std::string w = parsed->flags.at("window");
    uint64_t unit = 1000000000ull;
    if (!w.empty() && (w.back() == 's' || w.back() == 'm' || w.back() == 'h')) {
      unit = w.back() == 's' ? 1000000000ull : w.back() == 'm' ? 60000000000ull : 3600000000000ull;
      w.pop_back();
    }
    uint64_t n = 0;
    if (!absl::SimpleAtoi(w, &n) || n == 0 || n > 7 * 24 * 3600) {
      err << kProgram << " metrics: --window must be a duration such as 30s, 1m or 1h, not '"
          << parsed->flags.at("window") << "'\n";
      return kExitUsage;
    }
    options.window_ns = n * unit;
  }
  if (parsed->has("idle-below")) {
    double v = 0;
    if (!absl::SimpleAtod(parsed->flags.at("idle-below"), &v) || v < 0 || v > 100) {
      err << kProgram << " metrics: --idle-below must be a percentage in 0..100\n";
      return kExitUsage;
    }
    options.idle_util_pct = v;
  }
  if (parsed->positional.empty()) {
    err << kProgram << " metrics: no trace file given (usage: " << kProgram
        << " metrics [--window 1m] [--format text|json] FILE...)\n";
    return kExitUsage;
  }
  const MetricsReport report = CollectMetrics(parsed->positional, options);
  const absl::Status file_error = report.index.FirstFileError();
  out << (format == "json" ? RenderMetricsJson(report)
                           : render::SanitizeTerminal(RenderMetricsText(report)));
  const bool partial = ReportPartial(report.index, err);
  if (!file_error.ok()) {
    err << kProgram << " metrics: " << file_error.message() << "\n";
    return kExitFailed;
  }
  return partial ? kExitFailed : kExitOk;
}


}  // namespace gpscope::analyze
