// proto/crc32c.h: CRC-32C (Castagnoli), the checksum of every trace frame.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run
// time, so the injected library still loads on CPUs without it) and a
// slicing-by-8 table otherwise. Both give identical results.
//
//   uint32_t crc = Crc32c(header + 4, 8);
//   crc = Crc32cExtend(crc, payload, payload_bytes);
//
// Thread model: pure functions, thread-safe. No allocation, no syscalls.
#ifndef GPSCOPE_PROTO_CRC32C_H_
#define GPSCOPE_PROTO_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace gpscope::format {

// CRC-32C of data[0, bytes).
uint32_t Crc32c(const void* data, size_t bytes);

// CRC-32C of (the bytes that produced `crc`) followed by data[0, bytes):
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b). Crc32cExtend(0, ...) == Crc32c.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t bytes);

// The two implementations, exposed so tests can check both paths.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t bytes);
// Only callable when Crc32cHasHardware() is true.
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t bytes);
bool Crc32cHasHardware();

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_CRC32C_H_
