// Property test: our allocation-free encoder (proto/batch_builder.h,
// proto/wire_writer.h) against libprotobuf's generated parser. Thousands of
// seeded random Chunks (header, batch with every column kind and every
// repeated sub-message, end) with extreme values are encoded, parsed with
// gpscope::proto::Chunk::ParseFromArray and compared field by field, with
// the delta columns decoded back to absolute values. Every iteration also
// checks that a too-small output buffer yields 0 and is never overrun.
//
// A failure names the seed and iteration: rerun with that seed to reproduce.
#include <gtest/gtest.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/wrappers.pb.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpscope/trace.pb.h"
#include "proto/batch_builder.h"
#include "proto/wire_writer.h"

namespace gpscope::format {
namespace {

constexpr uint64_t kSeed = 0x6770736370650001ull;
constexpr uint8_t kCanary = 0xA5;

// ------------------------------------------------------------- reference --

// What libprotobuf will hand back for a string we encoded: an independent
// (code point based) implementation of "replace every byte that does not
// start a well-formed UTF-8 sequence with U+FFFD".
std::string ReferenceSanitize(const std::string& s) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned b = p[i];
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = len != 0 && i + len <= n;
    for (size_t j = 1; ok && j < len; ++j) {
      ok = (p[i + j] & 0xc0) == 0x80;
      cp = (cp << 6) | (p[i + j] & 0x3f);
    }
    static constexpr uint32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMinForLen[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      i += 1;
    }
  }
  return out;
}

std::string Str(StringRef r) { return ReferenceSanitize(std::string(r.data, r.size)); }

// ---------------------------------------------------------------- values --

// Random values biased toward the edges: 0, all-ones, sign bits, varint
// length boundaries.
class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool OneIn(uint64_t n) { return Below(n) == 0; }
  bool Bool() { return rng_() & 1; }

  uint64_t U64() {
    switch (Below(9)) {
      case 0: return 0;
      case 1: return ~uint64_t{0};
      case 2: return uint64_t{1} << 63;
      case 3: return (uint64_t{1} << (7 * (1 + Below(9)))) - Below(2);  // varint boundaries
      case 4: return Below(256);
      case 5: return rng_() >> Below(64);
      default: return rng_();
    }
  }
  uint32_t U32() {
    switch (Below(8)) {
      case 0: return 0;
      case 1: return 0xffffffffu;
      case 2: return 0x7fffffffu + static_cast<uint32_t>(Below(2));
      case 3: return static_cast<uint32_t>(Below(200));
      default: return static_cast<uint32_t>(rng_() >> (32 + Below(32)));
    }
  }
  int32_t I32() { return OneIn(4) ? -1 : static_cast<int32_t>(U32()); }
  // Mostly a valid enum value, sometimes anything (proto3 enums are open).
  uint32_t Enum(uint32_t max_valid) {
    return OneIn(8) ? U32() : static_cast<uint32_t>(Below(max_valid + 1));
  }
  double Double() {
    switch (Below(8)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return std::numeric_limits<double>::infinity();
      case 3: return std::numeric_limits<double>::quiet_NaN();
      case 4: return std::numeric_limits<double>::denorm_min();
      case 5: {
        const uint64_t bits = rng_();
        double d;
        std::memcpy(&d, &bits, 8);
        return d;
      }
      default: return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
    }
  }

  // Timestamps of one column: mostly forward by a little, sometimes back,
  // sometimes to an extreme.
  uint64_t Time(uint64_t& clock_ns) {
    switch (Below(12)) {
      case 0: clock_ns = U64(); break;
      case 1: clock_ns -= Below(1'000'000); break;
      default: clock_ns += Below(2'000'000); break;
    }
    return clock_ns;
  }
  uint64_t End(uint64_t start_ns) {
    switch (Below(10)) {
      case 0: return U64();                    // anything, end < start included
      case 1: return start_ns - Below(1000);   // end before start
      default: return start_ns + Below(3'000'000);
    }
  }
  uint32_t Correlation(uint32_t& last) {
    last = OneIn(10) ? U32() : last + static_cast<uint32_t>(Below(20));
    return last;
  }

  // One code point, valid UTF-8 (NUL and all four lengths included).
  void AppendCodePoint(std::string& s) {
    uint32_t cp;
    switch (Below(4)) {
      case 0: cp = static_cast<uint32_t>(Below(0x80)); break;
      case 1: cp = static_cast<uint32_t>(0x80 + Below(0x800 - 0x80)); break;
      case 2:
        do cp = static_cast<uint32_t>(0x800 + Below(0x10000 - 0x800));
        while (cp >= 0xd800 && cp <= 0xdfff);
        break;
      default: cp = static_cast<uint32_t>(0x10000 + Below(0x110000 - 0x10000)); break;
    }
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string String(bool allow_huge) {
    std::string s;
    if (allow_huge && OneIn(4)) {
      // ~1 MiB: a random 4 KiB UTF-8 block repeated, a few bytes spoiled.
      std::string block;
      while (block.size() < 4096) AppendCodePoint(block);
      while (s.size() < (1u << 20)) s += block;
      if (Bool()) {
        for (int i = 0; i < 5; ++i) s[Below(s.size())] = static_cast<char>(0x80 + Below(128));
      }
      return s;
    }
    const size_t len = Below(40);
    switch (Below(6)) {
      case 0: return s;                                   // empty
      case 1:                                             // a mangled-name-like ASCII
        for (size_t i = 0; i < len; ++i) s += static_cast<char>(' ' + Below(95));
        return s;
      case 2:                                             // embedded NULs
        for (size_t i = 0; i < len; ++i) s += OneIn(3) ? '\0' : static_cast<char>('a' + Below(26));
        return s;
      case 3:                                             // arbitrary bytes: often invalid
        for (size_t i = 0; i < len; ++i) s += static_cast<char>(rng_());
        return s;
      default:                                            // non-ASCII UTF-8
        for (size_t i = 0; i < len; ++i) AppendCodePoint(s);
        return s;
    }
  }

 private:
  std::mt19937_64 rng_;
};

// Keeps the strings the records point into alive for one iteration.
class Arena {
 public:
  StringRef Keep(std::string s) {
    strings_.push_back(std::move(s));
    return StringRef{strings_.back().data(), strings_.back().size()};
  }
  const uint32_t* Keep(std::vector<uint32_t> v) {
    ids_.push_back(std::move(v));
    return ids_.back().data();
  }

 private:
  std::deque<std::string> strings_;
  std::deque<std::vector<uint32_t>> ids_;
};

// ------------------------------------------------------------ generators --

struct RecordGen {
  Gen& g;
  Arena& a;
  bool huge;  // one ~1 MiB string may appear in this iteration
  size_t huge_made = 0;

