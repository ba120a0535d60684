// proto/batch_builder.cc: see batch_builder.h. Field numbers below are those
// of proto/gpscope/trace.proto (the columnar events' come from proto/columns.h);
// tests/proto/encoder_property_test.cc checks every one against the
// protoc-generated parser.
#include "proto/batch_builder.h"

#include <algorithm>
#include <new>

namespace gpscope::format {
namespace {

constexpr uint32_t SumOfColumns() {
  uint32_t n = 0;
  for (uint32_t c : BatchBuilder::kColumnsPerKind) n += c;
  return n;
}
static_assert(SumOfColumns() == BatchBuilder::kNumColumns);
static_assert(uint32_t{BatchBuilder::kNumKinds} == uint32_t{kNumEventKinds});
// FinishChunk and the estimate count KindTagBytes per kind tag (1 or 2
// bytes: fields below 2048) and one byte per column tag (proto/columns.h
// keeps column numbers below 16).
constexpr bool KindTagsFit() {
  for (uint32_t f : BatchBuilder::kKindField) {
    if (f >= 2048) return false;
  }
  return true;
}
static_assert(KindTagsFit());

// EventBatch sub-message fields.
enum BatchField : uint32_t {
  kBatchBaseNs = 1, kBatchStrings = 2, kBatchLaunchConfigs = 3, kBatchDevices = 4,
  kBatchContexts = 5, kBatchMetricDescriptors = 15, kBatchDrops = 16,
  kBatchLostIntervals = 17, kBatchClocks = 18, kBatchCapabilities = 19,
  kBatchCuptiRefusals = 20, kBatchStackFrames = 21, kBatchStacks = 22,
  kBatchWindowSummaries = 24,
};
enum ChunkField : uint32_t {
  kChunkProcessUid = 1, kChunkPid = 2, kChunkSequence = 3,
  kChunkHeader = 4, kChunkBatch = 5, kChunkEnd = 6,
};

// proto3 leaves default values off the wire; so do we (except in repeated
// fields, where every element counts).
void PutU(WireWriter& w, uint32_t field, uint64_t v) {
  if (v != 0) w.Uint64(field, v);
}
void PutI32(WireWriter& w, uint32_t field, int32_t v) {
  if (v != 0) w.Int32(field, v);
}
void PutEnum(WireWriter& w, uint32_t field, uint32_t v) {
  if (v != 0) w.Enum(field, static_cast<int32_t>(v));
}
void PutBool(WireWriter& w, uint32_t field, bool v) {
  if (v) w.Bool(field, true);
}
void PutFixed64(WireWriter& w, uint32_t field, uint64_t v) {
  if (v != 0) w.Fixed64(field, v);
}
void PutStr(WireWriter& w, uint32_t field, StringRef s) {
  if (s.size != 0) w.String(field, s.data, s.size);
}
void PutF64(WireWriter& w, uint32_t field, double v) {
  if (v != 0) w.Double(field, v);
}

void EncodeClock(WireWriter& w, uint32_t field, const ClockRecord& r) {
  auto n = w.BeginNested(field);
  PutU(w, 1, r.cupti_ns);
  PutU(w, 2, r.realtime_ns);
  PutU(w, 3, r.monotonic_ns);
  w.EndNested(n);
}

void EncodeKeyValue(WireWriter& w, uint32_t field, const KeyValueRecord& r) {
  auto n = w.BeginNested(field);
  PutStr(w, 1, r.key);
  PutStr(w, 2, r.value);
  w.EndNested(n);
}

void EncodeDevice(WireWriter& w, uint32_t field, const DeviceRecord& r) {
  auto n = w.BeginNested(field);
  PutU(w, 1, r.device_id);
  PutStr(w, 2, r.name);
  PutStr(w, 3, r.uuid);
  PutStr(w, 4, r.pci_bus_id);
  PutU(w, 5, r.compute_capability_major);
  PutU(w, 6, r.compute_capability_minor);
  PutU(w, 7, r.sm_count);
  PutU(w, 8, r.global_memory_bytes);
  PutU(w, 9, r.global_memory_bandwidth_kbps);
  PutU(w, 10, r.core_clock_khz);
  PutU(w, 11, r.max_threads_per_sm);
  PutU(w, 12, r.max_blocks_per_sm);
  PutU(w, 13, r.max_registers_per_sm);
  PutU(w, 14, r.max_shared_memory_per_sm_bytes);
  PutU(w, 15, r.l2_cache_bytes);
  w.EndNested(n);
}

}  // namespace

// ------------------------------------------------------------ BatchBuilder --

BatchBuilder::BatchBuilder(size_t max_chunk_bytes)
    : max_chunk_bytes_(std::clamp(max_chunk_bytes, kMinChunkBytes, kMaxNestedBytes)) {
  // A column leaves a block only when fewer than kMaxVarintBytes are free,
  // so every full block holds > kBlockBytes - kMaxVarintBytes bytes of
  // output. Add to that one open block per column plus the blocks one event
  // may open, and the pool never runs dry before the byte budget does.
  num_blocks_ = max_chunk_bytes_ / (kBlockBytes - kMaxVarintBytes + 1) + kNumColumns + 16;
  pool_.reset(new (std::nothrow) uint8_t[num_blocks_ * kBlockBytes]);
  block_used_.reset(new (std::nothrow) uint32_t[num_blocks_]);
  block_next_.reset(new (std::nothrow) uint32_t[num_blocks_]);
  side_.reset(new (std::nothrow) uint8_t[max_chunk_bytes_]);
  if (!block_used_ || !block_next_ || !side_) pool_.reset();
  if (!pool_) max_chunk_bytes_ = 0;  // every admission test fails
  Begin(0);
}

void BatchBuilder::Begin(uint64_t base_ns) {
  base_ns_ = base_ns;
  side_bytes_ = 0;
  next_free_block_ = 0;
  used_bytes_ = kChunkOverheadBytes;
  event_count_ = 0;
  for (uint32_t i = 0; i < kNumColumns; ++i) {
    const uint64_t origin = kColumnWires[i] == Wire::kTimeDelta ? base_ns : 0;
    columns_[i] = Column{nullptr, nullptr, 0, 0, 0, origin};
  }
  for (uint64_t& n : count_) n = 0;
}

// Inlined into each kind's Append(), where k is a constant.
inline bool BatchBuilder::BeginEvent(Kind k) {
  // Worst case of the event itself plus, for a kind's first event, its tag,
  // 4-byte length and every column's tag and 4-byte length.
  const size_t header_bytes =
      count_[k] == 0 ? (1 + kNestedLengthBytes) * (1 + kColumnsPerKind[k]) + KindTagBytes(k) - 1
                     : 0;
  const size_t need = kColumnsPerKind[k] * kMaxVarintBytes + header_bytes;
  if (used_bytes_ + need > max_chunk_bytes_ || num_blocks_ - next_free_block_ < kColumnsPerKind[k]) {
    return false;
  }
  used_bytes_ += header_bytes;
  ++count_[k];
  ++event_count_;
  return true;
}

void BatchBuilder::NextBlock(Column& c) {
  const uint32_t b = static_cast<uint32_t>(next_free_block_++);
  if (c.pos == nullptr) {
    c.first_block = b;
  } else {
    block_used_[c.last_block] =
        static_cast<uint32_t>(c.pos - (pool_.get() + size_t{c.last_block} * kBlockBytes));
    block_next_[c.last_block] = b;
  }
  c.last_block = b;
  c.pos = pool_.get() + size_t{b} * kBlockBytes;
  c.end = c.pos + kBlockBytes;
}

void BatchBuilder::PutDouble(Column& c, double v) {
  if (static_cast<size_t>(c.end - c.pos) < kMaxVarintBytes) NextBlock(c);
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  for (int i = 0; i < 8; ++i) c.pos[i] = static_cast<uint8_t>(bits >> (8 * i));
  c.pos += 8;
  c.bytes += 8;
  used_bytes_ += 8;
}

// ------------------------------------------ columnar events (proto/columns.h) --

template <Wire W, typename Event, typename T>
inline void BatchBuilder::PutColumn(Column& c, const Event& e, T v) {
  if constexpr (W == Wire::kTimeDelta) {
    // Against the column's previous value, mod 2^64: timestamps may go back.
    Put(c, ZigZagEncode64(static_cast<int64_t>(v - c.previous)));
    c.previous = v;
  } else if constexpr (W == Wire::kDuration) {
    Put(c, v - e.start_ns);
  } else if constexpr (W == Wire::kCorrelationDelta) {
    Put(c, ZigZagEncode64(static_cast<int64_t>(v) - static_cast<int64_t>(c.previous)));
    c.previous = v;
  } else if constexpr (W == Wire::kUint32 || W == Wire::kUint64) {
    Put(c, v);
  } else if constexpr (W == Wire::kEnum) {
    // Enums are int32 on the wire: sign-extend like libprotobuf does.
    Put(c, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))));
  } else {
    static_assert(W == Wire::kDouble);
    PutDouble(c, v);
  }
}

