// tools/reader/event_sink.h: what a consumer of trace files implements. The
// reader (event_reader.h) reads every file once and hands each process's
// header, batches and end to every sink of the pass, in file order, after
// it has applied their definitions to the process's tables
// (process_tables.h). So several consumers (the model, the report's
// timeline, a Chrome-trace writer...) share one pass, one decode of each
// batch, one set of tables and one clock alignment, and none of them sees a
// raw chunk.
//
//   class CountKernels : public reader::EventSink {
//     void OnBatch(const reader::ResolvedBatch& b) override {
//       for (const format::KernelEvent& k : b.events.kernels)
//         ++by_name[std::string(b.tables.String(k.name_id))];
//     }
//   };
//
// Events carry the process's own CUPTI timestamps (exact, as recorded).
// The common timebase (CLOCK_REALTIME through the process's ClockAlign) and
// the time origin every output prints are final only when the pass is over
// (ReadResult::timebase): later clock snapshots refine the alignment of
// earlier events. A sink that must write times while events arrive (dump,
// export) gets the final timebase before the pass from ScanTimebase().
//
// Thread model: the reader calls a sink from one thread, one batch at a
// time, in file order; a batch's data lives until the call returns.
#ifndef GPSCOPE_TOOLS_READER_EVENT_SINK_H_
#define GPSCOPE_TOOLS_READER_EVENT_SINK_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gpscope/trace.pb.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/process_tables.h"
#include "tools/reader/trace_index.h"

namespace gpscope::reader {

// Where a chunk came from.
struct ChunkPlace {
  const FileInfo* file = nullptr;
  uint64_t offset = 0;  // byte offset of its frame in the file
  const ProcessInfo* process = nullptr;  // updated with this chunk (header, end, gaps)
};

// One EventBatch of one process, resolved.
struct ResolvedBatch {
  const ProcessTables& tables;    // holds this batch's definitions and clocks already
  const proto::EventBatch& batch;  // its notices: drops, lost intervals, capabilities
  const ChunkPlace& place;
  // OK, or why its columns did not decode (then `events` is empty; the
  // definitions and notices still count).
  const absl::Status& decode_status;
  const DecodedBatch& events;  // timestamps in the process's CUPTI ns
  // Per GPU op, the index into tables.streams() of its stream, or
  // kNoStream when the process has more streams or devices than the
  // analyzer keeps (limits.h): such ops are counted, not analysed.
  // Resolved only when a sink of the pass wants them (EventSink::
  // WantsStreams); otherwise empty, and tables.streams() stays empty.
  const std::vector<uint32_t>& kernel_streams;
  const std::vector<uint32_t>& memcpy_streams;
  const std::vector<uint32_t>& memset_streams;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  // A process's header chunk (its clocks and devices are in `tables`).
  virtual void OnHeader(const ProcessTables& tables, const proto::ProcessHeader& header,
                        const ChunkPlace& place) {
    (void)tables, (void)header, (void)place;
  }
  virtual void OnBatch(const ResolvedBatch& batch) = 0;
  // A process's end record (its clock is in `tables`).
  virtual void OnEnd(const ProcessTables& tables, const proto::ProcessEnd& end,
                     const ChunkPlace& place) {
    (void)tables, (void)end, (void)place;
  }
  // Each recoverable problem, as the reader finds it (also kept in TraceIndex).
  virtual void OnWarning(std::string_view warning) { (void)warning; }
  // Whether OnBatch reads ResolvedBatch's *_streams (or tables.streams()).
  // A pass whose sinks all say no skips resolving each GPU op's stream on
  // the reading thread (the model keeps its own streams).
  virtual bool WantsStreams() const { return true; }
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_EVENT_SINK_H_
