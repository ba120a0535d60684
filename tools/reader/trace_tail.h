// tools/reader/trace_tail.h: reads trace files while they grow.
//
// FrameFollower reads one file from a byte offset on and hands every
// complete frame appended since the last call to a FrameVisitor, decoded by
// the reader (TraceReader::ReadBuffer over a window of whole frames, so
// checksums, decompression and parsing are the reader's). A frame still
// being written is left for the next call; damage is skipped to the next
// valid frame and counted. Memory is one window (4 MiB, grown only to fit
// the largest frame), whatever the file size.
//
// TraceTail follows every *.gpscope file of an output directory (files that
// appear later included) and keeps the numbers of the launcher's live
// progress line: processes, events, bytes, drops.
//
//   TraceTail tail("/out");
//   tail.SkipExisting();            // count only what this run appends
//   while (running) { tail.Poll(); Render(tail.stats()); sleep(500 ms); }
//   std::vector<std::string> files = tail.touched_files();
//
// Used by the launcher (`gpscope run` / `attach`: its own output) and the
// node monitor (`--traces DIR`: directories other jobs write to, read with
// FollowPolicy::trusted_only, docs/security.md).
//
// Thread model: single-threaded (the launcher's main thread; the monitor's
// window thread).
#ifndef GPSCOPE_TOOLS_READER_TRACE_TAIL_H_
#define GPSCOPE_TOOLS_READER_TRACE_TAIL_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpscope/trace.pb.h"

namespace gpscope::reader {

class FrameVisitor {
 public:
  virtual ~FrameVisitor() = default;
  // `frame` (header + payload, frame_bytes long) starts at file_offset;
  // both it and `chunk` live until the call returns.
  virtual void OnFrame(uint64_t file_offset, const uint8_t* frame, size_t frame_bytes,
                       const proto::Chunk& chunk) = 0;
};

// Which files a follower reads. The launcher reads what its own run wrote.
// The node monitor reads a directory that jobs of any user may write to:
// with trusted_only, a symbolic link (O_NOFOLLOW), anything but a regular
// file, or a file that belongs to neither `uid` nor root is refused, as the
// writers refuse such files (common/safe_path.h), before any byte is read.
struct FollowPolicy {
  bool trusted_only = false;
  uid_t uid = 0;  // trusted_only: the reader's euid
};

class FrameFollower {
 public:
  explicit FrameFollower(std::string path, size_t window_bytes = 4u << 20,
                         FollowPolicy policy = {});
  ~FrameFollower();
  FrameFollower(const FrameFollower&) = delete;
  FrameFollower& operator=(const FrameFollower&) = delete;

  // Reads the complete frames in [offset(), min(end of file, limit)). Not OK
  // when the file cannot be read or is not a gpscope trace (then later
  // calls return the same error).
  absl::Status ReadNew(FrameVisitor& visitor, uint64_t limit = UINT64_MAX);

  // Next byte to read; 0 before the file header was checked.
  uint64_t offset() const { return offset_; }
  // Starts (or restarts) reading at `offset` (a frame boundary, >= 16), or
  // at the first frame when 0.
  void set_offset(uint64_t offset) { offset_ = offset; }
  uint64_t damaged_regions() const { return damaged_regions_; }
  const std::string& path() const { return path_; }

 private:
  absl::Status CheckHeader(int fd, uint64_t size);
  bool EnsureCapacity(size_t bytes);

  std::string path_;
  size_t window_bytes_;
  FollowPolicy policy_;
  uint64_t offset_ = 0;
  uint64_t damaged_regions_ = 0;
  absl::Status sticky_error_;
  // [file header][frames...]: the reader gets whole files to parse.
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
};

// Paths of the *.gpscope files in `dir` (not hidden ones), sorted; empty
// when it cannot be listed.
std::vector<std::string> ListTraceFilesIn(const std::string& dir);

struct TailStats {
  uint64_t files = 0;            // trace files that received frames
  uint64_t processes = 0;        // distinct processes seen
  uint64_t processes_ended = 0;  // of which wrote their end chunk
  uint64_t frames = 0;
  uint64_t bytes = 0;   // frame bytes read (appended since SkipExisting)
  uint64_t events = 0;  // kernels, copies, memsets, syncs, API calls, NVTX, overheads
  uint64_t metric_samples = 0;
  uint64_t drops = 0;  // records lost, all reasons (DropNotice counts)
  uint64_t damaged_regions = 0;
  uint64_t unreadable_files = 0;  // not gpscope traces, or I/O errors
};

class TraceTail {
 public:
  explicit TraceTail(std::string dir);
  ~TraceTail();

  // Marks what the directory's trace files hold now as read: stats and
  // touched_files() then cover only what is appended later.
  void SkipExisting();
  // Lists the directory (new files are followed from their start) and reads
  // what was appended to each since the last call.
  void Poll();

  const TailStats& stats() const { return stats_; }
  // Files that received at least one frame since SkipExisting(), sorted.
  std::vector<std::string> touched_files() const;
  // Files whose size differs from what SkipExisting() saw, or that are new,
  // sorted. Needs no Poll() (no decoding): what the run wrote to.
  std::vector<std::string> ChangedFiles() const;
  // Paths of the directory's *.gpscope files now, sorted.
  std::vector<std::string> ListTraceFiles() const;

 private:
  class Counter;
  std::string dir_;
  std::map<std::string, std::unique_ptr<FrameFollower>> followers_;
  std::set<std::string> touched_;
  std::set<std::string> unreadable_;
  std::map<std::string, uint64_t> sizes_at_skip_;
  std::unique_ptr<Counter> counter_;
  TailStats stats_;
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_TRACE_TAIL_H_
