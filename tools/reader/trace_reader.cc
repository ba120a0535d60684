// tools/reader/trace_reader.cc: see trace_reader.h.
#include "tools/reader/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <deque>
#include <cerrno>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/crc32c.h"
#include "proto/framing.h"
#include "tools/reader/frame_pipeline.h"
#include "tools/reader/limits.h"
#include "tools/status_macros.h"

namespace gpscope::reader {
namespace {

using format::FrameStatus;
using format::FrameView;
using format::kFileHeaderBytes;
using format::kFrameHeaderBytes;

constexpr size_t kMaxGapsKept = 16;

// A file's bytes, fetched a window at a time.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  uint64_t size() const { return size_; }
  // Makes [offset, offset + bytes) readable; bytes <= size() - offset. The
  // pointer stays valid until the next Fetch.
  virtual absl::StatusOr<const uint8_t*> Fetch(uint64_t offset, size_t bytes) = 0;
  // Like Fetch, but leaves the window alone: the bytes are copied into
  // `scratch` (at least `bytes` long) when they are not in memory. For the
  // resync scan's small side reads, which must not make the window thrash.
  virtual absl::StatusOr<const uint8_t*> Peek(uint64_t offset, size_t bytes, uint8_t* scratch) = 0;

 protected:
  uint64_t size_ = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data) { size_ = size; }
  absl::StatusOr<const uint8_t*> Fetch(uint64_t offset, size_t) override { return data_ + offset; }
  absl::StatusOr<const uint8_t*> Peek(uint64_t offset, size_t, uint8_t*) override {
    return data_ + offset;
  }

 private:
  const uint8_t* data_;
};

// pread()s windows of a file: memory stays bounded by the window (or the
// largest frame), whatever the file size.
class FileSource : public ByteSource {
 public:
  FileSource(std::string path, int fd, uint64_t size, size_t window_bytes)
      : path_(std::move(path)), fd_(fd), window_bytes_(std::max<size_t>(window_bytes, 64)) {
    size_ = size;
  }
  ~FileSource() override { close(fd_); }

  absl::StatusOr<const uint8_t*> Fetch(uint64_t offset, size_t bytes) override {
    if (offset >= start_ && offset + bytes <= start_ + length_) {
      return buffer_.get() + (offset - start_);
    }
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(std::max(bytes, window_bytes_), size_ - offset));
    if (want > capacity_) {
      buffer_.reset(new uint8_t[want]);  // uninitialised on purpose: pread fills it
      capacity_ = want;
    }
    start_ = offset;
    length_ = 0;
    while (length_ < want) {
      const ssize_t n =
          pread(fd_, buffer_.get() + length_, want - length_, static_cast<off_t>(offset + length_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::DataLossError(absl::StrCat(
            path_, ": offset ", offset + length_,
            ": read failed: ", n < 0 ? std::strerror(errno) : "file shrank while reading"));
      }
      length_ += static_cast<size_t>(n);
    }
    return buffer_.get();
  }

  absl::StatusOr<const uint8_t*> Peek(uint64_t offset, size_t bytes, uint8_t* scratch) override {
    if (offset >= start_ && offset + bytes <= start_ + length_) {
      return buffer_.get() + (offset - start_);
    }
    size_t got = 0;
    while (got < bytes) {
      const ssize_t n = pread(fd_, scratch + got, bytes - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::DataLossError(absl::StrCat(
            path_, ": offset ", offset + got,
            ": read failed: ", n < 0 ? std::strerror(errno) : "file shrank while reading"));
      }
      got += static_cast<size_t>(n);
    }
    return scratch;
  }

 private:
  std::string path_;
  int fd_;
  size_t window_bytes_;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
  uint64_t start_ = 0;
  size_t length_ = 0;
};

const char* Describe(FrameStatus status) {
  switch (status) {
    case FrameStatus::kOk:
      return "valid frame";
    case FrameStatus::kNeedMoreData:
      return "incomplete frame";
    case FrameStatus::kBadMagic:
      return "no frame magic";
    case FrameStatus::kBadLength:
      return "frame length out of range";
    case FrameStatus::kBadChecksum:
      return "checksum mismatch";
  }
  return "unknown frame status";
}

