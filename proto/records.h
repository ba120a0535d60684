// proto/records.h: plain records for the cold, rarely-sent messages of
// proto/gpscope/trace.proto (process header and end, interned strings,
// launch shapes, devices, notices). BatchBuilder and EncodeHeaderChunk /
// EncodeEndChunk (proto/batch_builder.h) serialize them; field meanings and
// units are those of the same-named proto fields.
//
// Strings are borrowed (StringRef: pointer + length, no NUL needed, may hold
// NULs); arrays are pointer + count. Nothing is owned, so the caller keeps
// the pointed-to memory alive until the encode call returns. Enum-typed
// fields hold the proto enum value. Zero-initialize with `Record r{};`.
//
// Thread model: plain data, no behaviour.
#ifndef GPSCOPE_PROTO_RECORDS_H_
#define GPSCOPE_PROTO_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpscope::format {

struct StringRef {
  const char* data;
  size_t size;
};
// For NUL-terminated text (null gives the empty string).
inline StringRef MakeStringRef(const char* s) { return StringRef{s, s ? std::strlen(s) : 0}; }

struct KeyValueRecord {
  StringRef key;
  StringRef value;
};

struct LaunchConfigRecord {
  uint32_t id;
  uint32_t grid_x, grid_y, grid_z;
  uint32_t block_x, block_y, block_z;
  uint32_t registers_per_thread;
  uint32_t static_shared_memory_bytes;
  uint32_t dynamic_shared_memory_bytes;
  uint32_t local_memory_per_thread_bytes;
  uint32_t cluster_x, cluster_y, cluster_z;
};

struct DeviceRecord {
  uint32_t device_id;
  StringRef name;
  StringRef uuid;
  StringRef pci_bus_id;
  uint32_t compute_capability_major;
  uint32_t compute_capability_minor;
  uint32_t sm_count;
  uint64_t global_memory_bytes;
  uint64_t global_memory_bandwidth_kbps;
  uint32_t core_clock_khz;
  uint32_t max_threads_per_sm;
  uint32_t max_blocks_per_sm;
  uint32_t max_registers_per_sm;
  uint32_t max_shared_memory_per_sm_bytes;
  uint32_t l2_cache_bytes;
};

struct ContextRecord {
  uint32_t context_id;
  uint32_t device_id;
  uint32_t null_stream_id;
};

struct ClockRecord {
  uint64_t cupti_ns;
  uint64_t realtime_ns;
  uint64_t monotonic_ns;
};

struct MetricDescriptorRecord {
  uint32_t id;
  StringRef name;
  StringRef unit;
  uint32_t scope;  // proto MetricScope
  uint32_t device_id;
  uint32_t pid;
  uint32_t thread_id;
  StringRef label;
};

struct DropRecord {
  uint32_t reason;  // proto DropReason
  uint64_t count;
  uint64_t first_ns;
  uint64_t last_ns;
  StringRef detail;
};

struct LostIntervalRecord {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t reason;  // proto LostReason
  StringRef detail;
};

struct CapabilityRecord {
  StringRef component;
  bool available;
  StringRef reason;
};

// Call stacks (issue 20; docs/stacks.md): EventBatch.stack_frames and
// EventBatch.stacks rows, interned by the collector's writer thread.
struct StackFrameRecord {
  uint32_t id;
  uint32_t kind;         // proto FrameKind
  uint32_t file_id;      // InternedString ids
  uint32_t function_id;
  uint32_t line;
  uint32_t qualname_id;
  uint32_t build_id_id;
  uint64_t module_offset;
};

struct StackRecord {
  uint32_t id;
  const uint32_t* frame_ids;  // innermost first
  size_t frame_count;
  bool truncated;
};

struct CuptiRefusalRecord {
  uint64_t first_ns;
  uint64_t last_ns;
  uint64_t count;
  StringRef api;
  StringRef caller;
  uint32_t result;  // CUptiResult
};

// A closed capture window of a traced process, summarized by the node
// monitor (trace.proto WindowSummary / WindowGpu; issue 24).
struct WindowGpuRecord {
  uint32_t device_id;
  StringRef uuid;
  double idle_share;
  double busy_share;
  double sm_util_pct;  // -1: not available
  bool sm_util_estimated;
  double mem_bw_util_pct;  // -1: not available
  uint64_t kernel_p50_ns;
  uint64_t kernel_p95_ns;
  uint64_t kernels;
  uint64_t traced_ns;
};

struct WindowSummaryRecord {
  uint64_t process_uid;
  uint32_t pid;
  StringRef hostname;
  StringRef job_id;
  int32_t rank;  // -1 when unknown
  uint64_t start_realtime_ns;
  uint64_t end_realtime_ns;
  StringRef close_reason;
  uint64_t events;
  uint64_t events_not_analysed;
  uint64_t events_dropped;
  const WindowGpuRecord* gpus;
  size_t gpu_count;
  StringRef top_rule;
  StringRef top_severity;
  StringRef top_title;
  uint64_t top_cost_ns;
  double top_cost_share;
  StringRef trace_path;
};

struct IdentityRecord {
  StringRef job_id;
  int32_t rank;        // -1 when unknown
  int32_t local_rank;  // -1 when unknown
  int32_t world_size;  // 0 when unknown
  int32_t node_rank;   // -1 when unknown
  StringRef launcher;
};

struct ProcessHeaderRecord {
  uint32_t format_version;
  StringRef gpscope_version;
  StringRef hostname;
  uint32_t pid;
  uint32_t ppid;
  const StringRef* cmdline;
  size_t cmdline_count;
  StringRef exe_path;
  uint64_t start_realtime_ns;
  IdentityRecord identity;
  const KeyValueRecord* env;
  size_t env_count;
  const KeyValueRecord* config;
  size_t config_count;
  const DeviceRecord* devices;
  size_t device_count;
  const ClockRecord* clocks;
  size_t clock_count;
  uint32_t cuda_driver_version;
  uint32_t cupti_api_version;
  StringRef driver_version;
};

struct ProcessEndRecord {
  uint64_t end_ns;
  uint32_t reason;  // proto EndReason
  int32_t signal;
  uint64_t chunks_written;
  uint64_t events_written;
  uint64_t events_dropped;
  ClockRecord clock;  // always written
  bool flush_timed_out;
};

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_RECORDS_H_
