// Unit tests for proto/wire_writer.h against byte sequences from the protobuf
// encoding spec. (encoder_property_test.cc checks the same code against
// libprotobuf's parser.)
#include "proto/wire_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gpscope::format {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Written(const WireWriter& w) { return Bytes(w.data(), w.data() + w.size()); }

// Minimal varint reader for round trips; returns false on truncation.
bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

TEST(WireWriterTest, EncodesSpecExamples) {
  uint8_t buf[64];
  WireWriter w(buf, sizeof(buf));
  w.Uint64(1, 150);                // the spec's "08 96 01"
  w.String(2, "testing", 7);       // "12 07 74 65 73 74 69 6e 67"
  w.Sint64(3, -2);                 // zigzag(-2) = 3
  w.Fixed32(4, 0x01020304);
  w.Double(5, 1.0);
  w.Bool(6, true);
  ASSERT_TRUE(w.ok());
  const Bytes want = {0x08, 0x96, 0x01, 0x12, 7, 't', 'e', 's', 't', 'i', 'n', 'g', 0x18, 0x03,
                      0x25, 0x04, 0x03, 0x02, 0x01, 0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x30, 0x01};
  EXPECT_EQ(Written(w), want);
}

TEST(WireWriterTest, ZigZagMatchesSpecTable) {
  EXPECT_EQ(ZigZagEncode64(0), 0u);
  EXPECT_EQ(ZigZagEncode64(-1), 1u);
  EXPECT_EQ(ZigZagEncode64(1), 2u);
  EXPECT_EQ(ZigZagEncode64(-2), 3u);
  EXPECT_EQ(ZigZagEncode64(std::numeric_limits<int64_t>::max()), ~uint64_t{0} - 1);
  EXPECT_EQ(ZigZagEncode64(std::numeric_limits<int64_t>::min()), ~uint64_t{0});
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const auto v = static_cast<int64_t>(rng());
    EXPECT_EQ(ZigZagDecode64(ZigZagEncode64(v)), v);
  }
}

TEST(WireWriterTest, VarintSizeIsExactAtEveryBoundary) {
  EXPECT_EQ(VarintSize(0), 1u);
  for (int bits = 1; bits <= 64; ++bits) {
    const uint64_t top = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    const size_t want = static_cast<size_t>((bits + 6) / 7);
    EXPECT_EQ(VarintSize(top), want) << bits;
    uint8_t buf[kMaxVarintBytes];
    EXPECT_EQ(static_cast<size_t>(EncodeVarintUnchecked(buf, top) - buf), want) << bits;
  }
}

TEST(WireWriterTest, VarintsRoundTrip) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    uint8_t buf[16];
    WireWriter w(buf, sizeof(buf));
    w.Varint(v);
    ASSERT_TRUE(w.ok());
    ASSERT_EQ(w.size(), VarintSize(v));
    const uint8_t* p = buf;
    uint64_t got;
    ASSERT_TRUE(ReadVarint(p, buf + w.size(), &got));
    EXPECT_EQ(got, v);
  }
}

TEST(WireWriterTest, NegativeInt32IsSignExtendedToTenBytes) {
  uint8_t buf[16];
  WireWriter w(buf, sizeof(buf));
  w.Int32(1, -1);
  ASSERT_TRUE(w.ok());
  const Bytes want = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  EXPECT_EQ(Written(w), want);
}

TEST(WireWriterTest, NestedLengthIsPaddedToFourBytes) {
  uint8_t buf[512];
  WireWriter w(buf, sizeof(buf));
  auto n = w.BeginNested(2);
  w.Uint64(1, 1);
  w.EndNested(n);
  ASSERT_TRUE(w.ok());
  // Length 2 as a 4-byte varint: 0x82 0x80 0x80 0x00.
  EXPECT_EQ(Written(w), (Bytes{0x12, 0x82, 0x80, 0x80, 0x00, 0x08, 0x01}));

  // A 300-byte body decodes to 300 through the padded slot.
  WireWriter w2(buf, sizeof(buf));
  auto n2 = w2.BeginNested(1);
  const std::string body(297, 'x');
  w2.Bytes(1, body.data(), body.size());  // 1 + 2 + 297 = 300
  w2.EndNested(n2);
  ASSERT_TRUE(w2.ok());
  const uint8_t* p = buf + 1;
  uint64_t len;
  ASSERT_TRUE(ReadVarint(p, buf + w2.size(), &len));
  EXPECT_EQ(p, buf + 5);
  EXPECT_EQ(len, 300u);
  EXPECT_EQ(w2.size(), 5u + 300u);
}

TEST(WireWriterTest, PackedFieldsCarryExactLengths) {
  uint8_t buf[128];
  WireWriter w(buf, sizeof(buf));
  const uint64_t u[] = {1, 300, 0};
  const int64_t s[] = {-1, 1};
  const double d[] = {0.5};
  w.PackedUint64(4, u, 3);
  w.PackedSint64(5, s, 2);
  w.PackedDouble(6, d, 1);
  ASSERT_TRUE(w.ok());
  const Bytes want = {0x22, 4, 0x01, 0xac, 0x02, 0x00, 0x2a, 2, 0x01, 0x02,
                      0x32, 8, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f};
  EXPECT_EQ(Written(w), want);
}

