// tools/analyze/export.cc: see export.h.
#include "tools/analyze/export.h"

#include <fstream>

#include "tools/analyze/cli.h"
#include "tools/analyze/export_sqlite.h"
#include "tools/reader/event_reader.h"
#include "tools/render/trace_export.h"

namespace gpscope::analyze {

using render::ExportChrome;
using render::ExportPerfetto;

int RunExport(const std::vector<std::string>& raw_args, std::ostream& out, std::ostream& err) {
  // ParseArgs knows long flags only; -o is the one short flag, as in report.
  std::vector<std::string> args;
  for (const std::string& a : raw_args) args.push_back(a == "-o" ? "--output" : a);
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"format", "output"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " export: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  const bool help = parsed->has("help");
  std::string format = parsed->has("format") ? parsed->flags.at("format") : "chrome";
  if (format == "sqlite" && !help && !parsed->positional.empty()) {  // docs/sqlite.md
    return RunSqliteExport(parsed->positional,
                           parsed->has("output") ? parsed->flags.at("output") : "", out, err);
  }
  if (help || parsed->positional.empty() || (format != "chrome" && format != "perfetto")) {
    (help ? out : err) << "usage: " << kProgram
                       << " export [--format chrome|perfetto|sqlite] [-o OUT] FILE...\n\n"
                       << "chrome (default): Chrome trace-event JSON (chrome://tracing, "
                          "ui.perfetto.dev, speedscope);\n  ts are microseconds since the time "
                          "origin every command prints (metadata.gpscope_time_origin).\n"
                          "perfetto: a Perfetto protobuf trace (.pftrace, ui.perfetto.dev); "
                          "timestamps are realtime ns.\n"
                          "Both: a track per GPU stream, host thread (CUDA API), NVTX and sync "
                          "lane, per process;\n  slices that overlap without nesting go to an "
                          "extra lane; flows from each launch to its GPU work.\nDefault output: "
                          "stdout.\n"
                       << "sqlite: an SQLite database to -o OUT.sqlite (docs/sqlite.md).\n";
    return help ? kExitOk : kExitUsage;
  }
  std::string path = parsed->has("output") ? parsed->flags.at("output") : "-";
  std::ofstream file;
  std::ostream* sink = &out;
  if (path != "-") {
    file.open(path, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << kProgram << ": " << path << ": cannot write\n";
      return kExitFailed;
    }
    sink = &file;
  }
  // Events are written as they are read: the timebase (final clocks, the
  // origin) comes from a first pass.
  const reader::Timebase timebase = reader::ScanTimebase(parsed->positional);
  uint64_t written = 0;
  reader::ReadResult read =
      format == "perfetto" ? ExportPerfetto(parsed->positional, timebase, *sink, err, &written)
                           : ExportChrome(parsed->positional, timebase, *sink, err, &written);
  const reader::TraceIndex* index = &read.index;
  ReportMissingEnds(*index, err);
  const bool partial = ReportPartial(*index, err);
  if (absl::Status st = index->FirstFileError(); !st.ok()) {
    err << kProgram << ": " << st.message() << "\n";
    return kExitFailed;
  }
  if (path != "-") {
    file.close();
    if (!file) {
      err << kProgram << ": " << path << ": write failed\n";
      return kExitFailed;
    }
    err << "wrote " << path << " (" << written
        << (format == "perfetto" ? " packets" : " events") << ")\n";
  }
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
