// tools/reader/trace_tail.cc: see trace_tail.h.
#include "tools/reader/trace_tail.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/framing.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::reader {
namespace {

using format::FrameStatus;
using format::FrameView;
using format::kFileHeaderBytes;
using format::kFrameHeaderBytes;

// Adapts the reader's ChunkVisitor to FrameVisitor: the reader parses
// [file header][frames] from our buffer, so a chunk's offset in that buffer
// maps back to the file and to the frame's bytes.
class Adapter : public ChunkVisitor {
 public:
  Adapter(FrameVisitor& visitor, const uint8_t* buffer, uint64_t file_offset_of_first_frame)
      : visitor_(visitor), buffer_(buffer), base_(file_offset_of_first_frame) {}
  absl::Status OnChunk(const ChunkContext& c, const proto::Chunk& chunk) override {
    visitor_.OnFrame(base_ + (c.offset - kFileHeaderBytes), buffer_ + c.offset, c.frame_bytes,
                     chunk);
    return absl::OkStatus();
  }

 private:
  FrameVisitor& visitor_;
  const uint8_t* buffer_;
  uint64_t base_;
};

// pread()s exactly `bytes` (fewer only at end of file).
ssize_t ReadAt(int fd, uint8_t* out, size_t bytes, uint64_t offset) {
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = pread(fd, out + got, bytes - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

// ---------------------------------------------------------- FrameFollower --

FrameFollower::FrameFollower(std::string path, size_t window_bytes, FollowPolicy policy)
    : path_(std::move(path)), window_bytes_(std::max<size_t>(window_bytes, 256)), policy_(policy) {}

FrameFollower::~FrameFollower() = default;

bool FrameFollower::EnsureCapacity(size_t bytes) {
  if (bytes <= capacity_) return true;
  if (bytes > kFileHeaderBytes + kFrameHeaderBytes + format::kMaxFrameBytes) return false;
  buffer_.reset(new uint8_t[bytes]);
  capacity_ = bytes;
  format::WriteFileHeader(buffer_.get());
  return true;
}

absl::Status FrameFollower::CheckHeader(int fd, uint64_t size) {
  uint8_t head[kFileHeaderBytes];
  if (size < kFileHeaderBytes) return absl::OkStatus();  // being created: wait
  if (ReadAt(fd, head, sizeof(head), 0) != static_cast<ssize_t>(sizeof(head))) {
    return absl::DataLossError(absl::StrCat(path_, ": cannot read the file header"));
  }
  uint32_t version = 0;
  if (!format::ParseFileHeader(head, sizeof(head), &version)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": not a gpscope trace of a version this gpscope reads"));
  }
  offset_ = kFileHeaderBytes;
  return absl::OkStatus();
}

absl::Status FrameFollower::ReadNew(FrameVisitor& visitor, uint64_t limit) {
  if (!sticky_error_.ok()) return sticky_error_;
  // O_NONBLOCK: a FIFO named like a trace must not block the reader.
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK |
                                         (policy_.trusted_only ? O_NOFOLLOW : 0));
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();  // not there (yet, or any more)
    if (errno == ELOOP && policy_.trusted_only) {
      return sticky_error_ = absl::PermissionDeniedError(
                 absl::StrCat(path_, ": a symbolic link, not followed (docs/security.md)"));
    }
    return sticky_error_ = absl::PermissionDeniedError(
               absl::StrCat(path_, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return sticky_error_ =
               absl::InvalidArgumentError(absl::StrCat(path_, ": not a regular file"));
  }
  if (policy_.trusted_only && st.st_uid != policy_.uid && st.st_uid != 0) {
    close(fd);
    return sticky_error_ = absl::PermissionDeniedError(
               absl::StrCat(path_, ": belongs to uid ", st.st_uid, ", not to uid ", policy_.uid,
                            " or root: not read (docs/security.md)"));
  }
  uint64_t size = std::min<uint64_t>(static_cast<uint64_t>(st.st_size), limit);
  absl::Status status;
  if (offset_ > static_cast<uint64_t>(st.st_size)) offset_ = 0;  // replaced by a shorter file
  if (offset_ == 0) status = CheckHeader(fd, size);
  if (!status.ok()) {
    close(fd);
    return sticky_error_ = status;
  }
  if (!EnsureCapacity(kFileHeaderBytes + window_bytes_)) {
    close(fd);
    return absl::ResourceExhaustedError("window too large");
  }
  while (offset_ >= kFileHeaderBytes && offset_ < size) {
    // Fill [header][window] from offset_ and find the complete frames in it.
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size - offset_, capacity_ - kFileHeaderBytes));
    const ssize_t got = ReadAt(fd, buffer_.get() + kFileHeaderBytes, want, offset_);
    if (got <= 0) break;
    const uint8_t* data = buffer_.get() + kFileHeaderBytes;
    const size_t avail = static_cast<size_t>(got);
    size_t pos = 0;
    bool need_bigger = false;
    size_t bigger = 0;
    while (pos < avail) {
      FrameView view{};
      const FrameStatus s = format::ParseFrame(data + pos, avail - pos, &view);
      if (s == FrameStatus::kOk) {
        pos += view.frame_bytes;
        continue;
      }
      if (s == FrameStatus::kNeedMoreData) {
        // A frame larger than the window: grow to fit it. Otherwise it is
        // still being written (or the file ends here for now).
        if (avail - pos >= kFrameHeaderBytes && view.frame_bytes > capacity_ - kFileHeaderBytes &&
            offset_ + pos + view.frame_bytes <= size) {
          need_bigger = true;
          bigger = kFileHeaderBytes + view.frame_bytes;
        }
        break;
      }
      // Damage: skip to the next frame magic (the reader would do the same,
      // but only after giving up on a torn tail we may still see completed).
      const size_t next = format::FindNextFrameMagic(data, avail, pos + 1);
      ++damaged_regions_;
      if (next < avail) {
        pos = next;
        continue;
      }
      // No magic in the window: keep its last 3 bytes, a magic may straddle.
      pos = std::max(pos + 1, avail >= 3 ? avail - 3 : avail);
      break;
    }
    if (pos > 0) {
      // Everything before `pos` is whole frames (and skipped damage, which
      // the reader skips again and reports to nobody).
      ReadOptions options;
      options.max_warnings = 0;
      options.decode_threads = 1;  // a few fresh frames per poll: no pool to start and join
      Adapter adapter(visitor, buffer_.get(), offset_);
      TraceReader trace_reader(adapter, options);
      trace_reader.ReadBuffer(path_, buffer_.get(), kFileHeaderBytes + pos).IgnoreError();
      offset_ += pos;
      continue;
    }
    if (need_bigger && EnsureCapacity(bigger)) continue;
    if (need_bigger) {  // beyond any valid frame size: step over it
      ++damaged_regions_;
      const size_t next = format::FindNextFrameMagic(data, avail, 1);
      offset_ += next;
      continue;
    }
    break;  // only an incomplete frame left: wait for the writer
  }
  close(fd);
  return absl::OkStatus();
}