  StringRef S() {
    const bool h = huge && g.OneIn(8);
    if (h) huge = false;
    std::string s = g.String(h);
    huge_made += s.size() >= (1u << 20);
    return a.Keep(std::move(s));
  }
  ClockRecord Clock() { return ClockRecord{g.U64(), g.U64(), g.U64()}; }
  KeyValueRecord KeyValue() { return KeyValueRecord{S(), S()}; }
  LaunchConfigRecord LaunchConfig() {
    return LaunchConfigRecord{g.U32(), g.U32(), g.U32(), g.U32(), g.U32(), g.U32(), g.U32(),
                              g.U32(), g.U32(), g.U32(), g.U32(), g.U32(), g.U32(), g.U32()};
  }
  DeviceRecord Device() {
    DeviceRecord d{};
    d.device_id = g.U32();
    d.name = S();
    d.uuid = S();
    d.pci_bus_id = S();
    d.compute_capability_major = g.U32();
    d.compute_capability_minor = g.U32();
    d.sm_count = g.U32();
    d.global_memory_bytes = g.U64();
    d.global_memory_bandwidth_kbps = g.U64();
    d.core_clock_khz = g.U32();
    d.max_threads_per_sm = g.U32();
    d.max_blocks_per_sm = g.U32();
    d.max_registers_per_sm = g.U32();
    d.max_shared_memory_per_sm_bytes = g.U32();
    d.l2_cache_bytes = g.U32();
    return d;
  }
  ContextRecord Context() { return ContextRecord{g.U32(), g.U32(), g.U32()}; }
  MetricDescriptorRecord MetricDescriptor() {
    return MetricDescriptorRecord{g.U32(), S(), S(), g.Enum(4), g.U32(), g.U32(), g.U32(), S()};
  }
  DropRecord Drop() { return DropRecord{g.Enum(7), g.U64(), g.U64(), g.U64(), S()}; }
  LostIntervalRecord LostInterval() { return LostIntervalRecord{g.U64(), g.U64(), g.Enum(4), S()}; }
  CapabilityRecord Capability() { return CapabilityRecord{S(), g.Bool(), S()}; }
  StackFrameRecord StackFrame() {
    return StackFrameRecord{g.U32(), g.Enum(3), g.U32(), g.U32(), g.U32(), g.U32(), g.U32(),
                            g.U64()};
  }
  StackRecord Stack() {
    // Up to the collector's 64 frames, sometimes none; ids of any size.
    std::vector<uint32_t> ids(g.OneIn(10) ? 0 : g.Below(65));
    for (uint32_t& id : ids) id = g.U32();
    const size_t n = ids.size();
    return StackRecord{g.U32(), a.Keep(std::move(ids)), n, g.Bool()};
  }
};

// Per-kind clocks and correlation ids so streams look like traces, with the
// occasional jump.
struct EventGen {
  Gen& g;
  uint64_t clock_ns[BatchBuilder::kNumKinds];
  uint32_t correlation[BatchBuilder::kNumKinds] = {};

  EventGen(Gen& gen, uint64_t base_ns) : g(gen) {
    for (uint64_t& c : clock_ns) c = base_ns;
  }
  KernelEvent Kernel() {
    KernelEvent e{};
    e.start_ns = g.Time(clock_ns[0]);
    e.end_ns = g.End(e.start_ns);
    e.graph_node_id = g.U64();
    e.name_id = g.U32();
    e.launch_config_id = g.U32();
    e.device_id = g.U32();
    e.context_id = g.U32();
    e.stream_id = g.U32();
    e.correlation_id = g.Correlation(correlation[0]);
    e.graph_id = g.U32();
    return e;
  }
  MemcpyEvent Memcpy() {
    MemcpyEvent e{};
    e.start_ns = g.Time(clock_ns[1]);
    e.end_ns = g.End(e.start_ns);
    e.bytes = g.U64();
    e.copy_kind = g.Enum(10);
    e.src_kind = g.Enum(7);
    e.dst_kind = g.Enum(7);
    e.device_id = g.U32();
    e.context_id = g.U32();
    e.stream_id = g.U32();
    e.correlation_id = g.Correlation(correlation[1]);
    e.flags = g.U32();
    e.graph_id = g.U32();
    e.dst_device_id = g.U32();
    return e;
  }
  MemsetEvent Memset() {
    MemsetEvent e{};
    e.start_ns = g.Time(clock_ns[2]);
    e.end_ns = g.End(e.start_ns);
    e.bytes = g.U64();
    e.value = g.U32();
    e.memory_kind = g.Enum(7);
    e.device_id = g.U32();
    e.context_id = g.U32();
    e.stream_id = g.U32();
    e.correlation_id = g.Correlation(correlation[2]);
    e.flags = g.U32();
    e.graph_id = g.U32();
    return e;
  }
  SyncEvent Sync() {
    SyncEvent e{};
    e.start_ns = g.Time(clock_ns[3]);
    e.end_ns = g.End(e.start_ns);
    e.sync_kind = g.Enum(4);
    e.context_id = g.U32();
    e.stream_id = g.U32();
    e.event_id = g.U32();
    e.correlation_id = g.Correlation(correlation[3]);
    e.thread_id = g.U32();
    return e;
  }
  ApiCallEvent ApiCall() {
    ApiCallEvent e{};
    e.start_ns = g.Time(clock_ns[4]);
    e.end_ns = g.End(e.start_ns);
    e.domain = g.Enum(2);
    e.cbid = g.U32();
    e.thread_id = g.U32();
    e.correlation_id = g.Correlation(correlation[4]);
    e.return_value = g.U32();
    e.api_name_id = g.U32();
    return e;
  }
  NvtxRangeEvent NvtxRange() {
    NvtxRangeEvent e{};
    e.start_ns = g.Time(clock_ns[5]);
    e.end_ns = g.End(e.start_ns);
    e.name_id = g.U32();
    e.domain_id = g.U32();
    e.thread_id = g.U32();
    e.depth = g.U32();
    return e;
  }
  NvtxMarkEvent NvtxMark() {
    return NvtxMarkEvent{g.Time(clock_ns[6]), g.U32(), g.U32(), g.U32()};
  }
  OverheadEvent Overhead() {
    OverheadEvent e{};
    e.start_ns = g.Time(clock_ns[7]);
    e.end_ns = g.End(e.start_ns);
    e.overhead_kind = g.Enum(9);
    e.thread_id = g.U32();
    e.device_id = g.U32();
    return e;
  }
  MetricSample Metric() {
    MetricSample e{};
    e.timestamp_ns = g.Time(clock_ns[8]);
    e.metric_id = g.U32();
    e.value = g.Double();
    return e;
  }
  StackSampleEvent StackSample() {
    StackSampleEvent e{};
    e.timestamp_ns = g.Time(clock_ns[9]);
    e.thread_id = g.U32();
    e.correlation_id = g.Correlation(correlation[9]);
    e.stack_id = g.U32();
    e.trigger = g.Enum(4);
    return e;
  }
};

// ------------------------------------------------------------- comparing --

template <typename E>
uint32_t U(E e) {
  return static_cast<uint32_t>(static_cast<int32_t>(e));
}
uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

