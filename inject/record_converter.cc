#include "inject/record_converter.h"

#include <cstdio>
#include <utility>

#include "inject/api_cbids.h"
#include "proto/enums.h"

namespace gpscope::inject {
namespace {

// Convert() copies these CUPTI values straight into the trace: the
// schema's numbers are CUPTI's (trace.proto says so); checked here.
template <typename E>
constexpr uint32_t U(E v) {
  return static_cast<uint32_t>(v);
}
static_assert(U(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) == wire::MEMCPY_HTOD &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) == wire::MEMCPY_DTOH &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA) == wire::MEMCPY_HTOA &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH) == wire::MEMCPY_ATOH &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA) == wire::MEMCPY_ATOA &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD) == wire::MEMCPY_ATOD &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA) == wire::MEMCPY_DTOA &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD) == wire::MEMCPY_DTOD &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH) == wire::MEMCPY_HTOH &&
              U(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP) == wire::MEMCPY_PTOP);
static_assert(U(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) == wire::MEMORY_PAGEABLE &&
              U(CUPTI_ACTIVITY_MEMORY_KIND_PINNED) == wire::MEMORY_PINNED &&
              U(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == wire::MEMORY_DEVICE &&
              U(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY) == wire::MEMORY_ARRAY &&
              U(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED) == wire::MEMORY_MANAGED &&
              U(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC) == wire::MEMORY_DEVICE_STATIC &&
              U(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC) == wire::MEMORY_MANAGED_STATIC);
static_assert(U(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) ==
                  wire::SYNC_EVENT_SYNCHRONIZE &&
              U(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) ==
                  wire::SYNC_STREAM_WAIT_EVENT &&
              U(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) ==
                  wire::SYNC_STREAM_SYNCHRONIZE &&
              U(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE) ==
                  wire::SYNC_CONTEXT_SYNCHRONIZE);
static_assert((U(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH) >> 16) + 1 ==
                  wire::OVERHEAD_CUPTI_BUFFER_FLUSH &&
              (U(CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT) >> 16) + 1 ==
                  wire::OVERHEAD_UVM_ACTIVITY_INIT);

// The record layouts this build reads (those of the CUPTI headers it was
// built with; Start() refuses an older libcupti).
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using PeerCopyRecord = CUpti_ActivityMemcpyPtoP4;
using MemsetRecord = CUpti_ActivityMemset4;
using SyncRecord = CUpti_ActivitySynchronization2;
using MarkerRecord = CUpti_ActivityMarker2;
using OverheadRecord = CUpti_ActivityOverhead3;
using DeviceRecord = CUpti_ActivityDevice5;
using ContextRecord = CUpti_ActivityContext3;

// The copy kinds: the fields MEMCPY, MEMCPY2 (peer to peer) and MEMSET
// records share, named alike in CUPTI's structs and in our events...
template <typename Event, typename Record>
Event CommonCopyFields(const Record& r) {
  Event e{};
  e.start_ns = r.start;
  e.end_ns = r.end;
  e.bytes = r.bytes;
  e.context_id = r.contextId;
  e.stream_id = r.streamId;
  e.correlation_id = r.correlationId;
  e.flags = r.flags;
  e.graph_id = r.graphId;
  return e;
}

// ...and what each adds.
void AddKindFields(const MemcpyRecord& m, format::MemcpyEvent* e) {
  e->copy_kind = m.copyKind;
  e->src_kind = m.srcKind;
  e->dst_kind = m.dstKind;
  e->device_id = m.deviceId;
  e->dst_device_id = m.deviceId;
  // Runtime-launched copies carry the runtime call's id separately.
  if (m.runtimeCorrelationId != 0) e->correlation_id = m.runtimeCorrelationId;
}
void AddKindFields(const PeerCopyRecord& m, format::MemcpyEvent* e) {
  e->copy_kind = m.copyKind;
  e->src_kind = m.srcKind;
  e->dst_kind = m.dstKind;
  e->device_id = m.srcDeviceId;
  e->dst_device_id = m.dstDeviceId;
}
void AddKindFields(const MemsetRecord& m, format::MemsetEvent* e) {
  e->value = m.value;
  e->memory_kind = m.memoryKind;
  e->device_id = m.deviceId;
}

template <typename R>
const R& As(const CUpti_Activity* record) {
  return *reinterpret_cast<const R*>(record);
}

uint32_t ObjectThreadId(CUpti_ActivityObjectKind kind, const CUpti_ActivityObjectKindId& id) {
  return kind == CUPTI_ACTIVITY_OBJECT_THREAD || kind == CUPTI_ACTIVITY_OBJECT_PROCESS
             ? id.pt.threadId
             : 0;
}

const char* OrEmpty(const char* s) { return s != nullptr ? s : ""; }

}  // namespace

bool RecordConverter::Skip(uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id) {
  if (start_ns != 0 && !gate_->InWindow(start_ns)) {
    ++outside_window_;
    return true;
  }
  if (start_ns == 0 || end_ns == 0 || end_ns < start_ns) {
    if (defer_untimed_ && correlation_id != 0 && deferred_count_ < kMaxDeferredRecords) {
      deferred_corr_[deferred_count_++] = correlation_id;
    } else {
      ++incomplete_records_;
    }
    return true;
  }
  if (correlation_id > last_kept_corr_) last_kept_corr_ = correlation_id;
  return false;
}

