// tools/analyze/export_sqlite.h: `gpscope-analyze export --format sqlite -o
// OUT.sqlite FILE...` (export.cc dispatches here): the events stream into
// the database (render/sqlite_export.h) in the pass that builds the model,
// then the summary's findings (the same ComputeSummaryResult as `summary`)
// and the tables that need the whole pass are added. Schema: docs/sqlite.md.
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_EXPORT_SQLITE_H_
#define GPSCOPE_TOOLS_ANALYZE_EXPORT_SQLITE_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpscope::analyze {

// Exit codes as every command's (cli.h): 0, 1 (a file or the database
// failed), 2 (no -o).
int RunSqliteExport(const std::vector<std::string>& paths, const std::string& output,
                    std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_EXPORT_SQLITE_H_
