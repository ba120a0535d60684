// common/posix.h: clocks, a random id, /proc files and environment blocks.
#include "common/posix.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpscope::common {
namespace {

TEST(PosixTest, ClockNsIsNanosecondsOnTheClockAsked) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const uint64_t before = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
  const uint64_t now = ClockNs(CLOCK_REALTIME);
  EXPECT_GE(now, before);
  EXPECT_LT(now - before, 10ull * 1000000000ull);
  const uint64_t mono_ns = ClockNs(CLOCK_MONOTONIC);
  const uint64_t mono_ms = ClockMs(CLOCK_MONOTONIC);
  EXPECT_GE(mono_ms, mono_ns / 1000000);
  EXPECT_LT(mono_ms - mono_ns / 1000000, 10000u);
  // Monotonic time is not wall time (a machine up for 50 years would be).
  EXPECT_LT(mono_ns, now / 2);
}

TEST(PosixTest, SleepMsSleepsAboutThatLong) {
  const uint64_t start = ClockNs(CLOCK_MONOTONIC);
  SleepMs(20);
  const uint64_t slept = ClockNs(CLOCK_MONOTONIC) - start;
  EXPECT_GE(slept, 20ull * 1000000);
  EXPECT_LT(slept, 5000ull * 1000000);
}

TEST(PosixTest, RandomUidsAreNonzeroAndDiffer) {
  const uint64_t a = RandomUid(), b = RandomUid();
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
}

class ReadFileTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpscope_posix_test_XXXXXX";
    const int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { unlink(path_.c_str()); }
  void Write(const std::string& bytes) {
    FILE* f = fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  std::string path_;
};

TEST_F(ReadFileTextTest, ReadsTheWholeFileUpToTheCap) {
  std::string big(20000, 'x');
  big[0] = 'a';
  big[19999] = 'z';
  Write(big);
  EXPECT_EQ(ReadFileText(path_.c_str(), 1 << 20), big);
  EXPECT_EQ(ReadFileText(path_.c_str(), 10000), big.substr(0, 10000));
  EXPECT_EQ(ReadFileText(path_.c_str(), 0), "");
}

TEST_F(ReadFileTextTest, KeepsNulBytesAndGivesNothingForAMissingFile) {
  Write(std::string("A=1\0B=2\0", 8));
  EXPECT_EQ(ReadFileText(path_.c_str(), 100), std::string("A=1\0B=2\0", 8));
  EXPECT_EQ(ReadFileText("/nonexistent/gpscope/file", 100), "");
}

TEST(PosixTest, ProcFilesAreReadWithoutKnowingTheirSize) {
  // /proc files report size 0: the read must not trust st_size.
  const std::string cmdline = ReadFileText("/proc/self/cmdline", 1 << 20);
  ASSERT_FALSE(cmdline.empty());
  EXPECT_NE(cmdline.find("posix_test"), std::string::npos);
}

TEST(PosixTest, ParseEnvironBlockSplitsOnNulAndTheFirstEquals) {
  const std::string block("PATH=/bin:/usr/bin\0EMPTY=\0NOEQUALS\0X=a=b\0PATH=/later", 52);
  const auto env = ParseEnvironBlock(block);
  EXPECT_EQ(env.size(), 3u);
  EXPECT_EQ(env.at("PATH"), "/later");  // the later entry wins
  EXPECT_EQ(env.at("EMPTY"), "");
  EXPECT_EQ(env.at("X"), "a=b");
  EXPECT_EQ(env.count("NOEQUALS"), 0u);
  EXPECT_TRUE(ParseEnvironBlock("").empty());
}

}  // namespace
}  // namespace gpscope::common
