// The sanitizer every echoed user string goes through (common/safe_text.h),
// and RawLog, which applies it to every line the collector writes.
#include "common/safe_text.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/raw_log.h"

namespace gpscope::common {
namespace {

TEST(SafeTextTest, PrintableAsciiAndUtf8PassUnchanged) {
  EXPECT_EQ(SanitizeText("GPSCOPE_OUTPUT=/data/traces run-1"), "GPSCOPE_OUTPUT=/data/traces run-1");
  EXPECT_EQ(SanitizeText("Grüße/日本語/😀"), "Grüße/日本語/😀");
}

TEST(SafeTextTest, NewlinesEscapesAndOtherControlsBecomeHexEscapes) {
  EXPECT_EQ(SanitizeText("a\nb"), "a\\x0ab");
  EXPECT_EQ(SanitizeText("x\r\ngpscope[1]: forged"), "x\\x0d\\x0agpscope[1]: forged");
  EXPECT_EQ(SanitizeText("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(SanitizeText("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(SanitizeText(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(SanitizeText("del\x7f"), "del\\x7f");
  // The backslash itself is escaped, so an escape in the output is never
  // confused with one the value held as text.
  EXPECT_EQ(SanitizeText("C:\\x0a"), "C:\\\\x0a");
}

TEST(SafeTextTest, C1ControlsAndBidiOverridesBecomeCodePointEscapes) {
  EXPECT_EQ(SanitizeText("a\xc2\x9b" "31mb"), "a\\u{009b}31mb");         // C1 CSI
  EXPECT_EQ(SanitizeText("evil\xe2\x80\xaetxt.exe"), "evil\\u{202e}txt.exe");  // RLO
  EXPECT_EQ(SanitizeText("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u{2066}x\\u{2069}");
}

TEST(SafeTextTest, MalformedUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(SanitizeText("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(SanitizeText("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(SanitizeText("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(SanitizeText("ab\xe6\x97"), "ab\\xe6\\x97");       // cut inside a character
}

TEST(SafeTextTest, LongTextIsCutAtACharacterBoundaryWithAnEllipsis) {
  char out[12];
  // "日" is 3 bytes: all four (12) do not fit in 11; two and "..." do.
  EXPECT_EQ(SanitizeInto("日日日日", 12, out, sizeof(out)), 9u);
  EXPECT_STREQ(out, "日日...");
  // An escape is never cut in half.
  EXPECT_EQ(SanitizeInto("abcdef\n\n\n", 9, out, sizeof(out)), 9u);
  EXPECT_STREQ(out, "abcdef...");
  // Fits exactly: no ellipsis.
  EXPECT_EQ(SanitizeInto("0123456789a", 11, out, sizeof(out)), 11u);
  EXPECT_STREQ(out, "0123456789a");
  char tiny[1];
  EXPECT_EQ(SanitizeInto("abc", 3, tiny, 1), 0u);
  EXPECT_STREQ(tiny, "");
}

// RawLog writes what it is given as exactly one line, whatever a value in
// it holds.
TEST(SafeTextTest, RawLogWritesOneLineWhateverTheValueHolds) {
  const std::string path = ::testing::TempDir() + "/raw_log_" + std::to_string(getpid());
  fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_GE(dup2(fd, STDERR_FILENO), 0);
  close(fd);
  GPSCOPE_LOG_WARNING("GPSCOPE_OUTPUT='%s' is bad", "x\ngpscope[1]: all fine\x1b[2J");
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  unlink(path.c_str());
  const std::string text = s.str();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("GPSCOPE_OUTPUT='x\\x0agpscope[1]: all fine\\x1b[2J' is bad"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpscope::common
