// tools/analyze/export_sqlite.cc: see export_sqlite.h.
#include "tools/analyze/export_sqlite.h"

#include <memory>

#include "tools/analyze/cli.h"
#include "tools/analyze/summary.h"
#include "tools/reader/event_reader.h"
#include "tools/render/sqlite_export.h"

namespace gpscope::analyze {

int RunSqliteExport(const std::vector<std::string>& paths, const std::string& output,
                    std::ostream& out, std::ostream& err) {
  (void)out;
  if (output.empty() || output == "-") {
    err << kProgram << " export: --format sqlite needs -o OUT.sqlite (a database is a file)\n";
    return kExitUsage;
  }
  // Rows carry times since the origin as they are written: the final
  // timebase comes from a first, cheap pass (as for the JSON export).
  const reader::Timebase timebase = reader::ScanTimebase(paths);
  absl::StatusOr<std::unique_ptr<render::SqliteExport>> db =
      render::SqliteExport::Create(output, timebase);
  if (!db.ok()) {
    err << kProgram << ": " << db.status().message() << "\n";
    return kExitFailed;
  }
  // The findings are the summary's, with its default options.
  std::unique_ptr<SummaryResult> result =
      ComputeSummaryResult(paths, model::ModelOptions{}, analyses::ReportOptions{}, {db->get()});
  const reader::TraceIndex& index = result->model.index;
  ReportMissingEnds(index, err);
  const bool partial = ReportPartial(index, err);
  if (absl::Status st = index.FirstFileError(); !st.ok()) {
    err << kProgram << ": " << st.message() << "\n";
    return kExitFailed;
  }
  if (absl::Status st = (*db)->Finish(result->model, result->report, result->findings); !st.ok()) {
    err << kProgram << ": " << output << ": " << st.message() << "\n";
    return kExitFailed;
  }
  err << "wrote " << output << " (" << (*db)->rows() << " rows, " << result->findings.size()
      << " findings)\n";
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
