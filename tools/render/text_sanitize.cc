// tools/render/text_sanitize.cc: see text_sanitize.h.
#include "tools/render/text_sanitize.h"

#include <cstdint>
#include <cstdio>

namespace gpscope::render {

size_t DecodeUtf8(std::string_view text, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const size_t left = text.size() - i;
  const unsigned char c = b(0);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n = 0;
  uint32_t min = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2, *cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, *cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, *cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (left < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (b(k) & 0x3F);
  }
  if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) return 0;
  return n;
}

bool IsUnsafeCodePoint(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
         cp == 0x2029;
}

namespace {

std::string Sanitize(std::string_view text, bool keep_layout) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text, i, &cp);
    if (n == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      ++i;
      continue;
    }
    if (cp < 0x20 || cp == 0x7F) {
      if (keep_layout && (cp == '\n' || cp == '\t')) {
        out.push_back(static_cast<char>(cp));
      } else {
        std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
        out.append(buf);
      }
    } else if (IsUnsafeCodePoint(cp)) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      out.append(buf);
    } else {
      out.append(text.data() + i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view text) { return Sanitize(text, false); }
std::string SanitizeTerminal(std::string_view text) { return Sanitize(text, true); }

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string_view CutUtf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

std::string Ellipsize(std::string_view text, size_t width) {
  if (text.size() <= width) return std::string(text);
  if (width <= 3) return std::string(CutUtf8(text, width));
  return std::string(CutUtf8(text, width - 3)) + "...";
}

}  // namespace gpscope::render
