// tools/reader/event_reader.h: the one pass of the offline pipeline. Reads
// trace files (trace_reader.h: frames -> checked chunks), resolves each
// process once into its ProcessTables (process_tables.h), decodes every
// batch once and hands the resolved batches to every event sink of the pass
// (event_sink.h) in file order. At the end it knows the common timebase and
// the time origin (timebase.h).
//
//   model::ModelBuilder model(options);        // an EventSink
//   model::EventTimeline timeline(options);    // another one
//   reader::ReadResult r = reader::ReadEvents(paths, {&model, &timeline});
//   // r.index: files, processes, warnings; r.timebase: the origin
//
// Per frame the work is: decompress, parse and check the chunk (limits.h),
// decode its columns (DecodeBatch), then apply its definitions to the
// tables, resolve its streams and deliver it. The first three are pure
// functions of the frame's bytes, done ahead on the reader's decode threads
// (frame_pipeline.h; decoding through ChunkVisitor::Prepare); only the last
// three depend on the frames before (per process) and run in file order on
// the caller's thread.
//
// Thread model: one thread calls it and every sink; an EventReader is used
// for one pass.
#ifndef GPSCOPE_TOOLS_READER_EVENT_READER_H_
#define GPSCOPE_TOOLS_READER_EVENT_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/reader/event_sink.h"
#include "tools/reader/process_tables.h"
#include "tools/reader/timebase.h"
#include "tools/reader/trace_index.h"

namespace gpscope::reader {

struct ReadResult {
  TraceIndex index;
  // One per process, in order of first appearance (index.processes' order).
  std::vector<std::unique_ptr<ProcessTables>> tables;
  Timebase timebase;
  const ProcessTables* FindTables(uint64_t process_uid) const;
};

class EventReader {
 public:
  explicit EventReader(std::vector<EventSink*> sinks, ReadOptions options = {});
  ~EventReader();
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;

  // As TraceReader::ReadFile / ReadBuffer: a file that cannot be read is
  // recorded in the index (and returned); reading goes on with the next.
  absl::Status ReadFile(const std::string& path);
  absl::Status ReadBuffer(const std::string& name, const uint8_t* data, size_t size);
  // Every file in order, decoding ahead across their boundaries
  // (TraceReader::ReadFiles); unreadable ones are recorded in the index.
  absl::Status ReadFiles(const std::vector<std::string>& paths);

  // Ends the pass: the index, the tables and the timebase.
  ReadResult Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads every file in order (unreadable ones are recorded in the index).
ReadResult ReadEvents(const std::vector<std::string>& paths, const std::vector<EventSink*>& sinks,
                      const ReadOptions& options = {});

// The timebase of `paths` without any sink: for the commands that write
// times while they read (dump, export), which need the origin and every
// process's final clock alignment before their first event. It reads the
// files once more.
Timebase ScanTimebase(const std::vector<std::string>& paths, const ReadOptions& options = {});

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_EVENT_READER_H_
