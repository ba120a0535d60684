// tools/render/json_writer.h: a small streaming JSON writer for the
// renderers. Keys are written in call order, so output is stable; objects and
// arrays are indented two spaces per level.
//
//   std::string out;
//   JsonWriter json(&out);
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

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

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

  // `text` as a JSON string literal, quotes included.
  static std::string Quote(std::string_view text);

 private:
  void BeforeValue();
  void Close(char bracket);

  std::string* out_;
  std::vector<bool> has_items_;  // one per open object/array
  std::vector<bool> inline_;     // one per open object/array: written on one line
  bool after_key_ = false;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_JSON_WRITER_H_