// -------------------------------------------------------------- TraceTail --

class TraceTail::Counter : public FrameVisitor {
 public:
  explicit Counter(TailStats* stats) : stats_(stats) {}
  void OnFrame(uint64_t, const uint8_t*, size_t frame_bytes, const proto::Chunk& c) override {
    ++stats_->frames;
    stats_->bytes += frame_bytes;
    if (seen_.insert(c.process_uid()).second) ++stats_->processes;
    if (c.has_end()) ++stats_->processes_ended;
    if (!c.has_batch()) return;
    const proto::EventBatch& b = c.batch();
    stats_->events += static_cast<uint64_t>(
        b.kernels().start_delta_ns_size() + b.memcpys().start_delta_ns_size() +
        b.memsets().start_delta_ns_size() + b.syncs().start_delta_ns_size() +
        b.api_calls().start_delta_ns_size() + b.nvtx_ranges().start_delta_ns_size() +
        b.nvtx_marks().timestamp_delta_ns_size() + b.overheads().start_delta_ns_size());
    stats_->metric_samples += static_cast<uint64_t>(b.metrics().timestamp_delta_ns_size());
    // Records lost. Some notices count other units for the same loss: a
    // refused buffer request (POOL_EMPTY) makes CUPTI drop records it then
    // reports (CUPTI_REPORTED); stolen or unflushed buffers and failed
    // frames are not records. Counting those too would report one loss twice.
    for (const proto::DropNotice& d : b.drops()) {
      if (d.reason() != proto::DROP_CUPTI_BUFFER_POOL_EMPTY &&
          d.reason() != proto::DROP_BUFFER_STOLEN && d.reason() != proto::DROP_WRITE_FAILED &&
          d.reason() != proto::DROP_EXIT_FLUSH_TIMEOUT) {
        stats_->drops += d.count();
      }
    }
  }
 private:
  TailStats* stats_;
  std::set<uint64_t> seen_;  // process uids: one per traced process
};

namespace {
// Discards frames (SkipExisting reads nothing; this is for symmetry).
class Discard : public FrameVisitor {
 public:
  void OnFrame(uint64_t, const uint8_t*, size_t, const proto::Chunk&) override {}
};
}  // namespace

TraceTail::TraceTail(std::string dir)
    : dir_(std::move(dir)), counter_(std::make_unique<Counter>(&stats_)) {}

TraceTail::~TraceTail() = default;

std::vector<std::string> ListTraceFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || !absl::EndsWith(name, ".gpscope")) continue;
    files.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> TraceTail::ListTraceFiles() const { return ListTraceFilesIn(dir_); }

void TraceTail::SkipExisting() {
  for (const std::string& path : ListTraceFiles()) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    sizes_at_skip_[path] = static_cast<uint64_t>(st.st_size);
    auto follower = std::make_unique<FrameFollower>(path);
    // Validate the header, then jump to the end: frames appended later are
    // this run's. A torn frame at the end is the old run's.
    Discard discard;
    if (follower->ReadNew(discard, format::kFileHeaderBytes).ok() &&
        follower->offset() >= format::kFileHeaderBytes) {
      follower->set_offset(static_cast<uint64_t>(st.st_size));
    }
    followers_[path] = std::move(follower);
  }
}

void TraceTail::Poll() {
  for (const std::string& path : ListTraceFiles()) {
    auto& follower = followers_[path];
    if (!follower) follower = std::make_unique<FrameFollower>(path);
    const uint64_t frames_before = stats_.frames;
    if (!follower->ReadNew(*counter_).ok()) unreadable_.insert(path);
    if (stats_.frames != frames_before) touched_.insert(path);
  }
  stats_.files = touched_.size();
  stats_.unreadable_files = unreadable_.size();
  stats_.damaged_regions = 0;
  for (const auto& [path, f] : followers_) stats_.damaged_regions += f->damaged_regions();
}

std::vector<std::string> TraceTail::ChangedFiles() const {
  std::vector<std::string> changed;
  for (const std::string& path : ListTraceFiles()) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto it = sizes_at_skip_.find(path);
    if (it == sizes_at_skip_.end() || it->second != static_cast<uint64_t>(st.st_size)) {
      changed.push_back(path);
    }
  }
  return changed;
}

std::vector<std::string> TraceTail::touched_files() const {
  return {touched_.begin(), touched_.end()};
}

}  // namespace gpscope::reader
