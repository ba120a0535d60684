// tools/reader/trace_index.h: what the reader learned about the files and
// processes of a pass, besides their events: per file its frames, damage
// and whether the memory budget stopped reading in it; per process its
// header, lost frames (sequence gaps) and end; the warnings. Every command
// prints it (completeness, info) and every result carries it.
//
// Thread model: plain data.
#ifndef GPSCOPE_TOOLS_READER_TRACE_INDEX_H_
#define GPSCOPE_TOOLS_READER_TRACE_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpscope/trace.pb.h"

namespace gpscope::reader {

struct ReadOptions {
  // Bytes fetched per read; a frame larger than this grows the window to fit.
  size_t window_bytes = 4u << 20;
  // Warnings kept in TraceIndex::warnings; the rest are only counted.
  size_t max_warnings = 1000;
  // Threads that read the trace, the reading thread included: the other
  // decode_threads - 1 decompress, parse and decode frames ahead of it
  // (frame_pipeline.h); 0: DefaultDecodeThreads() (one per core); 1: no
  // decode thread, everything on the reading thread.
  int decode_threads = 0;
};

struct SequenceGap {
  uint64_t first_sequence = 0;  // first missing chunk
  uint64_t count = 0;           // chunks missing from there on
};

// What the reader learned about one traced process (one process_uid).
struct ProcessInfo {
  uint64_t process_uid = 0;
  uint32_t pid = 0;
  std::string path;  // file its first chunk came from
  std::optional<proto::ProcessHeader> header;
  std::optional<proto::ProcessEnd> end;  // absent: the process did not exit cleanly
  uint64_t chunks = 0;                   // chunks read
  uint64_t next_sequence = 0;            // one past the highest sequence read
  uint64_t lost_chunks = 0;              // sequence numbers never seen (sum of gaps)
  std::vector<SequenceGap> gaps;         // the first few gaps, in order
  uint64_t out_of_order_chunks = 0;      // repeated or backwards sequence numbers
};

// What the reader learned about one input file.
struct FileInfo {
  std::string path;
  absl::Status status;  // not OK: the file could not be read at all
  uint64_t file_bytes = 0;
  uint32_t format_version = 0;
  uint64_t frames = 0;           // frames with a valid checksum
  uint64_t bad_chunks = 0;       // valid frames whose payload did not decode
  uint64_t skipped_bytes = 0;    // bytes given up as corrupt or truncated
  uint64_t damaged_regions = 0;  // corrupt regions skipped (each one warning)
  bool truncated = false;        // the file ends inside a frame
  // The memory budget stopped reading: at this offset of this file (the
  // frames before it were read), or before the file was opened (not_read).
  std::optional<uint64_t> stopped_at_offset;
  bool not_read = false;
};

// Reading stopped early because the process passed its memory budget
// (limits.h): what was read before is analysed, the rest is not.
struct PartialRead {
  std::string path;  // the file where reading stopped
  uint64_t offset = 0;
  uint64_t budget_bytes = 0;        // --max-memory
  uint64_t reading_limit_bytes = 0;  // the share of it reading may use
  uint64_t resident_bytes = 0;
  // One line: where reading stopped, that the result is partial, what to do.
  std::string Message() const;
};

struct TraceIndex {
  std::vector<FileInfo> files;         // in the order read
  std::vector<ProcessInfo> processes;  // in order of first appearance
  std::vector<std::string> warnings;   // "path: offset N: what happened"
  uint64_t warnings_omitted = 0;       // beyond ReadOptions::max_warnings
  std::optional<PartialRead> partial;  // set when the memory budget stopped reading

  const ProcessInfo* FindProcess(uint64_t process_uid) const;
  // The first file that could not be read, or OK.
  absl::Status FirstFileError() const;
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_TRACE_INDEX_H_