inline uint32_t LoadLE32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// ---- CRC-32C algebra, for checking a frame's checksum without reading its
// payload again. CRC values are polynomials over GF(2) modulo the CRC-32C
// polynomial, bit 31 = x^0 (the reflected order the CRC uses).
constexpr uint32_t kCrcPoly = 0x82F63B78;

// a * b mod P.
uint32_t MulModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kCrcPoly : b >> 1;
  }
  return product;
}

// x^(8 * bytes) mod P: what `bytes` zero bytes do to a CRC register.
uint32_t ShiftForBytes(uint64_t bytes) {
  static const auto* const kPowers = [] {  // x^(2^k) mod P
    auto* t = new std::array<uint32_t, 64>();
    (*t)[0] = 1u << 30;  // x^1
    for (size_t k = 1; k < t->size(); ++k) (*t)[k] = MulModP((*t)[k - 1], (*t)[k - 1]);
    return t;
  }();
  uint32_t p = 1u << 31;  // x^0
  for (size_t k = 3; bytes != 0; bytes >>= 1, ++k) {
    if (bytes & 1) p = MulModP((*kPowers)[k], p);
  }
  return p;
}

// CrcIndex: the raw CRC-32C register S(x) of the file's bytes [base, x),
// started from 0, at every kStride-th byte, computed once as the reader
// moves forward. With it the checksum of any frame [q, q + 16 + L) costs
// O(kStride + log L), whatever L: CRC is linear, so the register over
// [a, e) is S(e) ^ shift_{e-a}(S(a)). This keeps resynchronisation linear
// in the file size: a file of fake frame headers, each claiming to be
// megabytes long, would otherwise have each one's payload read and summed
// (1.2 s at 1 MiB, 176 s at 8 MiB). Memory: 4 bytes per kStride bytes
// between the reader's position and the furthest frame end asked about
// (at most kMaxFrameBytes ahead): 1 MiB.
class CrcIndex {
 public:
  static constexpr size_t kStride = 256;
  static constexpr size_t kStreamBytes = 1u << 20;

  explicit CrcIndex(uint64_t base) : base_(base), scratch_(new uint8_t[kStreamBytes]) {}

  // Forgets checkpoints before `offset`: later questions are all about
  // offsets at or after it. The last known point always stays, to stream on.
  void Trim(uint64_t offset) {
    if (offset < base_) return;
    const uint64_t k = (offset - base_) / kStride;
    trim_ = std::max(trim_, k);
    while (first_ < k && points_.size() > 1) {
      points_.pop_front();
      ++first_;
    }
  }

  // Whether the CRC-32C of header[4..12) followed by [a, a + length) is
  // `expected` (the frame checksum of framing.h).
  absl::StatusOr<bool> Matches(ByteSource& source, const uint8_t* header, uint64_t a,
                               uint64_t length, uint32_t expected) {
    GPSCOPE_ASSIGN_OR_RETURN(const uint32_t sa, At(source, a));
    GPSCOPE_ASSIGN_OR_RETURN(const uint32_t se, At(source, a + length));
    const uint32_t c8 = format::Crc32c(header + 4, 8);
    if (length != shift_bytes_) {  // fake headers often repeat one length
      shift_bytes_ = length;
      shift_ = ShiftForBytes(length);
    }
    const uint32_t total = MulModP(shift_, c8 ^ ~0u ^ sa) ^ se ^ ~0u;
    return total == expected;
  }

