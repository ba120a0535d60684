// tools/reader/batch_decode.h: expands a columnar EventBatch into events with
// absolute timestamps, the plain records of proto/events.h.
//
// A column's timestamps are zigzag deltas: the first relative to
// EventBatch.base_ns, each next one to the previous value of the same column.
// correlation_delta columns work the same way, starting from 0. end_ns is
// start_ns + duration_ns. Every column of a kind must have the same length;
// a batch that breaks this is rejected with the kind and column named. The
// kinds, their columns and encodings are proto/columns.h's, expanded here.
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
#include "proto/columns.h"
#include "proto/events.h"

namespace gpscope::reader {

// One vector per kind of GPSCOPE_EVENT_KINDS (proto/columns.h), named as
// its EventBatch field: kernels, memcpys, memsets, syncs, api_calls,
// nvtx_ranges, nvtx_marks, overheads, metrics.
struct DecodedBatch {
#define GPSCOPE_DECODED_BATCH_MEMBER(Name, Message, field, number, Event, COLUMNS) \
  std::vector<format::Event> field;
  GPSCOPE_EVENT_KINDS(GPSCOPE_DECODED_BATCH_MEMBER)
#undef GPSCOPE_DECODED_BATCH_MEMBER

  void Clear();  // keeps the vectors' capacity
  size_t event_count() const;
};

// Replaces *out with the events of `batch`. On error *out is unspecified.
absl::Status DecodeBatch(const proto::EventBatch& batch, DecodedBatch* out);

// One kind at a time; each appends to *out: DecodeKernels, DecodeMemcpys,
// DecodeMemsets, DecodeSyncs, DecodeApiCalls, DecodeNvtxRanges,
// DecodeNvtxMarks, DecodeOverheads, DecodeMetrics, and DecodeStackSamples.
// Call-stack samples (issue 20, trace.proto StackSamples) are not part of
// DecodeBatch: a bad stack column must not cost the batch's events.
#define GPSCOPE_DECLARE_DECODE(Name, Message, field, number, Event, COLUMNS) \
  absl::Status Decode##Name(const proto::EventBatch& batch, std::vector<format::Event>* out);
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_DECLARE_DECODE)
#undef GPSCOPE_DECLARE_DECODE

// The stack samples' record, under the name its readers know.
using StackSampleEvent = format::StackSampleEvent;

// Number of events of DecodeBatch's kinds in a batch (the length of each
// kind's first column), without decoding anything.
size_t CountEvents(const proto::EventBatch& batch);

// CUPTI ns -> CLOCK_REALTIME: reader::ClockAlign (clock_align.h), the one
// alignment of every output, kept per process in its ProcessTables.

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_BATCH_DECODE_H_
