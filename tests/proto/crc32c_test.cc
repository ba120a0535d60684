// tests/proto/crc32c_test.cc: both CRC-32C paths against published vectors
// (RFC 3720 B.4, the iSCSI test patterns) and against each other.
#include "proto/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace gpscope::format {
namespace {

struct Vector {
  std::vector<uint8_t> data;
  uint32_t crc;
};

std::vector<Vector> KnownVectors() {
  std::vector<Vector> v;
  const char* digits = "123456789";
  v.push_back({std::vector<uint8_t>(digits, digits + 9), 0xE3069283});
  v.push_back({std::vector<uint8_t>(32, 0x00), 0x8A9136AA});
  v.push_back({std::vector<uint8_t>(32, 0xFF), 0x62A8AB43});
  std::vector<uint8_t> up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  v.push_back({up, 0x46DD794E});
  v.push_back({down, 0x113FDB5C});
  // An iSCSI SCSI Read (10) command PDU.
  const uint8_t pdu[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                           0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  v.push_back({std::vector<uint8_t>(pdu, pdu + 48), 0xD9963A56});
  v.push_back({{}, 0x00000000});
  return v;
}

TEST(Crc32cTest, PortablePathMatchesKnownVectors) {
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(Crc32cExtendPortable(0, v.data.data(), v.data.size()), v.crc) << v.data.size();
  }
}

TEST(Crc32cTest, HardwarePathMatchesKnownVectors) {
  if (!Crc32cHasHardware()) GTEST_SKIP() << "CPU without SSE4.2";
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(Crc32cExtendHardware(0, v.data.data(), v.data.size()), v.crc) << v.data.size();
  }
}

TEST(Crc32cTest, DispatchedFunctionMatchesKnownVectors) {
  for (const Vector& v : KnownVectors()) EXPECT_EQ(Crc32c(v.data.data(), v.data.size()), v.crc);
}

// Every length 0..300 at every alignment 0..7: covers the 8-byte main loop,
// the byte tail and unaligned loads, and checks Extend composes.
TEST(Crc32cTest, PathsAgreeOnAllLengthsAlignmentsAndSplits) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buffer(320);
  for (uint8_t& b : buffer) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 8; ++align) {
    for (size_t n = 0; n <= 300; ++n) {
      const uint8_t* p = buffer.data() + align;
      const uint32_t portable = Crc32cExtendPortable(0, p, n);
      if (Crc32cHasHardware()) {
        ASSERT_EQ(Crc32cExtendHardware(0, p, n), portable) << align << " " << n;
      }
      const size_t split = n / 3;
      ASSERT_EQ(Crc32cExtend(Crc32c(p, split), p + split, n - split), portable) << n;
    }
  }
}

TEST(Crc32cTest, DetectsEverySingleBitFlip) {
  std::vector<uint8_t> data(64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 37);
  const uint32_t good = Crc32c(data.data(), data.size());
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(Crc32c(data.data(), data.size()), good) << bit;
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

}  // namespace
}  // namespace gpscope::format
