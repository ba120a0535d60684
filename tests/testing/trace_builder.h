// tests/testing/trace_builder.h: writes synthetic gpscope traces for tests
// and benchmarks, through the libprotobuf classes (independent of the
// collector's own encoder, so tests compare two implementations; both expand
// the columns of proto/columns.h, and tests/tools/batch_columns_test.cc checks
// they write the same bytes).
//
//   TraceBuilder trace;
//   TraceBuilder::Process& p = trace.AddProcess(/*uid=*/0x1234, /*pid=*/42);
//   p.header().set_hostname("node7");
//   p.WriteHeader();
//   p.AddKernel(/*start_ns=*/1'000'000, /*duration_ns=*/5'000, "gemm_kernel");
//   p.Add(format::MemcpyEvent{...});  // absolute CUPTI ns; delta-encoded here
//   p.Flush();                        // the open batch becomes one chunk/frame
//   p.WriteEnd();
//   trace.WriteFile(path);            // or trace.bytes()
//
// Each process keeps one open EventBatch. Its base_ns is the first event's
// timestamp unless set with batch().set_base_ns() before any event.
// Thread model: single-threaded.
#ifndef GPSCOPE_TESTS_TESTING_TRACE_BUILDER_H_
#define GPSCOPE_TESTS_TESTING_TRACE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpscope/trace.pb.h"
#include "proto/columns.h"
#include "proto/events.h"
#include "proto/framing.h"

namespace gpscope::testing {

// A plausible header: hostname "testhost", one H100-like device, a clock
// snapshot mapping CUPTI ns 1e9 to realtime 1.7e18 ns.
proto::ProcessHeader DefaultHeader(uint32_t pid);

class TraceBuilder {
 public:
  class Process {
   public:
    proto::ProcessHeader& header() { return header_; }
    // Writes the header chunk (the next sequence number, normally 0).
    Process& WriteHeader();

    // Id of `text` in this process's string table; the first use adds an
    // InternedString to the open batch. Empty text is id 0.
    uint32_t Intern(std::string_view text);

    // Events with absolute CUPTI timestamps, appended to the open batch: one
    // Add() per event kind of proto/columns.h (KernelEvent, MemcpyEvent,
    // MemsetEvent, SyncEvent, ApiCallEvent, NvtxRangeEvent, NvtxMarkEvent,
    // OverheadEvent, MetricSample, StackSampleEvent), encoded as its rows say.
#define GPSCOPE_TRACE_BUILDER_ADD(Name, Message, field, number, Event, COLUMNS) \
  Process& Add(const format::Event& e);
    GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_TRACE_BUILDER_ADD)
#undef GPSCOPE_TRACE_BUILDER_ADD
    // Shorthand: device 0, context 1, the given stream, next correlation id.
    Process& AddKernel(uint64_t start_ns, uint64_t duration_ns, std::string_view name,
                       uint32_t stream_id = 7);

    // Call stacks (issue 20; trace.proto StackFrame, Stack, StackSamples):
    // each returns the new id (dense from 1 per process). A frame or stack
    // goes into the open batch; a sample joins `stack_id` to the API call
    // (thread_id, correlation_id).
    uint32_t AddPythonFrame(std::string_view file, uint32_t line, std::string_view function);
    uint32_t AddNativeFrame(std::string_view module, uint64_t module_offset,
                            std::string_view symbol = "");
    uint32_t AddStack(const std::vector<uint32_t>& frame_ids, bool truncated = false);
    Process& AddStackSample(uint64_t timestamp_ns, uint32_t thread_id, uint32_t correlation_id,
                            uint32_t stack_id, proto::StackTrigger trigger);

    // The open batch, for what has no Add(): drops, lost intervals, clocks...
    proto::EventBatch& batch() { return batch_; }
    size_t open_events() const;
    // Writes the open batch as one chunk when it holds anything.
    Process& Flush();
    // Flushes, then writes the end chunk (chunks_written filled in).
    Process& WriteEnd(proto::ProcessEnd end = {});
    // Pretends `count` chunks were written but lost: the next sequence jumps.
    Process& SkipSequence(uint64_t count = 1);
    uint64_t next_sequence() const { return next_sequence_; }
    uint64_t process_uid() const { return uid_; }

   private:
    friend class TraceBuilder;
    Process(TraceBuilder* trace, uint64_t uid, uint32_t pid);
    // One member into its column, as proto/columns.h's `wire` says.
    template <format::Wire W, typename Element, typename Event, typename T>
    void AddColumn(google::protobuf::RepeatedField<Element>* column, const Event& e, T v,
                   uint64_t& previous);
    proto::Chunk NewChunk();

    TraceBuilder* trace_;
    uint64_t uid_;
    uint32_t pid_;
    uint64_t next_sequence_ = 0;
    uint64_t chunks_written_ = 0;
    uint64_t events_written_ = 0;
    uint32_t next_correlation_ = 1;
    uint32_t next_frame_id_ = 1;
    uint32_t next_stack_id_ = 1;
    proto::ProcessHeader header_;
    proto::EventBatch batch_;
    bool base_set_ = false;
    // Each column's last value (delta columns), all kinds' columns in
    // proto/columns.h's order.
    uint64_t previous_[format::kNumColumns] = {};
    std::map<std::string, uint32_t, std::less<>> strings_;
  };

  explicit TraceBuilder(int zstd_level = 1);
  ~TraceBuilder();
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  // The returned reference stays valid for the builder's lifetime.
  Process& AddProcess(uint64_t process_uid, uint32_t pid);

  // Frames `chunk` as-is and appends it; returns the frame's offset.
  size_t AppendChunk(const proto::Chunk& chunk);
  // Appends raw bytes (garbage, a torn frame, ...).
  void AppendBytes(const void* data, size_t bytes);

  // The file so far: file header, then frames.
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  // Offset of every frame appended by AppendChunk (and so by Process).
  const std::vector<size_t>& frame_offsets() const { return frame_offsets_; }
  // Writes bytes() to `path`, replacing it. False on I/O error.
  bool WriteFile(const std::string& path) const;

 private:
  int zstd_level_;
  std::unique_ptr<format::FrameEncoder> encoder_;
  size_t encoder_max_bytes_ = 0;
  std::vector<uint8_t> bytes_;
  std::vector<size_t> frame_offsets_;
  std::vector<std::unique_ptr<Process>> processes_;
};

}  // namespace gpscope::testing

#endif  // GPSCOPE_TESTS_TESTING_TRACE_BUILDER_H_
