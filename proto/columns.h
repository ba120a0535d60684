// proto/columns.h: the columns of every columnar event kind of EventBatch
// (Kernels, Memcpys, ... StackSamples in proto/gpscope/trace.proto), listed
// once. The .proto stays the one source of truth for the wire format; this
// table mirrors it for the code that cannot ask libprotobuf (the collector's
// encoder) and for the code that must agree with it column by column.
//
// Each kind is an X-macro list of rows
//   X(field_number, proto_name, wire, cpp_type, member)
// where `wire` says how the member is written into the packed column:
//   kTimeDelta         sint64: zigzag delta, the first against EventBatch.base_ns,
//                      each next against the previous value of the same column
//   kDuration          uint64: end - start (mod 2^64); the member is end_ns, the
//                      kind's first column is its start_ns
//   kCorrelationDelta  sint64: like kTimeDelta of a uint32 id, starting from 0
//   kUint32, kUint64   plain varints
//   kEnum              a trace.proto enum: int32 on the wire (sign-extended)
//   kDouble            packed fixed64 IEEE double
// The rows expand into
//   - the event records (proto/events.h), one member per row, in row order;
//   - the encoder (proto/batch_builder.cc), allocation-free;
//   - the decoder and its column checks (tools/reader/batch_decode.cc);
//   - the test builder (tests/testing/trace_builder.cc), through libprotobuf.
// tests/proto/columns_test.cc checks every row against the descriptors protoc
// generates from trace.proto, both ways (numbers, names, types, packing), so
// a column added to the .proto and not here fails a test (proto/enums.h and
// its enums_test do the same for enums).
//
// Adding a column: the field in trace.proto, one row here (rows in field
// order, numbers below 16); then the collector fills the new member.
//
// Header-only, standard headers only (no libprotobuf, no abseil): the
// collector includes it.
#ifndef GPSCOPE_PROTO_COLUMNS_H_
#define GPSCOPE_PROTO_COLUMNS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>

