// tests/tools/render_blocks_test.cc: the shared pieces the thin commands
// render with (render/text_block.h, render/json_writer.h's two styles,
// render/text_format.h) and the capture windows of a process
// (analyses/capture_windows.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpscope/trace.pb.h"
#include "tools/analyses/capture_windows.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_block.h"
#include "tools/render/text_format.h"

namespace gpscope {
namespace {

using render::JsonStyle;
using render::JsonWriter;
using render::TextBlock;

TEST(TextBlockTest, WrapsAtSpacesWithinTheWidthAndHangsContinuationLines) {
  TextBlock t(20);
  t.Para(2, "one two three fourteen five", 4);
  EXPECT_EQ(t.Take(), "  one two three\n    fourteen five\n");
}

TEST(TextBlockTest, CutsAWordLongerThanALine) {
  TextBlock t(10);
  t.Para(0, "abcdefghijklmnop");
  EXPECT_EQ(t.Take(), "abcdefghij\nklmnop\n");
}

TEST(TextBlockTest, EscapesControlCharactersFromTheTrace) {
  TextBlock t;
  t.Para(0, "gemm\x1b]0;pwned\x07");
  EXPECT_EQ(t.Take(), "gemm\\x1b]0;pwned\\x07\n");
}

TEST(TextBlockTest, NeverCutsInsideAUtf8Character) {
  TextBlock t(5);
  t.Para(0, "abcd\xc3\xa9\xc3\xa9");  // "abcdéé": é is two bytes
  EXPECT_EQ(t.Take(), "abcd\n\xc3\xa9\xc3\xa9\n");
}

TEST(TextBlockTest, RowPadsTheLabelAndWrapsTheValueUnderItself) {
  TextBlock t(30);
  t.Row("label", "aaaa bbbb cccc dddd eeee", 2, 10);
  EXPECT_EQ(t.Take(), "  label   aaaa bbbb cccc dddd\n          eeee\n");
}

TEST(TextBlockTest, RowGivesALabelAsWideAsTheColumnOneSpace) {
  TextBlock t;
  t.Row("a-long-label", "v", 2, 8);
  EXPECT_EQ(t.Take(), "  a-long-label v\n");
}

TEST(TextBlockTest, WrapContinuesALineTheCallerStarted) {
  TextBlock t(16);
  t.Raw("  key  ");
  t.Wrap("one two three", 7, 7);
  EXPECT_EQ(t.Take(), "  key  one two\n       three\n");
}

std::string Document(JsonStyle style) {
  std::string out;
  JsonWriter j(&out, style);
  j.BeginObject().Key("n").Uint(3).Key("x").Double(0.1234567891).Key("whole").Double(42.0);
  j.Key("none").Double(1.0 / 0.0).Key("list").Uints(std::vector<int>{1, 2});
  j.Key("raw").Raw("{\"a\":1}").Key("s").String("q\"\n").EndObject();
  return out;
}

TEST(JsonWriterTest, CompactStyleHasNoWhitespaceAndSixDigitDoubles) {
  EXPECT_EQ(Document(JsonStyle::kCompact),
            "{\"n\":3,\"x\":0.123457,\"whole\":42,\"none\":null,\"list\":[1,2],"
            "\"raw\":{\"a\":1},\"s\":\"q\\\"\\n\"}");
}

TEST(JsonWriterTest, PrettyStyleIndentsAndKeeps17SignificantDigits) {
  EXPECT_EQ(Document(JsonStyle::kPretty),
            "{\n  \"n\": 3,\n  \"x\": 0.12345678910000001,\n  \"whole\": 42,\n"
            "  \"none\": null,\n  \"list\": [\n    1,\n    2\n  ],\n  \"raw\": {\"a\":1},\n"
            "  \"s\": \"q\\\"\\n\"\n}\n");
}

TEST(TextFormatTest, CountsOfThingsAndOneStyleOfSizesAndDurations) {
  EXPECT_EQ(render::Things(1, "frame"), "1 frame");
  EXPECT_EQ(render::Things(1234, "frame"), "1,234 frames");
  // info's device memory and file sizes and its spans read as summary's do.
  EXPECT_EQ(render::Bytes(150'109'880'320.0), "150 GB");  // an H200's global memory
  EXPECT_EQ(render::Bytes(59'904.0), "59.9 kB");
  EXPECT_EQ(render::Time(uint64_t{5'600'014'000}), "5.6 s");
}

TEST(TextFormatTest, WallTimesAreUtc) {
  const uint64_t ns = 1'700'000'000'000'500'000ull;  // 2023-11-14 22:13:20.0005 UTC
  EXPECT_EQ(render::UtcText(ns), "2023-11-14 22:13:20.000500");
  EXPECT_EQ(render::UtcSpanText(ns, ns + 2'750'000), "2023-11-14 22:13:20.000500 .. "
                                                      "22:13:20.003250 UTC");
  EXPECT_EQ(render::UtcIso(ns, 3), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(render::UtcIso(ns, 9), "2023-11-14T22:13:20.000500000Z");
}

proto::LostInterval Off(uint64_t start_ns, uint64_t end_ns) {
  proto::LostInterval l;
  l.set_start_ns(start_ns);
  l.set_end_ns(end_ns);
  l.set_reason(proto::LOST_TRACING_DISABLED);
  return l;
}

TEST(CaptureWindowsTest, TracedSpansLieBetweenTheWindowOffIntervals) {
  model::ProcessModel p;
  p.first_ns = 100;
  p.last_ns = 1000;
  p.lost_intervals.push_back(Off(600, 700));  // out of order, and overlapping the next
  p.lost_intervals.push_back(Off(100, 300));
  p.lost_intervals.push_back(Off(650, 800));
  proto::LostInterval write_error = Off(400, 500);
  write_error.set_reason(proto::LOST_WRITE_ERROR);  // lost data, not a closed window
  p.lost_intervals.push_back(write_error);
  const std::vector<analyses::CaptureWindow> w = analyses::CaptureWindows(p);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].start_ns, 300u);
  EXPECT_EQ(w[0].end_ns, 600u);
  EXPECT_EQ(w[1].start_ns, 800u);
  EXPECT_EQ(w[1].end_ns, 1000u);
}

TEST(CaptureWindowsTest, AnOpenIntervalRunsToTheLastEvent) {
  model::ProcessModel p;
  p.first_ns = 100;
  p.last_ns = 1000;
  p.lost_intervals.push_back(Off(400, 0));
  const std::vector<analyses::CaptureWindow> w = analyses::CaptureWindows(p);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start_ns, 100u);
  EXPECT_EQ(w[0].end_ns, 400u);
}

TEST(CaptureWindowsTest, NoWindowWhenTheWholeRunWasOff) {
  model::ProcessModel p;
  p.first_ns = 100;
  p.last_ns = 1000;
  p.lost_intervals.push_back(Off(50, 0));
  EXPECT_TRUE(analyses::CaptureWindows(p).empty());
}

}  // namespace
}  // namespace gpscope
