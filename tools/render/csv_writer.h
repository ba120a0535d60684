// tools/render/csv_writer.h: RFC 4180 CSV for the renderers' tables: one
// header line, then rows; fields with a comma, quote, CR or LF are quoted
// (quotes doubled). Numbers: integral values print as integers, others with
// 12 significant digits, NaN (not sampled) as an empty field; timestamps go
// through the uint64_t overload (exact). Lines end in "\n". Text fields are
// made safe to open in a spreadsheet: one starting with = + - @ gets a
// leading ' so it is not run as a formula, and control characters (a
// leading tab or CR too) are escaped (render::Printable).
//
//   std::string out;
//   CsvWriter csv(&out);
//   csv.Row({"gpu", "name", "total_ns"});
//   csv.Field(0).Field("gemm").Field(1.5e6).EndRow();
//
// Thread model: one writer per thread.
#ifndef GPSCOPE_TOOLS_RENDER_CSV_WRITER_H_
#define GPSCOPE_TOOLS_RENDER_CSV_WRITER_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace gpscope::render {

class CsvWriter {
 public:
  explicit CsvWriter(std::string* out) : out_(out) {}

  CsvWriter& Field(std::string_view text);
  CsvWriter& Field(const char* text) { return Field(std::string_view(text)); }
  CsvWriter& Field(const std::string& text) { return Field(std::string_view(text)); }
  CsvWriter& Field(double value);
  CsvWriter& Field(uint64_t value);
  CsvWriter& Field(int64_t value);
  CsvWriter& Field(int value) { return Field(static_cast<int64_t>(value)); }
  CsvWriter& Field(uint32_t value) { return Field(static_cast<uint64_t>(value)); }
  CsvWriter& EndRow();
  // A whole row of text fields (the header).
  CsvWriter& Row(std::initializer_list<std::string_view> fields);

 private:
  void Separator();

  std::string* out_;
  bool row_open_ = false;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_CSV_WRITER_H_
