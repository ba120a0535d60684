// tools/render/report_html.cc: see report_html.h.
#include "tools/render/report_html.h"

#include "absl/status/status.h"

namespace gpscope::render {

namespace {

// Appends `json` with <, >, &, U+2028 and U+2029 escaped; runs of plain
// bytes are copied whole (a 10 M-event report's JSON is ~70 MB).
void AppendEscaped(std::string_view json, std::string* out) {
  size_t i = 0;
  while (i < json.size()) {
    const size_t next = json.find_first_of("<>&\xe2", i);
    if (next == std::string_view::npos) {
      out->append(json.substr(i));
      return;
    }
    out->append(json.substr(i, next - i));
    i = next;
    const char c = json[i];
    switch (c) {
      case '<':
        *out += "\\u003c";
        break;
      case '>':
        *out += "\\u003e";
        break;
      case '&':
        *out += "\\u0026";
        break;
      default:  // '\xe2'
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        if (i + 2 < json.size() && json[i + 1] == '\x80' &&
            (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
          *out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
          i += 2;
        } else {
          out->push_back(c);
        }
    }
    ++i;
  }
}

}  // namespace

std::string EscapeJsonForScript(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  AppendEscaped(json, &out);
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
  // Escaped straight into the page: no second copy of the data.
  std::string out;
  out.reserve(html_template.size() + json.size() + json.size() / 64);
  out.append(html_template.substr(0, at));
  AppendEscaped(json, &out);
  out.append(html_template.substr(at + kReportDataPlaceholder.size()));
  return out;
}

}  // namespace gpscope::render