void ExpectClock(const proto::ClockSnapshot& got, const ClockRecord& want) {
  EXPECT_EQ(got.cupti_ns(), want.cupti_ns);
  EXPECT_EQ(got.realtime_ns(), want.realtime_ns);
  EXPECT_EQ(got.monotonic_ns(), want.monotonic_ns);
}
void ExpectKeyValue(const proto::KeyValue& got, const KeyValueRecord& want) {
  EXPECT_EQ(got.key(), Str(want.key));
  EXPECT_EQ(got.value(), Str(want.value));
}
void ExpectDevice(const proto::DeviceInfo& got, const DeviceRecord& want) {
  EXPECT_EQ(got.device_id(), want.device_id);
  EXPECT_EQ(got.name(), Str(want.name));
  EXPECT_EQ(got.uuid(), Str(want.uuid));
  EXPECT_EQ(got.pci_bus_id(), Str(want.pci_bus_id));
  EXPECT_EQ(got.compute_capability_major(), want.compute_capability_major);
  EXPECT_EQ(got.compute_capability_minor(), want.compute_capability_minor);
  EXPECT_EQ(got.sm_count(), want.sm_count);
  EXPECT_EQ(got.global_memory_bytes(), want.global_memory_bytes);
  EXPECT_EQ(got.global_memory_bandwidth_kbps(), want.global_memory_bandwidth_kbps);
  EXPECT_EQ(got.core_clock_khz(), want.core_clock_khz);
  EXPECT_EQ(got.max_threads_per_sm(), want.max_threads_per_sm);
  EXPECT_EQ(got.max_blocks_per_sm(), want.max_blocks_per_sm);
  EXPECT_EQ(got.max_registers_per_sm(), want.max_registers_per_sm);
  EXPECT_EQ(got.max_shared_memory_per_sm_bytes(), want.max_shared_memory_per_sm_bytes);
  EXPECT_EQ(got.l2_cache_bytes(), want.l2_cache_bytes);
}
void ExpectLaunchConfig(const proto::LaunchConfig& got, const LaunchConfigRecord& w) {
  const uint32_t g[] = {got.id(), got.grid_x(), got.grid_y(), got.grid_z(), got.block_x(),
                        got.block_y(), got.block_z(), got.registers_per_thread(),
                        got.static_shared_memory_bytes(), got.dynamic_shared_memory_bytes(),
                        got.local_memory_per_thread_bytes(), got.cluster_x(), got.cluster_y(),
                        got.cluster_z()};
  const uint32_t want[] = {w.id, w.grid_x, w.grid_y, w.grid_z, w.block_x, w.block_y, w.block_z,
                           w.registers_per_thread, w.static_shared_memory_bytes,
                           w.dynamic_shared_memory_bytes, w.local_memory_per_thread_bytes,
                           w.cluster_x, w.cluster_y, w.cluster_z};
  for (int i = 0; i < 14; ++i) EXPECT_EQ(g[i], want[i]) << "LaunchConfig field " << i + 1;
}

// Decodes one column kind's delta chains alongside the expected events.
class Decoder {
 public:
  explicit Decoder(uint64_t base_ns) : ts_ns_(base_ns) {}
  uint64_t Time(int64_t delta) { return ts_ns_ += static_cast<uint64_t>(delta); }
  int64_t Correlation(int64_t delta) { return correlation_ += delta; }

 private:
  uint64_t ts_ns_;
  int64_t correlation_ = 0;
};

#define EXPECT_COLUMN_SIZES(msg, n, ...)                                          \
  for (int size : {__VA_ARGS__}) ASSERT_EQ(size, static_cast<int>(n)) << #msg " column"

struct Expected {
  uint64_t base_ns = 0;
  std::vector<std::pair<uint32_t, StringRef>> strings;
  std::vector<LaunchConfigRecord> launch_configs;
  std::vector<DeviceRecord> devices;
  std::vector<ContextRecord> contexts;
  std::vector<MetricDescriptorRecord> metric_descriptors;
  std::vector<DropRecord> drops;
  std::vector<LostIntervalRecord> lost_intervals;
  std::vector<ClockRecord> clocks;
  std::vector<CapabilityRecord> capabilities;
  std::vector<StackFrameRecord> stack_frames;
  std::vector<StackRecord> stacks;
  std::vector<KernelEvent> kernels;
  std::vector<MemcpyEvent> memcpys;
  std::vector<MemsetEvent> memsets;
  std::vector<SyncEvent> syncs;
  std::vector<ApiCallEvent> api_calls;
  std::vector<NvtxRangeEvent> nvtx_ranges;
  std::vector<NvtxMarkEvent> nvtx_marks;
  std::vector<OverheadEvent> overheads;
  std::vector<MetricSample> metrics;
  std::vector<StackSampleEvent> stack_samples;

  size_t events() const {
    return kernels.size() + memcpys.size() + memsets.size() + syncs.size() + api_calls.size() +
           nvtx_ranges.size() + nvtx_marks.size() + overheads.size() + metrics.size() +
           stack_samples.size();
  }
  // Kinds with events, and their columns: what the estimate pads.
  size_t padded_lengths() const {
    const size_t counts[] = {kernels.size(),     memcpys.size(),    memsets.size(),
                             syncs.size(),       api_calls.size(),  nvtx_ranges.size(),
                             nvtx_marks.size(),  overheads.size(),  metrics.size(),
                             stack_samples.size()};
    static_assert(std::size(counts) == BatchBuilder::kNumKinds);
    size_t n = 0;
    for (uint32_t k = 0; k < BatchBuilder::kNumKinds; ++k) {
      if (counts[k] != 0) n += 1 + BatchBuilder::kColumnsPerKind[k];
    }
    return n;
  }
};

