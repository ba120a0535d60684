// tools/analyze/stats.cc: see stats.h.
#include "tools/analyze/stats.h"

#include "tools/analyses/stats.h"
#include "tools/analyze/cli.h"
#include "tools/reader/event_reader.h"
#include "tools/render/stats_render.h"

namespace gpscope::analyze {

int RunStats(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"report", "format", "names"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " stats: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  const bool help = parsed->has("help");
  const std::string format = parsed->has("format") ? parsed->flags.at("format") : "text";
  const std::string names = parsed->has("names") ? parsed->flags.at("names") : "full";
  std::vector<std::string_view> reports;
  std::string error;
  if (parsed->has("report")) {
    std::string_view list = parsed->flags.at("report");
    while (true) {
      const size_t comma = list.find(',');
      const std::string_view r = list.substr(0, comma);
      if (!render::IsStatsReport(r)) error = "unknown report '" + std::string(r) + "'";
      reports.push_back(r);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  } else {
    reports = render::StatsReportNames();
  }
  if (format != "text" && format != "csv" && format != "json") {
    error = "--format is text, csv or json";
  } else if (names != "full" && names != "short" && names != "base") {
    error = "--names is full, short or base";
  } else if (format == "csv" && reports.size() != 1 && error.empty()) {
    error = "--format csv writes one table: name it with --report";
  }
  if (help || !error.empty() || parsed->positional.empty()) {
    std::string all;
    for (std::string_view r : render::StatsReportNames()) {
      all += (all.empty() ? "" : ", ") + std::string(r);
    }
    if (!error.empty()) err << kProgram << " stats: " << error << "\n";
    (help ? out : err) << "usage: " << kProgram
                       << " stats [--report NAME[,NAME...]] [--format text|csv|json]\n"
                       << "             [--names full|short|base] FILE...\n\n"
                       << "nsys-style summary tables (times in ns; docs/stats.md). Reports: "
                       << all << ".\n"
                       << "--names: kernel names demangled in full, short (no return type,\n"
                       << "parameters or namespaces) or base (the function's own name).\n";
    return help && error.empty() ? kExitOk : kExitUsage;
  }

  analyses::StatsCollector collector;
  reader::ReadResult read = reader::ReadEvents(parsed->positional, {&collector});
  ReportMissingEnds(read.index, err);
  const bool partial = ReportPartial(read.index, err);
  if (absl::Status st = read.index.FirstFileError(); !st.ok()) {
    err << kProgram << ": " << st.message() << "\n";
    return kExitFailed;
  }
  analyses::StatsOptions options;
  options.names = names == "base"    ? analyses::NameStyle::kBase
                  : names == "short" ? analyses::NameStyle::kShort
                                     : analyses::NameStyle::kFull;
  const analyses::StatsReport report = collector.Finish(options);
  if (format == "json") {
    out << render::RenderStatsJson(report, reports, read.timebase, names);
  } else if (format == "csv") {
    out << render::RenderStatsCsv(report, reports.front(), read.timebase);
  } else {
    out << render::RenderStatsText(report, reports, read.timebase);
  }
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