 private:
  // S(x) for x >= base_ (never before the last Trim).
  absl::StatusOr<uint32_t> At(ByteSource& source, uint64_t x) {
    const uint64_t k = (x - base_) / kStride;
    if (k < first_) return absl::InternalError("CRC index asked about a trimmed offset");
    GPSCOPE_RETURN_IF_ERROR(StreamTo(source, k));
    const uint64_t c = base_ + k * kStride;
    uint32_t s = points_[static_cast<size_t>(k - first_)];
    if (x > c) {
      GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* data,
                               source.Peek(c, static_cast<size_t>(x - c), tail_));
      s = ~format::Crc32cExtend(~s, data, static_cast<size_t>(x - c));
    }
    return s;
  }

  // Makes checkpoint k known: streams forward from the last one.
  absl::Status StreamTo(ByteSource& source, uint64_t k) {
    if (points_.empty()) points_.push_back(0);  // S(base_) = 0
    while (first_ + points_.size() <= k) {
      const uint64_t last = first_ + points_.size() - 1;
      const uint64_t from = base_ + last * kStride;
      const uint64_t strides =
          std::min<uint64_t>(k - last, kStreamBytes / kStride);
      GPSCOPE_ASSIGN_OR_RETURN(
          const uint8_t* data,
          source.Peek(from, static_cast<size_t>(strides * kStride), scratch_.get()));
      uint32_t s = points_.back();
      for (uint64_t i = 0; i < strides; ++i) {
        s = ~format::Crc32cExtend(~s, data + i * kStride, kStride);
        if (points_.size() == 1 && first_ < trim_) {
          points_.back() = s;  // behind the trim point: keep only the newest
          ++first_;
        } else {
          points_.push_back(s);
        }
      }
    }
    return absl::OkStatus();
  }

  uint64_t base_;
  uint64_t first_ = 0;  // index of points_.front()
  uint64_t trim_ = 0;   // no question comes before checkpoint trim_
  uint64_t shift_bytes_ = 0;
  uint32_t shift_ = 1u << 31;  // ShiftForBytes(shift_bytes_)
  std::deque<uint32_t> points_;  // S(base_ + (first_ + i) * kStride)
  std::unique_ptr<uint8_t[]> scratch_;
  uint8_t tail_[kStride];
};

}  // namespace

class TraceReader::Impl {
 public:
  Impl(ChunkVisitor& visitor, ReadOptions options) : visitor_(visitor), options_(options) {}

  absl::Status ReadFile(const std::string& path) {
    if (stopped()) return visitor_status_;
    const absl::Status status = ScanFile(path);
    Drain();
    return stopped() ? visitor_status_ : status;
  }

  absl::Status ReadBuffer(const std::string& name, const uint8_t* data, size_t size) {
    if (stopped()) return visitor_status_;
    const size_t fi = AddFile(name);
    absl::Status status = absl::OkStatus();
    if (memory_stopped_) {
      index_.files[fi].not_read = true;
    } else {
      MemorySource source(data, size);
      status = ReadSource(fi, source, /*copy=*/false);
    }
    Drain();  // the frames point into `data`
    return stopped() ? visitor_status_ : status;
  }

  absl::Status ReadFiles(const std::vector<std::string>& paths) {
    for (const std::string& path : paths) {
      if (stopped()) break;
      (void)ScanFile(path);  // recorded in the index
    }
    Drain();
    return stopped() ? visitor_status_ : absl::OkStatus();
  }

  bool stopped() const { return !visitor_status_.ok(); }
  TraceIndex& index() { return index_; }

 private:
  // What the scan found, applied in file order once everything before it
  // is (so warnings, counts and the visitor's calls come in the order of a
  // reader without decode threads, and a visitor that stops leaves the
  // index as such a reader would): a valid frame, decoded meanwhile by the
  // pipeline (frames are its items in the same order), or a note (a
  // warning, a count).
  struct Pending {
    bool frame = false;
    size_t file = 0;  // index_.files
    uint64_t offset = 0;
    uint64_t frame_bytes = 0;
    std::function<void()> note;
  };

  // Scanning (the reading thread, ahead of what is applied) ---------------