void RecordConverter::EndFlush() {
  if (!defer_untimed_) return;
  for (size_t i = 0; i < deferred_count_; ++i) {
    ++(deferred_corr_[i] > last_kept_corr_ ? outside_window_ : incomplete_records_);
  }
  deferred_count_ = 0;
  defer_untimed_ = false;
}

void RecordConverter::Convert(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return ConvertKernel(record);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return ConvertCopy<MemcpyRecord, format::MemcpyEvent>(record);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return ConvertCopy<PeerCopyRecord, format::MemcpyEvent>(record);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return ConvertCopy<MemsetRecord, format::MemsetEvent>(record);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const SyncRecord& s = As<SyncRecord>(record);
      if (Skip(s.start, s.end, s.correlationId)) return;
      format::SyncEvent e{};
      e.start_ns = s.start;
      e.end_ns = s.end;
      e.sync_kind = static_cast<uint32_t>(s.type);
      e.context_id = s.contextId;
      e.stream_id = s.streamId;
      e.event_id = s.cudaEventId;
      e.correlation_id = s.correlationId;
      writer_->AddSync(e);
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return ConvertApi(record);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return ConvertMarker(record);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return ConvertOverhead(record);
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return ConvertDevice(record);
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const ContextRecord& c = As<ContextRecord>(record);
      NoteContextDevice(context_devices_, c.deviceId, true);
      writer_->AddContext({c.contextId, c.deviceId, c.nullStreamId});
      return;
    }
    default:
      return;
  }
}

void RecordConverter::ConvertKernel(const CUpti_Activity* record) {
  const KernelRecord& k = As<KernelRecord>(record);
  ++kernel_records_;
  if (first_kernel_ns_ == 0 || k.start < first_kernel_ns_) first_kernel_ns_ = k.start;
  if (k.start > last_kernel_ns_) last_kernel_ns_ = k.start;
  if (Skip(k.start, k.end, k.correlationId)) return;
  format::LaunchConfigRecord shape{};
  shape.grid_x = static_cast<uint32_t>(k.gridX);
  shape.grid_y = static_cast<uint32_t>(k.gridY);
  shape.grid_z = static_cast<uint32_t>(k.gridZ);
  shape.block_x = static_cast<uint32_t>(k.blockX);
  shape.block_y = static_cast<uint32_t>(k.blockY);
  shape.block_z = static_cast<uint32_t>(k.blockZ);
  shape.registers_per_thread = k.registersPerThread;
  shape.static_shared_memory_bytes = static_cast<uint32_t>(k.staticSharedMemory);
  shape.dynamic_shared_memory_bytes = static_cast<uint32_t>(k.dynamicSharedMemory);
  shape.local_memory_per_thread_bytes = k.localMemoryPerThread;
  shape.cluster_x = k.clusterX;
  shape.cluster_y = k.clusterY;
  shape.cluster_z = k.clusterZ;
  format::KernelEvent e{};
  e.start_ns = k.start;
  e.end_ns = k.end;
  e.graph_node_id = k.graphNodeId;
  e.name_id = writer_->InternString(OrEmpty(k.name));
  e.launch_config_id = writer_->InternLaunchConfig(shape);
  e.device_id = k.deviceId;
  e.context_id = k.contextId;
  e.stream_id = k.streamId;
  e.correlation_id = k.correlationId;
  e.graph_id = k.graphId;
  writer_->AddKernel(e);
  last_event_ns_ = k.end;
}

// The window is decided on the record's own correlation id (for a MEMCPY
// record: the driver's, even when the event carries the runtime call's).
template <typename Record, typename Event>
void RecordConverter::ConvertCopy(const CUpti_Activity* record) {
  const Record& r = As<Record>(record);
  if (Skip(r.start, r.end, r.correlationId)) return;
  Event e = CommonCopyFields<Event>(r);
  AddKindFields(r, &e);
  Add(e);
}

void RecordConverter::ConvertApi(const CUpti_Activity* record) {
  const CUpti_ActivityAPI& a = As<CUpti_ActivityAPI>(record);
  // Only the listed calls: with the whole kinds on (a window opened
  // mid-run, CuptiSession::SetTracing) a few others can slip in.
  if (!kListedApiIds.Listed(record->kind, a.cbid)) return;
  driver_api_records_ += record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
  AddApiCall(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? wire::API_RUNTIME : wire::API_DRIVER,
             a.cbid, a.start, a.end, a.threadId, a.correlationId, a.returnValue);
}

// The callbacks are enabled for the listed calls only.
void RecordConverter::ConvertApiCall(uint32_t domain, uint32_t cbid, uint64_t start_ns,
                                     uint64_t end_ns, uint32_t thread_id, uint32_t correlation_id,
                                     uint32_t return_value) {
  AddApiCall(domain == CUPTI_CB_DOMAIN_RUNTIME_API ? wire::API_RUNTIME : wire::API_DRIVER, cbid,
             start_ns, end_ns, thread_id, correlation_id, return_value);
}

