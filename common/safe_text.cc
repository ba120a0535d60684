// common/safe_text.cc: see safe_text.h.
#include "common/safe_text.h"

#include <cstdint>

namespace gpscope::common {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Length of the well-formed UTF-8 sequence at p (at most n bytes), and its
// code point; 0 when it is not well-formed (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
size_t DecodeUtf8(const unsigned char* p, size_t n, uint32_t* cp) {
  const unsigned char b = p[0];
  size_t len;
  uint32_t c, min;
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2, c = b & 0x1f, min = 0x80;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3, c = b & 0x0f, min = 0x800;
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4, c = b & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    c = (c << 6) | (p[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  *cp = c;
  return len;
}

bool IsHiddenControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// The escape or bytes that stand for the character at p[0, n): writes
// them to piece (room for 12) and returns their length; *consumed: the
// input bytes they stand for.
size_t Piece(const unsigned char* p, size_t n, char* piece, size_t* consumed) {
  const unsigned char b = p[0];
  *consumed = 1;
  if (b == '\\') {
    piece[0] = piece[1] = '\\';
    return 2;
  }
  if (b >= 0x20 && b < 0x7f) {
    piece[0] = static_cast<char>(b);
    return 1;
  }
  uint32_t cp = 0;
  const size_t len = b < 0x80 ? 0 : DecodeUtf8(p, n, &cp);
  if (len == 0) {  // C0 controls, DEL, bytes that are not UTF-8
    piece[0] = '\\', piece[1] = 'x', piece[2] = kHex[b >> 4], piece[3] = kHex[b & 15];
    return 4;
  }
  *consumed = len;
  if (IsHiddenControl(cp)) {
    const char s[] = {'\\', 'u', '{', kHex[(cp >> 12) & 15], kHex[(cp >> 8) & 15],
                      kHex[(cp >> 4) & 15], kHex[cp & 15], '}'};
    for (size_t k = 0; k < sizeof(s); ++k) piece[k] = s[k];
    return sizeof(s);
  }
  for (size_t k = 0; k < len; ++k) piece[k] = static_cast<char>(p[k]);
  return len;
}

}  // namespace

size_t SanitizeInto(const char* in, size_t n, char* out, size_t out_bytes) {
  if (out_bytes == 0) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(in);
  const size_t limit = out_bytes - 1;  // the NUL
  char piece[12];
  size_t consumed = 0;
  // Does all of it fit? Else the cut keeps room for "...".
  size_t total = 0;
  for (size_t i = 0; i < n && total <= limit; i += consumed) {
    total += Piece(p + i, n - i, piece, &consumed);
  }
  const size_t room = total <= limit ? limit : (limit >= 3 ? limit - 3 : 0);
  size_t o = 0;
  for (size_t i = 0; i < n; i += consumed) {
    const size_t len = Piece(p + i, n - i, piece, &consumed);
    if (o + len > room) {
      for (int k = 0; k < 3 && o < limit; ++k) out[o++] = '.';
      break;
    }
    for (size_t k = 0; k < len; ++k) out[o++] = piece[k];
  }
  out[o] = '\0';
  return o;
}

std::string SanitizeText(std::string_view in, size_t max_bytes) {
  std::string out(max_bytes + 1, '\0');
  out.resize(SanitizeInto(in.data(), in.size(), out.data(), out.size()));
  return out;
}

}  // namespace gpscope::common