namespace gpscope::format {

enum class Wire : uint8_t {
  kTimeDelta,
  kDuration,
  kCorrelationDelta,
  kUint32,
  kUint64,
  kEnum,
  kDouble,
};

// ------------------------------------------------------------- the columns --
// Comments in these lists are /* */: a // comment would swallow the line's
// continuation backslash.

// Kernels: one CUDA kernel execution (CUPTI CONCURRENT_KERNEL).
#define GPSCOPE_KERNEL_COLUMNS(X)                                                \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, name_id, kUint32, uint32_t, name_id) /* InternedString id (mangled) */    \
  X(4, launch_config_id, kUint32, uint32_t, launch_config_id)                    \
  X(5, device_id, kUint32, uint32_t, device_id)                                  \
  X(6, context_id, kUint32, uint32_t, context_id)                                \
  X(7, stream_id, kUint32, uint32_t, stream_id)                                  \
  X(8, correlation_delta, kCorrelationDelta, uint32_t, correlation_id)           \
  X(9, graph_id, kUint32, uint32_t, graph_id) /* 0: not from a CUDA graph */     \
  X(10, graph_node_id, kUint64, uint64_t, graph_node_id) /* 0: not a graph */

#define GPSCOPE_MEMCPY_COLUMNS(X)                                                \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, bytes, kUint64, uint64_t, bytes)                                          \
  X(4, copy_kind, kEnum, uint32_t, copy_kind) /* MemcpyKind */                   \
  X(5, src_kind, kEnum, uint32_t, src_kind)   /* MemoryKind */                   \
  X(6, dst_kind, kEnum, uint32_t, dst_kind)   /* MemoryKind */                   \
  X(7, device_id, kUint32, uint32_t, device_id)                                  \
  X(8, context_id, kUint32, uint32_t, context_id)                                \
  X(9, stream_id, kUint32, uint32_t, stream_id)                                  \
  X(10, correlation_delta, kCorrelationDelta, uint32_t, correlation_id)          \
  X(11, flags, kUint32, uint32_t, flags) /* bit 0: async */                      \
  X(12, graph_id, kUint32, uint32_t, graph_id)                                   \
  X(13, dst_device_id, kUint32, uint32_t, dst_device_id) /* peer copies */

#define GPSCOPE_MEMSET_COLUMNS(X)                                                \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, bytes, kUint64, uint64_t, bytes)                                          \
  X(4, value, kUint32, uint32_t, value)                                          \
  X(5, memory_kind, kEnum, uint32_t, memory_kind) /* MemoryKind */               \
  X(6, device_id, kUint32, uint32_t, device_id)                                  \
  X(7, context_id, kUint32, uint32_t, context_id)                                \
  X(8, stream_id, kUint32, uint32_t, stream_id)                                  \
  X(9, correlation_delta, kCorrelationDelta, uint32_t, correlation_id)           \
  X(10, flags, kUint32, uint32_t, flags) /* bit 0: async */                      \
  X(11, graph_id, kUint32, uint32_t, graph_id)

// Syncs: host-side waits on the GPU.
#define GPSCOPE_SYNC_COLUMNS(X)                                                  \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, sync_kind, kEnum, uint32_t, sync_kind) /* SyncKind */                     \
  X(4, context_id, kUint32, uint32_t, context_id)                                \
  X(5, stream_id, kUint32, uint32_t, stream_id) /* 0xffffffff: no stream */      \
  X(6, event_id, kUint32, uint32_t, event_id)   /* 0xffffffff: no event */       \
  X(7, correlation_delta, kCorrelationDelta, uint32_t, correlation_id)           \
  X(8, thread_id, kUint32, uint32_t, thread_id)

#define GPSCOPE_API_CALL_COLUMNS(X)                                              \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, domain, kEnum, uint32_t, domain) /* ApiDomain */                          \
  X(4, cbid, kUint32, uint32_t, cbid)                                            \
  X(5, thread_id, kUint32, uint32_t, thread_id)                                  \
  X(6, correlation_delta, kCorrelationDelta, uint32_t, correlation_id)           \
  X(7, return_value, kUint32, uint32_t, return_value)                            \
  X(8, api_name_id, kUint32, uint32_t, api_name_id) /* InternedString id */

#define GPSCOPE_NVTX_RANGE_COLUMNS(X)                                            \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, name_id, kUint32, uint32_t, name_id)                                      \
  X(4, domain_id, kUint32, uint32_t, domain_id)                                  \
  X(5, thread_id, kUint32, uint32_t, thread_id)                                  \
  X(6, depth, kUint32, uint32_t, depth)

#define GPSCOPE_NVTX_MARK_COLUMNS(X)                                             \
  X(1, timestamp_delta_ns, kTimeDelta, uint64_t, timestamp_ns)                   \
  X(2, name_id, kUint32, uint32_t, name_id)                                      \
  X(3, domain_id, kUint32, uint32_t, domain_id)                                  \
  X(4, thread_id, kUint32, uint32_t, thread_id)

#define GPSCOPE_OVERHEAD_COLUMNS(X)                                              \
  X(1, start_delta_ns, kTimeDelta, uint64_t, start_ns)                           \
  X(2, duration_ns, kDuration, uint64_t, end_ns)                                 \
  X(3, overhead_kind, kEnum, uint32_t, overhead_kind) /* OverheadKind */         \
  X(4, thread_id, kUint32, uint32_t, thread_id)                                  \
  X(5, device_id, kUint32, uint32_t, device_id)

#define GPSCOPE_METRIC_COLUMNS(X)                                                \
  X(1, timestamp_delta_ns, kTimeDelta, uint64_t, timestamp_ns)                   \
  X(2, metric_id, kUint32, uint32_t, metric_id) /* MetricDescriptor id */        \
  X(3, value, kDouble, double, value)

// StackSamples: a call stack taken at a CUDA API call.
#define GPSCOPE_STACK_SAMPLE_COLUMNS(X)                                          \
  X(1, timestamp_delta_ns, kTimeDelta, uint64_t, timestamp_ns)                   \
  X(2, thread_id, kUint32, uint32_t, thread_id)                                  \
  X(3, correlation_delta, kCorrelationDelta, uint32_t, correlation_id)           \
  X(4, stack_id, kUint32, uint32_t, stack_id) /* 0: not kept (DROP_STACKS) */    \
  X(5, trigger, kEnum, uint32_t, trigger)     /* StackTrigger */

// --------------------------------------------------------------- the kinds --
// X(Name, Message, batch_field, field_number, Event, COLUMNS): the kind's
// BatchBuilder::Kind is k<Name>, its decoder reader::Decode<Name>(), its
// message proto::<Message> in EventBatch.<batch_field>.
#define GPSCOPE_EVENT_KINDS(X)                                                   \
  X(Kernels, Kernels, kernels, 6, KernelEvent, GPSCOPE_KERNEL_COLUMNS)           \
  X(Memcpys, Memcpys, memcpys, 7, MemcpyEvent, GPSCOPE_MEMCPY_COLUMNS)           \
  X(Memsets, Memsets, memsets, 8, MemsetEvent, GPSCOPE_MEMSET_COLUMNS)           \
  X(Syncs, Syncs, syncs, 9, SyncEvent, GPSCOPE_SYNC_COLUMNS)                     \
  X(ApiCalls, ApiCalls, api_calls, 10, ApiCallEvent, GPSCOPE_API_CALL_COLUMNS)   \
  X(NvtxRanges, NvtxRanges, nvtx_ranges, 11, NvtxRangeEvent,                     \
    GPSCOPE_NVTX_RANGE_COLUMNS)                                                  \
  X(NvtxMarks, NvtxMarks, nvtx_marks, 12, NvtxMarkEvent,                         \
    GPSCOPE_NVTX_MARK_COLUMNS)                                                   \
  X(Overheads, Overheads, overheads, 13, OverheadEvent, GPSCOPE_OVERHEAD_COLUMNS) \
  X(Metrics, MetricSamples, metrics, 14, MetricSample, GPSCOPE_METRIC_COLUMNS)

// Kinds the reader decodes on their own, outside DecodeBatch: a bad stack
// column must not cost the batch's events.
#define GPSCOPE_SIDE_EVENT_KINDS(X)                                              \
  X(StackSamples, StackSamples, stack_samples, 23, StackSampleEvent,             \
    GPSCOPE_STACK_SAMPLE_COLUMNS)

#define GPSCOPE_ALL_EVENT_KINDS(X) GPSCOPE_EVENT_KINDS(X) GPSCOPE_SIDE_EVENT_KINDS(X)

// --------------------------------------------------- the table as constants --

struct ColumnInfo {
  uint32_t number;   // field number in the kind's message
  const char* name;  // field name in trace.proto
  Wire wire;
};

struct KindInfo {
  const char* name;     // EventBatch field, e.g. "kernels"
  const char* message;  // message type, e.g. "Kernels"
  uint32_t number;      // EventBatch field number
  const ColumnInfo* columns;
  uint32_t column_count;
  uint32_t first_column;  // index of columns[0] among all kinds' columns
};

// kKernels, kMemcpys, ... kStackSamples (BatchBuilder::Kind has the same).
enum EventKind : uint32_t {
#define GPSCOPE_COLUMNS_KIND_ENUMERATOR(Name, Message, field, number, Event, COLUMNS) k##Name,
  GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_COLUMNS_KIND_ENUMERATOR)
#undef GPSCOPE_COLUMNS_KIND_ENUMERATOR
  kNumEventKinds
};

