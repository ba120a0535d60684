// tools/render/report_blob.h: the byte encodings of the HTML report's bulk
// data (report_data.h): columns of unsigned LEB128 varints (timestamps as
// deltas), raw bytes and little-endian doubles, concatenated into one blob
// that is gzip-compressed and base64-encoded into the report's JSON. The
// browser undoes it with atob + DecompressionStream("gzip") (no library).
//
//   BlobWriter blob;
//   ColumnRef starts = blob.Column([&](BlobWriter& w) {
//     uint64_t previous = 0;
//     for (uint64_t t : sorted_starts) { w.Varint(t - previous); previous = t; }
//   });
//   std::string gz = GzipCompress(blob.bytes());  // empty on failure
//   std::string text = Base64Encode(gz);
//
// Thread model: value types and pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_REPORT_BLOB_H_
#define GPSCOPE_TOOLS_RENDER_REPORT_BLOB_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpscope::render {

// Where a column lies in the blob: byte offset and length.
struct ColumnRef {
  size_t offset = 0;
  size_t bytes = 0;
};

class BlobWriter {
 public:
  void Varint(uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }
  void Byte(uint8_t value) { bytes_.push_back(static_cast<char>(value)); }
  void Float64(double value);  // IEEE 754, little-endian

  // Runs `fill` and returns the range of bytes it appended.
  template <typename Fill>
  ColumnRef Column(Fill&& fill) {
    ColumnRef ref;
    ref.offset = bytes_.size();
    fill(*this);
    ref.bytes = bytes_.size() - ref.offset;
    return ref;
  }

  const std::string& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

// RFC 4648 base64 with padding.
std::string Base64Encode(std::string_view bytes);

// A gzip member (RFC 1952) holding `bytes`; empty when zlib fails.
std::string GzipCompress(std::string_view bytes, int level = 6);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_REPORT_BLOB_H_