#define GPSCOPE_ENCODE_COLUMN(number, name, wire, type, member) \
  PutColumn<Wire::wire>(*c++, e, e.member);
// Inlined into the Add*() of its kind (one call per event, as ever).
#define GPSCOPE_ENCODE_KIND(Name, Message, field, number, Event, COLUMNS) \
  [[gnu::always_inline]] inline bool BatchBuilder::Append(const Event& e) { \
    if (!BeginEvent(k##Name)) return false;                               \
    Column* c = &columns_[kKinds[k##Name].first_column];                  \
    COLUMNS(GPSCOPE_ENCODE_COLUMN)                                        \
    return true;                                                          \
  }
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_ENCODE_KIND)
#undef GPSCOPE_ENCODE_KIND
#undef GPSCOPE_ENCODE_COLUMN

bool BatchBuilder::AddKernel(const KernelEvent& e) { return Append(e); }
bool BatchBuilder::AddMemcpy(const MemcpyEvent& e) { return Append(e); }
bool BatchBuilder::AddMemset(const MemsetEvent& e) { return Append(e); }
bool BatchBuilder::AddSync(const SyncEvent& e) { return Append(e); }
bool BatchBuilder::AddApiCall(const ApiCallEvent& e) { return Append(e); }
bool BatchBuilder::AddNvtxRange(const NvtxRangeEvent& e) { return Append(e); }
bool BatchBuilder::AddNvtxMark(const NvtxMarkEvent& e) { return Append(e); }
bool BatchBuilder::AddOverhead(const OverheadEvent& e) { return Append(e); }
bool BatchBuilder::AddMetricSample(const MetricSample& e) { return Append(e); }
bool BatchBuilder::AddStackSample(const StackSampleEvent& e) { return Append(e); }

// --------------------------------------------------------- sub-messages --

template <typename Fn>
bool BatchBuilder::AddSide(Fn encode) {
  // side_ holds max_chunk_bytes_ and used_bytes_ >= side_bytes_, so the
  // writer can never pass the end of side_.
  const size_t room = used_bytes_ < max_chunk_bytes_ ? max_chunk_bytes_ - used_bytes_ : 0;
  WireWriter w(side_.get() + side_bytes_, room);
  encode(w);
  if (!w.ok()) return false;
  side_bytes_ += w.size();
  used_bytes_ += w.size();
  return true;
}

bool BatchBuilder::AddString(uint32_t id, const char* data, size_t len) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchStrings);
    PutU(w, 1, id);
    PutStr(w, 2, StringRef{data, len});
    w.EndNested(n);
  });
}

