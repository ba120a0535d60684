// tools/render/json_writer.h: the one streaming JSON writer of the
// renderers. Keys are written in call order, so output is stable. Two
// styles: kPretty (the commands' --format json: objects and arrays indented
// two spaces per level, doubles with 17 significant digits, a newline after
// the document) and kCompact (the HTML report's data: no whitespace, doubles
// with six significant digits, integral ones as integers, no newline).
//
//   std::string out;
//   JsonWriter json(&out);  // JsonWriter json(&out, JsonStyle::kCompact);
//   json.BeginObject().Key("frames").Uint(12).Key("warnings").BeginArray().EndArray();
//   json.EndObject();
//
// Thread model: one writer per thread. Misuse (a value without a key inside
// an object) is a programming error and is not diagnosed.
#ifndef GPSCOPE_TOOLS_RENDER_JSON_WRITER_H_
#define GPSCOPE_TOOLS_RENDER_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpscope::render {

enum class JsonStyle { kPretty, kCompact };

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out, JsonStyle style = JsonStyle::kPretty)
      : out_(out), compact_(style == JsonStyle::kCompact) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  // An array written on one line, items separated by ", " (for table rows);
  // everything inside it is inline too.
  JsonWriter& BeginInlineArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);  // non-finite values become null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // An index into an array of the document, or null when negative (none).
  JsonWriter& IndexOrNull(int64_t index);
  // A measurement whose "unknown" is a negative sentinel (-1): null then.
  JsonWriter& NonNegativeOrNull(double value);
  // A complete JSON value written elsewhere (another document), as it is.
  JsonWriter& Raw(std::string_view json);
  // Arrays of numbers.
  template <typename T>
  JsonWriter& Doubles(const std::vector<T>& values) {
    BeginArray();
    for (const T& v : values) Double(static_cast<double>(v));
    return EndArray();
  }
  template <typename T>
  JsonWriter& Uints(const std::vector<T>& values) {
    BeginArray();
    for (const T& v : values) Uint(static_cast<uint64_t>(v));
    return EndArray();
  }

  // `text` as a JSON string literal, quotes included.
  static std::string Quote(std::string_view text);

 private:
  void BeforeValue();
  void Close(char bracket);

  std::string* out_;
  bool compact_;
  std::vector<bool> has_items_;  // one per open object/array
  std::vector<bool> inline_;     // one per open object/array: written on one line
  bool after_key_ = false;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_JSON_WRITER_H_
