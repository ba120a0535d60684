// tools/reader/trace_reader.h: streams the chunks of gpscope trace files.
//
// Reads frames in bounded memory (a window of the file at a time, grown only
// to fit the largest frame), checks each frame's checksum, decompresses it,
// parses the gpscope.proto.Chunk and hands it to a ChunkVisitor together with
// where it came from. Damage does not stop reading: a corrupt region becomes
// one warning ("trace.gps: offset 12345: checksum mismatch, skipped 812 bytes
// to next frame") and the reader resynchronises on the next frame whose
// checksum holds; a torn last frame is reported once as truncated. Along the
// way it tracks every process (by process_uid): its header, lost frames
// (sequence gaps) and whether its end chunk arrived.
//
//   class CountKernels : public ChunkVisitor {
//     absl::Status OnChunk(const ChunkContext&, const proto::Chunk& c) override {
//       kernels += c.batch().kernels().start_delta_ns_size();
//       return absl::OkStatus();
//     }
//   };
//   CountKernels v;
//   absl::StatusOr<TraceIndex> index = ReadTraces({"node0.gpstrace"}, v);
//
// Thread model: a TraceReader and its visitor are used by one thread.
// Separate readers share nothing.
#ifndef GPSCOPE_TOOLS_READER_TRACE_READER_H_
#define GPSCOPE_TOOLS_READER_TRACE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpscope/trace.pb.h"

namespace gpscope::reader {

struct ReadOptions {
  // Bytes fetched per read; a frame larger than this grows the window to fit.
  size_t window_bytes = 4u << 20;
  // Warnings kept in TraceIndex::warnings; the rest are only counted.
  size_t max_warnings = 1000;
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

// Where a chunk came from. Valid only during ChunkVisitor::OnChunk.
struct ChunkContext {
  const FileInfo* file;
  uint64_t offset;  // byte offset of the frame in the file
  uint64_t frame_bytes;
  const ProcessInfo* process;  // already updated with this chunk (header, end, gaps)
};

class ChunkVisitor {
 public:
  virtual ~ChunkVisitor() = default;
  // Called for every valid chunk in file order; `chunk` lives until the call
  // returns. A non-OK status stops reading, and the read call returns it.
  virtual absl::Status OnChunk(const ChunkContext& context, const proto::Chunk& chunk) = 0;
  // Each recoverable problem, as it is found (also kept in TraceIndex).
  virtual void OnWarning(std::string_view warning) { (void)warning; }
};

class TraceReader {
 public:
  explicit TraceReader(ChunkVisitor& visitor, ReadOptions options = {});
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Reads one file to its end. Returns non-OK when the file cannot be read
  // at all (missing, not a gpscope trace, unknown version, I/O error; also
  // kept in the FileInfo) or when the visitor stopped (see stopped()).
  absl::Status ReadFile(const std::string& path);
  // The same for a file's content already in memory; `name` is its path in
  // messages. Used by the fuzzer and tests.
  absl::Status ReadBuffer(const std::string& name, const uint8_t* data, size_t size);

  // True once the visitor returned non-OK; later reads return at once.
  bool stopped() const;
  const TraceIndex& index() const;
  TraceIndex TakeIndex();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads every file in order. Files that cannot be read are recorded in
// TraceIndex::files[i].status (see FirstFileError) and the rest are still
// read; the only error returned is the visitor's.
absl::StatusOr<TraceIndex> ReadTraces(const std::vector<std::string>& paths, ChunkVisitor& visitor,
                                      const ReadOptions& options = {});

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_TRACE_READER_H_