bool BatchBuilder::AddLaunchConfig(const LaunchConfigRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchLaunchConfigs);
    const uint32_t v[] = {r.id, r.grid_x, r.grid_y, r.grid_z, r.block_x, r.block_y, r.block_z,
                          r.registers_per_thread, r.static_shared_memory_bytes,
                          r.dynamic_shared_memory_bytes, r.local_memory_per_thread_bytes,
                          r.cluster_x, r.cluster_y, r.cluster_z};
    for (uint32_t i = 0; i < 14; ++i) PutU(w, i + 1, v[i]);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddDevice(const DeviceRecord& r) {
  return AddSide([&](WireWriter& w) { EncodeDevice(w, kBatchDevices, r); });
}

bool BatchBuilder::AddContext(const ContextRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchContexts);
    PutU(w, 1, r.context_id);
    PutU(w, 2, r.device_id);
    PutU(w, 3, r.null_stream_id);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddMetricDescriptor(const MetricDescriptorRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchMetricDescriptors);
    PutU(w, 1, r.id);
    PutStr(w, 2, r.name);
    PutStr(w, 3, r.unit);
    PutEnum(w, 4, r.scope);
    PutU(w, 5, r.device_id);
    PutU(w, 6, r.pid);
    PutU(w, 7, r.thread_id);
    PutStr(w, 8, r.label);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddDrop(const DropRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchDrops);
    PutEnum(w, 1, r.reason);
    PutU(w, 2, r.count);
    PutU(w, 3, r.first_ns);
    PutU(w, 4, r.last_ns);
    PutStr(w, 5, r.detail);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddLostInterval(const LostIntervalRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchLostIntervals);
    PutU(w, 1, r.start_ns);
    PutU(w, 2, r.end_ns);
    PutEnum(w, 3, r.reason);
    PutStr(w, 4, r.detail);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddClock(const ClockRecord& r) {
  return AddSide([&](WireWriter& w) { EncodeClock(w, kBatchClocks, r); });
}