namespace columns_internal {
#define GPSCOPE_COLUMNS_INFO_ROW(number, name, wire, type, member) {number, #name, Wire::wire},
#define GPSCOPE_COLUMNS_INFO_ARRAY(Name, Message, field, number, Event, COLUMNS) \
  inline constexpr ColumnInfo k##Name[] = {COLUMNS(GPSCOPE_COLUMNS_INFO_ROW)};
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_COLUMNS_INFO_ARRAY)
#undef GPSCOPE_COLUMNS_INFO_ARRAY
#undef GPSCOPE_COLUMNS_INFO_ROW

#define GPSCOPE_COLUMNS_COUNT(Name, Message, field, number, Event, COLUMNS) \
  static_cast<uint32_t>(std::size(k##Name)),
inline constexpr uint32_t kCounts[] = {GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_COLUMNS_COUNT)};
#undef GPSCOPE_COLUMNS_COUNT

constexpr uint32_t FirstColumn(uint32_t kind) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < kind; ++k) n += kCounts[k];
  return n;
}
}  // namespace columns_internal

inline constexpr KindInfo kKinds[kNumEventKinds] = {
#define GPSCOPE_COLUMNS_KIND_INFO(Name, Message, field, number, Event, COLUMNS)          \
  {#field, #Message, number, columns_internal::k##Name,                                 \
   columns_internal::kCounts[k##Name], columns_internal::FirstColumn(k##Name)},
    GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_COLUMNS_KIND_INFO)
#undef GPSCOPE_COLUMNS_KIND_INFO
};

// Columns of all kinds together.
inline constexpr uint32_t kNumColumns = columns_internal::FirstColumn(kNumEventKinds);

namespace columns_internal {
constexpr std::array<Wire, kNumColumns> ColumnWires() {
  std::array<Wire, kNumColumns> w{};
  uint32_t i = 0;
  for (const KindInfo& k : kKinds) {
    for (uint32_t j = 0; j < k.column_count; ++j) w[i++] = k.columns[j].wire;
  }
  return w;
}
}  // namespace columns_internal

// The wire encoding of every column of all kinds: kColumnWires[kKinds[k].first_column + j].
inline constexpr std::array<Wire, kNumColumns> kColumnWires = columns_internal::ColumnWires();

// What every expansion relies on, checked once here.
namespace columns_internal {
constexpr bool WellFormed() {
  for (const KindInfo& k : kKinds) {
    // Rows are in field order (the encoder writes the columns in row order,
    // as libprotobuf writes fields), numbers below 16 (one byte of tag each).
    for (uint32_t j = 0; j < k.column_count; ++j) {
      const uint32_t previous = j == 0 ? 0 : k.columns[j - 1].number;
      if (k.columns[j].number <= previous || k.columns[j].number > 15) return false;
    }
    // The first column is the kind's timestamp: its length is the kind's
    // event count, and kDuration reads the start it decoded.
    if (k.column_count == 0 || k.columns[0].wire != Wire::kTimeDelta) return false;
  }
  return true;
}
static_assert(WellFormed(), "proto/columns.h: rows in field order (1..15), a timestamp first");
}  // namespace columns_internal

// A member of type T can hold what `wire` carries.
template <Wire W, typename T>
constexpr bool WireFits() {
  switch (W) {
    case Wire::kTimeDelta:
    case Wire::kDuration:
    case Wire::kUint64:
      return std::is_same_v<T, uint64_t>;
    case Wire::kCorrelationDelta:
    case Wire::kUint32:
    case Wire::kEnum:
      return std::is_same_v<T, uint32_t>;
    case Wire::kDouble:
      return std::is_same_v<T, double>;
  }
  return false;
}

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_COLUMNS_H_
