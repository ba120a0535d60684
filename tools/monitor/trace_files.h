// tools/monitor/trace_files.h: the node monitor's trace files: names,
// rotation by size and age, and retention.
//
// Each file is a complete trace on its own (file header, a ProcessHeader
// chunk naming the monitor, then batches, then an end chunk when it is
// closed), so any one file can be read, copied or deleted alone. Files are
// named "gpscope-monitor_<host>_<UTC yyyymmddThhmmssZ>-<nnn>.gpscope"; the
// name sorts in creation order, and retention deletes the oldest of this
// host's files in the output directory (files of other hosts or tools are
// never touched).
//
//   RotatingTraceWriter w(options, clock, &starter, &log);
//   if (!w.Open(&error)) ...
//   w.Room()->AddMetricSample(s);   // Room(): rotates first when needed
//   w.MaybeRotateByAge();           // once per sampling round
//   w.Close(end);                   // SIGTERM, --duration
//
// Limits are hard: a file never exceeds max_file_bytes. Before every record
// Room() checks bytes_on_disk + 2 * max_frame + end_frame <= max_file_bytes,
// where max_frame bounds one compressed chunk (ChunkWriter ships a chunk by
// itself when its batch fills, so one Add can land one frame) and end_frame
// bounds the end chunk; otherwise it closes the file and opens the next.
// Retention holds whenever a new file starts: the files kept plus the new
// one number at most max_files, and their sizes plus max_file_bytes (what
// the new file can grow to) add up to at most max_total_bytes.
//
// Thread model: single-threaded (the monitor's sampling thread).
#ifndef GPSCOPE_TOOLS_MONITOR_TRACE_FILES_H_
#define GPSCOPE_TOOLS_MONITOR_TRACE_FILES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/safe_path.h"
#include "proto/chunk_writer.h"
#include "proto/records.h"

namespace gpscope::monitor {

struct FileLimits {
  uint64_t max_file_bytes = 64ull << 20;
  uint64_t max_file_age_ns = 3600ull * 1000000000ull;
  uint32_t max_files = 0;        // 0: no limit on the count
  uint64_t max_total_bytes = 0;  // 0: no limit on the total
};

// "gpscope-monitor_<host>_" with the host's characters outside [A-Za-z0-9.-]
// replaced by '_'.
std::string MonitorFilePrefix(const std::string& host);
// prefix + "20261129T101500Z-000.gpscope".
std::string MonitorFileName(const std::string& prefix, uint64_t realtime_ns, uint32_t seq);

struct TraceFileEntry {
  std::string path;
  uint64_t bytes = 0;
};
// Files in `dir` whose names start with `prefix` and end in ".gpscope",
// oldest (smallest name) first.
std::vector<TraceFileEntry> ListTraceFiles(const std::string& dir, const std::string& prefix);
// Indices into `closed` (oldest first) to delete so that a new file fits
// the limits (see above). Pure.
std::vector<size_t> PickFilesToDelete(const std::vector<TraceFileEntry>& closed,
                                      const FileLimits& limits);

// The largest chunk the monitor's ChunkWriter builds for a file limit, and
// the frame bounds the size check uses.
size_t ChunkBytesFor(uint64_t max_file_bytes);
uint64_t MaxFrameBytes(size_t max_chunk_bytes);
uint64_t MaxEndFrameBytes();
// The smallest max_file_bytes that holds a file start plus one sample.
inline constexpr uint64_t kMinFileBytes = 100 * 1024;

// Writes what every file starts with (header, devices, descriptors,
// notices). Called right after a file is opened, before any Room() check.
class FileStarter {
 public:
  virtual ~FileStarter() = default;
  virtual void OnFileStart(format::ChunkWriter& writer, uint64_t process_uid) = 0;
};

struct Clocks {
  std::function<uint64_t()> realtime_ns;
  std::function<uint64_t()> monotonic_ns;
  static Clocks System();
};

class RotatingTraceWriter {
 public:
  struct Options {
    std::string dir;
    std::string prefix;  // MonitorFilePrefix(host)
    FileLimits limits;
    uint32_t pid = 0;  // written into every chunk
    int zstd_level = 3;
    mode_t file_mode = 0640;  // the files' permission bits (docs/security.md)
  };
  // `log` gets one line per rotation failure or retention problem.
  RotatingTraceWriter(const Options& options, Clocks clocks, FileStarter* starter,
                      std::ostream* log);
  ~RotatingTraceWriter();  // closes without an end chunk if still open (like a kill)
  RotatingTraceWriter(const RotatingTraceWriter&) = delete;
  RotatingTraceWriter& operator=(const RotatingTraceWriter&) = delete;

  // Creates the directory if needed (checked against other users:
  // common/safe_path.h), applies retention, opens the first file.
  bool Open(std::string* error);
  // The writer, after rotating when the next record might not fit. Null when
  // no file could be opened (the record is then dropped and counted).
  format::ChunkWriter* Room();
  // Rotates when the current file is older than max_file_age_ns.
  void MaybeRotateByAge();
  // Ships the open batch.
  void Flush();
  // Ends the current file with `end` (its counters are filled in) and closes it.
  void Close(format::ProcessEndRecord end);

  const std::string& current_path() const { return path_; }
  uint64_t current_bytes() const;
  uint64_t files_opened() const { return files_opened_; }
  uint64_t files_deleted() const { return files_deleted_; }
  uint64_t records_dropped() const { return records_dropped_; }
  uint64_t frames_failed() const;  // write errors, all files
  uint64_t bytes_written() const;  // all files

 private:
  bool OpenNext(std::string* error);
  void EndCurrent(format::ProcessEndRecord end);
  void Rotate();
  void LogOpenFailure(const std::string& error);
  void ApplyRetention();

  Options options_;
  common::OutputDir dir_;  // options_.dir, opened and checked by Open()
  Clocks clocks_;
  FileStarter* starter_;
  std::ostream* log_;
  size_t chunk_bytes_;
  uint64_t reserve_bytes_;  // 2 * max frame + end frame

  int fd_ = -1;
  std::unique_ptr<format::ChunkWriter> writer_;
  std::string path_;
  uint64_t opened_mono_ns_ = 0;
  uint64_t base_bytes_ = 0;     // on disk beyond writer_->bytes_written() (file header, torn frames)
  uint64_t start_bytes_ = 0;    // size after the file start was written
  uint64_t failed_seen_ = 0;    // writer_->frames_failed() at the last resync
  uint32_t seq_ = 0;
  uint64_t files_opened_ = 0;
  uint64_t files_deleted_ = 0;
  uint64_t records_dropped_ = 0;
  uint64_t closed_frames_failed_ = 0;
  uint64_t closed_bytes_written_ = 0;
  uint64_t next_retry_mono_ns_ = 0;  // after a failed open
  bool limit_warned_ = false;
  bool open_failure_logged_ = false;
};

}  // namespace gpscope::monitor

#endif  // GPSCOPE_TOOLS_MONITOR_TRACE_FILES_H_
