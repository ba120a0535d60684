// proto/crc32c.cc: see crc32c.h.
#include "proto/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace gpscope::format {
namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // CRC-32C, reflected

// kTable[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
    t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}
constexpr auto kTable = MakeTables();

inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // x86 and every target we build for are little-endian
  return v;
}

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (; bytes >= 8; bytes -= 8, p += 8) {
    const uint64_t v = LoadLE64(p) ^ c;
    c = kTable[7][v & 0xff] ^ kTable[6][(v >> 8) & 0xff] ^ kTable[5][(v >> 16) & 0xff] ^
        kTable[4][(v >> 24) & 0xff] ^ kTable[3][(v >> 32) & 0xff] ^ kTable[2][(v >> 40) & 0xff] ^
        kTable[1][(v >> 48) & 0xff] ^ kTable[0][v >> 56];
  }
  for (; bytes > 0; --bytes, ++p) c = (c >> 8) ^ kTable[0][(c ^ *p) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
// Compiled for SSE4.2 by attribute, not -msse4.2, so the rest of the library
// (and the injected .so) still runs on CPUs without it.
__attribute__((target("sse4.2"))) uint32_t Crc32cExtendHardware(uint32_t crc, const void* data,
                                                                size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  for (; bytes >= 8; bytes -= 8, p += 8) c = _mm_crc32_u64(c, LoadLE64(p));
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; bytes > 0; --bytes, ++p) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}

bool Crc32cHasHardware() {
  // Function-local static: decided once, thread-safe initialisation.
  static const bool has = [] {
    __builtin_cpu_init();  // required if we run before the CPU model is initialised
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return has;
}
#else
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t bytes) {
  return Crc32cExtendPortable(crc, data, bytes);
}
bool Crc32cHasHardware() { return false; }
#endif

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t bytes) {
  return Crc32cHasHardware() ? Crc32cExtendHardware(crc, data, bytes)
                             : Crc32cExtendPortable(crc, data, bytes);
}

uint32_t Crc32c(const void* data, size_t bytes) { return Crc32cExtend(0, data, bytes); }

}  // namespace gpscope::format