void RecordConverter::AddApiCall(uint32_t domain, uint32_t cbid, uint64_t start_ns,
                                 uint64_t end_ns, uint32_t thread_id, uint32_t correlation_id,
                                 uint32_t return_value) {
  if (Skip(start_ns, end_ns, correlation_id)) return;
  format::ApiCallEvent e{};
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.domain = domain;
  e.cbid = cbid;
  e.thread_id = thread_id;
  e.correlation_id = correlation_id;
  e.return_value = return_value;
  e.api_name_id = ApiNameId(domain, cbid);
  writer_->AddApiCall(e);
}

uint32_t RecordConverter::ApiNameId(uint32_t domain, uint32_t cbid) {
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const uint32_t id = writer_->InternString(OrEmpty(names_->ApiName(domain, cbid)));
  api_names_.emplace(key, id);
  return id;
}

void RecordConverter::ConvertMarker(const CUpti_Activity* record) {
  const MarkerRecord& m = As<MarkerRecord>(record);
  const uint32_t tid = ObjectThreadId(m.objectKind, m.objectId);
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    if (!gate_->InWindow(m.timestamp)) return;
    format::NvtxMarkEvent e{};
    e.timestamp_ns = m.timestamp;
    e.name_id = writer_->InternString(OrEmpty(m.name));
    e.domain_id = writer_->InternString(OrEmpty(m.domain));
    e.thread_id = tid;
    writer_->AddNvtxMark(e);
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    if (gate_->uses_nvtx()) gate_->OnNvtxRangeStart(OrEmpty(m.name), m.timestamp);
    if (open_ranges_.size() < kMaxOpenRanges) {
      open_ranges_[m.id] = {m.timestamp, writer_->InternString(OrEmpty(m.name)),
                            writer_->InternString(OrEmpty(m.domain)), tid,
                            gate_->uses_nvtx() && m.name ? m.name : ""};
    }
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(m.id);
    if (it == open_ranges_.end()) return;
    // Taken out before the gate runs: it may convert other buffers (and
    // their ranges) meanwhile.
    const OpenRange range = std::move(it->second);
    open_ranges_.erase(it);
    if (gate_->uses_nvtx()) gate_->OnNvtxRangeEnd(range.name, m.timestamp);
    if (!gate_->InWindow(range.start_ns)) return;
    format::NvtxRangeEvent e{};
    e.start_ns = range.start_ns;
    e.end_ns = m.timestamp;
    e.name_id = range.name_id;
    e.domain_id = range.domain_id;
    e.thread_id = range.thread_id;
    writer_->AddNvtxRange(e);
  }
}

void RecordConverter::ConvertOverhead(const CUpti_Activity* record) {
  const OverheadRecord& o = As<OverheadRecord>(record);
  if (Skip(o.start, o.end, 0)) return;
  format::OverheadEvent e{};
  e.start_ns = o.start;
  e.end_ns = o.end;
  const uint32_t k = static_cast<uint32_t>(o.overheadKind);
  // CUPTI's kinds are bits (1, 1 << 16, 2 << 16, ...); the schema's are 1, 2, 3, ...
  e.overhead_kind = k == CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER ? wire::OVERHEAD_DRIVER_COMPILER
                                                                 : (k >> 16) + 1;
  if (k == 0) e.overhead_kind = wire::OVERHEAD_UNKNOWN;
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    e.thread_id = o.objectId.pt.threadId;
  } else {
    e.device_id = o.objectId.dcs.deviceId;
  }
  writer_->AddOverhead(e);
}

void RecordConverter::ConvertDevice(const CUpti_Activity* record) {
  const DeviceRecord& d = As<DeviceRecord>(record);
  char uuid[48];
  const unsigned char* u = reinterpret_cast<const unsigned char*>(d.uuid.bytes);
  snprintf(uuid, sizeof(uuid),
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
           u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
           u[15]);
  format::DeviceRecord r{};
  r.device_id = d.id;
  r.name = format::MakeStringRef(d.name);
  r.uuid = format::MakeStringRef(uuid);
  r.compute_capability_major = d.computeCapabilityMajor;
  r.compute_capability_minor = d.computeCapabilityMinor;
  r.sm_count = d.numMultiprocessors;
  r.global_memory_bytes = d.globalMemorySize;
  r.global_memory_bandwidth_kbps = d.globalMemoryBandwidth;
  r.core_clock_khz = d.coreClockRate;
  r.max_threads_per_sm = d.maxWarpsPerMultiprocessor * d.numThreadsPerWarp;
  r.max_blocks_per_sm = d.maxBlocksPerMultiprocessor;
  r.max_registers_per_sm = d.maxRegistersPerMultiprocessor;
  r.max_shared_memory_per_sm_bytes = d.maxSharedMemoryPerMultiprocessor;
  r.l2_cache_bytes = d.l2CacheSize;
  writer_->AddDevice(r);
}

}  // namespace gpscope::inject
