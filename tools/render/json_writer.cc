// tools/render/json_writer.cc: see json_writer.h.
#include "tools/render/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::render {

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_items_.empty()) return;
  if (compact_) {
    if (has_items_.back()) out_->push_back(',');
    has_items_.back() = true;
    return;
  }
  if (inline_.back()) {
    if (has_items_.back()) out_->append(", ");
    has_items_.back() = true;
    return;
  }
  if (has_items_.back()) out_->push_back(',');
  has_items_.back() = true;
  out_->push_back('\n');
  out_->append(2 * has_items_.size(), ' ');
}

void JsonWriter::Close(char bracket) {
  const bool had_items = has_items_.back();
  const bool was_inline = inline_.back();
  has_items_.pop_back();
  inline_.pop_back();
  if (compact_) {
    out_->push_back(bracket);
    return;
  }
  if (had_items && !was_inline) {
    out_->push_back('\n');
    out_->append(2 * has_items_.size(), ' ');
  }
  out_->push_back(bracket);
  if (has_items_.empty()) out_->push_back('\n');
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_->push_back('{');
  has_items_.push_back(false);
  inline_.push_back(!inline_.empty() && inline_.back());
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  Close('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_->push_back('[');
  has_items_.push_back(false);
  inline_.push_back(!inline_.empty() && inline_.back());
  return *this;
}

JsonWriter& JsonWriter::BeginInlineArray() {
  BeforeValue();
  out_->push_back('[');
  has_items_.push_back(false);
  inline_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  Close(']');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  absl::StrAppend(out_, Quote(key), compact_ ? ":" : ": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  out_->append(Quote(value));
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_->append("null");
  } else if (!compact_) {
    absl::StrAppendFormat(out_, "%.17g", value);
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    absl::StrAppend(out_, static_cast<int64_t>(value));
  } else {
    absl::StrAppendFormat(out_, "%.6g", value);  // plenty for charts
  }
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  out_->append(json.data(), json.size());
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_->append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::IndexOrNull(int64_t index) { return index >= 0 ? Int(index) : Null(); }

JsonWriter& JsonWriter::NonNegativeOrNull(double value) {
  return value >= 0 ? Double(value) : Null();
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_->append("null");
  return *this;
}

std::string JsonWriter::Quote(std::string_view text) {
  // Valid JSON whatever the bytes: strings from a trace may hold anything.
  // Control characters are escaped; so are C1 controls, bidirectional
  // overrides and U+2028/U+2029 (legal JSON, but they reorder or break
  // what a terminal or a JavaScript consumer shows); bytes that are not
  // UTF-8 become U+FFFD.
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text, i, &cp);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (cp < 0x20 || cp == 0x7f || IsUnsafeCodePoint(cp)) {
          absl::StrAppendFormat(&out, "\\u%04x", cp);
        } else {
          out.append(text.data() + i, n);
        }
    }
    i += n;
  }
  out.push_back('"');
  return out;
}

}  // namespace gpscope::render
