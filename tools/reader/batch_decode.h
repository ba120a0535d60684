// tools/reader/batch_decode.h: expands a columnar EventBatch into events with
// absolute timestamps, the plain records of proto/events.h.
//
// A column's timestamps are zigzag deltas: the first relative to
// EventBatch.base_ns, each next one to the previous value of the same column.
// correlation_delta columns work the same way, starting from 0. end_ns is
// start_ns + duration_ns. Every column of a kind must have the same length;
// a batch that breaks this is rejected with the kind and column named.
//
//   DecodedBatch events;  // reuse across batches: Clear() keeps capacity
//   GPSCOPE_RETURN_IF_ERROR(DecodeBatch(chunk.batch(), &events));
//   for (const format::KernelEvent& k : events.kernels) ...
//
// Thread model: pure functions; a DecodedBatch belongs to one thread.
#ifndef GPSCOPE_TOOLS_READER_BATCH_DECODE_H_
#define GPSCOPE_TOOLS_READER_BATCH_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "gpscope/trace.pb.h"
#include "proto/events.h"

namespace gpscope::reader {

struct DecodedBatch {
  std::vector<format::KernelEvent> kernels;
  std::vector<format::MemcpyEvent> memcpys;
  std::vector<format::MemsetEvent> memsets;
  std::vector<format::SyncEvent> syncs;
  std::vector<format::ApiCallEvent> api_calls;
  std::vector<format::NvtxRangeEvent> nvtx_ranges;
  std::vector<format::NvtxMarkEvent> nvtx_marks;
  std::vector<format::OverheadEvent> overheads;
  std::vector<format::MetricSample> metrics;

  void Clear();  // keeps the vectors' capacity
  size_t event_count() const;
};

// Replaces *out with the events of `batch`. On error *out is unspecified.
absl::Status DecodeBatch(const proto::EventBatch& batch, DecodedBatch* out);

// One kind at a time; each appends to *out.
absl::Status DecodeKernels(const proto::EventBatch& batch, std::vector<format::KernelEvent>* out);
absl::Status DecodeMemcpys(const proto::EventBatch& batch, std::vector<format::MemcpyEvent>* out);
absl::Status DecodeMemsets(const proto::EventBatch& batch, std::vector<format::MemsetEvent>* out);
absl::Status DecodeSyncs(const proto::EventBatch& batch, std::vector<format::SyncEvent>* out);
absl::Status DecodeApiCalls(const proto::EventBatch& batch, std::vector<format::ApiCallEvent>* out);
absl::Status DecodeNvtxRanges(const proto::EventBatch& batch,
                              std::vector<format::NvtxRangeEvent>* out);
absl::Status DecodeNvtxMarks(const proto::EventBatch& batch,
                             std::vector<format::NvtxMarkEvent>* out);
absl::Status DecodeOverheads(const proto::EventBatch& batch,
                             std::vector<format::OverheadEvent>* out);
absl::Status DecodeMetrics(const proto::EventBatch& batch, std::vector<format::MetricSample>* out);

// Call-stack samples (issue 20, trace.proto StackSamples): not part of
// DecodeBatch (a bad stack column must not cost the batch's events).
struct StackSampleEvent {
  uint64_t timestamp_ns = 0;
  uint32_t thread_id = 0;
  uint32_t correlation_id = 0;
  uint32_t stack_id = 0;  // 0: no stack
  int trigger = 0;        // proto::StackTrigger
};
absl::Status DecodeStackSamples(const proto::EventBatch& batch, std::vector<StackSampleEvent>* out);

// Number of events in a batch (the length of each kind's first column),
// without decoding anything.
size_t CountEvents(const proto::EventBatch& batch);

// CUPTI ns -> CLOCK_REALTIME: reader::ClockAlign (clock_align.h), the one
// alignment of every output, kept per process in its ProcessTables.

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_BATCH_DECODE_H_