bool BatchBuilder::AddCapability(const CapabilityRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchCapabilities);
    PutStr(w, 1, r.component);
    PutBool(w, 2, r.available);
    PutStr(w, 3, r.reason);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddCuptiRefusal(const CuptiRefusalRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchCuptiRefusals);
    PutU(w, 1, r.first_ns);
    PutU(w, 2, r.last_ns);
    PutU(w, 3, r.count);
    PutStr(w, 4, r.api);
    PutStr(w, 5, r.caller);
    PutU(w, 6, r.result);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddStackFrame(const StackFrameRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchStackFrames);
    PutU(w, 1, r.id);
    PutEnum(w, 2, r.kind);
    PutU(w, 3, r.file_id);
    PutU(w, 4, r.function_id);
    PutU(w, 5, r.line);
    PutU(w, 6, r.qualname_id);
    PutU(w, 7, r.build_id_id);
    PutU(w, 8, r.module_offset);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddWindowSummary(const WindowSummaryRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchWindowSummaries);
    PutFixed64(w, 1, r.process_uid);
    PutU(w, 2, r.pid);
    PutStr(w, 3, r.hostname);
    PutStr(w, 4, r.job_id);
    PutI32(w, 5, r.rank);
    PutU(w, 6, r.start_realtime_ns);
    PutU(w, 7, r.end_realtime_ns);
    PutStr(w, 8, r.close_reason);
    PutU(w, 9, r.events);
    PutU(w, 10, r.events_not_analysed);
    PutU(w, 11, r.events_dropped);
    for (size_t i = 0; i < r.gpu_count; ++i) {
      const WindowGpuRecord& g = r.gpus[i];
      auto gn = w.BeginNested(12);
      PutU(w, 1, g.device_id);
      PutStr(w, 2, g.uuid);
      PutF64(w, 3, g.idle_share);
      PutF64(w, 4, g.busy_share);
      PutF64(w, 5, g.sm_util_pct);
      PutBool(w, 6, g.sm_util_estimated);
      PutF64(w, 7, g.mem_bw_util_pct);
      PutU(w, 8, g.kernel_p50_ns);
      PutU(w, 9, g.kernel_p95_ns);
      PutU(w, 10, g.kernels);
      PutU(w, 11, g.traced_ns);
      w.EndNested(gn);
    }
    PutStr(w, 13, r.top_rule);
    PutStr(w, 14, r.top_severity);
    PutStr(w, 15, r.top_title);
    PutU(w, 16, r.top_cost_ns);
    PutF64(w, 17, r.top_cost_share);
    PutStr(w, 18, r.trace_path);
    w.EndNested(n);
  });
}

bool BatchBuilder::AddStack(const StackRecord& r) {
  return AddSide([&](WireWriter& w) {
    auto n = w.BeginNested(kBatchStacks);
    PutU(w, 1, r.id);
    if (r.frame_count != 0) {  // packed, as proto3 writes repeated scalars
      size_t len = 0;
      for (size_t i = 0; i < r.frame_count; ++i) len += VarintSize(r.frame_ids[i]);
      w.Tag(2, WireType::kLengthDelimited);
      w.Varint(len);
      for (size_t i = 0; i < r.frame_count; ++i) w.Varint(r.frame_ids[i]);
    }
    PutBool(w, 3, r.truncated);
    w.EndNested(n);
  });
}

