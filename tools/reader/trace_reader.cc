// tools/reader/trace_reader.cc: see trace_reader.h.
#include "tools/reader/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/arena.h"
#include "proto/framing.h"
#include "tools/status_macros.h"

namespace gpscope::reader {
namespace {

using format::FrameStatus;
using format::FrameView;
using format::kFileHeaderBytes;
using format::kFrameHeaderBytes;

constexpr size_t kMaxGapsKept = 16;
// The arena's first block is ours, so Arena::Reset() keeps it: a stream of
// ordinary chunks then parses without touching malloc.
constexpr size_t kArenaInitialBlockBytes = 1u << 20;

// A file's bytes, fetched a window at a time.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  uint64_t size() const { return size_; }
  // Makes [offset, offset + bytes) readable; bytes <= size() - offset. The
  // pointer stays valid until the next Fetch.
  virtual absl::StatusOr<const uint8_t*> Fetch(uint64_t offset, size_t bytes) = 0;

 protected:
  uint64_t size_ = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data) { size_ = size; }
  absl::StatusOr<const uint8_t*> Fetch(uint64_t offset, size_t) override { return data_ + offset; }

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

}  // namespace

class TraceReader::Impl {
 public:
  Impl(ChunkVisitor& visitor, ReadOptions options)
      : visitor_(visitor),
        options_(options),
        arena_block_(new char[kArenaInitialBlockBytes]),
        arena_(MakeArenaOptions(arena_block_.get())),
        dctx_(ZSTD_createDCtx()) {}
  ~Impl() { ZSTD_freeDCtx(dctx_); }