void ExpectBatch(const proto::EventBatch& b, const Expected& x) {
  EXPECT_EQ(b.base_ns(), x.base_ns);

  ASSERT_EQ(b.strings_size(), static_cast<int>(x.strings.size()));
  for (int i = 0; i < b.strings_size(); ++i) {
    EXPECT_EQ(b.strings(i).id(), x.strings[i].first);
    EXPECT_EQ(b.strings(i).value(), Str(x.strings[i].second));
  }
  ASSERT_EQ(b.launch_configs_size(), static_cast<int>(x.launch_configs.size()));
  for (int i = 0; i < b.launch_configs_size(); ++i) ExpectLaunchConfig(b.launch_configs(i), x.launch_configs[i]);
  ASSERT_EQ(b.devices_size(), static_cast<int>(x.devices.size()));
  for (int i = 0; i < b.devices_size(); ++i) ExpectDevice(b.devices(i), x.devices[i]);
  ASSERT_EQ(b.contexts_size(), static_cast<int>(x.contexts.size()));
  for (int i = 0; i < b.contexts_size(); ++i) {
    EXPECT_EQ(b.contexts(i).context_id(), x.contexts[i].context_id);
    EXPECT_EQ(b.contexts(i).device_id(), x.contexts[i].device_id);
    EXPECT_EQ(b.contexts(i).null_stream_id(), x.contexts[i].null_stream_id);
  }
  ASSERT_EQ(b.metric_descriptors_size(), static_cast<int>(x.metric_descriptors.size()));
  for (int i = 0; i < b.metric_descriptors_size(); ++i) {
    const auto& got = b.metric_descriptors(i);
    const auto& want = x.metric_descriptors[i];
    EXPECT_EQ(got.id(), want.id);
    EXPECT_EQ(got.name(), Str(want.name));
    EXPECT_EQ(got.unit(), Str(want.unit));
    EXPECT_EQ(U(got.scope()), want.scope);
    EXPECT_EQ(got.device_id(), want.device_id);
    EXPECT_EQ(got.pid(), want.pid);
    EXPECT_EQ(got.thread_id(), want.thread_id);
    EXPECT_EQ(got.label(), Str(want.label));
  }
  ASSERT_EQ(b.drops_size(), static_cast<int>(x.drops.size()));
  for (int i = 0; i < b.drops_size(); ++i) {
    EXPECT_EQ(U(b.drops(i).reason()), x.drops[i].reason);
    EXPECT_EQ(b.drops(i).count(), x.drops[i].count);
    EXPECT_EQ(b.drops(i).first_ns(), x.drops[i].first_ns);
    EXPECT_EQ(b.drops(i).last_ns(), x.drops[i].last_ns);
    EXPECT_EQ(b.drops(i).detail(), Str(x.drops[i].detail));
  }
  ASSERT_EQ(b.lost_intervals_size(), static_cast<int>(x.lost_intervals.size()));
  for (int i = 0; i < b.lost_intervals_size(); ++i) {
    EXPECT_EQ(b.lost_intervals(i).start_ns(), x.lost_intervals[i].start_ns);
    EXPECT_EQ(b.lost_intervals(i).end_ns(), x.lost_intervals[i].end_ns);
    EXPECT_EQ(U(b.lost_intervals(i).reason()), x.lost_intervals[i].reason);
    EXPECT_EQ(b.lost_intervals(i).detail(), Str(x.lost_intervals[i].detail));
  }
  ASSERT_EQ(b.clocks_size(), static_cast<int>(x.clocks.size()));
  for (int i = 0; i < b.clocks_size(); ++i) ExpectClock(b.clocks(i), x.clocks[i]);
  ASSERT_EQ(b.capabilities_size(), static_cast<int>(x.capabilities.size()));
  for (int i = 0; i < b.capabilities_size(); ++i) {
    EXPECT_EQ(b.capabilities(i).component(), Str(x.capabilities[i].component));
    EXPECT_EQ(b.capabilities(i).available(), x.capabilities[i].available);
    EXPECT_EQ(b.capabilities(i).reason(), Str(x.capabilities[i].reason));
  }

  // Columns: present exactly when the kind has events, all of one length.
  ASSERT_EQ(b.has_kernels(), !x.kernels.empty());
  {
    const auto& c = b.kernels();
    EXPECT_COLUMN_SIZES(kernels, x.kernels.size(), c.start_delta_ns_size(), c.duration_ns_size(),
                        c.name_id_size(), c.launch_config_id_size(), c.device_id_size(),
                        c.context_id_size(), c.stream_id_size(), c.correlation_delta_size(),
                        c.graph_id_size(), c.graph_node_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const KernelEvent& w = x.kernels[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "kernel " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "kernel " << i;
      EXPECT_EQ(d.Correlation(c.correlation_delta(i)), int64_t{w.correlation_id});
      EXPECT_EQ(c.name_id(i), w.name_id);
      EXPECT_EQ(c.launch_config_id(i), w.launch_config_id);
      EXPECT_EQ(c.device_id(i), w.device_id);
      EXPECT_EQ(c.context_id(i), w.context_id);
      EXPECT_EQ(c.stream_id(i), w.stream_id);
      EXPECT_EQ(c.graph_id(i), w.graph_id);
      EXPECT_EQ(c.graph_node_id(i), w.graph_node_id);
    }
  }
  ASSERT_EQ(b.has_memcpys(), !x.memcpys.empty());
  {
    const auto& c = b.memcpys();
    EXPECT_COLUMN_SIZES(memcpys, x.memcpys.size(), c.start_delta_ns_size(), c.duration_ns_size(),
                        c.bytes_size(), c.copy_kind_size(), c.src_kind_size(), c.dst_kind_size(),
                        c.device_id_size(), c.context_id_size(), c.stream_id_size(),
                        c.correlation_delta_size(), c.flags_size(), c.graph_id_size(),
                        c.dst_device_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const MemcpyEvent& w = x.memcpys[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "memcpy " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "memcpy " << i;
      EXPECT_EQ(d.Correlation(c.correlation_delta(i)), int64_t{w.correlation_id});
      EXPECT_EQ(c.bytes(i), w.bytes);
      EXPECT_EQ(U(c.copy_kind(i)), w.copy_kind);
      EXPECT_EQ(U(c.src_kind(i)), w.src_kind);
      EXPECT_EQ(U(c.dst_kind(i)), w.dst_kind);
      EXPECT_EQ(c.device_id(i), w.device_id);
      EXPECT_EQ(c.context_id(i), w.context_id);
      EXPECT_EQ(c.stream_id(i), w.stream_id);
      EXPECT_EQ(c.flags(i), w.flags);
      EXPECT_EQ(c.graph_id(i), w.graph_id);
      EXPECT_EQ(c.dst_device_id(i), w.dst_device_id);
    }
  }
  ASSERT_EQ(b.has_memsets(), !x.memsets.empty());
  {
    const auto& c = b.memsets();
    EXPECT_COLUMN_SIZES(memsets, x.memsets.size(), c.start_delta_ns_size(), c.duration_ns_size(),
                        c.bytes_size(), c.value_size(), c.memory_kind_size(), c.device_id_size(),
                        c.context_id_size(), c.stream_id_size(), c.correlation_delta_size(),
                        c.flags_size(), c.graph_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const MemsetEvent& w = x.memsets[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "memset " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "memset " << i;
      EXPECT_EQ(d.Correlation(c.correlation_delta(i)), int64_t{w.correlation_id});
      EXPECT_EQ(c.bytes(i), w.bytes);
      EXPECT_EQ(c.value(i), w.value);
      EXPECT_EQ(U(c.memory_kind(i)), w.memory_kind);
      EXPECT_EQ(c.device_id(i), w.device_id);
      EXPECT_EQ(c.context_id(i), w.context_id);
      EXPECT_EQ(c.stream_id(i), w.stream_id);
      EXPECT_EQ(c.flags(i), w.flags);
      EXPECT_EQ(c.graph_id(i), w.graph_id);
    }
  }
  ASSERT_EQ(b.has_syncs(), !x.syncs.empty());
  {
    const auto& c = b.syncs();
    EXPECT_COLUMN_SIZES(syncs, x.syncs.size(), c.start_delta_ns_size(), c.duration_ns_size(),
                        c.sync_kind_size(), c.context_id_size(), c.stream_id_size(),
                        c.event_id_size(), c.correlation_delta_size(), c.thread_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const SyncEvent& w = x.syncs[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "sync " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "sync " << i;
      EXPECT_EQ(d.Correlation(c.correlation_delta(i)), int64_t{w.correlation_id});
      EXPECT_EQ(U(c.sync_kind(i)), w.sync_kind);
      EXPECT_EQ(c.context_id(i), w.context_id);
      EXPECT_EQ(c.stream_id(i), w.stream_id);
      EXPECT_EQ(c.event_id(i), w.event_id);
      EXPECT_EQ(c.thread_id(i), w.thread_id);
    }
  }
  ASSERT_EQ(b.has_api_calls(), !x.api_calls.empty());
  {
    const auto& c = b.api_calls();
    EXPECT_COLUMN_SIZES(api_calls, x.api_calls.size(), c.start_delta_ns_size(),
                        c.duration_ns_size(), c.domain_size(), c.cbid_size(), c.thread_id_size(),
                        c.correlation_delta_size(), c.return_value_size(), c.api_name_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const ApiCallEvent& w = x.api_calls[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "api call " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "api call " << i;
      EXPECT_EQ(d.Correlation(c.correlation_delta(i)), int64_t{w.correlation_id});
      EXPECT_EQ(U(c.domain(i)), w.domain);
      EXPECT_EQ(c.cbid(i), w.cbid);
      EXPECT_EQ(c.thread_id(i), w.thread_id);
      EXPECT_EQ(c.return_value(i), w.return_value);
      EXPECT_EQ(c.api_name_id(i), w.api_name_id);
    }
  }
  ASSERT_EQ(b.has_nvtx_ranges(), !x.nvtx_ranges.empty());
  {
    const auto& c = b.nvtx_ranges();
    EXPECT_COLUMN_SIZES(nvtx_ranges, x.nvtx_ranges.size(), c.start_delta_ns_size(),
                        c.duration_ns_size(), c.name_id_size(), c.domain_id_size(),
                        c.thread_id_size(), c.depth_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const NvtxRangeEvent& w = x.nvtx_ranges[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "nvtx range " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "nvtx range " << i;
      EXPECT_EQ(c.name_id(i), w.name_id);
      EXPECT_EQ(c.domain_id(i), w.domain_id);
      EXPECT_EQ(c.thread_id(i), w.thread_id);
      EXPECT_EQ(c.depth(i), w.depth);
    }
  }
  ASSERT_EQ(b.has_nvtx_marks(), !x.nvtx_marks.empty());
  {
    const auto& c = b.nvtx_marks();
    EXPECT_COLUMN_SIZES(nvtx_marks, x.nvtx_marks.size(), c.timestamp_delta_ns_size(),
                        c.name_id_size(), c.domain_id_size(), c.thread_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.timestamp_delta_ns_size(); ++i) {
      const NvtxMarkEvent& w = x.nvtx_marks[i];
      EXPECT_EQ(d.Time(c.timestamp_delta_ns(i)), w.timestamp_ns) << "nvtx mark " << i;
      EXPECT_EQ(c.name_id(i), w.name_id);
      EXPECT_EQ(c.domain_id(i), w.domain_id);
      EXPECT_EQ(c.thread_id(i), w.thread_id);
    }
  }
  ASSERT_EQ(b.has_overheads(), !x.overheads.empty());
  {
    const auto& c = b.overheads();
    EXPECT_COLUMN_SIZES(overheads, x.overheads.size(), c.start_delta_ns_size(),
                        c.duration_ns_size(), c.overhead_kind_size(), c.thread_id_size(),
                        c.device_id_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.start_delta_ns_size(); ++i) {
      const OverheadEvent& w = x.overheads[i];
      const uint64_t start = d.Time(c.start_delta_ns(i));
      EXPECT_EQ(start, w.start_ns) << "overhead " << i;
      EXPECT_EQ(start + c.duration_ns(i), w.end_ns) << "overhead " << i;
      EXPECT_EQ(U(c.overhead_kind(i)), w.overhead_kind);
      EXPECT_EQ(c.thread_id(i), w.thread_id);
      EXPECT_EQ(c.device_id(i), w.device_id);
    }
  }
  ASSERT_EQ(b.has_metrics(), !x.metrics.empty());
  {
    const auto& c = b.metrics();
    EXPECT_COLUMN_SIZES(metrics, x.metrics.size(), c.timestamp_delta_ns_size(),
                        c.metric_id_size(), c.value_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.timestamp_delta_ns_size(); ++i) {
      const MetricSample& w = x.metrics[i];
      EXPECT_EQ(d.Time(c.timestamp_delta_ns(i)), w.timestamp_ns) << "metric " << i;
      EXPECT_EQ(c.metric_id(i), w.metric_id);
      EXPECT_EQ(Bits(c.value(i)), Bits(w.value)) << "metric " << i;  // NaN and -0.0 too
    }
  }
  ASSERT_EQ(b.stack_frames_size(), static_cast<int>(x.stack_frames.size()));
  for (int i = 0; i < b.stack_frames_size(); ++i) {
    const proto::StackFrame& f = b.stack_frames(i);
    const StackFrameRecord& w = x.stack_frames[i];
    EXPECT_EQ(f.id(), w.id);
    EXPECT_EQ(U(f.kind()), w.kind);
    EXPECT_EQ(f.file_id(), w.file_id);
    EXPECT_EQ(f.function_id(), w.function_id);
    EXPECT_EQ(f.line(), w.line);
    EXPECT_EQ(f.qualname_id(), w.qualname_id);
    EXPECT_EQ(f.build_id_id(), w.build_id_id);
    EXPECT_EQ(f.module_offset(), w.module_offset);
  }
  ASSERT_EQ(b.stacks_size(), static_cast<int>(x.stacks.size()));
  for (int i = 0; i < b.stacks_size(); ++i) {
    const proto::Stack& st = b.stacks(i);
    const StackRecord& w = x.stacks[i];
    EXPECT_EQ(st.id(), w.id);
    EXPECT_EQ(st.truncated(), w.truncated);
    ASSERT_EQ(st.frame_ids_size(), static_cast<int>(w.frame_count)) << "stack " << i;
    for (size_t j = 0; j < w.frame_count; ++j) EXPECT_EQ(st.frame_ids(static_cast<int>(j)), w.frame_ids[j]);
  }
  ASSERT_EQ(b.has_stack_samples(), !x.stack_samples.empty());
  {
    const auto& c = b.stack_samples();
    EXPECT_COLUMN_SIZES(stack_samples, x.stack_samples.size(), c.timestamp_delta_ns_size(),
                        c.thread_id_size(), c.correlation_delta_size(), c.stack_id_size(),
                        c.trigger_size());
    Decoder d(x.base_ns);
    for (int i = 0; i < c.timestamp_delta_ns_size(); ++i) {
      const StackSampleEvent& w = x.stack_samples[i];
      EXPECT_EQ(d.Time(c.timestamp_delta_ns(i)), w.timestamp_ns) << "stack sample " << i;
      EXPECT_EQ(c.thread_id(i), w.thread_id);
      EXPECT_EQ(d.Correlation(c.correlation_delta(i)), int64_t{w.correlation_id});
      EXPECT_EQ(c.stack_id(i), w.stack_id);
      EXPECT_EQ(U(c.trigger(i)), w.trigger);
    }
  }
}

// Checks out_cap below `needed` yields 0 and leaves everything past out_cap
// untouched. `encode(out, cap)` returns the encoded size.
template <typename Encode>
void ExpectOverflowIsClean(Gen& g, size_t needed, Encode encode) {
  const size_t cap = g.OneIn(4) ? needed - 1 : g.Below(needed);
  // Exactly cap bytes on the heap (ASan catches an overrun) plus a canary
  // that catches one without ASan.
  std::unique_ptr<uint8_t[]> out(new uint8_t[cap + 64]);
  std::memset(out.get(), kCanary, cap + 64);
  EXPECT_EQ(encode(out.get(), cap), 0u) << "cap " << cap << " of " << needed;
  for (size_t i = cap; i < cap + 64; ++i) ASSERT_EQ(out[i], kCanary) << "wrote past cap " << cap;
}

// ------------------------------------------------------------------ tests --

TEST(EncoderPropertyTest, BatchChunksRoundTripThroughLibprotobuf) {
  constexpr int kIterations = 3000;
  const size_t kCapacities[] = {BatchBuilder::kMinChunkBytes, 1024, 8192, 64 << 10, 4 << 20};
  std::vector<std::unique_ptr<BatchBuilder>> builders;
  for (size_t cap : kCapacities) builders.push_back(std::make_unique<BatchBuilder>(cap));
  BatchBuilder probe(8 << 20);  // measures a sub-message's encoded size
  Gen g(kSeed);
  size_t rejected_events = 0, rejected_side = 0, total_events = 0, huge_strings = 0;

  for (int iter = 0; iter < kIterations && !HasFailure(); ++iter) {
    SCOPED_TRACE(testing::Message() << "seed " << kSeed << " iteration " << iter);
    const size_t which = g.Below(100) < 10 ? 0 : g.Below(builders.size());
    BatchBuilder& b = *builders[which];
    ASSERT_TRUE(b.ok());
    Arena arena;
    Expected x;
    x.base_ns = g.U64();
    b.Begin(x.base_ns);
    RecordGen rec{g, arena, g.OneIn(20)};
    EventGen ev(g, x.base_ns);

    // Each iteration uses a random subset of the 21 item kinds, so that
    // absent columns are exercised as much as present ones.
    const uint32_t mask = g.OneIn(4) ? 0x1fffff : static_cast<uint32_t>(g.Below(1 << 21));
    const size_t ops = g.OneIn(10) ? 0 : g.Below(600);
    for (size_t op = 0; op < ops; ++op) {
      const uint32_t kind = static_cast<uint32_t>(g.Below(21));
      if ((mask & (1u << kind)) == 0) continue;
      const size_t room = b.max_chunk_bytes() - b.encoded_bytes_estimate();
      // Side messages: must be rejected exactly when they do not fit.
      auto side = [&](auto add, auto& list, const auto& r) {
        probe.Begin(0);
        const size_t before = probe.encoded_bytes_estimate();
        ASSERT_TRUE(add(probe, r));
        const size_t bytes = probe.encoded_bytes_estimate() - before;
        const size_t est_before = b.encoded_bytes_estimate();
        if (add(b, r)) {
          list.push_back(r);
          EXPECT_EQ(b.encoded_bytes_estimate() - est_before, bytes);
        } else {
          ++rejected_side;
          EXPECT_GT(bytes, room);
          EXPECT_EQ(b.encoded_bytes_estimate(), est_before);
        }
      };
      // Columnar events: rejected only when fewer than a worst-case event
      // plus (for a kind's first event) its padded lengths are left.
      auto event = [&](uint32_t k, bool added, auto& list, const auto& e, size_t kind_count) {
        if (added) {
          list.push_back(e);
          return;
        }
        ++rejected_events;
        const size_t cols = BatchBuilder::kColumnsPerKind[k];
        const size_t tag = BatchBuilder::KindTagBytes(static_cast<BatchBuilder::Kind>(k));
        EXPECT_LT(room, cols * kMaxVarintBytes + (kind_count == 0 ? 5 * (1 + cols) + tag - 1 : 0));
      };
      switch (kind) {
        case 0: {
          const uint32_t id = g.U32();
          const StringRef s = rec.S();
          probe.Begin(0);
          ASSERT_TRUE(probe.AddString(id, s.data, s.size));
          const size_t bytes = probe.encoded_bytes_estimate() - BatchBuilder::kChunkOverheadBytes;
          if (b.AddString(id, s.data, s.size)) {
            x.strings.emplace_back(id, s);
          } else {
            ++rejected_side;
            EXPECT_GT(bytes, room);
          }
          break;
        }
        case 1: side([](BatchBuilder& bb, const LaunchConfigRecord& r) { return bb.AddLaunchConfig(r); }, x.launch_configs, rec.LaunchConfig()); break;
        case 2: side([](BatchBuilder& bb, const DeviceRecord& r) { return bb.AddDevice(r); }, x.devices, rec.Device()); break;
        case 3: side([](BatchBuilder& bb, const ContextRecord& r) { return bb.AddContext(r); }, x.contexts, rec.Context()); break;
        case 4: side([](BatchBuilder& bb, const MetricDescriptorRecord& r) { return bb.AddMetricDescriptor(r); }, x.metric_descriptors, rec.MetricDescriptor()); break;
        case 5: side([](BatchBuilder& bb, const DropRecord& r) { return bb.AddDrop(r); }, x.drops, rec.Drop()); break;
        case 6: side([](BatchBuilder& bb, const LostIntervalRecord& r) { return bb.AddLostInterval(r); }, x.lost_intervals, rec.LostInterval()); break;
        case 7: side([](BatchBuilder& bb, const ClockRecord& r) { return bb.AddClock(r); }, x.clocks, rec.Clock()); break;
        case 8: side([](BatchBuilder& bb, const CapabilityRecord& r) { return bb.AddCapability(r); }, x.capabilities, rec.Capability()); break;
        case 9: { auto e = ev.Kernel(); event(0, b.AddKernel(e), x.kernels, e, x.kernels.size()); break; }
        case 10: { auto e = ev.Memcpy(); event(1, b.AddMemcpy(e), x.memcpys, e, x.memcpys.size()); break; }
        case 11: { auto e = ev.Memset(); event(2, b.AddMemset(e), x.memsets, e, x.memsets.size()); break; }
        case 12: { auto e = ev.Sync(); event(3, b.AddSync(e), x.syncs, e, x.syncs.size()); break; }
        case 13: { auto e = ev.ApiCall(); event(4, b.AddApiCall(e), x.api_calls, e, x.api_calls.size()); break; }
        case 14: { auto e = ev.NvtxRange(); event(5, b.AddNvtxRange(e), x.nvtx_ranges, e, x.nvtx_ranges.size()); break; }
        case 15: { auto e = ev.NvtxMark(); event(6, b.AddNvtxMark(e), x.nvtx_marks, e, x.nvtx_marks.size()); break; }
        case 16: { auto e = ev.Overhead(); event(7, b.AddOverhead(e), x.overheads, e, x.overheads.size()); break; }
        case 17: { auto e = ev.Metric(); event(8, b.AddMetricSample(e), x.metrics, e, x.metrics.size()); break; }
        case 18: side([](BatchBuilder& bb, const StackFrameRecord& r) { return bb.AddStackFrame(r); }, x.stack_frames, rec.StackFrame()); break;
        case 19: side([](BatchBuilder& bb, const StackRecord& r) { return bb.AddStack(r); }, x.stacks, rec.Stack()); break;
        case 20: { auto e = ev.StackSample(); event(9, b.AddStackSample(e), x.stack_samples, e, x.stack_samples.size()); break; }
      }
    }
    ASSERT_FALSE(HasFailure());
    huge_strings += rec.huge_made;
    ASSERT_EQ(b.event_count(), x.events());
    total_events += x.events();

    const uint64_t uid = g.U64(), sequence = g.U64();
    const uint32_t pid = g.U32();
    const size_t estimate = b.encoded_bytes_estimate();
    ASSERT_LE(estimate, b.max_chunk_bytes());
    std::unique_ptr<uint8_t[]> out(new uint8_t[estimate + 64]);
    std::memset(out.get(), kCanary, estimate + 64);
    const size_t n = b.FinishChunk(uid, pid, sequence, out.get(), estimate);
    ASSERT_GT(n, 0u);
    ASSERT_LE(n, estimate);
    for (size_t i = estimate; i < estimate + 64; ++i) ASSERT_EQ(out[i], kCanary);
    // The estimate pads only the lengths it cannot know yet (4 bytes each)
    // and the chunk's optional header fields.
    EXPECT_LE(estimate - n, BatchBuilder::kChunkOverheadBytes + 4 * (1 + x.padded_lengths()));

    proto::Chunk c;
    ASSERT_TRUE(c.ParseFromArray(out.get(), static_cast<int>(n)));
    EXPECT_EQ(c.process_uid(), uid);
    EXPECT_EQ(c.pid(), pid);
    EXPECT_EQ(c.sequence(), sequence);
    ASSERT_EQ(c.body_case(), proto::Chunk::kBatch);
    ExpectBatch(c.batch(), x);

    ExpectOverflowIsClean(g, n, [&](uint8_t* o, size_t cap) {
      return b.FinishChunk(uid, pid, sequence, o, cap);
    });
  }
  // The run must actually have covered what it claims to.
  std::printf("%zu events, %zu events and %zu sub-messages rejected, %zu ~1 MiB strings\n",
              total_events, rejected_events, rejected_side, huge_strings);
  EXPECT_GT(total_events, 100000u);
  EXPECT_GT(rejected_events, 100u);
  EXPECT_GT(rejected_side, 100u);
  EXPECT_GT(huge_strings, 10u);
}

ProcessHeaderRecord RandomHeader(RecordGen& r, std::vector<StringRef>& cmdline,
                                 std::vector<KeyValueRecord>& env,
                                 std::vector<KeyValueRecord>& config,
                                 std::vector<DeviceRecord>& devices,
                                 std::vector<ClockRecord>& clocks) {
  Gen& g = r.g;
  ProcessHeaderRecord h{};
  h.format_version = g.U32();
  h.gpscope_version = r.S();
  h.hostname = r.S();
  h.pid = g.U32();
  h.ppid = g.U32();
  for (size_t i = g.Below(6); i > 0; --i) cmdline.push_back(r.S());
  h.cmdline = cmdline.data();
  h.cmdline_count = cmdline.size();
  h.exe_path = r.S();
  h.start_realtime_ns = g.U64();
  h.identity = IdentityRecord{r.S(), g.I32(), g.I32(), g.I32(), g.I32(), r.S()};
  for (size_t i = g.Below(6); i > 0; --i) env.push_back(r.KeyValue());
  h.env = env.data();
  h.env_count = env.size();
  for (size_t i = g.Below(6); i > 0; --i) config.push_back(r.KeyValue());
  h.config = config.data();
  h.config_count = config.size();
  for (size_t i = g.Below(5); i > 0; --i) devices.push_back(r.Device());
  h.devices = devices.data();
  h.device_count = devices.size();
  for (size_t i = g.Below(4); i > 0; --i) clocks.push_back(r.Clock());
  h.clocks = clocks.data();
  h.clock_count = clocks.size();
  h.cuda_driver_version = g.U32();
  h.cupti_api_version = g.U32();
  h.driver_version = r.S();
  return h;
}

TEST(EncoderPropertyTest, HeaderChunksRoundTripThroughLibprotobuf) {
  constexpr int kIterations = 2000;
  Gen g(kSeed + 1);
  std::vector<uint8_t> out(16 << 20);
  for (int iter = 0; iter < kIterations && !HasFailure(); ++iter) {
    SCOPED_TRACE(testing::Message() << "seed " << kSeed + 1 << " iteration " << iter);
    Arena arena;
    RecordGen rec{g, arena, g.OneIn(40)};
    std::vector<StringRef> cmdline;
    std::vector<KeyValueRecord> env, config;
    std::vector<DeviceRecord> devices;
    std::vector<ClockRecord> clocks;
    const ProcessHeaderRecord h = RandomHeader(rec, cmdline, env, config, devices, clocks);
    const uint64_t uid = g.U64();
    const uint32_t pid = g.U32();

    const size_t n = EncodeHeaderChunk(h, uid, pid, out.data(), out.size());
    ASSERT_GT(n, 0u);
    proto::Chunk c;
    ASSERT_TRUE(c.ParseFromArray(out.data(), static_cast<int>(n)));
    EXPECT_EQ(c.process_uid(), uid);
    EXPECT_EQ(c.pid(), pid);
    EXPECT_EQ(c.sequence(), 0u);
    ASSERT_EQ(c.body_case(), proto::Chunk::kHeader);
    const proto::ProcessHeader& p = c.header();
    EXPECT_EQ(p.format_version(), h.format_version);
    EXPECT_EQ(p.gpscope_version(), Str(h.gpscope_version));
    EXPECT_EQ(p.hostname(), Str(h.hostname));
    EXPECT_EQ(p.pid(), h.pid);
    EXPECT_EQ(p.ppid(), h.ppid);
    ASSERT_EQ(p.cmdline_size(), static_cast<int>(cmdline.size()));
    for (size_t i = 0; i < cmdline.size(); ++i) EXPECT_EQ(p.cmdline(i), Str(cmdline[i]));
    EXPECT_EQ(p.exe_path(), Str(h.exe_path));
    EXPECT_EQ(p.start_realtime_ns(), h.start_realtime_ns);
    ASSERT_TRUE(p.has_identity());
    EXPECT_EQ(p.identity().job_id(), Str(h.identity.job_id));
    EXPECT_EQ(p.identity().rank(), h.identity.rank);
    EXPECT_EQ(p.identity().local_rank(), h.identity.local_rank);
    EXPECT_EQ(p.identity().world_size(), h.identity.world_size);
    EXPECT_EQ(p.identity().node_rank(), h.identity.node_rank);
    EXPECT_EQ(p.identity().launcher(), Str(h.identity.launcher));
    ASSERT_EQ(p.env_size(), static_cast<int>(env.size()));
    for (size_t i = 0; i < env.size(); ++i) ExpectKeyValue(p.env(i), env[i]);
    ASSERT_EQ(p.config_size(), static_cast<int>(config.size()));
    for (size_t i = 0; i < config.size(); ++i) ExpectKeyValue(p.config(i), config[i]);
    ASSERT_EQ(p.devices_size(), static_cast<int>(devices.size()));
    for (size_t i = 0; i < devices.size(); ++i) ExpectDevice(p.devices(i), devices[i]);
    ASSERT_EQ(p.clocks_size(), static_cast<int>(clocks.size()));
    for (size_t i = 0; i < clocks.size(); ++i) ExpectClock(p.clocks(i), clocks[i]);
    EXPECT_EQ(p.cuda_driver_version(), h.cuda_driver_version);
    EXPECT_EQ(p.cupti_api_version(), h.cupti_api_version);
    EXPECT_EQ(p.driver_version(), Str(h.driver_version));

    ExpectOverflowIsClean(g, n, [&](uint8_t* o, size_t cap) {
      return EncodeHeaderChunk(h, uid, pid, o, cap);
    });
  }
}

TEST(EncoderPropertyTest, EndChunksRoundTripThroughLibprotobuf) {
  constexpr int kIterations = 5000;
  Gen g(kSeed + 2);
  uint8_t out[512];
  for (int iter = 0; iter < kIterations && !HasFailure(); ++iter) {
    SCOPED_TRACE(testing::Message() << "seed " << kSeed + 2 << " iteration " << iter);
    ProcessEndRecord e{};
    e.end_ns = g.U64();
    e.reason = g.Enum(3);
    e.signal = g.I32();
    e.chunks_written = g.U64();
    e.events_written = g.U64();
    e.events_dropped = g.U64();
    e.clock = ClockRecord{g.U64(), g.U64(), g.U64()};
    e.flush_timed_out = g.Bool();
    const uint64_t uid = g.U64(), sequence = g.U64();
    const uint32_t pid = g.U32();

    const size_t n = EncodeEndChunk(e, uid, pid, sequence, out, sizeof(out));
    ASSERT_GT(n, 0u);
    proto::Chunk c;
    ASSERT_TRUE(c.ParseFromArray(out, static_cast<int>(n)));
    EXPECT_EQ(c.process_uid(), uid);
    EXPECT_EQ(c.pid(), pid);
    EXPECT_EQ(c.sequence(), sequence);
    ASSERT_EQ(c.body_case(), proto::Chunk::kEnd);
    const proto::ProcessEnd& p = c.end();
    EXPECT_EQ(p.end_ns(), e.end_ns);
    EXPECT_EQ(U(p.reason()), e.reason);
    EXPECT_EQ(p.signal(), e.signal);
    EXPECT_EQ(p.chunks_written(), e.chunks_written);
    EXPECT_EQ(p.events_written(), e.events_written);
    EXPECT_EQ(p.events_dropped(), e.events_dropped);
    ASSERT_TRUE(p.has_clock());
    ExpectClock(p.clock(), e.clock);
    EXPECT_EQ(p.flush_timed_out(), e.flush_timed_out);

    ExpectOverflowIsClean(g, n, [&](uint8_t* o, size_t cap) {
      return EncodeEndChunk(e, uid, pid, sequence, o, cap);
    });
  }
}

// ---------------------------------------------------------------- UTF-8 --

// Chunk{batch{strings{id: 1, value: <raw bytes>}}} written without our
// sanitizing, as a collector that trusted its input would.
bool ChunkParsesWithRawStringValue(const std::string& raw) {
  uint8_t buf[256];
  WireWriter w(buf, sizeof(buf));
  auto batch = w.BeginNested(5);
  auto str = w.BeginNested(2);
  w.Uint32(1, 1);
  w.Bytes(2, raw.data(), raw.size());
  w.EndNested(str);
  w.EndNested(batch);
  EXPECT_TRUE(w.ok());
  proto::Chunk c;
  return c.ParseFromArray(buf, static_cast<int>(w.size()));
}

// The same bytes in a proto3 `string` field (google.protobuf.StringValue's
// value): what libprotobuf's parser accepts there. trace.proto's text fields
// are `bytes` since issue 18, so this is the reference for "valid UTF-8" the
// writers must still meet (older analyzers parse them as `string`).
bool ParsesWithRawStringValue(const std::string& raw) {
  uint8_t buf[256];
  WireWriter w(buf, sizeof(buf));
  w.Bytes(1, raw.data(), raw.size());
  EXPECT_TRUE(w.ok());
  google::protobuf::StringValue v;
  return v.ParseFromArray(buf, static_cast<int>(w.size()));
}

// libprotobuf logs every UTF-8 failure; these tests provoke thousands.
class QuietProtobufLog {
 public:
  QuietProtobufLog() : old_(google::protobuf::SetLogHandler(nullptr)) {}
  ~QuietProtobufLog() { google::protobuf::SetLogHandler(old_); }

 private:
  google::protobuf::LogHandler* old_;
};

TEST(EncoderPropertyTest, LibprotobufRejectsTheWholeChunkForOneInvalidUtf8Byte) {
  // The reason String() sanitizes: proto3 `string` fields are validated on
  // parse, and one bad byte (say, in an NVTX range name the application
  // passed) would make the whole message unreadable to a parser that reads
  // the field as `string` (an analyzer older than issue 18).
  QuietProtobufLog quiet;
  EXPECT_TRUE(ParsesWithRawStringValue("_Z6kernelv"));
  EXPECT_FALSE(ParsesWithRawStringValue("range \xff name"));
  EXPECT_FALSE(ParsesWithRawStringValue("\xed\xa0\x80"));  // a lone surrogate (CESU/WTF-8)
  // trace.proto's text fields are `bytes`: this analyzer keeps such a chunk
  // (its reader repairs the name, tools/reader/limits.h).
  EXPECT_TRUE(ChunkParsesWithRawStringValue("range \xff name"));
  EXPECT_TRUE(ChunkParsesWithRawStringValue("\xed\xa0\x80"));

  // Through the builder the same bytes arrive as U+FFFD and the chunk parses.
  BatchBuilder b(4096);
  b.Begin(0);
  ASSERT_TRUE(b.AddString(1, "range \xff name", 12));
  std::vector<uint8_t> out(b.encoded_bytes_estimate());
  const size_t n = b.FinishChunk(1, 1, 1, out.data(), out.size());
  proto::Chunk c;
  ASSERT_TRUE(c.ParseFromArray(out.data(), static_cast<int>(n)));
  EXPECT_EQ(c.batch().strings(0).value(), "range \xef\xbf\xbd name");
}

TEST(EncoderPropertyTest, OurUtf8ValidityMatchesLibprotobufExactly) {
  QuietProtobufLog quiet;
  auto check = [](const std::string& s) {
    bool valid = false;
    Utf8SanitizedSize(s.data(), s.size(), &valid);
    EXPECT_EQ(valid, ReferenceSanitize(s) == s) << testing::PrintToString(s);
    EXPECT_EQ(valid, ParsesWithRawStringValue(s)) << testing::PrintToString(s);
  };
  // Every 1- and 2-byte string, and every lead byte >= 0xC0 with every
  // second byte and interesting third bytes (plus a continuation for 4-byte
  // leads).
  for (int a = 0; a < 256; ++a) {
    check(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) check({static_cast<char>(a), static_cast<char>(b)});
  }
  for (int a = 0xC0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : {0x00, 0x7F, 0x80, 0xBF, 0xC0, 0xFF}) {
        const std::string s = {static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)};
        check(s);
        check(s + '\x80');
      }
    }
    if (HasFailure()) return;
  }
  Gen g(kSeed + 3);
  for (int i = 0; i < 20000 && !HasFailure(); ++i) {
    std::string s;
    for (size_t len = g.Below(12); len > 0; --len) {
      if (g.Bool()) {
        g.AppendCodePoint(s);
      } else {
        s += static_cast<char>(0x80 + g.Below(128));
      }
    }
    check(s);
    // And the sanitized form always parses, unchanged.
    EXPECT_TRUE(ParsesWithRawStringValue(ReferenceSanitize(s)));
  }
}

}  // namespace
}  // namespace gpscope::format
