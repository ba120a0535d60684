// tools/reader/frame_pipeline.h: decodes the frames of a trace ahead, on a
// pool of threads, and hands them back in the order they were submitted.
//
// What a frame's payload becomes depends on its bytes alone: decompressed
// (zstd), parsed as a gpscope.proto.Chunk, cut to the analyzer's limits
// (limits.h CheckChunk), then whatever the visitor prepares from the chunk
// (ChunkVisitor::Prepare: the event reader decodes the batch's columns).
// So the trace reader (trace_reader.cc), which finds the frames and checks
// their checksums in file order, submits each valid frame here and takes
// the results back in the same order for the steps that depend on the
// frames before (process tracking, tables, event sinks).
//
//   FramePipeline pipeline(visitor, /*threads=*/4);  // 3 decode threads
//   if (pipeline.full()) ... take the front first
//   pipeline.Submit(payload, payload_bytes, raw_bytes, /*copy=*/true);
//   DecodedFrame& f = pipeline.Front();   // waits for the oldest
//   ... use f.chunk, f.prepared ...
//   pipeline.Pop();
//
// Memory is bounded by the slots: one frame each (its payload when copied,
// the decompressed bytes, the parsed chunk's arena or BatchChunkParser,
// what Prepare made), and there is one per decode thread and
// kSlotsBeyondThreads more (the one the reader is applying, one decoded
// ahead). `threads` counts the reading thread: threads - 1 decode threads.
// With threads <= 1 there is no decode thread and one slot: Submit decodes
// on the caller's thread, which is the reader's sequential behaviour
// exactly.
//
// Thread model: one thread (the reader's) calls every method; the decode
// threads touch only the slots handed to them, under mu_'s hand-over: a
// slot belongs to the reader until Submit, to a decode thread until it is
// marked done, then to the reader again (Front, Pop).
#ifndef GPSCOPE_TOOLS_READER_FRAME_PIPELINE_H_
#define GPSCOPE_TOOLS_READER_FRAME_PIPELINE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "gpscope/trace.pb.h"
#include "proto/columns.h"
#include "tools/reader/limits.h"

namespace gpscope::reader {

class ChunkVisitor;
class PreparedChunk;

// One frame, decoded as far as its bytes allow.
struct DecodedFrame {
  enum class Result { kOk, kNoDecompress, kNoChunk };
  Result result = Result::kOk;
  const char* zstd_error = nullptr;  // kNoDecompress: zstd's reason, or nullptr (size differs)
  ChunkCheck check;                  // kOk: what CheckChunk changed
  proto::Chunk* chunk = nullptr;     // kOk: the slot's (arena or BatchChunkParser), valid until Pop
  // kOk: what ChunkVisitor::Prepare made of it (nullptr when nothing).
  PreparedChunk* prepared = nullptr;
};

// The threads a reader uses by default to read a trace, the reading thread
// included: one per core this process may run on (sched_getaffinity), at
// most kMaxDecodeThreads; `threads` of them means threads - 1 decode threads
// beside the reading one. So on two cores one thread decodes frames ahead
// while the reading thread runs the consumer (the model, most of the time):
// the two overlap (bench/RESULTS.md, issue 24). Two decode threads there
// only oversubscribed the cores (session 10: the same wall time, 80 instead
// of 43 MiB). The environment's GPSCOPE_DECODE_THREADS (1..64) overrides it,
// 1 meaning none (the sequential path).
int DefaultDecodeThreads();
inline constexpr int kMaxDecodeThreads = 16;

// Parses batch chunks (Chunk.batch, the bulk of a trace) into messages it
// keeps, clears and merges into again, frame after frame, instead of fresh
// ones: libprotobuf's packed-varint reader appends column values one by one,
// so a fresh message's columns double their way up, copying at each step,
// and an arena hands out fresh memory for each frame (issue 24). The result
// is ParseFromArray's into a fresh message, presence (has_kernels()...)
// included: a scan of the chunk's and its batch's top-level tags says which
// column messages to put back before the merge (Clear() deletes them).
// Chunks the scan does not take (headers, ends, a batch field given twice or
// beside another body field, a group, a field that cannot be read to its
// end) are left to the caller (kNotTaken).
//
//   BatchChunkParser parser;
//   switch (parser.Parse(bytes, size)) {
//     case kParsed: use *parser.chunk() until the next Parse ...
//     case kFailed: not a valid chunk (ParseFromArray fails too)
//     case kNotTaken: ParseFromArray it
//   }
//
// Thread model: one thread at a time.
class BatchChunkParser {
 public:
  enum class Result { kNotTaken, kParsed, kFailed };
  BatchChunkParser();
  ~BatchChunkParser();
  BatchChunkParser(const BatchChunkParser&) = delete;
  BatchChunkParser& operator=(const BatchChunkParser&) = delete;

  Result Parse(const uint8_t* data, size_t size);
  // After kParsed: the chunk, valid (and mutable) until the next Parse.
  proto::Chunk* chunk() { return chunk_.get(); }

 private:
  void Reclaim();  // takes the batch and its columns out of chunk_, clears it

  std::unique_ptr<proto::Chunk> chunk_;
  // Detached while chunk_ does not own them.
  std::unique_ptr<proto::EventBatch> batch_;
#define GPSCOPE_BATCH_PARSER_KIND(Name, Message, field, number, Event, COLUMNS) \
  std::unique_ptr<proto::Message> field##_;
  GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_BATCH_PARSER_KIND)
#undef GPSCOPE_BATCH_PARSER_KIND
};

class FramePipeline {
 public:
  static constexpr size_t kSlotsBeyondThreads = 2;

  FramePipeline(const ChunkVisitor& visitor, int threads);
  ~FramePipeline();  // waits for the frames in flight
  FramePipeline(const FramePipeline&) = delete;
  FramePipeline& operator=(const FramePipeline&) = delete;

  bool empty() const { return order_.empty(); }
  bool full() const { return order_.size() == slots_.size(); }
  size_t slots() const { return slots_.size(); }

  // Starts decoding one frame (!full()). `payload` is read until the frame
  // is decoded: with copy, it is copied first and need not outlive the call.
  void Submit(const uint8_t* payload, uint32_t payload_bytes, uint32_t raw_bytes, bool copy);
  // Whether the oldest frame is decoded (Front would not wait).
  bool FrontReady();
  // The oldest frame (!empty()), waiting until it is decoded.
  DecodedFrame& Front();
  // Releases the oldest frame's slot.
  void Pop();
  // Forgets every frame submitted (waits for those in flight).
  void Clear();

 private:
  struct Slot;
  void Decode(Slot& slot) const;
  void Work();

  const ChunkVisitor& visitor_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<Slot*> free_;   // the reader's
  std::deque<Slot*> order_;  // submitted, oldest first (the reader's)
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // a slot was queued, or stopping
  std::condition_variable done_cv_;  // a slot was decoded
  std::deque<Slot*> queue_;          // guarded by mu_: submitted, not yet taken
  bool stopping_ = false;            // guarded by mu_
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_FRAME_PIPELINE_H_
