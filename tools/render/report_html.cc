// tools/render/report_html.cc: see report_html.h.
#include "tools/render/report_html.h"

#include "absl/status/status.h"

namespace gpscope::render {

std::string EscapeJsonForScript(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      case '\xe2':
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        if (i + 2 < json.size() && json[i + 1] == '\x80' &&
            (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
          out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
          i += 2;
          break;
        }
        out.push_back(c);
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<std::string> RenderReportHtml(std::string_view html_template,
                                             std::string_view json) {
  const size_t at = html_template.find(kReportDataPlaceholder);
  if (at == std::string_view::npos ||
      html_template.find(kReportDataPlaceholder, at + 1) != std::string_view::npos) {
    return absl::FailedPreconditionError(
        "the embedded report template does not hold its data placeholder exactly once; "
        "rebuild it with scripts/build_report_ui.sh");
  }
  std::string out;
  const std::string escaped = EscapeJsonForScript(json);
  out.reserve(html_template.size() + escaped.size());
  out.append(html_template.substr(0, at));
  out.append(escaped);
  out.append(html_template.substr(at + kReportDataPlaceholder.size()));
  return out;
}

}  // namespace gpscope::render
