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
// Frames are decompressed, parsed and checked ahead on a pool of decode
// threads (frame_pipeline.h; ReadOptions::decode_threads), and whatever the
// visitor prepares from a chunk alone (Prepare) is made there too; the
// rest (process tracking, warnings, OnChunk) happens on the caller's thread
// in file order, so what a visitor sees and the index are the same as with
// one thread, damage and hostile input included.
//
// Thread model: a TraceReader and its visitor are used by one thread,
// except ChunkVisitor::Prepare, which decode threads call. Separate readers
// share nothing.
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

// What a visitor computes from one chunk alone, ahead of OnChunk
// (ChunkVisitor::Prepare): a visitor derives its own.
class PreparedChunk {
 public:
  virtual ~PreparedChunk() = default;
};

// Where a chunk came from. Valid only during ChunkVisitor::OnChunk.
struct ChunkContext {
  const FileInfo* file;
  uint64_t offset;  // byte offset of the frame in the file
  uint64_t frame_bytes;
  const ProcessInfo* process;  // already updated with this chunk (header, end, gaps)
  // What Prepare made of this chunk (nullptr when it made nothing).
  PreparedChunk* prepared = nullptr;
};

class ChunkVisitor {
 public:
  virtual ~ChunkVisitor() = default;
  // Work that depends on the chunk alone (decoding a batch's columns), done
  // ahead on a decode thread: called after the chunk parsed and was cut to
  // the limits, before OnChunk gets it, concurrently for different chunks
  // and with OnChunk of earlier ones, so it must not touch the visitor's
  // state. *prepared is the decode slot's, kept from the frame it decoded
  // before (nullptr at first): reuse its memory. OnChunk finds it in
  // ChunkContext::prepared.
  virtual void Prepare(const proto::Chunk& chunk, std::unique_ptr<PreparedChunk>* prepared) const {
    (void)chunk, (void)prepared;
  }
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
  // Reads the files in order, as ReadFile each, but decodes ahead across
  // their boundaries. Returns non-OK only when the visitor stopped.
  absl::Status ReadFiles(const std::vector<std::string>& paths);

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
