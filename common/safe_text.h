// common/safe_text.h: the one sanitizer for user-supplied text that gpscope
// echoes in a message line (environment values, paths, library names,
// replies read from a socket), in the collector (inject/), the node monitor
// and the launcher (tools/gpscope).
//
// A message is one line on a terminal: a value holding a newline would
// split it (and could forge a second "gpscope:" line), ESC/CSI/OSC bytes
// would drive the terminal, bidirectional overrides would reorder what is
// shown. Sanitized text keeps printable ASCII and well-formed UTF-8 as is
// and writes everything else as an escape:
//   control bytes 0x00-0x1f and 0x7f        -> \xNN
//   bytes that are not well-formed UTF-8     -> \xNN
//   C1 controls U+0080-U+009F, bidirectional
//   controls (U+061C, U+200E-U+200F,
//   U+202A-U+202E, U+2066-U+2069)            -> \u{NNNN}
//   a backslash                              -> \\   (so escapes are unambiguous)
// Output is cut at a character boundary, never inside an escape or a
// multi-byte character, and then ends with "...".
//
//   char line[256];
//   SanitizeInto(value, strlen(value), line, sizeof(line));   // no allocation
//   std::string shown = SanitizeText(value);                   // tools
//
// Thread model: pure functions. SanitizeInto neither allocates nor makes a
// system call (RawLog calls it on every line it writes).
#ifndef GPSCOPE_COMMON_SAFE_TEXT_H_
#define GPSCOPE_COMMON_SAFE_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace gpscope::common {

// Writes the sanitized form of in[0, n) to out (NUL-terminated, at most
// out_bytes - 1 characters). Returns the length written.
size_t SanitizeInto(const char* in, size_t n, char* out, size_t out_bytes);

// The same into a string of at most max_bytes (default: enough for a path).
std::string SanitizeText(std::string_view in, size_t max_bytes = 1024);

}  // namespace gpscope::common

#endif  // GPSCOPE_COMMON_SAFE_TEXT_H_