  // Opens and scans one file; its frames may still be pending on return.
  absl::Status ScanFile(const std::string& path) {
    // O_NONBLOCK: opening a FIFO (or a tty) for reading would otherwise
    // wait for a writer forever; the type is checked before any read.
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    const int open_errno = errno;
    struct stat st;
    const bool regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    // A file named twice (a glob and a path, a symlink) is read once: read
    // twice, every event and collective would count double.
    if (regular) {
      auto [it, fresh] = seen_files_.try_emplace(std::make_pair(st.st_dev, st.st_ino), path);
      if (!fresh) {
        close(fd);
        Note(kNoFile, [this, w = absl::StrCat(path, ": the same file as ", it->second,
                                               ", read once")] { Warn(w); });
        return absl::OkStatus();
      }
    }
    const size_t fi = AddFile(path);
    FileInfo& file = index_.files[fi];
    if (fd < 0) {
      return file.status =
                 open_errno == ENOENT
                     ? absl::NotFoundError(absl::StrCat(path, ": no such file"))
                     : absl::PermissionDeniedError(
                           absl::StrCat(path, ": cannot open: ", std::strerror(open_errno)));
    }
    if (!regular) {
      close(fd);
      const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                         : S_ISCHR(st.st_mode)  ? "a character device"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                                                : "of another type";
      return file.status = absl::InvalidArgumentError(absl::StrCat(
          path, ": not a regular file (", what, "), not read; give a .gpscope trace file"));
    }
    if (memory_stopped_) {
      close(fd);
      file.not_read = true;
      return absl::OkStatus();
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    // The size is fixed here: frames appended later (a live trace) are not
    // read, and a frame being written reads as a torn tail.
    FileSource source(path, fd, static_cast<uint64_t>(st.st_size), options_.window_bytes);
    return ReadSource(fi, source, /*copy=*/true);
  }

  size_t AddFile(const std::string& path) {
    index_.files.emplace_back();
    index_.files.back().path = path;
    return index_.files.size() - 1;
  }

  absl::Status ReadSource(size_t fi, ByteSource& source, bool copy) {
    absl::Status status = ReadFrames(fi, source, copy);
    // e.g. an I/O error mid-file; once the visitor stopped, the index ends
    // where it stopped (this file may be gone from it).
    if (!status.ok() && !stopped()) index_.files[fi].status = status;
    return status;
  }

  // After a call that may apply pending items (Submit, Note), the visitor
  // may have stopped: then index_.files[fi] may be gone, and scanning ends.
  absl::Status ReadFrames(size_t fi, ByteSource& source, bool copy) {
    const std::string path = index_.files[fi].path;
    index_.files[fi].file_bytes = source.size();
    if (source.size() == 0) {
      return absl::DataLossError(absl::StrCat(path, ": empty file, not a gpscope trace"));
    }
    const size_t head_bytes =
        static_cast<size_t>(std::min<uint64_t>(source.size(), kFileHeaderBytes));
    GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* head, source.Fetch(0, head_bytes));
    if (std::memcmp(head, format::kFileMagic, std::min(head_bytes, sizeof(format::kFileMagic)))) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a gpscope trace (bad file magic)"));
    }
    if (head_bytes < kFileHeaderBytes) {
      return absl::DataLossError(
          absl::StrCat(path, ": file header truncated after ", head_bytes, " bytes"));
    }
    uint32_t& format_version = index_.files[fi].format_version;
    if (!format::ParseFileHeader(head, head_bytes, &format_version)) {
      if (format_version == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": not a valid gpscope trace (format version 0 is invalid; the file is damaged)"));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": trace format version ", format_version, ", this gpscope reads up to ",
          format::kFormatVersion, "; use a newer gpscope-analyze"));
    }
    if (source.size() == kFileHeaderBytes) {
      Note(fi, [this, w = absl::StrCat(path, ": no frames (only the file header)")] { Warn(w); });
      return stopped() ? visitor_status_ : absl::OkStatus();
    }

    uint64_t offset = kFileHeaderBytes;
    uint64_t frames = 0;
    CrcIndex crc(kFileHeaderBytes);
    while (offset < source.size()) {
      crc.Trim(offset);
      FrameView view{};
      GPSCOPE_ASSIGN_OR_RETURN(const FrameStatus status, Probe(source, crc, offset, &view));
      if (status == FrameStatus::kOk) {
        if (OverBudget(fi, path, offset, view.raw_bytes)) return absl::OkStatus();
        GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* data, source.Fetch(offset, view.frame_bytes));
        view.payload = data + kFrameHeaderBytes;
        SubmitFrame(fi, path, offset, view, copy);
        if (stopped()) return visitor_status_;
        ++frames;
        offset += view.frame_bytes;
        continue;
      }
      const uint64_t remaining = source.size() - offset;
      GPSCOPE_ASSIGN_OR_RETURN(const uint64_t next, FindNextValidFrame(source, crc, offset + 1));
      const uint64_t skipped = next - offset;
      std::string warning;
      bool damaged = true, truncated = false;
      if (next < source.size()) {
        warning = absl::StrCat(path, ": offset ", offset, ": ", Describe(status), ", skipped ",
                               skipped, " bytes to next frame");
      } else if (status == FrameStatus::kNeedMoreData) {
        damaged = false;
        truncated = true;
        warning = remaining < kFrameHeaderBytes
                      ? absl::StrCat(path, ": offset ", offset,
                                     ": truncated: file ends inside a frame header (", remaining,
                                     " of ", kFrameHeaderBytes, " bytes)")
                      : absl::StrCat(path, ": offset ", offset,
                                     ": truncated: file ends inside a frame (", remaining, " of ",
                                     view.frame_bytes, " bytes)");
      } else {
        warning = absl::StrCat(path, ": offset ", offset, ": ", Describe(status),
                               ", skipped the last ", skipped, " bytes (no valid frame follows)");
      }
      Note(fi, [this, fi, skipped, damaged, truncated, w = std::move(warning)] {
        FileInfo& file = index_.files[fi];
        file.skipped_bytes += skipped;
        if (damaged) ++file.damaged_regions;
        if (truncated) file.truncated = true;
        Warn(w);
      });
      if (stopped()) return visitor_status_;
      offset = next;
    }
    if (frames == 0) Note(fi, [this, w = absl::StrCat(path, ": no valid frames")] { Warn(w); });
    return stopped() ? visitor_status_ : absl::OkStatus();
  }

  // Payloads up to this size are summed directly; larger ones through the
  // CrcIndex, so no byte is summed more than a bounded number of times.
  static constexpr uint32_t kDirectChecksumBytes = 512;

  // format::ParseFrame for the frame at `offset`, without moving the
  // source's window (the resync scan holds it) and in time independent of
  // the frame's claimed length. view->payload is not set.
  absl::StatusOr<FrameStatus> Probe(ByteSource& source, CrcIndex& crc, uint64_t offset,
                                    FrameView* view) {
    const uint64_t remaining = source.size() - offset;
    const size_t head = static_cast<size_t>(std::min<uint64_t>(remaining, kFrameHeaderBytes));
    GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* header, source.Peek(offset, head, probe_scratch_));
    FrameStatus status = format::ParseFrame(header, head, view);
    if (status != FrameStatus::kNeedMoreData || head < kFrameHeaderBytes) return status;
    if (remaining < view->frame_bytes) return FrameStatus::kNeedMoreData;
    if (view->payload_bytes <= kDirectChecksumBytes) {
      GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* data,
                               source.Peek(offset, view->frame_bytes, probe_scratch_));
      return format::ParseFrame(data, view->frame_bytes, view);
    }
    uint8_t copy[kFrameHeaderBytes];  // Matches() may reuse the scratch
    std::memcpy(copy, header, sizeof(copy));
    GPSCOPE_ASSIGN_OR_RETURN(const bool match, crc.Matches(source, copy, offset + kFrameHeaderBytes,
                                                           view->payload_bytes, LoadLE32(copy + 12)));
    return match ? FrameStatus::kOk : FrameStatus::kBadChecksum;
  }

  // Offset of the first frame at or after `from` whose checksum holds, or
  // size() when there is none. Linear in the bytes scanned: each window is
  // fetched once and every candidate costs a bounded amount (see Probe).
  absl::StatusOr<uint64_t> FindNextValidFrame(ByteSource& source, CrcIndex& crc, uint64_t from) {
    const size_t window = std::max<size_t>(options_.window_bytes, 64);
    uint64_t pos = from;
    while (pos + 4 <= source.size()) {
      const size_t length = static_cast<size_t>(std::min<uint64_t>(window, source.size() - pos));
      GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* data, source.Fetch(pos, length));
      for (size_t i = 0;;) {
        const size_t hit = format::FindNextFrameMagic(data, length, i);
        if (hit == length) break;
        crc.Trim(pos + hit);
        FrameView view{};
        GPSCOPE_ASSIGN_OR_RETURN(const FrameStatus status, Probe(source, crc, pos + hit, &view));
        if (status == FrameStatus::kOk) return pos + hit;
        i = hit + 1;
      }
      if (pos + length >= source.size()) break;
      pos += length - 3;  // a magic may straddle the window's end
    }
    return source.size();
  }

  // Whether the memory budget stops reading before the frame at `offset`
  // (raw_bytes once decompressed). Measured every few frames: RSS is a
  // system call, and a frame's growth is bounded by its size. The frames
  // decoded ahead are resident already, so the measure includes them.
  bool OverBudget(size_t fi, const std::string& path, uint64_t offset, uint32_t raw_bytes) {
    if (raw_bytes > kMaxChunkRawBytes) return false;  // skipped undecompressed (SubmitFrame)
    const uint64_t parsed = uint64_t{raw_bytes} * kParsedBytesPerRawByte;
    budget_bytes_since_check_ += parsed;
    if (++budget_frames_since_check_ < 32 && budget_bytes_since_check_ < (8u << 20)) return false;
    budget_frames_since_check_ = 0;
    budget_bytes_since_check_ = 0;
    if (!MemoryBudgetExceeded(parsed)) return false;
    memory_stopped_ = true;
    PartialRead partial;
    partial.path = path;
    partial.offset = offset;
    partial.budget_bytes = MemoryBudgetBytes();
    partial.reading_limit_bytes = ReadingLimitBytes();
    partial.resident_bytes = ResidentBytes();
    Note(fi, [this, fi, partial] {
      index_.partial = partial;
      index_.files[fi].stopped_at_offset = partial.offset;
      Warn(partial.Message());
    });
    return true;
  }

  // A frame whose checksum held: into the pipeline (or, when it would
  // decompress past the limits, a note), pending until applied in order.
  void SubmitFrame(size_t fi, const std::string& path, uint64_t offset, const FrameView& view,
                   bool copy) {
    if (view.raw_bytes > kMaxChunkRawBytes) {
      Note(fi, [this, fi, w = absl::StrCat(path, ": offset ", offset, ": frame would decompress to ",
                                           view.raw_bytes >> 20, " MiB, more than the ",
                                           kMaxChunkRawBytes >> 20,
                                           " MiB the analyzer accepts (gpscope writes at most 1 "
                                           "MiB), skipped")] {
        ++index_.files[fi].frames;
        ++index_.files[fi].bad_chunks;
        Warn(w);
      });
      return;
    }
    if (pipeline_ == nullptr) {
      pipeline_ = std::make_unique<FramePipeline>(
          visitor_, options_.decode_threads > 0 ? options_.decode_threads : DefaultDecodeThreads());
    }
    while (pipeline_->full() && !stopped()) Apply(/*wait=*/true, /*one_frame=*/true);
    if (stopped()) return;
    pipeline_->Submit(view.payload, view.payload_bytes, view.raw_bytes, copy);
    Pending p;
    p.frame = true;
    p.file = fi;
    p.offset = offset;
    p.frame_bytes = view.frame_bytes;
    pending_.push_back(std::move(p));
    Apply(/*wait=*/false, /*one_frame=*/false);  // what is ready, to keep the window moving
  }

  static constexpr size_t kNoFile = ~size_t{0};

  // A note of the scan, applied now when nothing is pending before it.
  void Note(size_t fi, std::function<void()> note) {
    if (pending_.empty()) {
      note();
      return;
    }
    Pending p;
    p.file = fi == kNoFile ? index_.files.size() : fi;
    p.note = std::move(note);
    pending_.push_back(std::move(p));
  }

  // Applying (the reading thread, in file order) ---------------------------

  // Applies pending items in order: while the next is ready (wait: waiting
  // for its frame to decode), up to one frame (one_frame) or all.
  void Apply(bool wait, bool one_frame) {
    while (!pending_.empty() && !stopped()) {
      Pending& p = pending_.front();
      if (!p.frame) {
        p.note();
        pending_.pop_front();
        continue;
      }
      if (!wait && !pipeline_->FrontReady()) return;
      HandleFrame(p, pipeline_->Front());
      pipeline_->Pop();
      const size_t fi = p.file;
      pending_.pop_front();
      if (stopped()) {
        Abort(fi);
        return;
      }
      if (one_frame) return;
    }
  }

  void Drain() { Apply(/*wait=*/true, /*one_frame=*/false); }

  // The visitor stopped at a frame of file fi: what was scanned beyond is
  // forgotten, files opened since included, as if reading had stopped there.
  void Abort(size_t fi) {
    pending_.clear();
    if (pipeline_ != nullptr) pipeline_->Clear();
    if (index_.files.size() > fi + 1) index_.files.resize(fi + 1);
  }

  void Warn(std::string message) {
    visitor_.OnWarning(message);
    if (index_.warnings.size() < options_.max_warnings) {
      index_.warnings.push_back(std::move(message));
    } else {
      ++index_.warnings_omitted;
    }
  }

  void HandleFrame(const Pending& p, const DecodedFrame& frame) {
    FileInfo& file = index_.files[p.file];
    const uint64_t offset = p.offset;
    ++file.frames;
    // The checksum held, so these bytes are what the writer wrote: a failure
    // below is a writer bug, and the next frame is still where it says.
    if (frame.result == DecodedFrame::Result::kNoDecompress) {
      ++file.bad_chunks;
      Warn(absl::StrCat(file.path, ": offset ", offset, ": frame does not decompress (",
                        frame.zstd_error != nullptr ? frame.zstd_error : "size differs from header",
                        "), skipped"));
      return;
    }
    if (frame.result == DecodedFrame::Result::kNoChunk) {
      ++file.bad_chunks;
      Warn(absl::StrCat(file.path, ": offset ", offset, ": frame holds no valid Chunk, skipped"));
      return;
    }
    const proto::Chunk& chunk = *frame.chunk;
    const ChunkCheck& check = frame.check;
    if (check.changed()) {
      Warn(absl::StrFormat(
          "%s: offset %d: process %d: out-of-range values cut to the analyzer's limits "
          "(%d interned ids past the limit, %d strings over %d KiB, %d list entries past %d)",
          file.path, offset, chunk.pid(), check.ids_dropped, check.strings_cut,
          kMaxStringBytes >> 10, check.entries_dropped, kMaxListEntries));
    }
    if (check.strings_repaired > 0) {
      Warn(absl::StrFormat(
          "%s: offset %d: process %d: %d names or text fields were not valid UTF-8; their bad "
          "bytes are shown as U+FFFD",
          file.path, offset, chunk.pid(), check.strings_repaired));
    }
    const ProcessInfo* process = Account(file, offset, chunk);
    const ChunkContext context{&file, offset, p.frame_bytes, process, frame.prepared};
    visitor_status_ = visitor_.OnChunk(context, chunk);
  }

  const ProcessInfo* Account(const FileInfo& file, uint64_t offset, const proto::Chunk& chunk) {
    auto [it, inserted] = process_slot_.try_emplace(chunk.process_uid(), index_.processes.size());
    if (inserted) {
      index_.processes.emplace_back();
      ProcessInfo& p = index_.processes.back();
      p.process_uid = chunk.process_uid();
      p.pid = chunk.pid();
      p.path = file.path;
    }
    ProcessInfo& p = index_.processes[it->second];
    ++p.chunks;
    const uint64_t seq = chunk.sequence();
    auto where = [&] {
      return absl::StrFormat("%s: offset %d: process %d (uid %016x)", file.path, offset, p.pid,
                             p.process_uid);
    };
    if (seq > p.next_sequence) {
      const uint64_t missing = seq - p.next_sequence;
      Warn(absl::StrCat(where(), ": ", missing, missing == 1 ? " frame" : " frames",
                        " lost (sequence ", p.next_sequence,
                        missing == 1 ? "" : absl::StrCat("..", seq - 1), " missing)"));
      p.lost_chunks += missing;
      if (p.gaps.size() < kMaxGapsKept) p.gaps.push_back({p.next_sequence, missing});
    } else if (seq < p.next_sequence) {
      ++p.out_of_order_chunks;
      Warn(absl::StrCat(where(), ": sequence ", seq, " arrives after ", p.next_sequence - 1,
                        " (duplicate or reordered frame)"));
    }
    p.next_sequence = std::max(p.next_sequence, seq + 1);
    if (chunk.has_header()) {
      if (p.header) {
        Warn(absl::StrCat(where(), ": second process header ignored"));
      } else {
        p.header = chunk.header();
      }
    }
    if (chunk.has_end()) p.end = chunk.end();
    return &p;
  }

  ChunkVisitor& visitor_;
  ReadOptions options_;
  TraceIndex index_;
  absl::flat_hash_map<std::pair<dev_t, ino_t>, std::string> seen_files_;  // (device, inode) -> path
  absl::flat_hash_map<uint64_t, size_t> process_slot_;  // uid -> index_.processes
  absl::Status visitor_status_;
  std::deque<Pending> pending_;  // scanned, not yet applied, in file order
  bool memory_stopped_ = false;  // the scan reached the memory budget
  uint8_t probe_scratch_[kFrameHeaderBytes + kDirectChecksumBytes];
  uint64_t budget_bytes_since_check_ = 0;
  uint32_t budget_frames_since_check_ = 0;
  // Last: destroyed first, joining its threads while the rest still exists.
  std::unique_ptr<FramePipeline> pipeline_;
};

