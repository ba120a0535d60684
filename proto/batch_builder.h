// proto/batch_builder.h: builds serialized gpscope.proto.Chunk messages
// (proto/gpscope/trace.proto) without libprotobuf and, after construction,
// without allocating.
//
// BatchBuilder turns event records (proto/events.h) into one columnar
// EventBatch, incrementally: each Add*() appends the event's fields as
// varints to per-column storage, so FinishChunk() only concatenates.
//
//   BatchBuilder b(1 << 20);             // all memory is taken here
//   b.Begin(first_event_start_ns);
//   b.AddString(7, "_Z6kernelv", 10);    // before the first event naming 7
//   if (!b.AddKernel(k)) {               // full: ship this chunk, start anew
//     size_t n = b.FinishChunk(uid, pid, seq++, out, out_cap);
//     b.Begin(k.start_ns);
//     ... re-add strings the reader has not seen, then b.AddKernel(k) ...
//   }
//
// Encoding, as the proto comments define it: per column, timestamps are
// zigzag deltas (first against base_ns, then against the previous value of
// the same column, so they may go backwards); durations are end - start
// (mod 2^64, so end < start round-trips too); correlation ids are int64
// deltas starting from 0 (proto/columns.h lists every kind's columns and
// their encodings; the Add*() of events expand it). All columns of a kind
// have one entry per event; kinds without events are left out. Strings are made valid UTF-8 (see
// proto/wire_writer.h) because libprotobuf rejects a Chunk that is not.
//
// Capacity: the constructor's max_chunk_bytes bounds FinishChunk()'s output.
// Every Add*() returns false and adds nothing when the item might not fit.
// Sub-messages are admitted exactly; events when a worst-case event of their
// kind (10 bytes a column, <= 130) still fits, plus 5 bytes per column and
// the kind's own tag and length (5 bytes; 6 for stack_samples, field 23) for
// the kind's first event. encoded_bytes_estimate() exceeds the real size
// only by the 4-byte length slots it assumes (a few hundred bytes at most).
// Memory: about 2 x max_chunk_bytes + 90 KiB, all taken by the constructor.
//
// Thread model: single-threaded (the collector's writer thread owns one).
// Add*() and Begin() never allocate, lock, log or make system calls.
#ifndef GPSCOPE_PROTO_BATCH_BUILDER_H_
#define GPSCOPE_PROTO_BATCH_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "proto/columns.h"
#include "proto/events.h"
#include "proto/records.h"
#include "proto/wire_writer.h"

namespace gpscope::format {

class BatchBuilder {
 public:
  // max_chunk_bytes is clamped to [kMinChunkBytes, kMaxNestedBytes].
  explicit BatchBuilder(size_t max_chunk_bytes);
  BatchBuilder(const BatchBuilder&) = delete;
  BatchBuilder& operator=(const BatchBuilder&) = delete;

  // False when construction could not get its memory; every Add*() then
  // fails and FinishChunk() returns 0.
  bool ok() const { return pool_ != nullptr; }
  size_t max_chunk_bytes() const { return max_chunk_bytes_; }

  // Drops everything added so far and starts a batch whose base_ns is given.
  void Begin(uint64_t base_ns);

  // Repeated sub-messages of EventBatch, in call order per kind.
  bool AddString(uint32_t id, const char* data, size_t len);
  bool AddLaunchConfig(const LaunchConfigRecord& r);
  bool AddDevice(const DeviceRecord& r);
  bool AddContext(const ContextRecord& r);
  bool AddMetricDescriptor(const MetricDescriptorRecord& r);
  bool AddDrop(const DropRecord& r);
  bool AddLostInterval(const LostIntervalRecord& r);
  bool AddClock(const ClockRecord& r);
  bool AddCapability(const CapabilityRecord& r);
  bool AddCuptiRefusal(const CuptiRefusalRecord& r);
  bool AddStackFrame(const StackFrameRecord& r);
  bool AddStack(const StackRecord& r);
  // Written only by the node monitor (its window summaries, issue 24).
  bool AddWindowSummary(const WindowSummaryRecord& r);

  // Columnar events.
  bool AddKernel(const KernelEvent& e);
  bool AddMemcpy(const MemcpyEvent& e);
  bool AddMemset(const MemsetEvent& e);
  bool AddSync(const SyncEvent& e);
  bool AddApiCall(const ApiCallEvent& e);
  bool AddNvtxRange(const NvtxRangeEvent& e);
  bool AddNvtxMark(const NvtxMarkEvent& e);
  bool AddOverhead(const OverheadEvent& e);
  bool AddMetricSample(const MetricSample& e);
  bool AddStackSample(const StackSampleEvent& e);

  // Columnar events added since Begin() (sub-messages not counted).
  size_t event_count() const { return event_count_; }
  // Upper bound of FinishChunk()'s result; never above max_chunk_bytes().
  size_t encoded_bytes_estimate() const { return used_bytes_; }

