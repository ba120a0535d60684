// tools/render/text_sanitize.h: the one sanitizer for text that reaches a
// terminal. Strings in a trace are untrusted (a kernel or host name can
// hold ESC sequences that retitle or clear the terminal, BEL, NUL, C1
// controls, bidirectional overrides that reorder what is shown, or bytes
// that are not UTF-8); every text renderer passes them through here, and
// the commands pass their whole text output through SanitizeTerminal as
// the last step, so output is valid UTF-8 with no control character but
// the renderer's own newlines and tabs.
//
//   Printable("gemm\x1b]0;pwned\x07")  == "gemm\\x1b]0;pwned\\x07"
//   Printable("a\xff")                 == "a\xef\xbf\xbd"   (U+FFFD)
//   CutUtf8("h\xc3\xa9llo", 2)         == "h"                (never half a character)
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_TEXT_SANITIZE_H_
#define GPSCOPE_TOOLS_RENDER_TEXT_SANITIZE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpscope::render {

// `text` as valid UTF-8 with every control character written as an escape:
// C0 and DEL as \xHH (newline and tab too: a name is one line), C1
// (U+0080..U+009F) and the bidirectional controls (U+061C, U+200E/F,
// U+202A..U+202E, U+2066..U+2069) and U+2028/U+2029 as \uHHHH; bytes that
// are not UTF-8 become U+FFFD.
std::string Printable(std::string_view text);

// The same for a whole rendered document, keeping its newlines and tabs.
std::string SanitizeTerminal(std::string_view text);

// The UTF-8 character at text[i]: returns its length and sets *cp, or
// returns 0 when the bytes there are not valid UTF-8 (overlong forms and
// surrogates included).
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t* cp);
// C1 controls, bidirectional controls, U+2028/U+2029: escaped everywhere.
bool IsUnsafeCodePoint(uint32_t cp);

// Whether `text` is valid UTF-8 (no overlong forms, no surrogates).
bool IsValidUtf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` that ends on a
// character boundary.
std::string_view CutUtf8(std::string_view text, size_t max_bytes);

// `text` cut to at most `width` bytes at a character boundary, with "..."
// when it was cut (for fixed-width table columns).
std::string Ellipsize(std::string_view text, size_t width);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_TEXT_SANITIZE_H_
