// proto/wire_writer.h: allocation-free protobuf wire-format primitives.
//
// The injected library cannot link libprotobuf, so it serializes trace.proto
// messages with these primitives, in the manner of Perfetto's protozero:
//
//   uint8_t buf[256];
//   WireWriter w(buf, sizeof(buf));
//   w.Fixed64(1, process_uid);
//   WireWriter::Nested clock = w.BeginNested(13);
//   w.Uint64(2, realtime_ns);
//   w.EndNested(clock);
//   if (!w.ok()) { /* buffer too small: nothing valid was produced */ }
//
// WireWriter writes into a caller-provided fixed buffer. Running out of room
// is sticky: ok() turns false, every later call is a no-op, and nothing is
// ever written outside [buf, buf + cap). Field writers always emit the field,
// default values included; skipping proto3 defaults is the caller's choice.
//
// Nested messages reserve a fixed 4-byte length slot that EndNested() fills
// with a redundantly padded varint (continuation bits on the leading bytes),
// which every protobuf parser accepts; so the body never has to be moved.
// Hence a nested message is at most kMaxNestedBytes long.
//
// String fields must hold valid UTF-8 for libprotobuf to parse the message at
// all (proto3 `string`; a single bad byte fails the whole Chunk). String()
// therefore replaces every byte that does not start a well-formed UTF-8
// sequence with U+FFFD; valid input is copied unchanged. Bytes() copies as is.
//
// Thread model: a WireWriter is used by one thread; the free functions are
// pure and thread-safe.
#ifndef GPSCOPE_PROTO_WIRE_WRITER_H_
#define GPSCOPE_PROTO_WIRE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpscope::format {

enum class WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5,
};

inline constexpr size_t kMaxVarintBytes = 10;
inline constexpr size_t kNestedLengthBytes = 4;
inline constexpr size_t kMaxNestedBytes = (size_t{1} << 28) - 1;

inline constexpr uint64_t ZigZagEncode64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int64_t ZigZagDecode64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

inline constexpr size_t VarintSize(uint64_t v) {
  // 1 + floor(bits / 7), with v | 1 so that 0 takes one byte.
  return static_cast<size_t>((63 - __builtin_clzll(v | 1)) * 9 + 73) / 64;
}

inline constexpr uint32_t MakeTag(uint32_t field, WireType type) {
  return (field << 3) | static_cast<uint32_t>(type);
}

// Writes v at p without bounds checks (the caller guarantees
// kMaxVarintBytes of room); returns the end of what was written.
inline uint8_t* EncodeVarintUnchecked(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Length of the well-formed UTF-8 sequence (Unicode 15, table 3-7: no
// overlongs, no surrogates, nothing above U+10FFFF) that starts at p, or 0.
inline size_t Utf8SequenceBytes(const uint8_t* p, size_t n) {
  const uint8_t b0 = p[0];
  if (b0 < 0x80) return 1;
  if (b0 < 0xC2) return 0;
  auto cont = [](uint8_t b) { return (b & 0xC0) == 0x80; };
  if (b0 < 0xE0) return (n >= 2 && cont(p[1])) ? 2 : 0;
  if (b0 < 0xF0) {
    const uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const uint8_t hi = b0 == 0xED ? 0x9F : 0xBF;
    return (n >= 3 && p[1] >= lo && p[1] <= hi && cont(p[2])) ? 3 : 0;
  }
  if (b0 < 0xF5) {
    const uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80;
    const uint8_t hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return (n >= 4 && p[1] >= lo && p[1] <= hi && cont(p[2]) && cont(p[3])) ? 4 : 0;
  }
  return 0;
}

inline constexpr uint8_t kUtf8Replacement[3] = {0xEF, 0xBF, 0xBD};  // U+FFFD

// Size of `data` after the U+FFFD replacement String() applies. Sets *valid
// when data is already well-formed UTF-8 (then the size is len).
inline size_t Utf8SanitizedSize(const char* data, size_t len, bool* valid) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  size_t i = 0, out = 0;
  bool all_valid = true;
  while (i < len) {
    // Names are nearly always ASCII: skip 8 bytes at a time.
    if (len - i >= 8) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        out += 8;
        continue;
      }
    }
    const size_t n = Utf8SequenceBytes(p + i, len - i);
    if (n == 0) {
      all_valid = false;
      i += 1;
      out += sizeof(kUtf8Replacement);
    } else {
      i += n;
      out += n;
    }
  }
  *valid = all_valid;
  return out;
}

class WireWriter {
 public:
  // Where a nested message's length slot is; returned by BeginNested().
  struct Nested {
    size_t slot_offset;
  };

  WireWriter(uint8_t* buf, size_t cap) : begin_(buf), pos_(buf), end_(buf + cap) {}