  // Writes Chunk{process_uid, pid, sequence, batch} to out. Returns its size,
  // or 0 (out holding garbage) when out_cap is too small. Does not reset:
  // call Begin() before adding the next batch.
  size_t FinishChunk(uint64_t process_uid, uint32_t pid, uint64_t sequence, uint8_t* out,
                     size_t out_cap) const;

  // One per event kind of proto/columns.h, in its order: kKernels, kMemcpys,
  // kMemsets, kSyncs, kApiCalls, kNvtxRanges, kNvtxMarks, kOverheads,
  // kMetrics, kStackSamples.
  enum Kind : uint32_t {
#define GPSCOPE_BATCH_BUILDER_KIND(Name, Message, field, number, Event, COLUMNS) k##Name,
    GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_BATCH_BUILDER_KIND)
#undef GPSCOPE_BATCH_BUILDER_KIND
    kNumKinds
  };
  static constexpr uint32_t kColumnsPerKind[kNumKinds] = {
#define GPSCOPE_BATCH_BUILDER_COLUMNS(Name, Message, field, number, Event, COLUMNS) \
  kKinds[k##Name].column_count,
      GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_BATCH_BUILDER_COLUMNS)
#undef GPSCOPE_BATCH_BUILDER_COLUMNS
  };
  static constexpr uint32_t kNumColumns = format::kNumColumns;
  // EventBatch field of each kind (6..14, stack_samples 23: a 2-byte tag).
  static constexpr uint32_t kKindField[kNumKinds] = {
#define GPSCOPE_BATCH_BUILDER_FIELD(Name, Message, field, number, Event, COLUMNS) number,
      GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_BATCH_BUILDER_FIELD)
#undef GPSCOPE_BATCH_BUILDER_FIELD
  };
  // Bytes of a kind's tag in the batch (its columns' tags are 1 byte each).
  static constexpr size_t KindTagBytes(Kind k) { return kKindField[k] < 16 ? 1 : 2; }
  static constexpr size_t kChunkOverheadBytes = 9 + 6 + 11 + 5 + 9;
  static constexpr size_t kMinChunkBytes = 256;
  // Column storage comes in blocks from one pool, so memory stays bounded
  // by max_chunk_bytes however events are spread over the kNumColumns columns.
  static constexpr size_t kBlockBytes = 1024;

 private:
  struct Column {
    uint8_t* pos;         // next write position in the last block
    uint8_t* end;         // end of the last block
    uint32_t first_block;
    uint32_t last_block;
    size_t bytes;         // encoded size of the column's values
    uint64_t previous;    // delta columns: the last value written (base_ns or 0 at Begin)
  };

  // Reserves room for one event of kind k; false when it might not fit.
  bool BeginEvent(Kind k);
  void NextBlock(Column& c);
  void Put(Column& c, uint64_t v) {
    if (static_cast<size_t>(c.end - c.pos) < kMaxVarintBytes) NextBlock(c);
    uint8_t* p = EncodeVarintUnchecked(c.pos, v);
    const size_t n = static_cast<size_t>(p - c.pos);
    c.pos = p;
    c.bytes += n;
    used_bytes_ += n;
  }
  void PutDouble(Column& c, double v);
  // One member of `e` into its column, as proto/columns.h's `wire` says.
  template <Wire W, typename Event, typename T>
  void PutColumn(Column& c, const Event& e, T v);
  // Every column of one event (the Add*() of its kind); defined by
  // expanding proto/columns.h.
#define GPSCOPE_BATCH_BUILDER_APPEND(Name, Message, field, number, Event, COLUMNS) \
  bool Append(const Event& e);
  GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_BATCH_BUILDER_APPEND)
#undef GPSCOPE_BATCH_BUILDER_APPEND
  // Encodes one sub-message into side_ via `encode(WireWriter&)`.
  template <typename Fn>
  bool AddSide(Fn encode);

  size_t max_chunk_bytes_;
  size_t num_blocks_ = 0;
  std::unique_ptr<uint8_t[]> pool_;
  std::unique_ptr<uint32_t[]> block_used_;
  std::unique_ptr<uint32_t[]> block_next_;
  std::unique_ptr<uint8_t[]> side_;  // encoded EventBatch sub-messages, tagged
  size_t side_bytes_ = 0;
  size_t next_free_block_ = 0;
  size_t used_bytes_ = 0;
  size_t event_count_ = 0;
  uint64_t base_ns_ = 0;
  Column columns_[kNumColumns];
  uint64_t count_[kNumKinds];
};

// The first chunk of a process (sequence 0). Returns its size, or 0 when cap
// is too small. Cold path; does not allocate.
size_t EncodeHeaderChunk(const ProcessHeaderRecord& r, uint64_t process_uid, uint32_t pid,
                         uint8_t* out, size_t cap);

// The last chunk of a process. Returns its size, or 0 when cap is too small.
size_t EncodeEndChunk(const ProcessEndRecord& r, uint64_t process_uid, uint32_t pid,
                      uint64_t sequence, uint8_t* out, size_t cap);

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_BATCH_BUILDER_H_
