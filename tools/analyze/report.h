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
// analyzer's model (analyses/summary.h: ComputeSummaryResult) and the timeline
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

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tools/analyses/summary.h"
#include "tools/model/model_builder.h"
#include "tools/render/report_timeline.h"

namespace gpscope::analyze {

// What to report on and how: the command's flags, or a caller's own (the
// `gpscope` launcher's report after a run).
struct ReportRequest {
  std::vector<std::string> files;
  std::string output = "gpscope-report.html";  // "-": `out`
  model::ModelOptions model_options;            // --idle-gap-ms
  size_t top_kernels = 50;                      // --top
  uint64_t max_events = render::TimelineOptions{}.max_events;  // --max-events
  uint32_t bins = 2048;                         // --bins
  bool compress = true;                         // not --no-compress
  bool data_only = false;                       // --data-only: the JSON, not the page
};

// Reads the files once (the analyzer's model and the timeline as two sinks
// of one pass), builds the report and writes it to request.output; one line
// on `out` says what was written, failures are lines on `err`. Keeps the
// analyzer's result in *analysis when it was computed (for a caller that
// also wants the findings, without analyzing the files twice). Returns the
// command's exit code.
int WriteReport(const ReportRequest& request, std::ostream& out, std::ostream& err,
                std::unique_ptr<analyses::SummaryResult>* analysis);

// The command: `report [-o FILE] [--idle-gap-ms MS] [--top N] [--max-events N]
// [--bins N] [--no-compress] [--data-only] FILE...`.
int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_REPORT_H_