  absl::Status ReadFile(const std::string& path) {
    if (stopped()) return visitor_status_;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const int open_errno = errno;
    struct stat st;
    const bool regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    // A file named twice (a glob and a path, a symlink) is read once: read
    // twice, every event and collective would count double.
    if (regular) {
      auto [it, fresh] = seen_files_.try_emplace(std::make_pair(st.st_dev, st.st_ino), path);
      if (!fresh) {
        close(fd);
        Warn(absl::StrCat(path, ": the same file as ", it->second, ", read once"));
        return absl::OkStatus();
      }
    }
    FileInfo& file = AddFile(path);
    if (fd < 0) {
      return file.status =
                 open_errno == ENOENT
                     ? absl::NotFoundError(absl::StrCat(path, ": no such file"))
                     : absl::PermissionDeniedError(
                           absl::StrCat(path, ": cannot open: ", std::strerror(open_errno)));
    }
    if (!regular) {
      close(fd);
      return file.status = absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    // The size is fixed here: frames appended later (a live trace) are not
    // read, and a frame being written reads as a torn tail.
    FileSource source(path, fd, static_cast<uint64_t>(st.st_size), options_.window_bytes);
    return ReadSource(file, source);
  }

  absl::Status ReadBuffer(const std::string& name, const uint8_t* data, size_t size) {
    if (stopped()) return visitor_status_;
    FileInfo& file = AddFile(name);
    MemorySource source(data, size);
    return ReadSource(file, source);
  }

  bool stopped() const { return !visitor_status_.ok(); }
  TraceIndex& index() { return index_; }

 private:
  static google::protobuf::ArenaOptions MakeArenaOptions(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kArenaInitialBlockBytes;
    options.start_block_size = kArenaInitialBlockBytes;
    options.max_block_size = 16u << 20;
    return options;
  }

  FileInfo& AddFile(const std::string& path) {
    index_.files.emplace_back();
    index_.files.back().path = path;
    return index_.files.back();
  }

  void Warn(std::string message) {
    visitor_.OnWarning(message);
    if (index_.warnings.size() < options_.max_warnings) {
      index_.warnings.push_back(std::move(message));
    } else {
      ++index_.warnings_omitted;
    }
  }

  absl::Status ReadSource(FileInfo& file, ByteSource& source) {
    absl::Status status = ReadFrames(file, source);
    if (!status.ok() && !stopped()) file.status = status;  // e.g. an I/O error mid-file
    return status;
  }

  absl::Status ReadFrames(FileInfo& file, ByteSource& source) {
    file.file_bytes = source.size();
    const std::string& path = file.path;
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
    if (!format::ParseFileHeader(head, head_bytes, &file.format_version)) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": trace format version ", file.format_version, ", this gpscope reads up to ",
          format::kFormatVersion, "; use a newer gpscope-analyze"));
    }
    if (source.size() == kFileHeaderBytes) {
      Warn(absl::StrCat(path, ": no frames (only the file header)"));
      return absl::OkStatus();
    }

    uint64_t offset = kFileHeaderBytes;
    while (offset < source.size()) {
      FrameView view{};
      GPSCOPE_ASSIGN_OR_RETURN(const FrameStatus status, Probe(source, offset, &view));
      if (status == FrameStatus::kOk) {
        GPSCOPE_RETURN_IF_ERROR(HandleFrame(file, offset, view));
        offset += view.frame_bytes;
        continue;
      }
      const uint64_t remaining = source.size() - offset;
      GPSCOPE_ASSIGN_OR_RETURN(const uint64_t next, FindNextValidFrame(source, offset + 1));
      const uint64_t skipped = next - offset;
      file.skipped_bytes += skipped;
      if (next < source.size()) {
        ++file.damaged_regions;
        Warn(absl::StrCat(path, ": offset ", offset, ": ", Describe(status), ", skipped ", skipped,
                          " bytes to next frame"));
      } else if (status == FrameStatus::kNeedMoreData) {
        file.truncated = true;
        Warn(remaining < kFrameHeaderBytes
                 ? absl::StrCat(path, ": offset ", offset,
                                ": truncated: file ends inside a frame header (", remaining, " of ",
                                kFrameHeaderBytes, " bytes)")
                 : absl::StrCat(path, ": offset ", offset,
                                ": truncated: file ends inside a frame (", remaining, " of ",
                                view.frame_bytes, " bytes)"));
      } else {
        ++file.damaged_regions;
        Warn(absl::StrCat(path, ": offset ", offset, ": ", Describe(status), ", skipped the last ",
                          skipped, " bytes (no valid frame follows)"));
      }
      offset = next;
    }
    if (file.frames == 0) Warn(absl::StrCat(path, ": no valid frames"));
    return absl::OkStatus();
  }

  // Parses the frame at `offset`, fetching its header and then its payload.
  absl::StatusOr<FrameStatus> Probe(ByteSource& source, uint64_t offset, FrameView* view) {
    const uint64_t remaining = source.size() - offset;
    size_t want = static_cast<size_t>(std::min<uint64_t>(remaining, kFrameHeaderBytes));
    GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* data, source.Fetch(offset, want));
    FrameStatus status = format::ParseFrame(data, want, view);
    if (status == FrameStatus::kNeedMoreData && want == kFrameHeaderBytes) {
      want = static_cast<size_t>(std::min<uint64_t>(remaining, view->frame_bytes));
      GPSCOPE_ASSIGN_OR_RETURN(data, source.Fetch(offset, want));
      status = format::ParseFrame(data, want, view);
    }
    return status;
  }

  // Offset of the first frame at or after `from` whose checksum holds, or
  // size() when there is none.
  absl::StatusOr<uint64_t> FindNextValidFrame(ByteSource& source, uint64_t from) {
    const size_t window = std::max<size_t>(options_.window_bytes, 64);
    uint64_t pos = from;
    while (pos + 4 <= source.size()) {
      const size_t length = static_cast<size_t>(std::min<uint64_t>(window, source.size() - pos));
      GPSCOPE_ASSIGN_OR_RETURN(const uint8_t* data, source.Fetch(pos, length));
      const size_t hit = format::FindNextFrameMagic(data, length, 0);
      if (hit == length) {
        pos += length - 3;  // a magic may straddle the window's end
        continue;
      }
      FrameView view{};
      GPSCOPE_ASSIGN_OR_RETURN(const FrameStatus status, Probe(source, pos + hit, &view));
      if (status == FrameStatus::kOk) return pos + hit;
      pos += hit + 1;
    }
    return source.size();
  }

  absl::Status HandleFrame(FileInfo& file, uint64_t offset, const FrameView& view) {
    ++file.frames;
    // The checksum held, so these bytes are what the writer wrote: a failure
    // below is a writer bug, and the next frame is still where it says.
    if (view.raw_bytes > raw_capacity_) {
      raw_.reset(new uint8_t[view.raw_bytes]);
      raw_capacity_ = view.raw_bytes;
    }
    const size_t got =
        ZSTD_decompressDCtx(dctx_, raw_.get(), view.raw_bytes, view.payload, view.payload_bytes);
    if (ZSTD_isError(got) || got != view.raw_bytes) {
      ++file.bad_chunks;
      Warn(absl::StrCat(file.path, ": offset ", offset, ": frame does not decompress (",
                        ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs from header",
                        "), skipped"));
      return absl::OkStatus();
    }
    arena_.Reset();
    proto::Chunk* chunk = google::protobuf::Arena::CreateMessage<proto::Chunk>(&arena_);
    if (!chunk->ParseFromArray(raw_.get(), static_cast<int>(view.raw_bytes))) {
      ++file.bad_chunks;
      Warn(absl::StrCat(file.path, ": offset ", offset, ": frame holds no valid Chunk, skipped"));
      return absl::OkStatus();
    }
    const ProcessInfo* process = Account(file, offset, *chunk);
    const ChunkContext context{&file, offset, view.frame_bytes, process};
    visitor_status_ = visitor_.OnChunk(context, *chunk);
    return visitor_status_;
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
  std::unique_ptr<char[]> arena_block_;
  google::protobuf::Arena arena_;
  ZSTD_DCtx* dctx_;
  std::unique_ptr<uint8_t[]> raw_;  // decompressed chunk, reused
  size_t raw_capacity_ = 0;
};

TraceReader::TraceReader(ChunkVisitor& visitor, ReadOptions options)
    : impl_(std::make_unique<Impl>(visitor, options)) {}
TraceReader::~TraceReader() = default;

absl::Status TraceReader::ReadFile(const std::string& path) { return impl_->ReadFile(path); }
absl::Status TraceReader::ReadBuffer(const std::string& name, const uint8_t* data, size_t size) {
  return impl_->ReadBuffer(name, data, size);
}
bool TraceReader::stopped() const { return impl_->stopped(); }
const TraceIndex& TraceReader::index() const { return impl_->index(); }
TraceIndex TraceReader::TakeIndex() { return std::move(impl_->index()); }

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
  for (const std::string& path : paths) {
    const absl::Status status = reader.ReadFile(path);
    if (!status.ok() && reader.stopped()) return status;
  }
  return reader.TakeIndex();
}

}  // namespace gpscope::reader
