// inject/stacks/python_resolver.cc: see python_resolver.h.
#include "inject/stacks/python_resolver.h"

#include <cstring>

#include "inject/stacks/line_table.h"

namespace gpscope::inject::stacks {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool PythonResolver::ReadString(uint64_t addr, std::string* out) {
  const PythonLayout& l = layout_;
  if (!PlausiblePointer(addr)) return false;
  // The whole compact header (the ASCII header is a prefix of it). A
  // compact ASCII object may be shorter than the compact header, so read
  // the ASCII header first and the rest only when needed.
  uint8_t head[128];
  static_assert(sizeof(head) >= 80, "holds the largest compact header");
  if (l.unicode_compact_size > static_cast<int>(sizeof(head))) return false;
  if (!reader_->Read(addr, head, l.unicode_ascii_size)) return false;
  uint64_t type = 0;
  int64_t length = 0;
  uint32_t state = 0;
  std::memcpy(&type, head + l.ob_type, sizeof type);
  std::memcpy(&length, head + l.unicode_length, sizeof length);
  std::memcpy(&state, head + l.unicode_state, sizeof state);
  if (type != types_.unicode) return false;
  if (length < 0 || static_cast<uint64_t>(length) > kMaxStringChars) return false;
  const bool compact = (state >> l.unicode_compact_bit) & 1;
  const bool ascii = (state >> l.unicode_ascii_bit) & 1;
  const unsigned kind = (state >> l.unicode_kind_shift) & 7;
  if (!compact) return false;  // legacy (non-compact) strings: not used for code names
  out->clear();
  if (ascii) {
    out->resize(static_cast<size_t>(length));
    return length == 0 || reader_->Read(addr + l.unicode_ascii_size, out->data(), out->size());
  }
  if (!reader_->Read(addr + l.unicode_ascii_size, head + l.unicode_ascii_size,
                     l.unicode_compact_size - l.unicode_ascii_size)) {
    return false;
  }
  int64_t utf8_length = 0;
  uint64_t utf8 = 0;
  std::memcpy(&utf8_length, head + l.unicode_utf8_length, sizeof utf8_length);
  std::memcpy(&utf8, head + l.unicode_utf8, sizeof utf8);
  if (utf8 != 0 && utf8_length >= 0 && static_cast<uint64_t>(utf8_length) <= 4 * kMaxStringChars) {
    out->resize(static_cast<size_t>(utf8_length));
    if (utf8_length == 0 || reader_->Read(utf8, out->data(), out->size())) return true;
    out->clear();
  }
  if (kind != 1 && kind != 2 && kind != 4) return false;
  std::vector<uint8_t> data(static_cast<size_t>(length) * kind);
  if (!data.empty() && !reader_->Read(addr + l.unicode_compact_size, data.data(), data.size())) {
    return false;
  }
  for (int64_t i = 0; i < length; ++i) {
    uint32_t cp = 0;
    if (kind == 1) {
      cp = data[i];
    } else if (kind == 2) {
      uint16_t u;
      std::memcpy(&u, &data[i * 2], 2);
      cp = u;
    } else {
      std::memcpy(&cp, &data[i * 4], 4);
    }
    AppendUtf8(cp, out);
  }
  return true;
}

bool PythonResolver::ReadBytes(uint64_t addr, std::vector<uint8_t>* out, int64_t* size_out) {
  const PythonLayout& l = layout_;
  if (!PlausiblePointer(addr)) return false;
  uint64_t type = 0;
  int64_t size = 0;
  if (!reader_->ReadValue(addr + l.ob_type, &type) || type != types_.bytes ||
      !reader_->ReadValue(addr + l.ob_size, &size)) {
    return false;
  }
  if (size < 0 || static_cast<uint64_t>(size) > kMaxTableBytes) return false;
  if (size_out != nullptr) *size_out = size;
  if (out == nullptr) return true;
  out->resize(static_cast<size_t>(size));
  return size == 0 || reader_->Read(addr + l.bytes_sval, out->data(), out->size());
}

ResolveError PythonResolver::Resolve(uint64_t code, int32_t first_line, PyCodeInfo* out) {
  const PythonLayout& l = layout_;
  if (!PlausiblePointer(code)) return ResolveError::kNotCode;
  uint64_t type = 0;
  if (!reader_->ReadValue(code + l.ob_type, &type)) return ResolveError::kUnreadable;
  if (type != types_.code) return ResolveError::kNotCode;
  int32_t line = 0;
  uint64_t filename = 0, name = 0, qualname = 0, table = 0;
  if (!reader_->ReadValue(code + l.code_firstlineno, &line) ||
      !reader_->ReadValue(code + l.code_filename, &filename) ||
      !reader_->ReadValue(code + l.code_name, &name) ||
      !reader_->ReadValue(code + l.code_linetable, &table) ||
      (l.code_qualname >= 0 && !reader_->ReadValue(code + l.code_qualname, &qualname))) {
    return ResolveError::kUnreadable;
  }
  if (line != first_line) return ResolveError::kStale;
  out->first_line = line;
  if (!ReadString(filename, &out->filename) || !ReadString(name, &out->name)) {
    return ResolveError::kBadString;
  }
  if (qualname != 0 && !ReadString(qualname, &out->qualname)) out->qualname.clear();
  if (!ReadBytes(table, &out->line_table, nullptr)) return ResolveError::kBadTable;
  if (l.code_adaptive >= 0) {
    int64_t units = 0;
    if (reader_->ReadValue(code + l.ob_size, &units) && units >= 0) out->code_bytes = 2 * units;
  } else {
    uint64_t co_code = 0;
    int64_t size = 0;
    if (reader_->ReadValue(code + l.code_code, &co_code) && ReadBytes(co_code, nullptr, &size)) {
      out->code_bytes = size;
    }
  }
  return ResolveError::kNone;
}

const PyCodeInfo* PythonResolver::Code(uint64_t code, int32_t first_line) {
  const Key key{code, first_line};
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Entry e;
    e.error = Resolve(code, first_line, &e.info);
    if (e.error != ResolveError::kNone) {
      ++failures_;
      e.info = PyCodeInfo();
    }
    it = cache_.emplace(key, std::move(e)).first;
  }
  last_error_ = it->second.error;
  return it->second.error == ResolveError::kNone ? &it->second.info : nullptr;
}

int PythonResolver::Line(const PyCodeInfo& code, int32_t offset) const {
  return LineForOffset(layout_.line_table, code.line_table.data(), code.line_table.size(),
                       code.first_line, offset);
}

}  // namespace gpscope::inject::stacks