size_t BatchBuilder::FinishChunk(uint64_t process_uid, uint32_t pid, uint64_t sequence,
                                 uint8_t* out, size_t out_cap) const {
  if (!ok()) return 0;
  // Column sizes are known, so the batch and kind lengths are exact
  // (minimal varints) rather than padded slots.
  size_t kind_bytes[kNumKinds] = {};
  size_t batch_bytes = (base_ns_ != 0 ? 9 : 0) + side_bytes_;
  for (uint32_t k = 0; k < kNumKinds; ++k) {
    if (count_[k] == 0) continue;
    for (uint32_t i = 0; i < kColumnsPerKind[k]; ++i) {
      const size_t b = columns_[kKinds[k].first_column + i].bytes;
      kind_bytes[k] += 1 + VarintSize(b) + b;
    }
    batch_bytes += KindTagBytes(static_cast<Kind>(k)) + VarintSize(kind_bytes[k]) + kind_bytes[k];
  }

  WireWriter w(out, out_cap);
  PutFixed64(w, kChunkProcessUid, process_uid);
  PutU(w, kChunkPid, pid);
  PutU(w, kChunkSequence, sequence);
  w.Tag(kChunkBatch, WireType::kLengthDelimited);
  w.Varint(batch_bytes);
  PutFixed64(w, kBatchBaseNs, base_ns_);
  w.Raw(side_.get(), side_bytes_);
  for (uint32_t k = 0; k < kNumKinds; ++k) {
    if (count_[k] == 0) continue;
    w.Tag(kKindField[k], WireType::kLengthDelimited);
    w.Varint(kind_bytes[k]);
    for (uint32_t i = 0; i < kColumnsPerKind[k]; ++i) {
      const Column& c = columns_[kKinds[k].first_column + i];
      w.Tag(kKinds[k].columns[i].number, WireType::kLengthDelimited);
      w.Varint(c.bytes);
      for (uint32_t b = c.first_block;; b = block_next_[b]) {
        const uint8_t* start = pool_.get() + size_t{b} * kBlockBytes;
        if (b == c.last_block) {
          w.Raw(start, static_cast<size_t>(c.pos - start));
          break;
        }
        w.Raw(start, block_used_[b]);
      }
    }
  }
  return w.ok() ? w.size() : 0;
}

// ------------------------------------------------------ header and end --

size_t EncodeHeaderChunk(const ProcessHeaderRecord& r, uint64_t process_uid, uint32_t pid,
                         uint8_t* out, size_t cap) {
  WireWriter w(out, cap);
  PutFixed64(w, kChunkProcessUid, process_uid);
  PutU(w, kChunkPid, pid);  // sequence is 0: left off
  auto header = w.BeginNested(kChunkHeader);
  PutU(w, 1, r.format_version);
  PutStr(w, 2, r.gpscope_version);
  PutStr(w, 3, r.hostname);
  PutU(w, 4, r.pid);
  PutU(w, 5, r.ppid);
  for (size_t i = 0; i < r.cmdline_count; ++i) w.String(6, r.cmdline[i].data, r.cmdline[i].size);
  PutStr(w, 7, r.exe_path);
  PutU(w, 8, r.start_realtime_ns);
  auto id = w.BeginNested(9);
  PutStr(w, 1, r.identity.job_id);
  PutI32(w, 2, r.identity.rank);
  PutI32(w, 3, r.identity.local_rank);
  PutI32(w, 4, r.identity.world_size);
  PutI32(w, 5, r.identity.node_rank);
  PutStr(w, 6, r.identity.launcher);
  w.EndNested(id);
  for (size_t i = 0; i < r.env_count; ++i) EncodeKeyValue(w, 10, r.env[i]);
  for (size_t i = 0; i < r.config_count; ++i) EncodeKeyValue(w, 11, r.config[i]);
  for (size_t i = 0; i < r.device_count; ++i) EncodeDevice(w, 12, r.devices[i]);
  for (size_t i = 0; i < r.clock_count; ++i) EncodeClock(w, 13, r.clocks[i]);
  PutU(w, 14, r.cuda_driver_version);
  PutU(w, 15, r.cupti_api_version);
  PutStr(w, 16, r.driver_version);
  w.EndNested(header);
  return w.ok() ? w.size() : 0;
}

size_t EncodeEndChunk(const ProcessEndRecord& r, uint64_t process_uid, uint32_t pid,
                      uint64_t sequence, uint8_t* out, size_t cap) {
  WireWriter w(out, cap);
  PutFixed64(w, kChunkProcessUid, process_uid);
  PutU(w, kChunkPid, pid);
  PutU(w, kChunkSequence, sequence);
  auto end = w.BeginNested(kChunkEnd);
  PutU(w, 1, r.end_ns);
  PutEnum(w, 2, r.reason);
  PutI32(w, 3, r.signal);
  PutU(w, 4, r.chunks_written);
  PutU(w, 5, r.events_written);
  PutU(w, 6, r.events_dropped);
  EncodeClock(w, 7, r.clock);
  PutBool(w, 8, r.flush_timed_out);
  w.EndNested(end);
  return w.ok() ? w.size() : 0;
}

}  // namespace gpscope::format