// Writes one of everything; used to test every truncation point.
void WriteEverything(WireWriter& w) {
  auto n = w.BeginNested(1);
  w.Uint64(2, ~uint64_t{0});
  w.Int32(3, -5);
  w.Fixed64(4, 42);
  w.String(5, "h\xffllo", 5);
  const uint64_t u[] = {1, 1u << 30, ~uint64_t{0}};
  w.PackedUint64(6, u, 3);
  const double d[] = {1.5, -2.5};
  w.PackedDouble(7, d, 2);
  w.EndNested(n);
  w.Bytes(8, "raw", 3);
}

TEST(WireWriterTest, OverflowIsStickyAndNeverWritesPastTheEnd) {
  uint8_t full[256];
  WireWriter ref(full, sizeof(full));
  WriteEverything(ref);
  ASSERT_TRUE(ref.ok());
  const size_t need = ref.size();
  for (size_t cap = 0; cap < need; ++cap) {
    // Heap buffer of exactly cap bytes (ASan catches any overrun) followed by
    // a canary region checked without ASan too.
    std::vector<uint8_t> mem(cap + 32, 0xA5);
    WireWriter w(mem.data(), cap);
    WriteEverything(w);
    EXPECT_FALSE(w.ok()) << cap;
    EXPECT_LE(w.size(), cap);
    for (size_t i = cap; i < mem.size(); ++i) ASSERT_EQ(mem[i], 0xA5) << "cap " << cap;
    // Later writes stay no-ops even if they would fit.
    const size_t before = w.size();
    w.Raw("", 0);
    w.Uint64(1, 0);
    EXPECT_EQ(w.size(), before);
    EXPECT_FALSE(w.ok());
  }
  std::vector<uint8_t> exact(need);
  WireWriter w(exact.data(), need);
  WriteEverything(w);
  EXPECT_TRUE(w.ok());
  EXPECT_EQ(Written(w), Bytes(full, full + need));
}

TEST(WireWriterTest, NestedBodyOver256MiBIsRejected) {
  // EndNested only checks the length; no need for a real 256 MiB body.
  std::vector<uint8_t> buf(kMaxNestedBytes + 1 + 16);
  const std::vector<uint8_t> piece(1 << 20, 0x5a);
  WireWriter w(buf.data(), buf.size());
  auto n = w.BeginNested(1);
  for (size_t left = kMaxNestedBytes + 1; left > 0;) {
    const size_t len = std::min(left, piece.size());
    w.Raw(piece.data(), len);
    left -= len;
  }
  ASSERT_TRUE(w.ok());
  w.EndNested(n);
  EXPECT_FALSE(w.ok());
}

std::string Sanitized(const std::string& in) {
  std::vector<uint8_t> buf(in.size() * 3 + 16);
  WireWriter w(buf.data(), buf.size());
  w.String(1, in.data(), in.size());
  EXPECT_TRUE(w.ok());
  const uint8_t* p = buf.data() + 1;
  uint64_t len;
  EXPECT_TRUE(ReadVarint(p, buf.data() + w.size(), &len));
  EXPECT_EQ(p + len, buf.data() + w.size());
  bool valid;
  EXPECT_EQ(Utf8SanitizedSize(in.data(), in.size(), &valid), len);
  return std::string(reinterpret_cast<const char*>(p), len);
}

TEST(WireWriterTest, StringKeepsValidUtf8Unchanged) {
  const std::string cases[] = {
      "", std::string("a\0b", 3), "_Z6kernelPfS_i", "caf\xc3\xa9",
      "\xe2\x82\xac", "\xf0\x9f\x98\x80 rocket", "\xed\x9f\xbf",  // U+D7FF, last before surrogates
      "\xf4\x8f\xbf\xbf",                                          // U+10FFFF
      "12345678\xc3\xa9" "12345678",                               // crosses the 8-byte fast path
  };
  for (const std::string& s : cases) {
    bool valid = false;
    EXPECT_EQ(Utf8SanitizedSize(s.data(), s.size(), &valid), s.size());
    EXPECT_TRUE(valid) << s;
    EXPECT_EQ(Sanitized(s), s);
  }
}

TEST(WireWriterTest, StringReplacesEachIllFormedByteWithReplacementChar) {
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(Sanitized("a\xff" "b"), "a" + r + "b");
  EXPECT_EQ(Sanitized("\xc0\x80"), r + r);                   // overlong NUL
  EXPECT_EQ(Sanitized("\xe0\x80\xaf"), r + r + r);           // overlong '/'
  EXPECT_EQ(Sanitized("\xed\xa0\x80"), r + r + r);           // surrogate U+D800
  EXPECT_EQ(Sanitized("\xf4\x90\x80\x80"), r + r + r + r);   // above U+10FFFF
  EXPECT_EQ(Sanitized("\xf5\x80\x80\x80"), r + r + r + r);
  EXPECT_EQ(Sanitized("ab\xe2\x82"), "ab" + r + r);          // truncated at the end
  EXPECT_EQ(Sanitized("\xc3\xa9\x80"), "\xc3\xa9" + r);      // stray continuation
  EXPECT_EQ(Sanitized("12345678\xff"), "12345678" + r);
}

}  // namespace
}  // namespace gpscope::format
