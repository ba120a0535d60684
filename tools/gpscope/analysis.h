// tools/gpscope/analysis.h: what `gpscope run` and `gpscope attach` do at
// the end: the HTML report (gpscope-analyze report) and the findings of the
// summary (gpscope-analyze summary), through the analyzer's library calls.
//
//   AnalysisOptions o;
//   o.report_path = "/out/report.html";
//   int code = ReportAndFindings({"/out/job_host.gpscope"}, o, std::cerr);
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_GPSCOPE_ANALYSIS_H_
#define GPSCOPE_TOOLS_GPSCOPE_ANALYSIS_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/analyses/rules.h"

namespace gpscope::launcher {

struct AnalysisOptions {
  bool write_report = true;
  std::string report_path;     // where the HTML goes (with write_report)
  uint64_t idle_gap_ns = 0;    // 0: the analyzer's default
  size_t max_findings = 10;    // printed; the report has them all
};

// Writes the report, then prints "gpscope: report: PATH" and the findings to
// `out`. Returns 0, or 1 when the files could not be analysed or the report
// not written (one line each on `out` says why).
int ReportAndFindings(const std::vector<std::string>& files, const AnalysisOptions& options,
                      std::ostream& out);

// The findings, warnings first, most costly first, a few lines each: severity, rule and
// title, cost, the summary sentence, the first fix.
std::string RenderFindingsBrief(const std::vector<analyses::Finding>& findings, size_t max_findings);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_ANALYSIS_H_