  bool ok() const { return ok_; }
  size_t size() const { return static_cast<size_t>(pos_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }
  const uint8_t* data() const { return begin_; }

  void Varint(uint64_t v) {
    if (!Reserve(VarintSize(v))) return;
    pos_ = EncodeVarintUnchecked(pos_, v);
  }
  void Tag(uint32_t field, WireType type) { Varint(MakeTag(field, type)); }
  void Raw(const void* data, size_t len) {
    if (!Reserve(len)) return;
    if (len != 0) std::memcpy(pos_, data, len);
    pos_ += len;
  }

  // --- singular fields ---
  void Uint64(uint32_t field, uint64_t v) { Tag(field, WireType::kVarint); Varint(v); }
  void Uint32(uint32_t field, uint32_t v) { Uint64(field, v); }
  // int32/int64/enum: negative values are sign-extended to 10 bytes, as the
  // protobuf spec requires (a 5-byte form would parse as a large positive).
  void Int64(uint32_t field, int64_t v) { Uint64(field, static_cast<uint64_t>(v)); }
  void Int32(uint32_t field, int32_t v) { Int64(field, v); }
  void Enum(uint32_t field, int32_t v) { Int64(field, v); }
  void Sint64(uint32_t field, int64_t v) { Uint64(field, ZigZagEncode64(v)); }
  void Bool(uint32_t field, bool v) { Uint64(field, v ? 1 : 0); }
  void Fixed64(uint32_t field, uint64_t v) {
    Tag(field, WireType::kFixed64);
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
    Raw(le, 8);
  }
  void Fixed32(uint32_t field, uint32_t v) {
    Tag(field, WireType::kFixed32);
    uint8_t le[4];
    for (int i = 0; i < 4; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
    Raw(le, 4);
  }
  void Double(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Fixed64(field, bits);
  }
  void Bytes(uint32_t field, const void* data, size_t len) {
    Tag(field, WireType::kLengthDelimited);
    Varint(len);
    Raw(data, len);
  }
  void String(uint32_t field, const char* data, size_t len) {
    bool valid = true;
    const size_t out_len = Utf8SanitizedSize(data, len, &valid);
    if (valid) return Bytes(field, data, len);
    Tag(field, WireType::kLengthDelimited);
    Varint(out_len);
    if (!Reserve(out_len)) return;
    const auto* p = reinterpret_cast<const uint8_t*>(data);
    for (size_t i = 0; i < len;) {
      size_t n = Utf8SequenceBytes(p + i, len - i);
      if (n == 0) {
        std::memcpy(pos_, kUtf8Replacement, sizeof(kUtf8Replacement));
        pos_ += sizeof(kUtf8Replacement);
        i += 1;
      } else {
        std::memcpy(pos_, p + i, n);
        pos_ += n;
        i += n;
      }
    }
  }

  // --- packed repeated fields ---
  // `encoded` already holds the concatenated varints (or fixed values).
  void PackedRaw(uint32_t field, const uint8_t* encoded, size_t len) { Bytes(field, encoded, len); }
  void PackedUint64(uint32_t field, const uint64_t* v, size_t count) {
    size_t len = 0;
    for (size_t i = 0; i < count; ++i) len += VarintSize(v[i]);
    Tag(field, WireType::kLengthDelimited);
    Varint(len);
    if (!Reserve(len)) return;
    for (size_t i = 0; i < count; ++i) pos_ = EncodeVarintUnchecked(pos_, v[i]);
  }
  void PackedSint64(uint32_t field, const int64_t* v, size_t count) {
    size_t len = 0;
    for (size_t i = 0; i < count; ++i) len += VarintSize(ZigZagEncode64(v[i]));
    Tag(field, WireType::kLengthDelimited);
    Varint(len);
    if (!Reserve(len)) return;
    for (size_t i = 0; i < count; ++i) pos_ = EncodeVarintUnchecked(pos_, ZigZagEncode64(v[i]));
  }
  void PackedDouble(uint32_t field, const double* v, size_t count) {
    Tag(field, WireType::kLengthDelimited);
    Varint(count * 8);
    for (size_t i = 0; i < count; ++i) {
      uint64_t bits;
      std::memcpy(&bits, &v[i], 8);
      uint8_t le[8];
      for (int b = 0; b < 8; ++b) le[b] = static_cast<uint8_t>(bits >> (8 * b));
      Raw(le, 8);
    }
  }

  // --- nested messages ---
  Nested BeginNested(uint32_t field) {
    Tag(field, WireType::kLengthDelimited);
    Nested n{size()};
    if (Reserve(kNestedLengthBytes)) pos_ += kNestedLengthBytes;
    return n;
  }
  void EndNested(Nested n) {
    if (!ok_) return;
    const size_t len = size() - n.slot_offset - kNestedLengthBytes;
    if (len > kMaxNestedBytes) {
      ok_ = false;
      return;
    }
    uint8_t* slot = begin_ + n.slot_offset;
    slot[0] = static_cast<uint8_t>(len | 0x80);
    slot[1] = static_cast<uint8_t>((len >> 7) | 0x80);
    slot[2] = static_cast<uint8_t>((len >> 14) | 0x80);
    slot[3] = static_cast<uint8_t>(len >> 21);
  }

 private:
  // True when len more bytes fit; otherwise latches the failure.
  bool Reserve(size_t len) {
    if (ok_ && len <= remaining()) return true;
    ok_ = false;
    return false;
  }

  uint8_t* begin_;
  uint8_t* pos_;
  uint8_t* end_;
  bool ok_ = true;
};

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_WIRE_WRITER_H_
