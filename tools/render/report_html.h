// tools/render/report_html.h: puts the report's data into the report's HTML.
//
// The page itself (layout, styles, the timeline, charts) is built from
// report/ with npm into report/dist/report_template.html, committed, and
// compiled into gpscope-analyze by CMake (report/embed_template.cmake writes
// a .cc holding its bytes; ReportTemplate() returns them). The template
// holds exactly one placeholder inside its data tag:
//
//   <script type="application/json" id="gpscope-data">"__GPSCOPE_REPORT_DATA__"</script>
//
// RenderReportHtml() replaces the quoted placeholder by the JSON. Trace
// strings (kernel names, NVTX text, command lines, host names) reach the page
// only as JSON string values, and EscapeJsonForScript() makes the JSON unable
// to end the script element or start markup: '<', '>' and '&' become \u003c,
// \u003e and \u0026, and U+2028/U+2029 become \u2028/\u2029 (JSON allows
// them raw, older JavaScript parsers do not). All of these can only occur
// inside JSON strings, where the escapes mean the same characters. The page
// then renders every string with textContent, never as markup.
//
//   absl::StatusOr<std::string> html = RenderReportHtml(ReportTemplate(), json);
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_REPORT_HTML_H_
#define GPSCOPE_TOOLS_RENDER_REPORT_HTML_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gpscope::render {

inline constexpr std::string_view kReportDataPlaceholder = "\"__GPSCOPE_REPORT_DATA__\"";

// The built front end (report/dist/report_template.html), embedded at build time.
std::string_view ReportTemplate();

// `json` with <, >, &, U+2028 and U+2029 escaped as \uXXXX.
std::string EscapeJsonForScript(std::string_view json);

// The template with its placeholder replaced by EscapeJsonForScript(json).
// FailedPrecondition when the template does not hold the placeholder exactly once.
absl::StatusOr<std::string> RenderReportHtml(std::string_view html_template, std::string_view json);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_REPORT_HTML_H_
