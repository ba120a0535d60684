// tests/inject/stacks/line_table_test.cc: the three CPython line-table
// decoders on hand-built tables (each entry's encoding spelled out), and on
// malformed ones. py_stacks_test.py checks them against the interpreters'
// own PyCode_Addr2Line on every offset of thousands of code objects.
#include "inject/stacks/line_table.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace gpscope::inject::stacks {
namespace {

int Line(LineTableKind kind, const std::vector<uint8_t>& t, int first, int offset) {
  // An exact-size heap copy: ASan catches any read past the end.
  std::vector<uint8_t> copy(t);
  return LineForOffset(kind, copy.empty() ? nullptr : copy.data(), copy.size(), first, offset);
}

TEST(LineTableTest, LnotabAddsSignedLineIncrementsAtEachAddress) {
  // (addr +6, line +1), (addr +8, line +2), (addr +2, line -1); first line 10.
  const std::vector<uint8_t> t = {6, 1, 8, 2, 2, 0xFF};
  const LineTableKind k = LineTableKind::kLnotab;
  EXPECT_EQ(Line(k, t, 10, -1), 10);  // f_lasti -1: not started
  EXPECT_EQ(Line(k, t, 10, 0), 10);
  EXPECT_EQ(Line(k, t, 10, 5), 10);
  EXPECT_EQ(Line(k, t, 10, 6), 11);
  EXPECT_EQ(Line(k, t, 10, 13), 11);
  EXPECT_EQ(Line(k, t, 10, 14), 13);
  EXPECT_EQ(Line(k, t, 10, 15), 13);
  EXPECT_EQ(Line(k, t, 10, 16), 12);
  EXPECT_EQ(Line(k, t, 10, 1000), 12);
  EXPECT_EQ(Line(k, {}, 7, 4), 7);
}

TEST(LineTableTest, Pep626RangesCarryDeltasAndNoLineMarkers) {
  const std::vector<uint8_t> t = {
      4, 0,     // [0,4)   line 5
      6, 2,     // [4,10)  line 7
      2, 0x80,  // [10,12) no line (-128); running line stays 7
      0, 127,   // empty: carries +127
      4, 3,     // [12,16) line 137
      2, 0xFF,  // [16,18) line 136
  };
  const LineTableKind k = LineTableKind::kPep626;
  EXPECT_EQ(Line(k, t, 5, -2), 5);
  EXPECT_EQ(Line(k, t, 5, 0), 5);
  EXPECT_EQ(Line(k, t, 5, 3), 5);
  EXPECT_EQ(Line(k, t, 5, 4), 7);
  EXPECT_EQ(Line(k, t, 5, 9), 7);
  EXPECT_EQ(Line(k, t, 5, 10), -1);
  EXPECT_EQ(Line(k, t, 5, 12), 137);
  EXPECT_EQ(Line(k, t, 5, 16), 136);
  EXPECT_EQ(Line(k, t, 5, 18), -1);  // past the end
}

TEST(LineTableTest, LocationTableDecodesEveryEntryForm) {
  const std::vector<uint8_t> t = {
      0x81, 0x05,              // code 0 (short), 2 units: [0,4) delta 0 -> 100
      0xD8, 0x01, 0x07,        // code 11 (one line, +1), 1 unit: [4,6) -> 101
      0xEA, 0x07,              // code 13 (no columns), svarint 7 = -3, 3 units: [6,12) -> 98
      0xF8,                    // code 15 (no location), 1 unit: [12,14) -> none
      0xF1, 0x50, 0x06,        // code 14 (long), svarint 400 = +200 (16|more, 6<<6), 2 units:
      0x00, 0x01, 0x02,        //   end line 0, column+1 1, end column+1 2: [14,18) -> 298
      0xD0, 0x00, 0x00,        // code 10 (one line, +0), 1 unit: [18,20) -> 298
  };
  const LineTableKind k = LineTableKind::kLocations;
  EXPECT_EQ(Line(k, t, 100, -2), 100);  // a frame before its first instruction
  EXPECT_EQ(Line(k, t, 100, 0), 100);
  EXPECT_EQ(Line(k, t, 100, 2), 100);
  EXPECT_EQ(Line(k, t, 100, 4), 101);
  EXPECT_EQ(Line(k, t, 100, 6), 98);
  EXPECT_EQ(Line(k, t, 100, 10), 98);
  EXPECT_EQ(Line(k, t, 100, 12), -1);
  EXPECT_EQ(Line(k, t, 100, 14), 298);
  EXPECT_EQ(Line(k, t, 100, 16), 298);
  EXPECT_EQ(Line(k, t, 100, 18), 298);
  EXPECT_EQ(Line(k, t, 100, 20), -1);  // past the end
}

TEST(LineTableTest, LocationTableSkipsBytesThatStartNoEntry) {
  // A stray continuation byte before the first entry is ignored.
  EXPECT_EQ(Line(LineTableKind::kLocations, {0x05, 0xD9, 0x00, 0x00}, 10, 2), 11);
}

TEST(LineTableTest, MalformedTablesNeverReadPastTheirEnd) {
  // A long-form entry whose varint runs off the end.
  EXPECT_EQ(Line(LineTableKind::kLocations, {0xF1, 0x50}, 10, 0), -1);
  EXPECT_EQ(Line(LineTableKind::kLocations, {0xF1, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F}, 10, 0), -1);
  // Odd lengths for the pair formats.
  EXPECT_EQ(Line(LineTableKind::kPep626, {4}, 10, 0), -1);
  EXPECT_EQ(Line(LineTableKind::kLnotab, {4}, 10, 0), 10);
  std::mt19937 rng(20);
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> t(rng() % 40);
    for (uint8_t& b : t) b = static_cast<uint8_t>(rng());
    for (LineTableKind k : {LineTableKind::kLnotab, LineTableKind::kPep626, LineTableKind::kLocations}) {
      for (int off : {-2, 0, 6, 64, 100000}) Line(k, t, 1, off);
    }
  }
}

}  // namespace
}  // namespace gpscope::inject::stacks
