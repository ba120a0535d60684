// tools/analyze/report.h: `gpscope-analyze report FILE... -o report.html`:
// one self-contained HTML file (no network needed to open it, safe to attach
// to a ticket) with the analyzer's findings first, then a zoomable waterfall
// timeline of every process/rank on one time base, the four numbers per GPU
// with their trends, histograms, top kernels, steps and a correlation table.
//
//   gpscope-analyze report run.gpscope -o report.html
//   gpscope-analyze report --idle-gap-ms 2 --top 50 node*.gpscope -o job.html
//   gpscope-analyze report --data-only run.gpscope -o report.json   # for tests
//
// One streaming pass over the files (each read and decoded once): the
// analyzer's model (summary.h: ComputeSummaryResult) and the timeline
// (render/report_timeline.h) are two event sinks of the same read, then
// render/report_data.h builds the JSON and render/report_html.h puts it into
// the page built from report/ (see report/README.md for how that page is
// built and embedded).
//
// Exit codes: 0 ok (also with damaged data: the report shows it), 1 a file
// could not be read or the output not written, 2 bad usage.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_REPORT_H_
#define GPSCOPE_TOOLS_ANALYZE_REPORT_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace gpscope::analyze {

// The command: `report [-o FILE] [--idle-gap-ms MS] [--top N] [--max-events N]
// [--bins N] [--no-compress] [--data-only] FILE...`.
int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

struct SummaryResult;  // summary.h
// The same, keeping the analyzer's result (pass 1) in *analysis when it was
// computed, for a caller that also wants the findings (the `gpscope`
// launcher) without analyzing the files twice.
int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              std::unique_ptr<SummaryResult>* analysis);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_REPORT_H_
