// proto/events.h: the plain event records that the collector's writer thread
// fills from CUPTI records and hands to BatchBuilder (proto/batch_builder.h),
// which encodes them into the columnar EventBatch of proto/gpscope/trace.proto.
//
// These are fixed-size PODs: no strings, no pointers. Names and launch shapes
// are already interned to ids by the caller (InternedString / LaunchConfig
// entries are added to the batch separately, before the first event using
// them). All timestamps are CUPTI ns.
//
// Shared by inject/ (producer) and tests/tools; has no dependency on CUDA,
// CUPTI or libprotobuf.
#ifndef GPSCOPE_PROTO_EVENTS_H_
#define GPSCOPE_PROTO_EVENTS_H_

#include <cstdint>

namespace gpscope::format {

struct KernelEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t graph_node_id;   // 0 when not from a CUDA graph
  uint32_t name_id;         // InternedString id
  uint32_t launch_config_id;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t graph_id;        // 0 when not from a CUDA graph
};

struct MemcpyEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t copy_kind;       // proto MemcpyKind (== CUpti_ActivityMemcpyKind)
  uint32_t src_kind;        // proto MemoryKind (== CUpti_ActivityMemoryKind)
  uint32_t dst_kind;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t flags;           // bit 0: async
  uint32_t graph_id;
  uint32_t dst_device_id;
};

struct MemsetEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t value;
  uint32_t memory_kind;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t flags;
  uint32_t graph_id;
};

struct SyncEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t sync_kind;       // proto SyncKind
  uint32_t context_id;
  uint32_t stream_id;       // 0xffffffff when not stream-scoped
  uint32_t event_id;        // 0xffffffff when not event-scoped
  uint32_t correlation_id;
  uint32_t thread_id;
};

struct ApiCallEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t domain;          // proto ApiDomain
  uint32_t cbid;
  uint32_t thread_id;
  uint32_t correlation_id;
  uint32_t return_value;
  uint32_t api_name_id;     // InternedString id
};

struct NvtxRangeEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t name_id;
  uint32_t domain_id;
  uint32_t thread_id;
  uint32_t depth;
};

struct NvtxMarkEvent {
  uint64_t timestamp_ns;
  uint32_t name_id;
  uint32_t domain_id;
  uint32_t thread_id;
};

struct OverheadEvent {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t overhead_kind;   // proto OverheadKind
  uint32_t thread_id;
  uint32_t device_id;
};

struct MetricSample {
  uint64_t timestamp_ns;
  uint32_t metric_id;       // MetricDescriptor id
  double value;
};

// A call stack taken at a CUDA API call (EventBatch.stack_samples).
struct StackSampleEvent {
  uint64_t timestamp_ns;    // CUPTI ns at API entry
  uint32_t thread_id;       // gettid()
  uint32_t correlation_id;  // the API call's CUPTI correlation id
  uint32_t stack_id;        // Stack id; 0: not kept (counted as DROP_STACKS)
  uint32_t trigger;         // proto StackTrigger
};

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_EVENTS_H_
