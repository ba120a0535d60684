// tools/render/csv_writer.cc: see csv_writer.h.
#include "tools/render/csv_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::render {

void CsvWriter::Separator() {
  if (row_open_) out_->push_back(',');
  row_open_ = true;
}

CsvWriter& CsvWriter::Field(std::string_view raw) {
  Separator();
  // Text cells come from the trace (kernel names): a spreadsheet runs a
  // cell that starts with = + - @ as a formula, so such a cell gets a
  // leading apostrophe (OWASP's advice). Control characters are escaped
  // first (a leading tab or CR, which some spreadsheets strip before
  // looking for a formula, becomes the text \x09 / \x0d), and the text is
  // made valid UTF-8.
  std::string text = Printable(raw);
  if (!text.empty() && std::string_view("=+-@").find(text.front()) != std::string_view::npos) {
    text.insert(text.begin(), '\'');
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    out_->append(text);
    return *this;
  }
  out_->push_back('"');
  for (char c : text) {
    if (c == '"') out_->push_back('"');
    out_->push_back(c);
  }
  out_->push_back('"');
  return *this;
}

CsvWriter& CsvWriter::Field(double value) {
  Separator();
  if (!std::isfinite(value)) return *this;
  if (value == std::floor(value) && std::fabs(value) < 1e19) {
    absl::StrAppendFormat(out_, "%.0f", value);
  } else {
    absl::StrAppendFormat(out_, "%.12g", value);
  }
  return *this;
}

CsvWriter& CsvWriter::Field(uint64_t value) {
  Separator();
  absl::StrAppend(out_, value);
  return *this;
}

CsvWriter& CsvWriter::Field(int64_t value) {
  Separator();
  absl::StrAppend(out_, value);
  return *this;
}

CsvWriter& CsvWriter::EndRow() {
  out_->push_back('\n');
  row_open_ = false;
  return *this;
}

CsvWriter& CsvWriter::Row(std::initializer_list<std::string_view> fields) {
  for (std::string_view f : fields) Field(f);
  return EndRow();
}

}  // namespace gpscope::render
