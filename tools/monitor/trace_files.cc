// tools/monitor/trace_files.cc: see trace_files.h.
#include "tools/monitor/trace_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/posix.h"
#include "common/raw_log.h"
#include "common/safe_text.h"
#include "proto/framing.h"
#include "zstd.h"

namespace gpscope::monitor {
namespace {

constexpr uint32_t kEndFinalize = 3;  // proto END_FINALIZE: the file was rotated
constexpr uint64_t kOpenRetryNs = 10ull * 1000000000ull;

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

Clocks Clocks::System() {
  return Clocks{[] { return common::ClockNs(CLOCK_REALTIME); },
                [] { return common::ClockNs(CLOCK_MONOTONIC); }};
}

std::string MonitorFilePrefix(const std::string& host) {
  std::string h = host.empty() ? "unknown-host" : host;
  for (char& c : h) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return "gpscope-monitor_" + h + "_";
}

std::string MonitorFileName(const std::string& prefix, uint64_t realtime_ns, uint32_t seq) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1000000000ull);
  tm utc{};
  gmtime_r(&secs, &utc);
  char stamp[64];
  std::snprintf(stamp, sizeof(stamp), "%04d%02d%02dT%02d%02d%02dZ-%03u", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, seq % 1000);
  return prefix + stamp + ".gpscope";
}

std::vector<TraceFileEntry> ListTraceFiles(const std::string& dir, const std::string& prefix) {
  std::vector<TraceFileEntry> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || !EndsWith(name, ".gpscope")) continue;
    TraceFileEntry entry;
    entry.path = dir + "/" + name;
    struct stat st;
    // lstat: a link is never one of ours (nor followed by retention).
    if (lstat(entry.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entry.bytes = static_cast<uint64_t>(st.st_size);
    out.push_back(std::move(entry));
  }
  closedir(d);
  std::sort(out.begin(), out.end(),
            [](const TraceFileEntry& a, const TraceFileEntry& b) { return a.path < b.path; });
  return out;
}

std::vector<size_t> PickFilesToDelete(const std::vector<TraceFileEntry>& closed,
                                      const FileLimits& limits) {
  uint64_t total = 0;
  for (const TraceFileEntry& e : closed) total += e.bytes;
  std::vector<size_t> out;
  size_t kept = closed.size();
  for (size_t i = 0; i < closed.size(); ++i) {
    const bool too_many = limits.max_files != 0 && kept + 1 > limits.max_files;
    const bool too_big = limits.max_total_bytes != 0 &&
                         total + limits.max_file_bytes > limits.max_total_bytes;
    if (!too_many && !too_big) break;
    out.push_back(i);
    total -= closed[i].bytes;
    --kept;
  }
  return out;
}

size_t ChunkBytesFor(uint64_t max_file_bytes) {
  return static_cast<size_t>(std::clamp<uint64_t>(max_file_bytes / 16, 4096, 64 * 1024));
}

uint64_t MaxFrameBytes(size_t max_chunk_bytes) {
  return format::kFrameHeaderBytes + ZSTD_compressBound(max_chunk_bytes);
}

// The end chunk is a few varints and one clock snapshot: well under 1 KiB raw.
uint64_t MaxEndFrameBytes() { return format::kFrameHeaderBytes + ZSTD_compressBound(1024); }

RotatingTraceWriter::RotatingTraceWriter(const Options& options, Clocks clocks,
                                         FileStarter* starter, std::ostream* log)
    : options_(options),
      clocks_(std::move(clocks)),
      starter_(starter),
      log_(log),
      chunk_bytes_(ChunkBytesFor(options.limits.max_file_bytes)),
      reserve_bytes_(2 * MaxFrameBytes(chunk_bytes_) + MaxEndFrameBytes()) {}

RotatingTraceWriter::~RotatingTraceWriter() {
  if (writer_ != nullptr) writer_->Flush();
  if (fd_ >= 0) close(fd_);
}

uint64_t RotatingTraceWriter::current_bytes() const {
  return writer_ != nullptr ? base_bytes_ + writer_->bytes_written() : 0;
}

uint64_t RotatingTraceWriter::frames_failed() const {
  return closed_frames_failed_ + (writer_ != nullptr ? writer_->frames_failed() : 0);
}

uint64_t RotatingTraceWriter::bytes_written() const {
  return closed_bytes_written_ + (writer_ != nullptr ? writer_->bytes_written() : 0);
}

bool RotatingTraceWriter::Open(std::string* error) {
  // Opened once and checked against other users (common/safe_path.h); files
  // are created inside this descriptor, so a renamed path cannot redirect them.
  std::string why;
  if (!common::OpenOutputDir(options_.dir, common::DirModeFor(options_.file_mode), geteuid(),
                             &dir_, &why)) {
    *error = why;
    return false;
  }
  return OpenNext(error);
}

