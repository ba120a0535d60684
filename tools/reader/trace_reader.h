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
#include "tools/reader/trace_index.h"

namespace gpscope::reader {

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