TraceReader::TraceReader(ChunkVisitor& visitor, ReadOptions options)
    : impl_(std::make_unique<Impl>(visitor, options)) {}
TraceReader::~TraceReader() = default;

absl::Status TraceReader::ReadFile(const std::string& path) { return impl_->ReadFile(path); }
absl::Status TraceReader::ReadBuffer(const std::string& name, const uint8_t* data, size_t size) {
  return impl_->ReadBuffer(name, data, size);
}
absl::Status TraceReader::ReadFiles(const std::vector<std::string>& paths) {
  return impl_->ReadFiles(paths);
}
bool TraceReader::stopped() const { return impl_->stopped(); }
const TraceIndex& TraceReader::index() const { return impl_->index(); }
TraceIndex TraceReader::TakeIndex() { return std::move(impl_->index()); }

std::string PartialRead::Message() const {
  return absl::StrCat(path, ": offset ", offset, ": memory budget of ", FormatByteSize(budget_bytes),
                      " reached (reading may use ", FormatByteSize(reading_limit_bytes),
                      " of it; resident ", FormatByteSize(resident_bytes),
                      "): reading stopped here, so the result is PARTIAL (it covers the input "
                      "up to this point); raise the budget with --max-memory");
}

const ProcessInfo* TraceIndex::FindProcess(uint64_t process_uid) const {
  for (const ProcessInfo& p : processes) {
    if (p.process_uid == process_uid) return &p;
  }
  return nullptr;
}

absl::Status TraceIndex::FirstFileError() const {
  for (const FileInfo& f : files) {
    if (!f.status.ok()) return f.status;
  }
  return absl::OkStatus();
}

absl::StatusOr<TraceIndex> ReadTraces(const std::vector<std::string>& paths, ChunkVisitor& visitor,
                                      const ReadOptions& options) {
  TraceReader reader(visitor, options);
  GPSCOPE_RETURN_IF_ERROR(reader.ReadFiles(paths));  // only the visitor's error
  return reader.TakeIndex();
}

}  // namespace gpscope::reader