void RotatingTraceWriter::ApplyRetention() {
  const std::vector<TraceFileEntry> closed = ListTraceFiles(dir_.path(), options_.prefix);
  for (size_t i : PickFilesToDelete(closed, options_.limits)) {
    // Only our own files, by name inside the checked directory.
    const std::string name = closed[i].path.substr(closed[i].path.rfind('/') + 1);
    struct stat st;
    if (fstatat(dir_.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid()) {
      continue;
    }
    if (unlinkat(dir_.fd(), name.c_str(), 0) == 0) {
      ++files_deleted_;
    } else if (log_ != nullptr) {
      *log_ << "gpscope-monitor: retention: cannot delete " << common::SanitizeText(closed[i].path)
            << ": "
            << strerror(errno) << "\n";
    }
  }
}

bool RotatingTraceWriter::OpenNext(std::string* error) {
  ApplyRetention();
  std::string name;
  const uint64_t now = clocks_.realtime_ns();
  int fd = -1;
  for (int tries = 0; tries < 1000 && fd < 0; ++tries) {
    name = MonitorFileName(options_.prefix, now, seq_++);
    struct stat st;
    if (fstatat(dir_.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;  // taken
    bool foreign = false;
    fd = common::OpenTraceFileIn(dir_, name, options_.file_mode, geteuid(), &foreign, error);
    if (fd < 0 && !foreign) break;  // foreign: planted meanwhile; the next name
  }
  if (fd < 0) {
    next_retry_mono_ns_ = clocks_.monotonic_ns() + kOpenRetryNs;
    return false;
  }
  const std::string path = dir_.path() + "/" + name;
  struct stat st;
  const uint64_t on_disk = fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size)
                                               : format::kFileHeaderBytes;
  const uint64_t uid = common::RandomUid();
  format::ChunkWriter::Options wopt;
  wopt.log_error = common::RawLogError;
  wopt.max_chunk_bytes = chunk_bytes_;
  wopt.zstd_level = options_.zstd_level;
  auto writer = std::make_unique<format::ChunkWriter>(fd, uid, options_.pid, wopt);
  if (!writer->ok()) {
    close(fd);
    unlinkat(dir_.fd(), name.c_str(), 0);
    *error = path + ": out of memory for the trace writer";
    return false;
  }
  fd_ = fd;
  writer_ = std::move(writer);
  path_ = path;
  base_bytes_ = on_disk;
  failed_seen_ = 0;
  opened_mono_ns_ = clocks_.monotonic_ns();
  open_failure_logged_ = false;
  ++files_opened_;
  if (starter_ != nullptr) starter_->OnFileStart(*writer_, uid);
  writer_->Flush();  // the start lands as its own frames
  start_bytes_ = current_bytes();
  return true;
}

void RotatingTraceWriter::EndCurrent(format::ProcessEndRecord end) {
  if (writer_ == nullptr) return;
  if (end.end_ns == 0) end.end_ns = clocks_.realtime_ns();
  if (end.clock.realtime_ns == 0) {
    end.clock = format::ClockRecord{0, end.end_ns, clocks_.monotonic_ns()};
  }
  writer_->WriteEnd(end);
  closed_frames_failed_ += writer_->frames_failed();
  closed_bytes_written_ += writer_->bytes_written();
  writer_.reset();
  close(fd_);
  fd_ = -1;
}

void RotatingTraceWriter::Rotate() {
  format::ProcessEndRecord end{};
  end.reason = kEndFinalize;
  EndCurrent(end);
  std::string error;
  if (!OpenNext(&error)) LogOpenFailure(error);
}

void RotatingTraceWriter::LogOpenFailure(const std::string& error) {
  if (open_failure_logged_ || log_ == nullptr) return;
  *log_ << "gpscope-monitor: cannot open the next trace file: " << common::SanitizeText(error)
        << "; samples are dropped until it can (retrying every 10 s, logged once)\n";
  open_failure_logged_ = true;
}

format::ChunkWriter* RotatingTraceWriter::Room() {
  if (writer_ == nullptr) {
    std::string error;
    if (clocks_.monotonic_ns() < next_retry_mono_ns_ || !OpenNext(&error)) {
      if (!error.empty()) LogOpenFailure(error);
      ++records_dropped_;
      return nullptr;
    }
  }
  if (writer_->frames_failed() != failed_seen_) {
    // A failed write may have left a torn frame: count what is really there.
    failed_seen_ = writer_->frames_failed();
    struct stat st;
    if (fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) >= writer_->bytes_written()) {
      base_bytes_ = static_cast<uint64_t>(st.st_size) - writer_->bytes_written();
    }
  }
  if (current_bytes() + reserve_bytes_ <= options_.limits.max_file_bytes) return writer_.get();
  if (current_bytes() <= start_bytes_) {
    // Nothing but the file start fits under the limit: a new file would not
    // help. Drop rather than exceed the limit.
    if (!limit_warned_ && log_ != nullptr) {
      *log_ << "gpscope-monitor: --max-file-mb is too small for the metric definitions each file "
               "starts with; samples are dropped\n";
      limit_warned_ = true;
    }
    ++records_dropped_;
    return nullptr;
  }
  Rotate();
  if (writer_ == nullptr) {
    ++records_dropped_;
    return nullptr;
  }
  return Room();
}

void RotatingTraceWriter::MaybeRotateByAge() {
  if (writer_ == nullptr) return;
  if (clocks_.monotonic_ns() - opened_mono_ns_ < options_.limits.max_file_age_ns) return;
  Rotate();
}

void RotatingTraceWriter::Flush() {
  if (writer_ != nullptr) writer_->Flush();
}

void RotatingTraceWriter::Close(format::ProcessEndRecord end) { EndCurrent(end); }

}  // namespace gpscope::monitor
