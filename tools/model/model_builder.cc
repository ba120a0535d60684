// tools/model/model_builder.cc: see model_builder.h.
#include "tools/model/model_builder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "proto/metric_names.h"
#include "tools/model/collectives.h"
#include "tools/model/host_calls.h"
#include "tools/model/interval_union.h"
#include "tools/model/occupancy.h"
#include "tools/model/reorder_queue.h"
#include "tools/model/ring_queue.h"
#include "tools/model/stack_builder.h"
#include "tools/model/top_k.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/event_reader.h"
#include "tools/reader/frame_pipeline.h"
#include "tools/reader/limits.h"

namespace gpscope::model {

const char* GapCauseName(GapCause cause) {
  switch (cause) {
    case GapCause::kHost:
      return "host_wait";
    case GapCause::kSync:
      return "sync_wait";
    case GapCause::kKernel:
      return "kernel_wait";
    case GapCause::kOther:
      return "other";
  }
  return "other";
}

namespace {

constexpr size_t kLargestGaps = 32;
constexpr size_t kSyncGaps = 16;
constexpr size_t kPageableCopies = 5;
constexpr size_t kOneTimeGaps = 16;
constexpr size_t kPauses = 16;
// Gaps waiting for their input evidence and, when long, for the next kernel
// (which says whether new code followed): beyond, the oldest are applied.
constexpr size_t kMaxPendingGaps = 1024;
// Pauses kept for step inference (leaving their intervals out).
constexpr size_t kMaxPauseRecords = 4096;
constexpr size_t kMaxNovelKernels = 65536;  // 512 KiB per GPU at most
// Host call series (step inference) a process keeps at most.
constexpr size_t kMaxHostSeries = 256;
constexpr size_t kSlowestSteps = 5;
constexpr size_t kKeptLostIntervals = 16;
// Lost intervals a process keeps for telling untraced gaps from idle ones;
// later ones count as traced (a window a second for 12 days).
constexpr size_t kMaxUntraced = 1u << 20;
// Steps are attributed to at most this many GPUs of one process.
constexpr size_t kMaxStepGpus = 8;
// Pending steps of a process that has no GPU activity yet; beyond, the
// oldest are dropped.
constexpr size_t kMaxPendingSteps = 1 << 16;
// Sync intervals kept for gap classification (beyond, the oldest go).
constexpr size_t kMaxSyncIntervals = 1 << 20;
// Out-of-order syncs are inserted at most this far from the newest.
constexpr std::ptrdiff_t kMaxSyncInsertDistance = 4096;
// Out-of-order lost intervals are inserted while a process has fewer
// than this many (each insert is O(n)); later ones count as traced.
constexpr size_t kMaxUntracedUnordered = 1u << 14;
// Distinct undefined kernel-name ids kept apart per GPU (a lost string
// frame): past it they share one entry.
constexpr size_t kMaxUndefinedNames = 4096;
// How far back from a gap's start FindSpanning looks among syncs.
constexpr int kSyncScan = 64;
constexpr uint32_t kNoSlot = std::numeric_limits<uint32_t>::max();

enum ApiClass : uint8_t {
  kApiUnknown = 0,
  kApiOther,
  kApiLaunch,
  kApiGraphLaunch,
  kApiMemcpy,
  kApiMemset,
  kApiSync
};
enum OpKind : uint8_t { kOpKernel = 0, kOpMemcpy, kOpMemset };
// GpuOp::kind of a kernel whose (name, launch configuration) had not been
// seen before in the process (in arrival order): new code, or new tiles of
// an autotuned kernel.
constexpr uint32_t kOpKindMask = 0xff;
constexpr uint32_t kOpNovel = 1u << 8;
// Above: a kernel's index in its GPU's by_name + 1, found when it arrived
// (0: look it up by name when swept).
constexpr int kOpStatsShift = 9;
constexpr uint32_t kOpStatsLimit = 1u << (32 - kOpStatsShift);
enum MetricKind : uint8_t {
  kMetricOther = 0,
  kMetricSmUtil,
  kMetricDramUtil,
  kMetricClockReasons,
  kMetricOtherProcessSm,
  kMetricTensorUtil,
  kMetricCpuUser,
  kMetricCpuSystem,
  kMetricCollectorCpu,  // gpscope.collector_cpu_pct
  kMetricSamplerCpu,    // gpscope.sampler_cpu_pct
  kMetricGpuUtil,       // nvml.gpu_util (only for ProcessModel::first_gpu_work_ns)
};

ApiClass ClassifyApiName(std::string_view raw) {
  const std::string_view name = NormalizeApiName(raw);
  auto has = [name](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("Synchronize")) return kApiSync;  // cuda{Device,Stream,Event}Synchronize, cu*Synchronize
  if (has("GraphLaunch")) return kApiGraphLaunch;
  if (has("LaunchKernel") || has("LaunchCooperativeKernel")) return kApiLaunch;
  if (name.rfind("cudaMemcpy", 0) == 0 || name.rfind("cuMemcpy", 0) == 0) return kApiMemcpy;
  if (name.rfind("cudaMemset", 0) == 0 || name.rfind("cuMemset", 0) == 0) return kApiMemset;
  return kApiOther;
}

// When a call has no interned name: the CUPTI callback ids seen in recorded
// traces (CUDA 13 / CUPTI 13.0).
ApiClass ClassifyApiCbid(uint32_t domain, uint32_t cbid) {
  if (domain == proto::API_RUNTIME) {
    switch (cbid) {
      case 211:  // cudaLaunchKernel_v7000
        return kApiLaunch;
      case 41:  // cudaMemcpyAsync_v3020
        return kApiMemcpy;
      case 51:  // cudaMemsetAsync_v3020
        return kApiMemset;
      case 131:  // cudaStreamSynchronize_v3020
      case 165:  // cudaDeviceSynchronize_v3020
        return kApiSync;
      default:
        return kApiOther;
    }
  }
  if (domain == proto::API_DRIVER && cbid == 652) return kApiLaunch;  // cuLaunchKernelEx
  return kApiOther;
}

// Metric names as the sampler writes them (proto/metric_names.h).
MetricKind ClassifyMetric(const proto::MetricDescriptor& d, uint32_t own_pid) {
  const std::string& n = d.name();
  if (d.scope() == proto::SCOPE_DEVICE) {
    if (n == metric_names::kGpmSmUtil) return kMetricSmUtil;
    if (n == metric_names::kGpmDramBwUtil) return kMetricDramUtil;
    if (n == metric_names::kNvmlClockEventReasons) return kMetricClockReasons;
    if (n == metric_names::kGpmTensorUtil) return kMetricTensorUtil;
    if (n == metric_names::kNvmlGpuUtil) return kMetricGpuUtil;
  }
  if (d.scope() == proto::SCOPE_PROCESS && d.pid() == own_pid) {
    if (n == metric_names::kHostProcessCpuUserPct) return kMetricCpuUser;
    if (n == metric_names::kHostProcessCpuSystemPct) return kMetricCpuSystem;
    if (n == metric_names::kGpscopeCollectorCpuPct) return kMetricCollectorCpu;
    if (n == metric_names::kGpscopeSamplerCpuPct) return kMetricSamplerCpu;
  }
  if (d.scope() == proto::SCOPE_PROCESS && n == metric_names::kNvmlProcessSmUtil &&
      d.pid() != own_pid) {
    return kMetricOtherProcessSm;
  }
  return kMetricOther;
}

// The host side of a copy: where pageable vs pinned matters.
uint32_t HostMemoryKind(const format::MemcpyEvent& m) {
  switch (m.copy_kind) {
    case proto::MEMCPY_HTOD:
    case proto::MEMCPY_HTOA:
      return m.src_kind;
    case proto::MEMCPY_DTOH:
    case proto::MEMCPY_ATOH:
      return m.dst_kind;
    case proto::MEMCPY_HTOH:
      return m.src_kind == proto::MEMORY_PAGEABLE ? m.src_kind : m.dst_kind;
    default:
      return m.dst_kind;
  }
}

// A GPU op waiting in the reorder queue: 32 bytes.
struct GpuOp {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t correlation_id;
  uint32_t stream_slot;
  uint32_t name_id;  // kernels: the name; copies: the copy kind | kCopy* flags
  uint32_t kind;     // OpKind
};
// What a copy's name_id carries besides its kind (the low 8 bits).
constexpr uint32_t kCopyKindMask = 0xff;
constexpr uint32_t kCopyPageable = 1u << 8;  // host side in pageable memory
constexpr uint32_t kCopyInputSize = 1u << 9;  // more than kInputCopyMinBytes
static_assert(sizeof(GpuOp) == 32, "GpuOp is copied per event: keep it small");

// Launch calls (and copy/memset calls) by correlation id, until their GPU op
// is swept. CUPTI correlation ids grow by one per API call, so a ring
// indexed by the id keeps recent calls in id order and both inserts and
// lookups walk it almost sequentially (a hash table costs a cache miss per
// event: it was most of the sweep's time). A slot is freed when its op is
// swept, except for graph launches (all kernels of a graph share the id);
// inserting over a slot still in use and younger than the retention time
// doubles the ring instead, up to kMaxSlots.
class ApiRing {
 public:
  struct Entry {
    uint32_t correlation_id = 0;  // 0: free
    uint32_t duration_ns = 0;     // saturated at kDurationMask (0.54 s), flags above
    uint64_t start_ns = 0;
    uint64_t end_ns() const { return start_ns + (duration_ns & kDurationMask); }
    bool multi() const { return (duration_ns & kMulti) != 0; }
    bool async_copy() const { return (duration_ns & kAsyncCopy) != 0; }
    bool driver() const { return (duration_ns & kDriver) != 0; }
  };
  static constexpr uint32_t kMulti = 0x80000000u;      // many ops share the id
  static constexpr uint32_t kAsyncCopy = 0x40000000u;  // cudaMemcpyAsync and kin
  static constexpr uint32_t kDriver = 0x20000000u;     // a driver API call (cuLaunchKernel...)
  static constexpr uint32_t kDurationMask = 0x1fffffffu;
  static constexpr size_t kInitialSlots = 1 << 14;
  static constexpr size_t kMaxSlots = 1 << 21;  // 32 MiB

  // flags: kMulti, kAsyncCopy, kDriver.
  void Insert(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns, uint32_t flags,
              uint64_t stale_before_ns) {
    if (correlation_id == 0) return;
    if (slots_.empty()) Resize(kInitialSlots);
    const uint64_t duration = std::min<uint64_t>(end_ns - start_ns, kDurationMask);
    for (;;) {
      Entry& e = slots_[correlation_id & mask_];
      if (e.correlation_id == 0 || e.correlation_id == correlation_id ||
          e.start_ns < stale_before_ns || slots_.size() >= kMaxSlots) {
        if (e.correlation_id != 0 && e.correlation_id != correlation_id) ++overwritten_;
        e.correlation_id = correlation_id;
        e.duration_ns = static_cast<uint32_t>(duration) | (flags & ~kDurationMask);
        e.start_ns = start_ns;
        return;
      }
      Resize(slots_.size() * 2);
    }
  }
  Entry* Find(uint32_t correlation_id) {
    if (slots_.empty() || correlation_id == 0) return nullptr;
    Entry& e = slots_[correlation_id & mask_];
    return e.correlation_id == correlation_id ? &e : nullptr;
  }
  void Release(Entry* e) {
    if (!e->multi()) e->correlation_id = 0;
  }
  uint64_t overwritten() const { return overwritten_; }

 private:
  void Resize(size_t n) {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(n, Entry{});
    mask_ = n - 1;
    // Distinct old slots differ in their low bits, so they stay distinct.
    for (const Entry& e : old) {
      if (e.correlation_id != 0) slots_[e.correlation_id & mask_] = e;
    }
  }

  std::vector<Entry> slots_;
  size_t mask_ = 0;
  uint64_t overwritten_ = 0;
};

struct ApiRef {
  uint64_t start_ns;
  uint64_t end_ns;
};

// Sync intervals by start, for "was the host blocked in a sync at t?".
class SyncIndex {
 public:
  void Insert(uint64_t start_ns, uint64_t end_ns) {
    const Interval v{start_ns, std::max(start_ns, end_ns)};
    if (items_.empty() || items_.back().start_ns <= start_ns) {
      items_.push_back(v);
    } else {
      auto it = std::upper_bound(items_.begin(), items_.end(), start_ns,
                                 [](uint64_t t, const Interval& i) { return t < i.start_ns; });
      // CUPTI delivers records roughly in order: an insert far from the
      // end (a hostile trace in reverse order) would make each one O(n).
      if (items_.end() - it > kMaxSyncInsertDistance) return;
      items_.insert(it, v);
    }
    if (items_.size() > kMaxSyncIntervals) items_.pop_front();
  }
  void PruneBefore(uint64_t t_ns) {
    while (!items_.empty() && items_.front().end_ns < t_ns) items_.pop_front();
  }
  // The latest end of a sync that started by t + slack and had not returned
  // at t.
  bool FindSpanning(uint64_t t_ns, uint64_t slack_ns, uint64_t* end_ns) const {
    auto it = std::upper_bound(items_.begin(), items_.end(), t_ns + slack_ns,
                               [](uint64_t t, const Interval& i) { return t < i.start_ns; });
    bool found = false;
    for (int n = 0; n < kSyncScan && it != items_.begin(); ++n) {
      --it;
      if (it->end_ns >= t_ns) {
        *end_ns = found ? std::max(*end_ns, it->end_ns) : it->end_ns;
        found = true;
      }
    }
    return found;
  }
  size_t size() const { return items_.size(); }

 private:
  std::deque<Interval> items_;
};

struct StreamState {
  uint32_t gpu = 0;  // index into ProcessState::gpus
  bool has_prev = false;
  uint64_t last_end_ns = 0;
  StreamModel model;
};

struct PendingStep {
  uint64_t index = 0;
  uint64_t start_ns = 0;
  uint64_t range_end_ns = 0;
  uint64_t period_end_ns = 0;  // 0: the next step has not arrived
  bool final = false;          // the last step: its period is only its range
  std::array<uint64_t, kMaxStepGpus> kernel_ns{};
  std::array<uint64_t, kMaxStepGpus> busy_ns{};
  std::array<uint64_t, kMaxStepGpus> comm_ns{};
  uint64_t attributed_end_ns() const { return period_end_ns != 0 ? period_end_ns : range_end_ns; }
};

// How a device-level idle gap splits by cause (Classify()).
struct GapSplit {
  uint64_t host_ns = 0;
  uint64_t sync_ns = 0;
  uint64_t implicit_ns = 0;  // host blocked in implicitly synchronizing calls
  uint64_t queued_ns = 0;    // the op was already queued, or its launch is unknown
  bool after_sync = false;   // the gap began while the host was in a (implicit) sync,
                             // or when a device-to-host copy ended (after_readback)
  bool after_readback = false;
  std::array<uint64_t, kImplicitGroups> implicit_by_group{};
  // The call stacks (issue 20) are not here but beside it (DeviceGap): a
  // split is made per swept op, and at 120 bytes with them GCC cleared it
  // with `rep stos`, 5% of a 50 M-event summary (issue 24).
};

// A gap >= the idle-gap threshold whose accounting waits: for an input copy
// issued in it (until the next such gap closes) and, when long, for the next
// kernel (new code after it: one-time start-up work).
struct PendingGap {
  GapRecord rec;
  GapSplit split;
  GapStacks stacks;  // call stacks (issue 20): found at the sweep, applied with the gap
  bool input_window_closed = false;
  bool novelty_known = true;  // false while a long gap waits for the next kernel
};

// A series of host calls (one thread, one API name) for step inference.
struct HostSeries {
  std::string label;
  PeriodTracker tracker;
};

// The sweep's part of a kernel name's stats (KernelStats' period,
// launches_matched, shorter_than_launch, driver_launches), kept apart from
// by_name, which the arrival grows while the sweep runs on its own thread;
// Finish moves them into by_name. `collective` is the arrival's
// classification, sent by kKernelClass.
struct SweptKernel {
  CollectiveKind collective = CollectiveKind::kNone;
  PeriodTracker period;
  uint64_t launches_matched = 0;
  uint64_t shorter_than_launch = 0;
  uint64_t driver_launches = 0;
};

// GpuModel's op and kernel counters, the arrival's until FinishProcess
// copies them into GpuModel: counted there, they shared cache lines with
// what the sweep writes per op (last_ns...), on the other core.
struct ArrivalCounts {
  uint64_t ops = 0;
  uint64_t kernel_count = 0;
  uint64_t kernel_ns = 0;
  uint64_t tiny_kernels = 0;
  double est_sm_ns = 0;
  uint64_t shape_known_ns = 0;
  double occupancy_ns = 0;
  uint64_t occupancy_known_ns = 0;
  uint64_t large_tile_ns = 0;
};

// A GPU's state. The arrival (ModelBuilder::Impl's Add* functions) owns the
// per-kernel stats (by_name, the device, the pageable copies, `counts`);
// the sweep owns everything it reads and writes (the unions, gaps,
// periods, steps, `swept`, and the timelines m.timeline and m.windows,
// which the arrival writes through commands). The two sides write disjoint
// members, so the object can be shared.
struct GpuState {
  GpuModel m;
  alignas(64) ArrivalCounts counts;
  alignas(64) IntervalUnion all;
  // The op that ends the device's busy time so far (at m.last_ns): a
  // device-to-host copy there makes the gap after it one that follows a
  // read-back (Classify).
  uint32_t busy_end_correlation = 0;
  bool busy_end_readback = false;
  IntervalUnion kernels;
  IntervalUnion comm;     // communication kernels
  IntervalUnion compute;  // the other kernels
  uint64_t overlap_at_ns = 0;  // comm/compute overlap is counted up to here
  std::array<uint32_t, kCollectiveKinds> collective_seq{};
  PeriodTracker d2h_period;      // D2H copies
  PeriodTracker h2d_period;      // H2D copies
  PeriodTracker restart_period;  // ends of idle gaps >= the threshold
  std::vector<uint32_t> name_slot;  // name id -> index into by_name, kNoSlot when none
  absl::flat_hash_map<uint32_t, uint32_t> undefined_slot;  // the same for undefined ids
  std::vector<KernelStats> by_name;
  std::vector<uint32_t> by_name_id;  // name id of by_name[i]
  TopK<GapRecord> largest_gaps{kLargestGaps};
  TopK<GapRecord> sync_gaps{kSyncGaps};
  TopK<Interval> pageable{kPageableCopies};
  TopK<StepRecord> slowest_steps{kSlowestSteps};
  TopK<Interval> pauses{kPauses};
  std::vector<Interval> pause_records;  // every pause and one-time gap, in time order (bounded)
  std::vector<Interval> one_time_records;  // the one-time gaps (bounded)
  // Ends of the kernels this GPU had not run before (a name and launch shape
  // first seen), in time order; bounded: past kMaxNovelKernels, unknown.
  std::vector<uint64_t> novel_end_ns;
  bool novel_overflow = false;
  std::deque<PendingGap> pending_gaps;
  bool has_long_gap = false;
  GapRecord first_long_gap;
  GapRecord last_long_gap;
  uint32_t sm_count = 0;
  SmLimits limits;  // from DeviceInfo, for the occupancy estimate
  size_t step_slot = kMaxStepGpus;  // < kMaxStepGpus: attributed steps
  uint64_t watermark_ns = 0;        // start of the latest op swept
  std::vector<SweptKernel> swept;   // by slot of by_name (the sweep's)

  SweptKernel& Swept(size_t slot) {
    if (slot >= swept.size()) swept.resize(slot + 1);
    return swept[slot];
  }

  // The stats of kernel name `name_id`. `defined`: one past the largest
  // string id the process can have defined (its table's size): the table
  // is indexed up to it, and ids past it (undefined: a lost string frame,
  // or hostile) go to a small map, so no id sizes a table.
  KernelStats& Kernel(uint32_t name_id, size_t defined) {
    uint32_t* slot_ptr = nullptr;
    if (name_id < defined) {
      if (name_id >= name_slot.size()) {
        name_slot.resize(std::min<size_t>(defined, size_t{name_id} + 1 + name_id / 2), kNoSlot);
      }
      slot_ptr = &name_slot[name_id];
    } else {
      auto it = undefined_slot.find(name_id);
      if (it == undefined_slot.end()) {
        if (undefined_slot.size() >= kMaxUndefinedNames) name_id = kNoSlot;  // shared entry
        it = undefined_slot.try_emplace(name_id, kNoSlot).first;
      }
      slot_ptr = &it->second;
    }
    uint32_t& slot = *slot_ptr;
    if (slot == kNoSlot) {
      slot = static_cast<uint32_t>(by_name.size());
      by_name.emplace_back();
      by_name_id.push_back(name_id);
    }
    return by_name[slot];
  }
};

// A process's state. The arrival owns the caches by id, the stream and GPU
// lookups, the step filter, host series and ProcessModel's counters; the
// sweep owns the reorder queues, the indexes the sweep reads (launches,
// syncs, implicit, untraced), the pending steps, `streams`, `swept_gpus`,
// the watermark, pageable_calls and the timelines m.timeline and
// m.windows. Call stacks (`stacks`) are used only when the builder runs on
// one thread (ModelBuilder::Impl::GoInline).
struct ProcessState {
  explicit ProcessState(const ModelOptions& options)
      : queue(options.reorder_window_ns), sync_queue(options.reorder_window_ns),
        stacks(options.api_retention_ns, options.max_stack_charges) {}

  ProcessModel m;
  // The reader's tables of this process (strings, launch shapes, devices,
  // metric descriptors, clocks): the model keeps none of its own, only
  // caches derived from them by id.
  const reader::ProcessTables* tables = nullptr;
  std::vector<uint8_t> api_class;    // by name id, ApiClass
  std::vector<int8_t> step_name;     // by name id: -1 unknown, 0 no, 1 yes
  std::vector<int8_t> nccl_domain;   // by name id: -1 unknown, 0 no, 1 NCCL's NVTX domain
  // By LaunchConfig id: theoretical occupancy on config_occupancy_gpu (-2:
  // not computed yet, -1: unknown).
  std::vector<float> config_occupancy;
  std::vector<uint32_t> config_occupancy_gpu;
  absl::flat_hash_map<uint32_t, uint32_t> gpu_of_device;
  std::vector<std::unique_ptr<GpuState>> gpus;  // the arrival's
  // The same GPUs, for the sweep: kAddGpu appends them in order.
  std::vector<GpuState*> swept_gpus;
  bool has_last_device = false;  // a device id can be any value, 0xffffffff too
  uint32_t last_device = 0;
  uint32_t last_gpu = 0;
  uint64_t ignored_events = 0;  // past kMaxDevicesPerProcess / kMaxStreamsPerProcess
  absl::flat_hash_map<uint64_t, uint32_t> stream_slots;  // context << 32 | stream
  std::vector<uint32_t> stream_gpu;  // by stream slot: its GPU (the arrival's)
  std::vector<StreamState> streams;  // by stream slot (the sweep's; kAddStream)
  struct StreamCache {
    uint64_t key = 0;  // context << 32 | stream
    uint32_t slot = 0;
    bool valid = false;
  };
  static constexpr size_t kStreamCacheEntries = 8;
  std::array<StreamCache, kStreamCacheEntries> stream_cache;
  alignas(64) ApiRing launches;  // correlation id -> launching call (the sweep's from here)
  SyncIndex syncs;
  ImplicitIndex implicit;  // implicitly synchronizing calls (host_calls.h)
  // The arrival's (alignas: apart from the sweep's lines, written on another core).
  // By name id: -2 unknown, -1 none, else ImplicitGroup.
  alignas(64) std::vector<int8_t> implicit_group;
  std::vector<int8_t> async_copy;      // by name id: -1 unknown, 0 no, 1 an async copy call
  // By name id: its entry in m.implicit_calls (std::map nodes do not move).
  std::vector<ImplicitCallStats*> implicit_stats;
  // The sweep's "async copy (pageable memory)" entry, put into
  // m.implicit_calls by Finish (the arrival inserts into that map).
  alignas(64) ImplicitCallStats pageable_calls;
  bool has_pageable_calls = false;
  // Name id << 32 | launch config id seen (the arrival's again).
  alignas(64) absl::flat_hash_set<uint64_t> kernel_configs;
  absl::flat_hash_map<uint64_t, size_t> host_series_slot;  // thread << 32 | name id
  std::vector<HostSeries> host_series;
  alignas(64) ReorderQueue<GpuOp> queue;  // the sweep's again
  // Blocking sync API calls of all threads, back in start order, and their
  // union: kSyncBlockedNs is time in which some thread was blocked, spread
  // over the windows it covers (never a call's whole length at its start,
  // never two overlapping calls counted twice).
  ReorderQueue<Interval> sync_queue;
  IntervalUnion sync_union;
  uint64_t watermark_ns = 0;
  bool swept_any = false;
  RingQueue<PendingStep> steps;
  // Every step so far ended at or after its start, so the steps' attributed
  // ends never decrease (AttributeToSteps gallops instead of bisecting).
  bool steps_sorted = true;
  uint64_t step_cursor = 0;  // index of the step AttributeToSteps found last
  alignas(64) uint64_t next_step_index = 0;  // the arrival's from here
  bool step_thread_set = false;
  uint32_t step_thread = 0;
  uint64_t last_step_start_ns = 0;
  uint64_t last_step_end_ns = 0;
  std::string step_example;
  std::vector<uint8_t> metric_kind;  // by descriptor id, MetricKind
  std::vector<uint32_t> metric_device;
  std::vector<uint32_t> metric_pid;
  std::vector<std::string> metric_label;
  std::map<uint32_t, ThreadSyncStats> sync_api_by_thread;
  std::map<uint32_t, ThreadSyncStats> sync_record_by_thread;
  // The process's lost intervals (open ones to the end), sorted by start,
  // and the running maximum of their ends (for a binary search): a gap
  // between two ops is idle only where it was traced.
  std::vector<Interval> untraced;
  std::vector<uint64_t> untraced_max_end;
  bool anchored = false;
  uint64_t anchor_ns = 0;
  bool has_events = false;
  StackBuilder stacks;  // call stacks (issue 20; stack_builder.h)

  const std::string& String(uint32_t id) const { return tables->String(id); }
  size_t string_ids() const { return tables->string_ids(); }
};

// What the arrival changes in the sweep's state, in the order it happens:
// applied by ModelBuilder::Impl::Apply on the sweep thread (or at once,
// on one thread), so the sweep sees its state change exactly as when one
// thread did both. 48 bytes; `op` and the other fields as each type says.
enum class CmdType : uint8_t {
  kAnchor,       // op.start_ns: the process's timelines start there
  kUntraced,     // a lost interval [op.start_ns, op.end_ns), end 0: open
  kLaunch,       // a launch or copy call: op.correlation_id, start, end; op.name_id: ApiRing flags
  kSyncCall,     // a blocking sync API call [op.start_ns, op.end_ns)
  kSyncAdvance,  // the API calls of a batch are in: advance the sync queue
  kSyncRecord,   // a sync record [op.start_ns, op.end_ns); flags kCmdCallsIndexed: not indexed
  kImplicit,     // an implicitly synchronizing call: `field` its group, start, end
  kAddGpu,       // `state` is the process's next GPU
  kAddStream,    // the next stream slot: `gpu`, context op.correlation_id, stream op.name_id
  kKernelClass,  // by_name slot op.name_id of GPU `gpu` is of CollectiveKind `field`
  kKernel,       // `op` arrived on GPU `gpu`; flags & kCmdEstimate: `value` is its SM estimate
  kMemcpy,       // `op` arrived on GPU `gpu`; `value` its bytes, `field` its window field
  kMemset,       // `op` arrived on GPU `gpu`
  kCommRange,    // an NCCL range at op.start_ns of op.end_ns ns
  kStep,         // a step: index `u64`, [op.start_ns, op.end_ns) its range
  kMetric,       // Add(`field`, op.start_ns, `value`) to the timeline `flags` names (kCmd*)
};
constexpr uint8_t kCmdEstimate = 1;  // kKernel
constexpr uint8_t kCmdD2h = 1;       // kMemcpy: a device-to-host copy
constexpr uint8_t kCmdPageable = 2;  // kMemcpy: from or to pageable memory
constexpr uint8_t kCmdCallsIndexed = 1;  // kSyncRecord: the sync calls' rows index the syncs
// kMetric's target (flags): GPU `gpu`'s timeline or windows, or the
// process's windows.
constexpr uint8_t kCmdGpuTimeline = 0;
constexpr uint8_t kCmdGpuWindows = 1;
constexpr uint8_t kCmdProcessWindows = 2;

struct Cmd {
  explicit Cmd(CmdType t) : type(t) {}
  CmdType type;
  uint8_t flags = 0;
  uint16_t field = 0;
  uint32_t gpu = 0;
  GpuOp op{};
  union {
    double value = 0;
    uint64_t u64;
    GpuState* state;
  };
};
static_assert(sizeof(Cmd) == 48, "a command per GPU op and API call: keep it small");

// Commands of one batch of one process (a batch's are cut into packets of
// kPacketCmds), handed to the sweep thread whole. `advance`: the batch's
// last, to end with the reorder queue's Advance and AfterSweep (a batch
// without events does not).
struct Packet {
  ProcessState* process = nullptr;
  std::vector<Cmd> cmds;
  bool advance = false;
};

void AddThreadSync(std::map<uint32_t, ThreadSyncStats>& by_thread, uint32_t thread,
                   uint64_t duration_ns) {
  ThreadSyncStats& s = by_thread[thread];
  ++s.calls;
  s.blocked_ns += duration_ns;
  s.max_ns = std::max(s.max_ns, duration_ns);
}

}  // namespace

// ---------------------------------------------------------------- helpers --

std::string_view NormalizeApiName(std::string_view name) {
  // Strip "_vNNNN", then "_ptsz"/"_ptds" (per-thread default stream variants).
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    name = name.substr(0, v);
  }
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name = name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

bool IsStepName(std::string_view name) {
  std::string s;
  s.reserve(name.size());
  for (char c : name) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  // Drop a trailing number and the separators before it: "step #12" -> "step".
  while (!s.empty() && std::isdigit(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && (s.back() == ' ' || s.back() == '#' || s.back() == '_' ||
                        s.back() == '-' || s.back() == ':' || s.back() == '=')) {
    s.pop_back();
  }
  for (char& c : s) {
    if (c == '_' || c == '-' || c == ' ') c = ' ';
  }
  static constexpr std::string_view kSteps[] = {
      "step",       "profilerstep",   "profiler step", "iteration",      "iter",
      "train step", "training step",  "train iter",    "train iteration", "training iteration",
      "trainstep",  "optimizer step", "global step",
  };
  for (std::string_view k : kSteps) {
    if (s == k) return true;
  }
  return false;
}

// ------------------------------------------------------------------- Impl --

class ModelBuilder::Impl {
 public:
  explicit Impl(const ModelOptions& options)
      : options_(options),
        inline_(options.threads == 1 ||
                (options.threads == 0 && reader::DefaultDecodeThreads() <= 1)) {
    if (!inline_) {
      for (Packet& k : packets_) free_.push_back(&k);
      packet_ = TakeFreePacket();
    }
  }
  ~Impl() { StopSweeper(); }

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h) {
    ProcessState& p = Process(t);
    p.m.has_header = true;
    p.m.hostname = h.hostname();
    p.m.cmdline.assign(h.cmdline().begin(), h.cmdline().end());
    p.m.exe_path = h.exe_path();
    p.m.rank = h.identity().rank();
    p.m.local_rank = h.identity().local_rank();
    p.m.world_size = h.identity().world_size();
    p.m.job_id = h.identity().job_id();
    p.m.env.clear();
    for (const proto::KeyValue& kv : h.env()) p.m.env.emplace_back(kv.key(), kv.value());
    for (const proto::DeviceInfo& d : h.devices()) AddDevice(p, d.device_id());
  }

  void OnEnd(const reader::ProcessTables& t, const proto::ProcessEnd& e) {
    ProcessState& p = Process(t);
    p.m.clean_end = true;
    p.m.end_reason = e.reason();
  }

  void OnBatch(const reader::ResolvedBatch& b) {
    ProcessState& p = Process(b.tables);
    process_ = &p;
    if (!inline_) packet_->process = &p;
    AddBatch(b, p);
    if (!inline_ && (packet_->advance || !packet_->cmds.empty())) Submit();
  }

  void Warn(std::string warning) {
    if (warnings_.size() < options_.max_warnings) {
      warnings_.push_back(std::move(warning));
    } else {
      ++warnings_omitted_;
    }
  }

  TraceModel Finish(reader::TraceIndex index) {
    // One thread from here: anything emitted while finishing applies at once.
    GoInline();
    TraceModel model;
    model.options = options_;
    for (const reader::ProcessInfo& info : index.processes) {
      auto it = slot_.find(info.process_uid);
      if (it == slot_.end()) continue;
      ProcessState& p = *processes_[it->second];
      if (options_.only_rank >= 0 && p.m.rank != options_.only_rank) continue;
      FinishProcess(p);
      p.m.clocks = p.tables->clocks();
      if (p.stacks.active()) p.m.stacks = p.stacks.Finish(p.tables->strings());  // call stacks (issue 20)
      p.m.process_uid = info.process_uid;
      p.m.pid = info.pid;
      p.m.path = info.path;
      p.m.chunks = info.chunks;
      p.m.lost_chunks = info.lost_chunks;
      p.m.clean_end = info.end.has_value();
      if (info.end) p.m.end_reason = info.end->reason();
      for (std::unique_ptr<GpuState>& g : p.gpus) {
        if (g->m.ops == 0) continue;
        g->m.hostname = p.m.hostname;
        p.m.gpus.push_back(model.gpus.size());
        model.gpus.push_back(std::move(g->m));
      }
      model.events += p.m.events;
      model.processes.push_back(std::move(p.m));
    }
    index.warnings.insert(index.warnings.end(), warnings_.begin(), warnings_.end());
    index.warnings_omitted += warnings_omitted_;
    model.index = std::move(index);
    return model;
  }

 private:
  ProcessState& Process(const reader::ProcessTables& t) {
    auto [it, inserted] = slot_.try_emplace(t.process_uid(), processes_.size());
    if (inserted) {
      processes_.push_back(std::make_unique<ProcessState>(options_));
      processes_.back()->m.process_uid = t.process_uid();
      processes_.back()->m.pid = t.pid();
      processes_.back()->tables = &t;
    }
    return *processes_[it->second];
  }

  // A device (re)defined in the tables: a GPU that already has ops takes
  // its description.
  void AddDevice(ProcessState& p, uint32_t device_id) {
    const proto::DeviceInfo* d = p.tables->Device(device_id);
    auto it = p.gpu_of_device.find(device_id);
    if (d != nullptr && it != p.gpu_of_device.end()) {
      GpuState& g = *p.gpus[it->second];
      g.m.device = *d;
      g.m.has_device_info = true;
      g.sm_count = d->sm_count();
      g.limits = LimitsOf(*d);
    }
  }

  static SmLimits LimitsOf(const proto::DeviceInfo& d) {
    return {d.max_threads_per_sm(), d.max_blocks_per_sm(), d.max_registers_per_sm(),
            d.max_shared_memory_per_sm_bytes()};
  }

  // Occupancy of a launch config on GPU `gpu` of p, computed once per config
  // (again only if the config runs on another GPU).
  double ConfigOccupancy(ProcessState& p, uint32_t config, uint32_t gpu) {
    if (config >= p.config_occupancy.size()) return -1;
    float& occ = p.config_occupancy[config];
    if (occ < -1.5f || p.config_occupancy_gpu[config] != gpu) {
      const reader::LaunchShape* l = p.tables->Launch(config);
      const LaunchShape shape =
          l == nullptr ? LaunchShape{}
                       : LaunchShape{l->threads_per_block(), l->registers_per_thread,
                                     l->shared_memory_bytes()};
      occ = static_cast<float>(TheoreticalOccupancy(shape, p.gpus[gpu]->limits));
      p.config_occupancy_gpu[config] = gpu;
    }
    return occ;
  }

  // The GPU of device_id, or nullptr when the process already has
  // kMaxDevicesPerProcess GPUs (its events are counted, not modelled).
  GpuState* Gpu(ProcessState& p, uint32_t device_id) {
    if (p.has_last_device && device_id == p.last_device) return p.gpus[p.last_gpu].get();
    auto found = p.gpu_of_device.find(device_id);
    if (found == p.gpu_of_device.end() && p.gpus.size() >= reader::kMaxDevicesPerProcess) {
      IgnoreEvent(p, "devices");
      return nullptr;
    }
    auto [it, inserted] =
        p.gpu_of_device.try_emplace(device_id, static_cast<uint32_t>(p.gpus.size()));
    if (inserted) {
      auto g = std::make_unique<GpuState>();
      g->m.process_uid = p.m.process_uid;
      g->m.pid = p.m.pid;
      g->m.device_id = device_id;
      g->m.timeline = Timeline(kGpuFieldCount, p.anchor_ns);
      g->m.windows = Timeline(kWindowFieldCount, p.anchor_ns, kMaxWindowRows, options_.window_ns);
      if (const proto::DeviceInfo* d = p.tables->Device(device_id)) {
        g->m.device = *d;
        g->m.has_device_info = true;
        g->sm_count = d->sm_count();
        g->limits = LimitsOf(*d);
      }
      if (p.gpus.size() < kMaxStepGpus) g->step_slot = p.gpus.size();
      Cmd c(CmdType::kAddGpu);
      c.state = g.get();
      p.gpus.push_back(std::move(g));
      Emit(p, c);
    }
    p.has_last_device = true;
    p.last_device = device_id;
    p.last_gpu = it->second;
    return p.gpus[it->second].get();
  }

  void IgnoreEvent(ProcessState& p, const char* what) {
    if (p.ignored_events++ == 0) {
      Warn(absl::StrCat("process ", p.m.pid, ": more ", what, " than the analyzer keeps per process (",
                        what[0] == 'd' ? reader::kMaxDevicesPerProcess : reader::kMaxStreamsPerProcess,
                        "): the events of the others are counted but not analysed"));
    }
  }

  // kNoSlot when the process already has kMaxStreamsPerProcess streams.
  uint32_t StreamSlot(ProcessState& p, uint32_t gpu, uint32_t context_id, uint32_t stream_id) {
    const uint64_t key = (uint64_t{context_id} << 32) | stream_id;
    // Per op: the last slots found, direct-mapped by stream id, before the hash.
    ProcessState::StreamCache& cached =
        p.stream_cache[(stream_id ^ context_id) & (ProcessState::kStreamCacheEntries - 1)];
    if (cached.valid && cached.key == key) return cached.slot;
    if (p.stream_gpu.size() >= reader::kMaxStreamsPerProcess && !p.stream_slots.contains(key)) {
      IgnoreEvent(p, "streams");
      return kNoSlot;
    }
    auto [it, inserted] =
        p.stream_slots.try_emplace(key, static_cast<uint32_t>(p.stream_gpu.size()));
    if (inserted) {
      p.stream_gpu.push_back(gpu);
      Cmd c(CmdType::kAddStream);
      c.gpu = gpu;
      c.op.correlation_id = context_id;
      c.op.name_id = stream_id;
      Emit(p, c);
    }
    cached = {key, it->second, true};
    return it->second;
  }

  ApiClass ApiClassOf(ProcessState& p, const format::ApiCallEvent& a) {
    if (a.api_name_id != 0 && a.api_name_id < p.api_class.size()) {
      uint8_t& c = p.api_class[a.api_name_id];
      if (c == kApiUnknown) c = ClassifyApiName(p.String(a.api_name_id));
      return static_cast<ApiClass>(c);
    }
    return ClassifyApiCbid(a.domain, a.cbid);
  }

  bool IsNcclDomain(ProcessState& p, uint32_t domain_id) {
    if (domain_id == 0 || domain_id >= p.nccl_domain.size()) return false;
    int8_t& s = p.nccl_domain[domain_id];
    if (s < 0) s = ClassifyCommRange(p.String(domain_id), "") != CollectiveKind::kNone ? 1 : 0;
    return s == 1;
  }

  bool IsStep(ProcessState& p, uint32_t name_id) {
    if (name_id == 0 || name_id >= p.step_name.size()) return false;
    int8_t& s = p.step_name[name_id];
    if (s < 0) s = IsStepName(p.String(name_id)) ? 1 : 0;
    return s == 1;
  }

  // --------------------------------------------------------------- batch --

  void AddBatch(const reader::ResolvedBatch& rb, ProcessState& p) {
    const proto::EventBatch& b = rb.batch;
    // The batch's definitions are in p.tables already (the reader applied
    // them); the caches derived from them by id follow.
    const size_t string_ids = p.string_ids();
    for (const proto::InternedString& s : b.strings()) {
      const uint32_t id = s.id();
      if (id == 0 || id >= string_ids) continue;  // the reader dropped it
      if (id >= p.api_class.size()) {
        const size_t n = string_ids;
        p.api_class.resize(n, kApiUnknown);
        p.step_name.resize(n, -1);
        p.nccl_domain.resize(n, -1);
        p.implicit_group.resize(n, -2);
        p.async_copy.resize(n, -1);
        p.implicit_stats.resize(n, nullptr);
      }
      p.api_class[id] = kApiUnknown;
      p.step_name[id] = -1;
      p.nccl_domain[id] = -1;
      p.implicit_group[id] = -2;
      p.async_copy[id] = -1;
      p.implicit_stats[id] = nullptr;
    }
    for (const proto::LaunchConfig& c : b.launch_configs()) {
      if (c.id() > reader::kMaxLaunchConfigId) continue;
      if (c.id() >= p.config_occupancy.size()) {
        const size_t n = c.id() + 1 + c.id() / 2;
        p.config_occupancy.resize(n, -2.0f);
        p.config_occupancy_gpu.resize(n, kNoSlot);
      }
      p.config_occupancy[c.id()] = -2.0f;
    }
    for (const proto::DeviceInfo& d : b.devices()) AddDevice(p, d.device_id());
    for (const proto::MetricDescriptor& d : b.metric_descriptors()) {
      if (d.id() > reader::kMaxMetricId) continue;
      if (d.id() >= p.metric_kind.size()) {
        p.metric_kind.resize(d.id() + 1, kMetricOther);
        p.metric_device.resize(d.id() + 1, 0);
        p.metric_pid.resize(d.id() + 1, 0);
        p.metric_label.resize(d.id() + 1);
      }
      const MetricKind kind = ClassifyMetric(d, p.m.pid);
      p.metric_kind[d.id()] = kind;
      p.metric_device[d.id()] = d.device_id();
      p.metric_pid[d.id()] = d.pid();
      if (kind == kMetricOtherProcessSm) p.metric_label[d.id()] = d.label();
    }
    for (const proto::DropNotice& d : b.drops()) p.m.dropped[d.reason()] += d.count();
    for (const proto::LostInterval& l : b.lost_intervals()) {
      ++p.m.lost_interval_count;
      if (p.m.lost_intervals.size() < kKeptLostIntervals) p.m.lost_intervals.push_back(l);
      const bool window_off = l.reason() == proto::LOST_TRACING_DISABLED;
      if (window_off) ++p.m.window_off_count;
      if (l.end_ns() > l.start_ns()) {
        p.m.lost_interval_ns += l.end_ns() - l.start_ns();
        if (window_off) p.m.window_off_ns += l.end_ns() - l.start_ns();
      }
      if (l.end_ns() == 0) open_lost_.push_back({&p, l.start_ns(), window_off});
      if (l.end_ns() == 0 || l.end_ns() > l.start_ns()) {
        Cmd c(CmdType::kUntraced);
        c.op.start_ns = l.start_ns();
        c.op.end_ns = l.end_ns();
        Emit(p, c);
      }
    }
    for (const proto::CapabilityNotice& c : b.capabilities()) {
      if (!c.available()) {
        p.m.unavailable.push_back(
            absl::StrCat(c.component(), c.reason().empty() ? "" : ": ", c.reason()));
        if (c.component() == metric_names::kCapNvmlProcessPids) p.m.foreign_nvml_pids = true;
      }
    }
    for (const proto::CuptiClientRefusal& r : b.cupti_refusals()) {  // cumulative: keep the latest
      auto same = [&](const proto::CuptiClientRefusal& o) {
        return o.api() == r.api() && o.caller() == r.caller();
      };
      auto it = std::find_if(p.m.cupti_refusals.begin(), p.m.cupti_refusals.end(), same);
      if (it == p.m.cupti_refusals.end()) {
        if (p.m.cupti_refusals.size() < 64) p.m.cupti_refusals.push_back(r);
      } else if (r.count() >= it->count()) {
        *it = r;
      }
    }
    // ---- call stacks (issue 20): the tables of this batch (stack_builder.h) ----
    // The builder joins calls to stacks on one thread: the joins made
    // when calls arrive are read when gaps are swept.
    if (StackBuilder::HasTables(rb.batch)) {
      GoInline();
      p.stacks.AddTables(rb.batch);
    }
    if (!rb.decode_status.ok()) {
      ++p.m.undecodable_batches;
      Warn(absl::StrCat(rb.place.file->path, ": offset ", rb.place.offset, ": ",
                        rb.decode_status.message(), "; batch skipped"));
      return;
    }
    ev_ = &rb.events;
    const size_t n = ev_->event_count();
    if (n == 0) return;
    p.m.events += n;
    if (!p.anchored) Anchor(p);
    AddApiCalls(p);
    Emit(p, Cmd(CmdType::kSyncAdvance));
    AddSyncRecords(p);
    AddKernels(p);
    AddMemcpys(p);
    AddMemsets(p);
    AddNvtx(p);
    AddMetrics(p);
    for (const format::NvtxMarkEvent& e : ev_->nvtx_marks) Span(p, e.timestamp_ns, e.timestamp_ns);
    for (const format::OverheadEvent& e : ev_->overheads) Span(p, e.start_ns, e.end_ns);
    if (inline_) {
      Advance(p);
    } else {
      packet_->advance = true;
    }
  }

  void Span(ProcessState& p, uint64_t start_ns, uint64_t end_ns) {
    if (!p.has_events) {
      p.m.first_ns = start_ns;
      p.m.last_ns = end_ns;
      p.has_events = true;
      return;
    }
    p.m.first_ns = std::min(p.m.first_ns, start_ns);
    p.m.last_ns = std::max(p.m.last_ns, end_ns);
  }

  // Timelines start at the earliest event of the first batch.
  void Anchor(ProcessState& p) {
    uint64_t t = std::numeric_limits<uint64_t>::max();
    auto min = [&t](uint64_t v) {
      if (v != 0) t = std::min(t, v);  // 0: an incomplete record, not a time
    };
    for (const auto& e : ev_->kernels) min(e.start_ns);
    for (const auto& e : ev_->memcpys) min(e.start_ns);
    for (const auto& e : ev_->memsets) min(e.start_ns);
    for (const auto& e : ev_->syncs) min(e.start_ns);
    for (const auto& e : ev_->api_calls) min(e.start_ns);
    for (const auto& e : ev_->nvtx_ranges) min(e.start_ns);
    for (const auto& e : ev_->metrics) min(e.timestamp_ns);
    for (const auto& e : ev_->overheads) min(e.start_ns);
    for (const auto& e : ev_->nvtx_marks) min(e.timestamp_ns);
    if (t == std::numeric_limits<uint64_t>::max()) return;
    p.anchor_ns = t;
    p.anchored = true;
    Cmd c(CmdType::kAnchor);
    c.op.start_ns = t;
    Emit(p, c);
  }

  // The implicit group of a call (-1: none) and whether it is an
  // asynchronous copy, by name (cached per name id).
  int ImplicitGroupOf(ProcessState& p, const format::ApiCallEvent& a, bool* async_copy) {
    *async_copy = false;
    if (a.api_name_id == 0 || a.api_name_id >= p.implicit_group.size()) return -1;
    int8_t& g = p.implicit_group[a.api_name_id];
    int8_t& c = p.async_copy[a.api_name_id];
    if (g == -2) {
      const std::string_view name = NormalizeApiName(p.String(a.api_name_id));
      g = static_cast<int8_t>(ImplicitGroupOfApi(name));
      c = IsAsyncCopyApi(name) ? 1 : 0;
    }
    *async_copy = c == 1;
    return g;
  }

  // One implicitly synchronizing call: the host was blocked in it. `s` is
  // its name's entry in m.implicit_calls (or the sweep's pageable_calls).
  static void CountImplicitCall(ImplicitCallStats& s, int group, uint64_t duration_ns) {
    s.group = group;
    ++s.calls;
    s.blocked_ns += duration_ns;
    s.max_ns = std::max(s.max_ns, duration_ns);
  }
  // Its place in the index the sweep reads, and on the timeline (the sweep's).
  static void IndexImplicitCall(ProcessState& p, int group, uint64_t start_ns, uint64_t end_ns) {
    p.implicit.Insert(start_ns, end_ns, group);
    p.m.timeline.Add(kImplicitCallsFirst + group, start_ns, 1);
    p.m.timeline.Add(kImplicitBlockedFirst + group, start_ns,
                     static_cast<double>(end_ns - start_ns));
  }

  // Host series for step inference: explicit syncs, graph launches and
  // synchronous copies, per thread and API name.
  void AddHostSeries(ProcessState& p, const format::ApiCallEvent& a) {
    const uint64_t key = (uint64_t{a.thread_id} << 32) | a.api_name_id;
    auto it = p.host_series_slot.find(key);
    if (it == p.host_series_slot.end()) {
      if (p.host_series.size() >= kMaxHostSeries) return;
      it = p.host_series_slot.emplace(key, p.host_series.size()).first;
      HostSeries series;
      series.label = absl::StrCat(std::string(NormalizeApiName(p.String(a.api_name_id))), " calls of thread ",
                                  a.thread_id);
      p.host_series.push_back(std::move(series));
    }
    p.host_series[it->second].tracker.Add(a.start_ns);
  }

  void AddApiCalls(ProcessState& p) {
    p.m.api_calls += ev_->api_calls.size();
    for (format::ApiCallEvent a : ev_->api_calls) {
      a.end_ns = std::max(a.end_ns, a.start_ns);
      Span(p, a.start_ns, a.end_ns);
      const uint64_t duration = a.end_ns - a.start_ns;
      const ApiClass cls = ApiClassOf(p, a);
      const uint32_t driver = a.domain == proto::API_DRIVER ? ApiRing::kDriver : 0;
      bool async_copy = false;
      const int group = ImplicitGroupOf(p, a, &async_copy);
      if (p.stacks.active()) {  // call stacks (issue 20): join the call to its stack
        p.stacks.OnApiCall(a, cls == kApiSync                              ? StackBuilder::Call::kSync
                              : group >= 0                                 ? StackBuilder::Call::kImplicit
                              : cls == kApiLaunch || cls == kApiGraphLaunch ? StackBuilder::Call::kLaunch
                                                                            : StackBuilder::Call::kOther,
                           cls == kApiLaunch || cls == kApiGraphLaunch || cls == kApiMemcpy ||
                               cls == kApiMemset);
      }
      switch (cls) {
        case kApiLaunch:
        case kApiGraphLaunch:
          p.m.launch_call_ns.Add(duration);
          if (duration > kLaunchCallOutlierNs) ++p.m.launch_call_outliers;
          EmitLaunch(p, a, (cls == kApiGraphLaunch ? ApiRing::kMulti : 0) | driver);
          if (cls == kApiGraphLaunch && a.api_name_id != 0) AddHostSeries(p, a);
          break;
        case kApiMemcpy:
        case kApiMemset:
          EmitLaunch(p, a, (async_copy ? ApiRing::kAsyncCopy : 0) | driver);
          if (group == kImplicitSyncCopy && a.api_name_id != 0) AddHostSeries(p, a);
          break;
        case kApiSync: {
          AddThreadSync(p.sync_api_by_thread, a.thread_id, duration);
          Cmd c(CmdType::kSyncCall);
          c.op.start_ns = a.start_ns;
          c.op.end_ns = a.end_ns;
          Emit(p, c);
          if (a.api_name_id != 0) AddHostSeries(p, a);
          break;
        }
        default:
          break;
      }
      if (group >= 0) {  // a named call (ImplicitGroupOf needs the name)
        ImplicitCallStats*& stats = p.implicit_stats[a.api_name_id];
        if (stats == nullptr) {
          stats = &p.m.implicit_calls[std::string(NormalizeApiName(p.String(a.api_name_id)))];
        }
        CountImplicitCall(*stats, group, duration);
        Cmd c(CmdType::kImplicit);
        c.field = static_cast<uint16_t>(group);
        c.op.start_ns = a.start_ns;
        c.op.end_ns = a.end_ns;
        Emit(p, c);
      }
    }
  }

  void EmitLaunch(ProcessState& p, const format::ApiCallEvent& a, uint32_t flags) {
    Cmd c(CmdType::kLaunch);
    c.op.correlation_id = a.correlation_id;
    c.op.start_ns = a.start_ns;
    c.op.end_ns = a.end_ns;
    c.op.name_id = flags;
    Emit(p, c);
  }

  void AddSyncRecords(ProcessState& p) {
    for (format::SyncEvent s : ev_->syncs) {
      s.end_ns = std::max(s.end_ns, s.start_ns);
      Span(p, s.start_ns, s.end_ns);
      ++p.m.sync_records;
      // cudaStreamWaitEvent does not block the host.
      if (s.sync_kind == proto::SYNC_STREAM_WAIT_EVENT) continue;
      AddThreadSync(p.sync_record_by_thread, s.thread_id, s.end_ns - s.start_ns);
      Cmd c(CmdType::kSyncRecord);
      c.op.start_ns = s.start_ns;
      c.op.end_ns = s.end_ns;
      // With API rows (seen before this batch's records: AddApiCalls runs
      // first) every blocking sync call (cuda*/cu*Synchronize, in gpscope's
      // API list) indexes itself as a kSyncCall, the same interval as its
      // record. The records without a row are queries CUPTI also records as
      // syncs (cudaEventQuery -> EVENT_SYNCHRONIZE: 1,001 records for 1,000
      // queries, bench/RESULTS.md session 15): polls that did not wait, and
      // indexed they crowded a gap's real sync out of FindSpanning's scan.
      // Counted, not indexed. Without rows (GPSCOPE_API=0) no gap has a
      // launch call, so the index is not asked.
      if (p.m.api_calls > 0) c.flags = kCmdCallsIndexed;
      Emit(p, c);
    }
  }

  void Push(ProcessState& p, const GpuOp& op) {
    p.queue.Push(op, [this, &p](const GpuOp& late) { Sweep(p, late); });
  }

  void AddKernels(ProcessState& p) {
    for (format::KernelEvent k : ev_->kernels) {
      k.end_ns = std::max(k.end_ns, k.start_ns);  // a corrupt duration wrapped
      Span(p, k.start_ns, k.end_ns);
      GpuState* gpu = Gpu(p, k.device_id);
      if (gpu == nullptr) continue;
      const uint32_t slot = StreamSlot(p, p.last_gpu, k.context_id, k.stream_id);
      if (slot == kNoSlot) continue;
      GpuState& g = *gpu;
      const uint64_t duration = k.end_ns - k.start_ns;
      KernelStats& s = g.Kernel(k.name_id, p.string_ids());
      const size_t stats = static_cast<size_t>(&s - g.by_name.data());
      if (s.duration_ns.empty()) {
        s.collective = ClassifyCommKernel(p.String(k.name_id));
        Cmd c(CmdType::kKernelClass);
        c.gpu = p.last_gpu;
        c.field = static_cast<uint16_t>(s.collective);
        c.op.name_id = static_cast<uint32_t>(stats);
        Emit(p, c);
      }
      s.duration_ns.Add(duration);
      if (duration > s.longest.length_ns() || s.duration_ns.count() == 1) {
        s.longest = {k.start_ns, k.end_ns};
      }
      ++g.counts.ops;
      ++g.counts.kernel_count;
      g.counts.kernel_ns += duration;
      if (duration < kTinyKernelNs) {
        ++s.tiny;
        ++g.counts.tiny_kernels;
      }
      Cmd c(CmdType::kKernel);
      c.gpu = p.last_gpu;
      const reader::LaunchShape* launch = p.tables->Launch(k.launch_config_id);
      const uint64_t blocks = launch != nullptr ? launch->blocks() : 0;
      if (blocks > 0 && g.sm_count > 0) {
        const double fraction =
            std::min(1.0, static_cast<double>(blocks) / static_cast<double>(g.sm_count));
        const double est = fraction * static_cast<double>(duration);
        s.est_sm_ns += est;
        s.min_blocks = s.shape_known ? std::min(s.min_blocks, blocks) : blocks;
        s.max_blocks = std::max(s.max_blocks, blocks);
        s.shape_known = true;
        // NCCL kernels use a few blocks by design and run as long as they
        // wait for the other ranks: not "launches too small" (a straggler's
        // peers looked 37% SM-efficient on the H200).
        if (s.collective == CollectiveKind::kNone) {
          g.counts.est_sm_ns += est;
          g.counts.shape_known_ns += duration;
        }
        c.flags = kCmdEstimate;
        c.value = est;
      }
      if (g.limits.known()) {
        const double occ = ConfigOccupancy(p, k.launch_config_id, p.last_gpu);
        if (occ >= 0) {
          s.occupancy_ns += occ * static_cast<double>(duration);
          s.occupancy_known_ns += duration;
          if (launch != nullptr && launch->shared_memory_bytes() >= kLargeTileSharedBytes) {
            s.large_tile_ns += duration;
            g.counts.large_tile_ns += duration;
          } else {
            g.counts.occupancy_ns += occ * static_cast<double>(duration);
            g.counts.occupancy_known_ns += duration;
            s.small_occupancy_ns += occ * static_cast<double>(duration);
            s.small_known_ns += duration;
          }
        }
      }
      const bool novel =
          p.kernel_configs.insert((uint64_t{k.name_id} << 32) | k.launch_config_id).second;
      // The sweep finds the same stats by name when it sweeps on this GPU
      // (the stream's) and the name was defined (by_name grows only, and a
      // defined name's slot never changes): it takes them from the op.
      // Otherwise it looks the name up in by_name, the arrival's: then
      // both run on this thread from here on.
      const uint32_t known = k.name_id < p.string_ids() && p.stream_gpu[slot] == p.last_gpu &&
                                     stats + 1 < kOpStatsLimit
                                 ? static_cast<uint32_t>(stats + 1) << kOpStatsShift
                                 : 0;
      if (known == 0) GoInline();
      c.op = GpuOp{k.start_ns, k.end_ns, k.correlation_id, slot, k.name_id,
                   kOpKernel | (novel ? kOpNovel : 0u) | known};
      Emit(p, c);
    }
  }

  void AddMemcpys(ProcessState& p) {
    for (format::MemcpyEvent c : ev_->memcpys) {
      c.end_ns = std::max(c.end_ns, c.start_ns);
      Span(p, c.start_ns, c.end_ns);
      GpuState* gpu = Gpu(p, c.device_id);
      if (gpu == nullptr) continue;
      const uint32_t slot = StreamSlot(p, p.last_gpu, c.context_id, c.stream_id);
      if (slot == kNoSlot) continue;
      GpuState& g = *gpu;
      GpuModel& m = g.m;
      const uint64_t duration = c.end_ns - c.start_ns;
      const uint32_t host_kind = HostMemoryKind(c);
      CopyStats& s = m.copies[std::min<uint32_t>(c.copy_kind, kCopyKinds - 1)]
                             [std::min<uint32_t>(host_kind, kMemoryKinds - 1)];
      ++s.count;
      s.bytes += c.bytes;
      s.duration_ns += duration;
      if ((c.flags & 1) == 0) {
        ++s.sync_count;
        s.sync_bytes += c.bytes;
        s.sync_duration_ns += duration;
      }
      if (duration > s.longest.length_ns() || s.count == 1) s.longest = {c.start_ns, c.end_ns};
      ++g.counts.ops;
      Cmd cmd(CmdType::kMemcpy);
      cmd.gpu = p.last_gpu;
      cmd.flags = (c.copy_kind == proto::MEMCPY_DTOH ? kCmdD2h : 0) |
                  (host_kind == proto::MEMORY_PAGEABLE ? kCmdPageable : 0);
      cmd.field = c.copy_kind == proto::MEMCPY_HTOD   ? kWinH2dBytes
                  : c.copy_kind == proto::MEMCPY_DTOH ? kWinD2hBytes
                  : c.copy_kind == proto::MEMCPY_DTOD ? kWinD2dBytes
                                                      : kWinOtherCopyBytes;
      cmd.value = static_cast<double>(c.bytes);
      if (host_kind == proto::MEMORY_PAGEABLE && g.pageable.Accepts(duration)) {
        g.pageable.Add(duration, Interval{c.start_ns, c.end_ns});
      }
      // name_id carries the copy kind (the sweep tracks D2H/H2D periods), its
      // host memory and whether it is large enough to be an input copy.
      const uint32_t info = (c.copy_kind & kCopyKindMask) |
                            (host_kind == proto::MEMORY_PAGEABLE ? kCopyPageable : 0) |
                            (c.bytes > kInputCopyMinBytes ? kCopyInputSize : 0);
      cmd.op = GpuOp{c.start_ns, c.end_ns, c.correlation_id, slot, info, kOpMemcpy};
      Emit(p, cmd);
    }
  }

  void AddMemsets(ProcessState& p) {
    for (format::MemsetEvent s : ev_->memsets) {
      s.end_ns = std::max(s.end_ns, s.start_ns);
      Span(p, s.start_ns, s.end_ns);
      GpuState* gpu = Gpu(p, s.device_id);
      if (gpu == nullptr) continue;
      const uint32_t slot = StreamSlot(p, p.last_gpu, s.context_id, s.stream_id);
      if (slot == kNoSlot) continue;
      GpuState& g = *gpu;
      GpuModel& m = g.m;
      const uint64_t duration = s.end_ns - s.start_ns;
      CopyStats& c = m.memsets[std::min<uint32_t>(s.memory_kind, kMemoryKinds - 1)];
      ++c.count;
      c.bytes += s.bytes;
      c.duration_ns += duration;
      if ((s.flags & 1) == 0) {
        ++c.sync_count;
        c.sync_bytes += s.bytes;
        c.sync_duration_ns += duration;
      }
      if (duration > c.longest.length_ns() || c.count == 1) c.longest = {s.start_ns, s.end_ns};
      ++g.counts.ops;
      Cmd cmd(CmdType::kMemset);
      cmd.gpu = p.last_gpu;
      cmd.op = GpuOp{s.start_ns, s.end_ns, s.correlation_id, slot, 0, kOpMemset};
      Emit(p, cmd);
    }
  }

  void AddNvtx(ProcessState& p) {
    for (const format::NvtxRangeEvent& r : ev_->nvtx_ranges) {
      Span(p, r.start_ns, r.end_ns);
      if (IsNcclDomain(p, r.domain_id)) {
        const uint64_t length = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
        ++p.m.comm_ranges;
        p.m.comm_range_ns += length;
        Cmd c(CmdType::kCommRange);
        c.op.start_ns = r.start_ns;
        c.op.end_ns = length;
        Emit(p, c);
        continue;
      }
      if (!IsStep(p, r.name_id)) continue;
      if (!p.step_thread_set) {
        p.step_thread_set = true;
        p.step_thread = r.thread_id;
        p.step_example = p.String(r.name_id);
      }
      // One sequence of steps: the first thread's, not nested, in order.
      if (r.thread_id != p.step_thread ||
          (p.next_step_index > 0 && r.start_ns < p.last_step_end_ns)) {
        ++p.m.steps_ignored;
        continue;
      }
      Cmd c(CmdType::kStep);
      c.u64 = p.next_step_index++;
      c.op.start_ns = r.start_ns;
      c.op.end_ns = r.end_ns;
      Emit(p, c);
      p.last_step_start_ns = r.start_ns;
      p.last_step_end_ns = r.end_ns;
    }
  }

  // A lost interval (kUntraced; end_ns 0: open) into the sweep's `untraced`.
  static void AddUntraced(ProcessState& p, uint64_t start_ns, uint64_t end_ns) {
    if (p.untraced.size() >= kMaxUntraced) return;
    const Interval u{start_ns, end_ns == 0 ? ~uint64_t{0} : end_ns};
    const auto at = std::upper_bound(
        p.untraced.begin(), p.untraced.end(), u,
        [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
    // Collectors write lost intervals in order; out of order, each
    // insert shifts the rest, so only a bounded number are taken.
    if (at != p.untraced.end() && p.untraced.size() >= kMaxUntracedUnordered) return;
    size_t i = static_cast<size_t>(at - p.untraced.begin());
    p.untraced.insert(at, u);
    p.untraced_max_end.resize(p.untraced.size());
    for (; i < p.untraced.size(); ++i) {  // usually just the new last one
      p.untraced_max_end[i] =
          std::max(i > 0 ? p.untraced_max_end[i - 1] : 0, p.untraced[i].end_ns);
    }
  }

  // The sweep's part of a step (kStep).
  static void PushStep(ProcessState& p, uint64_t index, uint64_t start_ns, uint64_t range_end_ns) {
    if (!p.steps.empty() && p.steps.back().period_end_ns == 0) {
      p.steps.back().period_end_ns = start_ns;
    }
    // A range that ends before it starts (a hostile or wrapped record)
    // can make the attributed ends decrease: then a plain binary search.
    if (range_end_ns < start_ns) p.steps_sorted = false;
    PendingStep s;
    s.index = index;
    s.start_ns = start_ns;
    s.range_end_ns = range_end_ns;
    p.steps.push_back(s);
    if (p.steps.size() > kMaxPendingSteps) p.steps.pop_front();
  }

  void AddMetrics(ProcessState& p) {
    for (const format::MetricSample& s : ev_->metrics) {
      Span(p, s.timestamp_ns, s.timestamp_ns);
      if (s.metric_id >= p.metric_kind.size()) continue;
      if (!std::isfinite(s.value)) continue;  // NaN/inf: not a reading
      const uint8_t kind = p.metric_kind[s.metric_id];
      if (kind == kMetricOther) continue;
      if (kind == kMetricCollectorCpu || kind == kMetricSamplerCpu) {
        CpuSeries& c = kind == kMetricCollectorCpu ? p.m.collector_cpu : p.m.sampler_cpu;
        c.pct_sum += s.value;
        c.pct_max = std::max(c.pct_max, s.value);
        ++c.samples;
        continue;
      }
      if (kind == kMetricCpuUser || kind == kMetricCpuSystem) {  // the process, not a GPU
        const bool user = kind == kMetricCpuUser;
        p.m.has_cpu_samples = true;
        AddMetric(p, kCmdProcessWindows, 0, user ? kPWinCpuUserSum : kPWinCpuSystemSum,
                  s.timestamp_ns, s.value);
        AddMetric(p, kCmdProcessWindows, 0, user ? kPWinCpuUserSamples : kPWinCpuSystemSamples,
                  s.timestamp_ns, 1);
        continue;
      }
      if (kind == kMetricSmUtil || kind == kMetricGpuUtil) {
        const int i = kind == kMetricSmUtil ? 0 : 1;
        ++p.m.gpu_work_samples[i];
        if (s.value >= 1.0) {
          uint64_t& first = p.m.first_gpu_work_ns[i];
          if (first == 0 || s.timestamp_ns < first) first = s.timestamp_ns;
          p.m.last_gpu_work_ns[i] = std::max(p.m.last_gpu_work_ns[i], s.timestamp_ns);
        }
      }
      if (kind == kMetricGpuUtil) continue;
      GpuState* gpu = Gpu(p, p.metric_device[s.metric_id]);
      if (gpu == nullptr) continue;
      GpuState& g = *gpu;
      const uint32_t gi = p.last_gpu;  // g's index (Gpu() just set it)
      switch (kind) {
        case kMetricSmUtil:
          g.m.has_sm_util = true;
          AddMetric(p, kCmdGpuTimeline, gi, kSmUtilSum, s.timestamp_ns, s.value);
          AddMetric(p, kCmdGpuTimeline, gi, kSmUtilSamples, s.timestamp_ns, 1);
          AddMetric(p, kCmdGpuWindows, gi, kWinSmUtilSum, s.timestamp_ns, s.value);
          AddMetric(p, kCmdGpuWindows, gi, kWinSmUtilSamples, s.timestamp_ns, 1);
          break;
        case kMetricDramUtil:
          g.m.has_dram_util = true;
          AddMetric(p, kCmdGpuTimeline, gi, kDramUtilSum, s.timestamp_ns, s.value);
          AddMetric(p, kCmdGpuTimeline, gi, kDramUtilSamples, s.timestamp_ns, 1);
          AddMetric(p, kCmdGpuWindows, gi, kWinDramUtilSum, s.timestamp_ns, s.value);
          AddMetric(p, kCmdGpuWindows, gi, kWinDramUtilSamples, s.timestamp_ns, 1);
          break;
        case kMetricTensorUtil:
          g.m.has_tensor_util = true;
          AddMetric(p, kCmdGpuWindows, gi, kWinTensorUtilSum, s.timestamp_ns, s.value);
          AddMetric(p, kCmdGpuWindows, gi, kWinTensorUtilSamples, s.timestamp_ns, 1);
          break;
        case kMetricClockReasons: {
          const uint64_t reasons = s.value >= 0 && s.value < 1.8e19 ? static_cast<uint64_t>(s.value) : 0;
          g.m.throttle_reasons_seen |= reasons;
          AddMetric(p, kCmdGpuTimeline, gi, kClockReasonSamples, s.timestamp_ns, 1);
          if ((reasons & kThrottleReasonMask) != 0) {
            AddMetric(p, kCmdGpuTimeline, gi, kThrottledSamples, s.timestamp_ns, 1);
          }
          break;
        }
        case kMetricOtherProcessSm: {
          const uint32_t pid = p.metric_pid[s.metric_id];
          auto [it, inserted] = g.m.other_processes.try_emplace(pid);
          if (inserted) it->second.label = p.metric_label[s.metric_id];
          ++it->second.samples;
          it->second.sm_util_sum += s.value;
          it->second.max_sm_util = std::max(it->second.max_sm_util, s.value);
          AddMetric(p, kCmdGpuTimeline, gi, kOtherProcessSmSum, s.timestamp_ns, s.value);
          AddMetric(p, kCmdGpuTimeline, gi, kOtherProcessSmSamples, s.timestamp_ns, 1);
          break;
        }
        default:
          break;
      }
    }
  }

  // One add of a metric sample to a timeline (the sweep's): `target` a
  // kCmd*Timeline/Windows value.
  void AddMetric(ProcessState& p, uint8_t target, uint32_t gpu, int field, uint64_t t_ns,
                 double value) {
    Cmd c(CmdType::kMetric);
    c.flags = target;
    c.gpu = gpu;
    c.field = static_cast<uint16_t>(field);
    c.op.start_ns = t_ns;
    c.value = value;
    Emit(p, c);
  }

  // --------------------------------------------------------------- sweep --

  // `readback`: the device's work before the gap ended with a copy to the
  // host. A host that waits for that data without a CUDA sync (JAX's
  // float(): XLA's thread copies, the main thread waits on a futex; event
  // polling; host callbacks) shows no sync, but the gap after it is the
  // host's code after a read-back, as after a sync.
  GapSplit Classify(const ProcessState& p, uint64_t gap_start, uint64_t gap_end,
                    const ApiRef* api, bool readback = false) const {
    GapSplit split;
    const uint64_t gap = gap_end - gap_start;
    if (api == nullptr || api->start_ns <= gap_start) {
      split.queued_ns = gap;
      return split;
    }
    uint64_t sync_end = 0;
    if (p.syncs.FindSpanning(gap_start, kSyncSlackNs, &sync_end)) {
      split.sync_ns = std::min(gap, std::max(sync_end, gap_start) - gap_start + kSyncRelaunchNs);
      split.after_sync = true;
    }
    // Of the rest, the time the host spent in implicitly synchronizing
    // calls (host_calls.h); a gap that began in one is also "after a sync".
    bool began_in_call = false;
    // After an implicit sync returns, the next launch is one call away
    // (HTA: a launch call takes at most ~50 us), not the 0.5 ms allowed
    // after an explicit sync, which usually returns into host code.
    split.implicit_ns =
        p.implicit.Overlap(gap_start + split.sync_ns, gap_end, kSyncSlackNs, kLaunchCallOutlierNs,
                           &split.implicit_by_group, &began_in_call);
    split.after_sync |= began_in_call;
    if (!split.after_sync && readback) split.after_sync = split.after_readback = true;
    split.host_ns = gap - split.sync_ns - split.implicit_ns;
    return split;
  }

  void Sweep(ProcessState& p, const GpuOp& op) {
    StreamState& s = p.streams[op.stream_slot];
    GpuState& g = *p.swept_gpus[s.gpu];
    GpuModel& m = g.m;
    if (p.swept_any && op.start_ns < g.watermark_ns) {
      ++m.late_ops;
      m.late_ns += std::min(op.end_ns, g.watermark_ns) - op.start_ns;
    }
    p.swept_any = true;
    p.watermark_ns = std::max(p.watermark_ns, op.start_ns);
    g.watermark_ns = std::max(g.watermark_ns, op.start_ns);
    const uint32_t kind = op.kind & kOpKindMask;
    const uint32_t copy_kind = kind == kOpMemcpy ? (op.name_id & kCopyKindMask) : 0;
    // The kernel's stats, found first: the interval its period histogram
    // counts is known now, and its counter (usually not in cache: a few
    // KiB per name) is fetched while the gap before the op is classified.
    // Nothing below adds a kernel name before it is used.
    SweptKernel* kernel = nullptr;
    if (kind == kOpKernel) {
      const uint32_t known = op.kind >> kOpStatsShift;
      // known == 0 only on one thread (AddKernels): by_name is the arrival's.
      kernel = &g.Swept(known != 0 ? known - 1
                                   : static_cast<size_t>(&g.Kernel(op.name_id, p.string_ids()) -
                                                         g.by_name.data()));
      kernel->period.Prefetch(op.start_ns);
    }
    // What ended the device's busy time before this op (the gap it may end):
    // m.last_ns is the latest end swept so far, busy_end_* the op it was.
    const uint64_t busy_end_ns = m.last_ns;
    const bool readback = g.busy_end_readback;
    const uint32_t readback_correlation = g.busy_end_correlation;
    if (op.end_ns >= m.last_ns) {
      g.busy_end_readback = copy_kind == proto::MEMCPY_DTOH;
      g.busy_end_correlation = op.correlation_id;
    }
    m.last_ns = std::max(m.last_ns, op.end_ns);
    ApiRef api_ref{};
    const ApiRef* api = nullptr;
    bool async_copy_call = false, driver_call = false;
    if (ApiRing::Entry* e = p.launches.Find(op.correlation_id)) {
      api_ref = {e->start_ns, e->end_ns()};
      api = &api_ref;
      async_copy_call = e->async_copy();
      driver_call = e->driver();
      p.launches.Release(e);
    }
    if (kind == kOpMemcpy && api != nullptr && async_copy_call &&
        (op.name_id & kCopyPageable) != 0) {
      // An "asynchronous" copy from or to pageable memory: the host is held
      // while the driver stages it (before the gap it may end is classified).
      p.has_pageable_calls = true;
      CountImplicitCall(p.pageable_calls, kImplicitPageableCopy, api->end_ns - api->start_ns);
      IndexImplicitCall(p, kImplicitPageableCopy, api->start_ns, api->end_ns);
    }
    Interval closed;
    if (g.all.Add(op.start_ns, op.end_ns, &closed)) {
      Busy(p, g, closed, /*kernels=*/false);
      ForTracedParts(p, closed.end_ns, op.start_ns, [&](uint64_t a, uint64_t b, bool traced) {
        if (traced) {
          const bool after_copy = readback && a == busy_end_ns;
          const GapSplit split = Classify(p, a, b, api, after_copy);
          GapStacks stacks;
          if (p.stacks.active() && api != nullptr) {  // call stacks (issue 20)
            stacks = p.stacks.ResolveGap(a, b, split.sync_ns + split.implicit_ns,
                                         split.after_sync, op.correlation_id,
                                         split.after_readback ? readback_correlation : 0);
          }
          DeviceGap(p, g, a, b, split, stacks);
        } else {
          g.m.timeline.AddSpan(kUntracedNs, a, b);
          g.m.windows.AddSpan(kWinUntracedNs, a, b);
        }
      });
    }
    if (kind == kOpMemcpy && copy_kind == proto::MEMCPY_HTOD && api != nullptr &&
        (op.name_id & kCopyInputSize) != 0) {
      InputEvidence(g, api->start_ns);
    }
    if (kind == kOpKernel) {
      if (p.stacks.active()) {  // call stacks (issue 20): kernel time of sampled launches
        p.stacks.OnKernelSwept(op.correlation_id, op.end_ns - op.start_ns, p.watermark_ns);
      }
      const bool novel = kernel->period.count == 0 || (op.kind & kOpNovel) != 0;
      Interval kernel_free;
      if (g.kernels.Add(op.start_ns, op.end_ns, &closed)) {
        Busy(p, g, closed, /*kernels=*/true);
        kernel_free = {closed.end_ns, op.start_ns};
      }
      KernelAfterGaps(p, g, novel, kernel_free.length_ns() > 0 ? &kernel_free : nullptr);
      if (novel) {
        if (g.novel_end_ns.size() < kMaxNovelKernels) {
          g.novel_end_ns.push_back(op.end_ns);
        } else {
          g.novel_overflow = true;
        }
      }
      kernel->period.Add(op.start_ns);
      SweepComm(p, g, *kernel, op);
    } else if (kind == kOpMemcpy) {
      if (copy_kind == proto::MEMCPY_DTOH) g.d2h_period.Add(op.start_ns);
      if (copy_kind == proto::MEMCPY_HTOD) g.h2d_period.Add(op.start_ns);
    }

    // HTA per-stream idle.
    StreamModel& sm = s.model;
    if (s.has_prev && op.start_ns > s.last_end_ns) {
      ForTracedParts(p, s.last_end_ns, op.start_ns, [&](uint64_t a, uint64_t b, bool traced) {
        if (traced) StreamGap(p, m, sm, a, b, api);
      });
    }
    if (!s.has_prev) sm.first_ns = op.start_ns;
    s.last_end_ns = s.has_prev ? std::max(s.last_end_ns, op.end_ns) : op.end_ns;
    s.has_prev = true;
    ++sm.ops;
    sm.busy_ns += op.end_ns - op.start_ns;
    sm.last_ns = std::max(sm.last_ns, op.end_ns);

    if (kernel == nullptr) return;
    SweptKernel& k = *kernel;
    if (api == nullptr) {
      ++m.launches_unmatched;
      return;
    }
    ++m.launches_matched;
    ++k.launches_matched;
    if (driver_call) ++k.driver_launches;
    const uint64_t delay = op.start_ns > api->end_ns ? op.start_ns - api->end_ns : 0;
    m.queue_delay_ns.Add(delay);
    if (delay > kQueueDelayOutlierNs) ++m.queue_delay_outliers;
    const uint64_t call = api->end_ns - api->start_ns;
    if (op.end_ns - op.start_ns < call && call <= kLaunchCallOutlierNs) {
      ++m.shorter_than_launch;
      ++k.shorter_than_launch;
    }
    if (op.end_ns - op.start_ns >= kLaunchCallOutlierNs) {
      ++m.long_launches;
      m.timeline.Add(kLongLaunches, op.start_ns, 1);
      if (api->end_ns >= op.end_ns) {
        ++m.long_launches_blocking;
        m.timeline.Add(kLongLaunchesBlocking, op.start_ns, 1);
      }
    }
  }

  // Counts comm/compute overlap up to `to_ns`. Ops arrive in start order, so
  // before an op starting at to_ns changes a union, the open intervals are
  // all of each union in [overlap_at_ns, to_ns): closed ones end earlier.
  void Overlap(GpuState& g, uint64_t to_ns) {
    if (to_ns <= g.overlap_at_ns) return;
    if (g.comm.open() && g.compute.open()) {
      const uint64_t lo =
          std::max({g.overlap_at_ns, g.comm.current().start_ns, g.compute.current().start_ns});
      const uint64_t hi = std::min({to_ns, g.comm.current().end_ns, g.compute.current().end_ns});
      if (hi > lo) {
        g.m.comm.overlap_ns += hi - lo;
        g.m.timeline.AddSpan(kCommOverlapNs, lo, hi);
      }
    }
    g.overlap_at_ns = to_ns;
  }

  // Communication vs compute kernels: unions, overlap, per-kind stats and
  // the sampled records for matching collectives across ranks.
  void SweepComm(ProcessState& p, GpuState& g, const SweptKernel& k, const GpuOp& op) {
    Overlap(g, op.start_ns);
    Interval closed;
    if (k.collective == CollectiveKind::kNone) {
      if (g.compute.Add(op.start_ns, op.end_ns, &closed)) {
        g.m.timeline.AddSpan(kComputeBusyNs, closed.start_ns, closed.end_ns);
      }
      return;
    }
    if (g.comm.Add(op.start_ns, op.end_ns, &closed)) CommBusy(p, g, closed);
    CommStats& c = g.m.comm;
    const uint64_t duration = op.end_ns - op.start_ns;
    ++c.kernels;
    c.kernel_ns += duration;
    const size_t kind = static_cast<size_t>(k.collective);
    ++c.by_kind[kind].count;
    c.by_kind[kind].kernel_ns += duration;
    const uint32_t seq = g.collective_seq[kind]++;
    std::vector<CollectiveRecord>& records = g.m.collectives;
    if (seq % g.m.collective_stride != 0) return;
    records.push_back({op.start_ns, op.end_ns, seq, k.collective});
    if (records.size() > kMaxCollectiveRecords) {
      g.m.collective_stride *= 2;
      const uint32_t stride = g.m.collective_stride;
      records.erase(std::remove_if(records.begin(), records.end(),
                                   [stride](const CollectiveRecord& r) { return r.seq % stride != 0; }),
                    records.end());
    }
  }

  void CommBusy(ProcessState& p, GpuState& g, const Interval& closed) {
    g.m.timeline.AddSpan(kCommBusyNs, closed.start_ns, closed.end_ns);
    g.m.windows.AddSpan(kWinCommBusyNs, closed.start_ns, closed.end_ns);
    AttributeToSteps(p, g, closed, &PendingStep::comm_ns);
  }

  // Calls f(a, b, traced) for the consecutive parts of [gap_start, gap_end):
  // traced ones, and those inside one of p's lost intervals (not idle: what
  // the GPU did there is unknown, e.g. between two capture windows).
  template <typename F>
  static void ForTracedParts(const ProcessState& p, uint64_t gap_start, uint64_t gap_end, F f) {
    uint64_t at = gap_start;
    // The first interval that may reach past gap_start.
    const size_t first = static_cast<size_t>(
        std::partition_point(p.untraced_max_end.begin(), p.untraced_max_end.end(),
                             [&](uint64_t end) { return end <= gap_start; }) -
        p.untraced_max_end.begin());
    for (size_t i = first; i < p.untraced.size(); ++i) {
      const Interval& u = p.untraced[i];
      if (u.start_ns >= gap_end) break;
      if (u.end_ns <= at) continue;
      if (u.start_ns > at) f(at, u.start_ns, true);
      const uint64_t hi = std::min(u.end_ns, gap_end);
      f(std::max(at, u.start_ns), hi, false);
      at = hi;
      if (at >= gap_end) return;
    }
    if (at < gap_end) f(at, gap_end, true);
  }

  // HTA's per-stream idle in the traced gap [a, b) before `api`'s op.
  void StreamGap(const ProcessState& p, GpuModel& m, StreamModel& sm, uint64_t a, uint64_t b,
                 const ApiRef* api) {
    const GapSplit split = Classify(p, a, b, api);
    Timeline& t = m.timeline;
    uint64_t at = a;
    if (split.sync_ns > 0) {
      sm.idle_ns[static_cast<int>(GapCause::kSync)] += split.sync_ns;
      t.AddSpan(kStreamIdleSyncNs, at, at + split.sync_ns);
      at += split.sync_ns;
    }
    if (split.implicit_ns > 0) {
      // HTA has no such cause: per stream it is host wait, and counted
      // apart as well.
      sm.idle_ns[static_cast<int>(GapCause::kHost)] += split.implicit_ns;
      t.AddSpan(kStreamIdleImplicitNs, at, at + split.implicit_ns);
      at += split.implicit_ns;
    }
    if (split.host_ns > 0) {
      sm.idle_ns[static_cast<int>(GapCause::kHost)] += split.host_ns;
      t.AddSpan(kStreamIdleHostNs, at, at + split.host_ns);
      at += split.host_ns;
    }
    if (split.queued_ns > 0) {
      const bool kernel_wait = b - a < options_.idle_gap_threshold_ns;
      sm.idle_ns[static_cast<int>(kernel_wait ? GapCause::kKernel : GapCause::kOther)] +=
          split.queued_ns;
      t.AddSpan(kernel_wait ? kStreamIdleKernelNs : kStreamIdleOtherNs, at, at + split.queued_ns);
    }
  }

  void DeviceGap(ProcessState& p, GpuState& g, uint64_t a, uint64_t b, const GapSplit& split,
                 const GapStacks& stacks) {
    const uint64_t gap = b - a;
    const bool large = gap >= options_.idle_gap_threshold_ns;
    GapRecord rec{a, b, split.host_ns, split.sync_ns, split.queued_ns, split.implicit_ns};
    if (!large) {
      ApplyGap(p, g, rec, split, stacks, /*large=*/false);
      return;
    }
    g.m.windows.AddSpan(kWinGapNs, a, b);
    g.restart_period.Add(b);
    // Large gaps wait (PendingGap): an input copy issued in this one can be
    // swept after the op that ends it; a long one waits for the next kernel.
    for (PendingGap& pg : g.pending_gaps) pg.input_window_closed = true;
    PendingGap pending;
    pending.rec = rec;
    pending.split = split;
    pending.stacks = stacks;
    pending.novelty_known = gap < options_.long_gap_ns;
    g.pending_gaps.push_back(pending);
    if (g.pending_gaps.size() > kMaxPendingGaps) {
      ApplyPending(p, g, g.pending_gaps.front());
      g.pending_gaps.pop_front();
    }
    FlushPendingGaps(p, g, /*all=*/false);
  }

  // Applies the pending gaps whose evidence is complete (all: at the end).
  void FlushPendingGaps(ProcessState& p, GpuState& g, bool all) {
    while (!g.pending_gaps.empty()) {
      PendingGap& front = g.pending_gaps.front();
      if (!all && !(front.input_window_closed && front.novelty_known)) break;
      ApplyPending(p, g, front);
      g.pending_gaps.pop_front();
    }
  }

  void ApplyPending(ProcessState& p, GpuState& g, const PendingGap& pg) {
    const GapRecord& rec = pg.rec;
    if (rec.one_time) {
      // One-time start-up work: neither idle nor busy in the steady state.
      g.m.timeline.AddSpan(kOneTimeGapNs, rec.start_ns, rec.end_ns);
      g.m.timeline.Add(kOneTimeGapCount, rec.start_ns, 1);
      if (g.m.one_time_gaps.size() < kOneTimeGaps) g.m.one_time_gaps.push_back(rec);
      if (g.pause_records.size() < kMaxPauseRecords) {
        g.pause_records.push_back({rec.start_ns, rec.end_ns});
        g.one_time_records.push_back({rec.start_ns, rec.end_ns});
      }
      if (g.largest_gaps.Accepts(rec.length_ns())) g.largest_gaps.Add(rec.length_ns(), rec);
      LongGapEdge(g, rec);
      return;
    }
    ApplyGap(p, g, rec, pg.split, pg.stacks, /*large=*/true);
  }

  void LongGapEdge(GpuState& g, const GapRecord& rec) {
    if (!g.has_long_gap) g.first_long_gap = rec;
    g.last_long_gap = rec;
    g.has_long_gap = true;
  }

  void ApplyGap(ProcessState& p, GpuState& g, const GapRecord& rec, const GapSplit& split,
                const GapStacks& stacks, bool large) {
    if (p.stacks.active()) {  // call stacks (issue 20)
      p.stacks.ApplyGap(stacks, split.sync_ns + split.implicit_ns, split.host_ns,
                        split.after_sync);
    }
    const uint64_t a = rec.start_ns, b = rec.end_ns, gap = b - a;
    Timeline& t = g.m.timeline;
    uint64_t at = a;
    if (split.sync_ns > 0) {
      t.AddSpan(large ? kGapSyncNs : kShortGapSyncNs, at, at + split.sync_ns);
      at += split.sync_ns;
    }
    if (split.implicit_ns > 0) {
      t.AddSpan(large ? kGapImplicitNs : kShortGapImplicitNs, at, at + split.implicit_ns);
      for (int k = 0; k < kImplicitGroups; ++k) {
        const uint64_t part = split.implicit_by_group[static_cast<size_t>(k)];
        if (part > 0) t.AddSpread(kImplicitIdleFirst + k, at, at + split.implicit_ns, static_cast<double>(part));
      }
      at += split.implicit_ns;
    }
    if (split.host_ns > 0) {
      t.AddSpan(large ? kGapHostNs : kShortGapHostNs, at, at + split.host_ns);
      if (split.after_sync) {
        t.AddSpan(large ? kGapAfterSyncHostNs : kShortGapAfterSyncHostNs, at, at + split.host_ns);
      }
      if (large && rec.input) t.AddSpan(kGapInputHostNs, at, at + split.host_ns);
      at += split.host_ns;
    }
    if (split.queued_ns > 0) t.AddSpan(large ? kGapOtherNs : kShortGapKernelNs, at, b);
    if (large) t.Add(kGapCount, a, 1);
    if (large && g.largest_gaps.Accepts(gap)) g.largest_gaps.Add(gap, rec);
    if (split.sync_ns > 0 && g.sync_gaps.Accepts(split.sync_ns)) g.sync_gaps.Add(split.sync_ns, rec);
    if (gap >= options_.long_gap_ns) {
      t.AddSpan(kLongGapNs, a, b);
      t.Add(kLongGapCount, a, 1);
      LongGapEdge(g, rec);
    }
  }

  // An input copy (H2D, > kInputCopyMinBytes) whose call was issued at
  // call_start_ns: evidence for the pending gap it was issued in.
  void InputEvidence(GpuState& g, uint64_t call_start_ns) {
    for (auto it = g.pending_gaps.rbegin(); it != g.pending_gaps.rend(); ++it) {
      if (call_start_ns >= it->rec.start_ns && call_start_ns <= it->rec.end_ns) {
        it->rec.input = true;
        return;
      }
      if (it->rec.end_ns < call_start_ns) return;
    }
  }

  // The first kernel after pending long gaps: new code (a name never swept
  // before) makes them one-time start-up work. Then the kernel-free
  // interval before this kernel, if long, is a pause (or one-time).
  void KernelAfterGaps(ProcessState& p, GpuState& g, bool novel, const Interval* kernel_free) {
    for (PendingGap& pg : g.pending_gaps) {
      if (pg.novelty_known) continue;
      pg.novelty_known = true;
      pg.rec.one_time = novel;
    }
    FlushPendingGaps(p, g, /*all=*/false);
    if (kernel_free == nullptr || kernel_free->length_ns() < options_.long_gap_ns) return;
    // Partly untraced (between capture windows): what ran there is unknown.
    bool untraced = false;
    ForTracedParts(p, kernel_free->start_ns, kernel_free->end_ns,
                   [&](uint64_t, uint64_t, bool traced) { untraced |= !traced; });
    if (untraced) return;
    if (g.pause_records.size() < kMaxPauseRecords) g.pause_records.push_back(*kernel_free);
    if (novel) return;  // the one-time gaps inside are counted as such
    g.m.timeline.AddSpan(kPauseNs, kernel_free->start_ns, kernel_free->end_ns);
    g.m.timeline.Add(kPauseCount, kernel_free->start_ns, 1);
    if (g.pauses.Accepts(kernel_free->length_ns())) {
      g.pauses.Add(kernel_free->length_ns(), *kernel_free);
    }
  }

  // A merged busy interval is final: count it and share it out to steps.
  void Busy(ProcessState& p, GpuState& g, const Interval& closed, bool kernels) {
    g.m.timeline.AddSpan(kernels ? kKernelBusyNs : kBusyNs, closed.start_ns, closed.end_ns);
    if (!kernels) g.m.windows.AddSpan(kWinBusyNs, closed.start_ns, closed.end_ns);
    AttributeToSteps(p, g, closed, kernels ? &PendingStep::kernel_ns : &PendingStep::busy_ns);
  }

  using StepCounter = std::array<uint64_t, kMaxStepGpus> PendingStep::*;
  void AttributeToSteps(ProcessState& p, GpuState& g, const Interval& closed, StepCounter counter) {
    if (g.step_slot >= kMaxStepGpus || p.steps.empty()) return;
    const size_t n = p.steps.size();
    for (size_t i = FirstStepEndingAfter(p, closed.start_ns);
         i < n && p.steps[i].start_ns < closed.end_ns; ++i) {
      PendingStep& s = p.steps[i];
      const uint64_t lo = std::max(closed.start_ns, s.start_ns);
      const uint64_t hi = std::min(closed.end_ns, s.attributed_end_ns());
      if (hi <= lo) continue;
      (s.*counter)[g.step_slot] += hi - lo;
    }
  }

  // The position of the first pending step whose attributed end is after
  // t: std::upper_bound's answer. While the attributed ends do not decrease
  // (ProcessState::steps_sorted) it gallops from where the last answer was:
  // busy intervals close in time order just behind the sweep, which passes
  // a batch's worth of pending steps before FinishSteps drops them, so the
  // answer is at or next to the last one. Otherwise (a hostile trace) it
  // bisects as std::upper_bound does, so the answer is the same.
  static size_t FirstStepEndingAfter(ProcessState& p, uint64_t t_ns) {
    const RingQueue<PendingStep>& steps = p.steps;
    const auto n = static_cast<std::ptrdiff_t>(steps.size());
    auto end_at = [&steps](std::ptrdiff_t i) {
      return steps[static_cast<size_t>(i)].attributed_end_ns();
    };
    if (!p.steps_sorted) {  // std::upper_bound's bisection (libstdc++), step by step
      std::ptrdiff_t first = 0, len = n;
      while (len > 0) {
        const std::ptrdiff_t half = len >> 1;
        if (t_ns < end_at(first + half)) {
          len = half;
        } else {
          first += half + 1;
          len -= half + 1;
        }
      }
      return static_cast<size_t>(first);
    }
    // Steps hold consecutive indexes, so the cursor (a step index) gives a
    // position.
    const uint64_t front = steps[0].index;
    const size_t hint = p.step_cursor >= front ? static_cast<size_t>(std::min<uint64_t>(
                                                     p.step_cursor - front, steps.size()))
                                               : 0;
    const size_t i = GallopUpperBound(steps, hint, t_ns,
                                      [](const PendingStep& s) { return s.attributed_end_ns(); });
    p.step_cursor = front + i;
    return i;
  }

  // Everything before this has been swept and merged on every GPU of p.
  uint64_t ClosedThrough(const ProcessState& p) const {
    uint64_t t = p.watermark_ns;
    for (const GpuState* g : p.swept_gpus) {
      if (g->all.open()) t = std::min(t, g->all.current().start_ns);
      if (g->kernels.open()) t = std::min(t, g->kernels.current().start_ns);
      if (g->comm.open()) t = std::min(t, g->comm.current().start_ns);
    }
    return t;
  }

  void FinishStep(ProcessState& p, const PendingStep& s) {
    // A step with untraced time inside (between two capture windows) has no
    // comparable period or idle time: counted, left out of the statistics.
    bool untraced = false;
    ForTracedParts(p, s.start_ns, std::max(s.start_ns, s.attributed_end_ns()),
                   [&](uint64_t, uint64_t, bool traced) { untraced |= !traced; });
    for (GpuState* gp : p.swept_gpus) {
      GpuState& g = *gp;
      if (g.step_slot >= kMaxStepGpus) continue;
      StepRecord r;
      r.index = s.index;
      r.start_ns = s.start_ns;
      r.end_ns = std::max(s.start_ns, s.attributed_end_ns());
      r.range_ns = s.range_end_ns - s.start_ns;
      const uint64_t busy = std::min(s.busy_ns[g.step_slot], r.period_ns());
      r.compute_ns = std::min(s.kernel_ns[g.step_slot], busy);
      r.copy_ns = busy - r.compute_ns;
      r.idle_ns = r.period_ns() - busy;
      r.comm_ns = std::min(s.comm_ns[g.step_slot], r.compute_ns);
      StepStats& st = g.m.steps;
      ++st.count;
      if (st.example_name.empty()) st.example_name = p.step_example;
      st.last_end_ns = std::max(st.last_end_ns, s.range_end_ns);
      if (s.index == 0) {
        st.warmup = r;
        continue;
      }
      if (untraced) continue;
      if (s.final) {  // not comparable with start-to-start periods
        st.last_start_ns = s.start_ns;
        continue;
      }
      if (st.second_start_ns == 0) st.second_start_ns = s.start_ns;
      st.period_ns.Add(r.period_ns());
      st.range_ns.Add(r.range_ns);
      st.compute_ns += r.compute_ns;
      st.copy_ns += r.copy_ns;
      st.idle_ns += r.idle_ns;
      st.comm_ns += r.comm_ns;
      if (g.slowest_steps.Accepts(r.period_ns())) g.slowest_steps.Add(r.period_ns(), r);
    }
  }

  void FinishSteps(ProcessState& p, bool all) {
    if (p.swept_gpus.empty() && !all) return;  // keep them for the first GPU
    const uint64_t through = all ? std::numeric_limits<uint64_t>::max() : ClosedThrough(p);
    while (!p.steps.empty()) {
      PendingStep& s = p.steps.front();
      if (!all && (s.period_end_ns == 0 || s.period_end_ns > through)) break;
      FinishStep(p, s);
      p.steps.pop_front();
    }
  }

  // Calls older than this (relative to the sweep) no longer wait for an op.
  uint64_t StaleBefore(const ProcessState& p) const {
    return p.watermark_ns > options_.api_retention_ns ? p.watermark_ns - options_.api_retention_ns
                                                      : 0;
  }

  void AfterSweep(ProcessState& p) {
    FinishSteps(p, /*all=*/false);
    p.syncs.PruneBefore(StaleBefore(p));
    p.implicit.PruneBefore(StaleBefore(p));
  }

  // Steps without NVTX markers: see InferredSteps in trace_model.h.
  void InferSteps(const ProcessState& p, GpuState& g) {
    struct Candidate {
      double period_ns;
      const PeriodTracker* tracker;
      std::string anchor;
      bool host;
    };
    std::vector<Candidate> candidates;
    // Pauses (kernel-free >= long_gap_ns) and one-time gaps, merged: the
    // span a series must cover leaves them out, and so does the judgement
    // of its regularity.
    std::vector<Interval> pauses = g.pause_records;
    std::sort(pauses.begin(), pauses.end(),
              [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
    uint64_t paused_ns = 0, covered_to = 0;
    for (const Interval& i : pauses) {
      const uint64_t from = std::max(std::max(i.start_ns, covered_to), g.m.first_ns);
      const uint64_t to = std::min(i.end_ns, g.m.last_ns);
      if (to > from) paused_ns += to - from;
      covered_to = std::max(covered_to, i.end_ns);
    }
    const uint64_t span_all = g.m.last_ns > g.m.first_ns ? g.m.last_ns - g.m.first_ns : 0;
    const uint64_t span = span_all > paused_ns ? span_all - paused_ns : 0;
    auto holds_pause = [&pauses](const Interval& step) {
      for (const Interval& q : pauses) {
        if (q.start_ns < step.end_ns && q.end_ns > step.start_ns) return true;
      }
      return false;
    };
    // Every regular series, step candidate or not, for telling phases apart.
    std::vector<const PeriodTracker*> regular;
    auto consider = [&](const PeriodTracker& t, std::string anchor, bool host) {
      if (t.count < kMinInferredSteps || t.interval_ns.empty()) return;
      // The intervals that hold a pause are left out of the judgement.
      uint64_t removed = 0, removed_ns = 0;
      for (const PeriodTracker::Kept& k : t.longest) {
        if (!holds_pause(k.interval)) continue;
        ++removed;
        removed_ns += k.interval.length_ns();
      }
      uint64_t covered = t.last_ns - t.first_ns;
      covered = covered > removed_ns ? covered - removed_ns : 0;
      const uint64_t n = t.interval_ns.count();
      if (n < removed + 2) return;
      // The remaining intervals are the n - removed shortest: a percentile
      // of theirs is a lower one of all.
      const double scale = static_cast<double>(n - removed - 1) / static_cast<double>(n - 1);
      const double p50 = t.interval_ns.Percentile(50 * scale);
      if (p50 < static_cast<double>(kMinInferredPeriodNs)) return;
      const double mean = static_cast<double>(t.interval_ns.sum() - removed_ns) /
                          static_cast<double>(n - removed);
      if (mean < 0.75 * p50 || mean > 1.25 * p50) return;
      if (t.interval_ns.Percentile(95 * scale) > 2 * p50) return;
      regular.push_back(&t);
      // A step holds more than the one event: at least two ops per period;
      // and the steps cover most of the run.
      if (2 * t.count > g.m.ops || 2 * covered < span) return;
      candidates.push_back({p50, &t, std::move(anchor), host});
    };
    for (size_t i = 0; i < g.by_name.size(); ++i) {
      consider(g.by_name[i].period, p.String(g.by_name_id[i]), false);
    }
    consider(g.d2h_period, "D2H copy", false);
    consider(g.h2d_period, "H2D copy", false);
    consider(g.restart_period, "GPU restart after idle", false);
    for (const HostSeries& h : p.host_series) consider(h.tracker, h.label, true);
    if (candidates.empty()) return;
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.period_ns != b.period_ns ? a.period_ns < b.period_ns : a.anchor < b.anchor;
    });
    // Groups of periods within 5% of the group's first; the largest group
    // wins, then the longer period.
    size_t best = 0, best_size = 0;
    for (size_t i = 0; i < candidates.size();) {
      size_t j = i;
      while (j < candidates.size() && candidates[j].period_ns <= 1.05 * candidates[i].period_ns) ++j;
      if (j - i >= best_size) {
        best = i;
        best_size = j - i;
      }
      i = j;
    }
    // The group's representative: the series with the most instances,
    // GPU restarts after idle only when nothing else agrees (a step can
    // hold more than one gap).
    const Candidate* pick = nullptr;
    for (size_t i = best; i < best + best_size; ++i) {
      const Candidate& cand = candidates[i];
      const bool restart = cand.tracker == &g.restart_period;
      if (pick == nullptr) {
        pick = &cand;
        continue;
      }
      const bool pick_restart = pick->tracker == &g.restart_period;
      if (pick_restart != restart ? pick_restart : cand.tracker->count > pick->tracker->count) {
        pick = &cand;
      }
    }
    InferredSteps& out = g.m.inferred_steps;
    out.found = true;
    out.anchor = pick->anchor;
    out.count = pick->tracker->count;
    out.candidates = best_size;
    out.period_ns = pick->tracker->interval_ns;
    out.first_start_ns = pick->tracker->first_ns;
    out.second_start_ns = pick->tracker->second_ns;
    out.last_start_ns = pick->tracker->last_ns;
    out.host = pick->host;
    // Series of one step loop share its span; a regular series that runs
    // mostly outside the chosen one's span is another phase of the run (a
    // benchmark's phases, evaluation after training).
    // (Ours: a phase spans at least a quarter of the steps' span.)
    const uint64_t steps_span = pick->tracker->last_ns - pick->tracker->first_ns;
    for (const PeriodTracker* t : regular) {
      const uint64_t len = t->last_ns - t->first_ns;
      const uint64_t lo = std::max(t->first_ns, pick->tracker->first_ns);
      const uint64_t hi = std::min(t->last_ns, pick->tracker->last_ns);
      const uint64_t inside = hi > lo ? hi - lo : 0;
      if (4 * len >= steps_span && 2 * inside < len) out.phased = true;
    }
    for (const PeriodTracker::Kept& k : pick->tracker->longest) {
      if (2 * k.index > pick->tracker->count) continue;  // after most steps: not start-up
      for (const Interval& q : g.one_time_records) {
        if (q.start_ns < k.interval.end_ns && q.end_ns > k.interval.start_ns) {
          out.steady_start_ns = std::max(out.steady_start_ns, k.interval.end_ns);
        }
      }
    }
    // A steady state repeats code the GPU has run before. Compilation,
    // autotuning and lazy loading run new kernels inside the first steps
    // (XLA compiles and autotunes between its warm-up calls) with gaps
    // too short to be one-time gaps, so the steady state starts after the
    // last kernel never run before, when most of the steps (the bound
    // above, counted in median periods) come after it. A run that keeps
    // running new code (dynamic shapes, a GPU that never repeats) has no
    // such point: nothing is cut.
    const double period = out.period_ns.Percentile(50);
    if (!g.novel_overflow && period > 0 && out.last_start_ns > out.second_start_ns) {
      uint64_t settle = 0;
      for (uint64_t end : g.novel_end_ns) {
        if (end > out.second_start_ns && end <= out.last_start_ns) settle = std::max(settle, end);
      }
      const double after = static_cast<double>(out.last_start_ns - settle) / period;
      if (settle > 0 && 2 * after >= static_cast<double>(out.count)) {
        out.steady_start_ns = std::max(out.steady_start_ns, settle);
      }
    }
  }

  // One sync call, in start order, into the union of blocked time.
  void SyncBlocked(ProcessState& p, const Interval& s) {
    Interval closed;
    if (p.sync_union.Add(s.start_ns, s.end_ns, &closed)) {
      p.m.timeline.AddSpan(kSyncBlockedNs, closed.start_ns, closed.end_ns);
    }
  }

  void FinishProcess(ProcessState& p) {
    p.sync_queue.Drain([this, &p](const Interval& s) { SyncBlocked(p, s); });
    {
      Interval closed;
      if (p.sync_union.Finish(&closed)) {
        p.m.timeline.AddSpan(kSyncBlockedNs, closed.start_ns, closed.end_ns);
      }
    }
    p.queue.Drain([this, &p](const GpuOp& op) { Sweep(p, op); });
    for (auto& gp : p.gpus) {
      GpuState& g = *gp;
      const ArrivalCounts& c = g.counts;
      g.m.ops = c.ops;
      g.m.kernel_count = c.kernel_count;
      g.m.kernel_ns = c.kernel_ns;
      g.m.tiny_kernels = c.tiny_kernels;
      g.m.est_sm_ns = c.est_sm_ns;
      g.m.shape_known_ns = c.shape_known_ns;
      g.m.occupancy_ns = c.occupancy_ns;
      g.m.occupancy_known_ns = c.occupancy_known_ns;
      g.m.large_tile_ns = c.large_tile_ns;
      FlushPendingGaps(p, g, /*all=*/true);  // long gaps with no kernel after: tear-down
      Interval closed;
      if (g.all.Finish(&closed)) Busy(p, g, closed, false);
      if (g.kernels.Finish(&closed)) Busy(p, g, closed, true);
      Overlap(g, std::numeric_limits<uint64_t>::max());
      if (g.comm.Finish(&closed)) CommBusy(p, g, closed);
      if (g.compute.Finish(&closed)) {
        g.m.timeline.AddSpan(kComputeBusyNs, closed.start_ns, closed.end_ns);
      }
    }
    if (!p.steps.empty() && p.steps.back().period_end_ns == 0) {
      p.steps.back().period_end_ns = p.steps.back().range_end_ns;
      p.steps.back().final = true;
    }
    FinishSteps(p, /*all=*/true);

    ProcessModel& pm = p.m;
    if (p.has_pageable_calls) pm.implicit_calls["async copy (pageable memory)"] = p.pageable_calls;
    // The records stand in for the calls only without API rows at all: with
    // them every blocking sync has its row, and the records without one are
    // queries (AddSyncRecords).
    pm.sync_from_records =
        p.sync_api_by_thread.empty() && !p.sync_record_by_thread.empty() && pm.api_calls == 0;
    pm.sync_by_thread = pm.sync_from_records ? p.sync_record_by_thread : p.sync_api_by_thread;
    for (const OpenLost& o : open_lost_) {
      if (o.process != &p || pm.last_ns <= o.start_ns) continue;
      pm.lost_interval_ns += pm.last_ns - o.start_ns;
      if (o.window_off) pm.window_off_ns += pm.last_ns - o.start_ns;
    }
    for (auto& gp : p.gpus) {
      GpuState& g = *gp;
      GpuModel& m = g.m;
      m.busy_ns = g.all.busy_ns();
      m.kernel_busy_ns = g.kernels.busy_ns();
      m.first_ns = g.all.first_start_ns();
      m.comm.busy_ns = g.comm.busy_ns();
      m.comm.compute_busy_ns = g.compute.busy_ns();
      for (size_t i = 0; i < g.swept.size(); ++i) {  // the sweep's part of each kernel's stats
        KernelStats& k = g.by_name[i];
        SweptKernel& w = g.swept[i];
        k.period = std::move(w.period);
        k.launches_matched = w.launches_matched;
        k.shorter_than_launch = w.shorter_than_launch;
        k.driver_launches = w.driver_launches;
      }
      if (m.steps.count == 0) InferSteps(p, g);
      for (size_t i = 0; i < g.by_name.size(); ++i) {
        KernelStats& k = g.by_name[i];
        if (k.duration_ns.count() == 0) continue;
        k.name = p.String(g.by_name_id[i]);
        if (g.by_name_id[i] == kNoSlot) {
          k.name = absl::StrCat("<kernels with other undefined names (more than ",
                                kMaxUndefinedNames, ")>");
        } else if (k.name.empty()) {
          k.name = absl::StrCat("<kernel name ", g.by_name_id[i], ">");
        }
        m.kernel_duration_ns.Merge(k.duration_ns);
        m.kernels.push_back(std::move(k));
      }
      for (const StreamState& s : p.streams) {
        if (&*p.gpus[s.gpu] == &g) m.streams.push_back(s.model);
      }
      for (const auto& [key, gap] : g.largest_gaps.Sorted()) m.largest_gaps.push_back(gap);
      for (const auto& [key, gap] : g.sync_gaps.Sorted()) m.sync_gaps.push_back(gap);
      if (g.has_long_gap) {
        m.long_gaps_edge.push_back(g.first_long_gap);
        if (g.last_long_gap.start_ns != g.first_long_gap.start_ns) {
          m.long_gaps_edge.push_back(g.last_long_gap);
        }
      }
      for (const auto& [key, copy] : g.pageable.Sorted()) m.pageable_copies.push_back(copy);
      for (const auto& [key, pause] : g.pauses.Sorted()) m.pauses.push_back(pause);
      for (const auto& [key, step] : g.slowest_steps.Sorted()) m.steps.slowest.push_back(step);
    }
  }

  ModelOptions options_;
  absl::flat_hash_map<uint64_t, size_t> slot_;  // process_uid -> processes_
  std::vector<std::unique_ptr<ProcessState>> processes_;
  struct OpenLost {
    const ProcessState* process;
    uint64_t start_ns;
    bool window_off;  // LOST_TRACING_DISABLED
  };
  std::vector<OpenLost> open_lost_;  // lost until the end
  const reader::DecodedBatch* ev_ = nullptr;  // the batch being added (OnBatch)

  // ------------------------------------------------------------ threads --
  //
  // The reading thread runs the arrival (AddBatch and what it calls: the
  // stats of each event, caches by id, GpuOps) and emits what changes the
  // sweep's state as commands (Cmd), in packets of up to kPacketCmds of one
  // batch; the sweep thread applies the packets in order (Apply: the reorder queues, Sweep,
  // AfterSweep, the indexes and timelines they read and write). Each side
  // owns its state (GpuState, ProcessState say which), so they share only
  // the packets, handed over under mu_. The sweep lags behind the arrival
  // by at most kPackets packets of commands (about two batches), which bounds
  // the memory they take.
  //
  // inline_: one thread, each command applied where it is emitted, which is
  // the order of the sequential model exactly. The builder runs so from the
  // start when the reader has no decode thread (ModelOptions::threads), and
  // switches to it (GoInline) before the first thing the sweep cannot do on
  // its own thread: a call-stack table (stack_builder.h joins calls as they
  // arrive and reads the joins when gaps are swept) or a kernel whose stats
  // the sweep must look up by name (AddKernels).

  void Emit(ProcessState& p, const Cmd& c) {
    if (inline_) {
      Apply(p, c);
      return;
    }
    packet_->cmds.push_back(c);
    if (packet_->cmds.size() == kPacketCmds) Submit();
  }

  // The sweep's side of a command (on the sweep thread, or at once inline).
  void Apply(ProcessState& p, const Cmd& c) {
    switch (c.type) {
      case CmdType::kAnchor:
        p.m.timeline = Timeline(kProcessFieldCount, c.op.start_ns);
        p.m.windows =
            Timeline(kProcessWindowFieldCount, c.op.start_ns, kMaxWindowRows, options_.window_ns);
        break;
      case CmdType::kUntraced:
        AddUntraced(p, c.op.start_ns, c.op.end_ns);
        break;
      case CmdType::kLaunch:
        p.launches.Insert(c.op.correlation_id, c.op.start_ns, c.op.end_ns, c.op.name_id,
                          StaleBefore(p));
        break;
      case CmdType::kSyncCall:
        p.syncs.Insert(c.op.start_ns, c.op.end_ns);
        p.m.timeline.Add(kSyncCalls, c.op.start_ns, 1);
        p.sync_queue.Push(Interval{c.op.start_ns, c.op.end_ns},
                          [this, &p](const Interval& late) { SyncBlocked(p, late); });
        break;
      case CmdType::kSyncAdvance:
        p.sync_queue.Advance([this, &p](const Interval& s) { SyncBlocked(p, s); });
        break;
      case CmdType::kSyncRecord:
        if ((c.flags & kCmdCallsIndexed) == 0) p.syncs.Insert(c.op.start_ns, c.op.end_ns);
        p.m.timeline.Add(kSyncRecords, c.op.start_ns, 1);
        break;
      case CmdType::kImplicit:
        IndexImplicitCall(p, c.field, c.op.start_ns, c.op.end_ns);
        break;
      case CmdType::kAddGpu:
        p.swept_gpus.push_back(c.state);
        break;
      case CmdType::kAddStream: {
        StreamState s;
        s.gpu = c.gpu;
        s.model.context_id = c.op.correlation_id;
        s.model.stream_id = c.op.name_id;
        p.streams.push_back(s);
        break;
      }
      case CmdType::kKernelClass:
        p.swept_gpus[c.gpu]->Swept(c.op.name_id).collective = static_cast<CollectiveKind>(c.field);
        break;
      case CmdType::kKernel: {
        GpuModel& m = p.swept_gpus[c.gpu]->m;
        const double duration = static_cast<double>(c.op.end_ns - c.op.start_ns);
        // The op's window of each timeline, found once for its adds.
        if (double* const row = m.timeline.Row(c.op.start_ns)) {
          row[kKernelNs] += duration;
          row[kKernelCount] += 1;
          if ((c.flags & kCmdEstimate) != 0) row[kEstSmNs] += c.value;
        }
        if (double* const win = m.windows.Row(c.op.start_ns)) {
          win[kWinKernelCount] += 1;
          win[kWinKernelNs] += duration;
        }
        Push(p, c.op);
        break;
      }
      case CmdType::kMemcpy: {
        GpuModel& m = p.swept_gpus[c.gpu]->m;
        const double duration = static_cast<double>(c.op.end_ns - c.op.start_ns);
        Timeline& t = m.timeline;
        t.Add(kCopyNs, c.op.start_ns, duration);
        t.Add(kCopyCount, c.op.start_ns, 1);
        if ((c.flags & kCmdD2h) != 0) t.Add(kD2hCopyCount, c.op.start_ns, 1);
        m.windows.Add(c.field, c.op.start_ns, c.value);
        if ((c.flags & kCmdPageable) != 0) {
          t.Add(kPageableCopyNs, c.op.start_ns, duration);
          t.Add(kPageableCopyCount, c.op.start_ns, 1);
        }
        Push(p, c.op);
        break;
      }
      case CmdType::kMemset:
        p.swept_gpus[c.gpu]->m.timeline.Add(kMemsetNs, c.op.start_ns,
                                            static_cast<double>(c.op.end_ns - c.op.start_ns));
        Push(p, c.op);
        break;
      case CmdType::kCommRange:
        p.m.timeline.Add(kCommRangeCount, c.op.start_ns, 1);
        p.m.timeline.Add(kCommRangeNs, c.op.start_ns, static_cast<double>(c.op.end_ns));
        break;
      case CmdType::kStep:
        PushStep(p, c.u64, c.op.start_ns, c.op.end_ns);
        break;
      case CmdType::kMetric: {
        Timeline& t = c.flags == kCmdProcessWindows ? p.m.windows
                      : c.flags == kCmdGpuWindows   ? p.swept_gpus[c.gpu]->m.windows
                                                    : p.swept_gpus[c.gpu]->m.timeline;
        t.Add(c.field, c.op.start_ns, c.value);
        break;
      }
    }
  }

  // The end of a batch with events: what is old enough is swept.
  void Advance(ProcessState& p) {
    p.queue.Advance([this, &p](const GpuOp& op) { Sweep(p, op); });
    AfterSweep(p);
  }

  void ApplyPacket(const Packet& k) {
    ProcessState& p = *k.process;
    for (const Cmd& c : k.cmds) Apply(p, c);
    if (k.advance) Advance(p);
  }

  // Hands packet_ to the sweep thread (started at the first) and takes a
  // free one, waiting while all are queued.
  void Submit() {
    if (!sweeper_.joinable()) sweeper_ = std::thread([this] { SweepLoop(); });
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_.push_back(packet_);
    }
    queued_cv_.notify_one();
    packet_ = TakeFreePacket();
  }

  Packet* TakeFreePacket() {
    std::unique_lock<std::mutex> lock(mu_);
    free_cv_.wait(lock, [this] { return !free_.empty(); });
    Packet* k = free_.back();
    free_.pop_back();
    k->process = process_;
    k->cmds.clear();  // keeps capacity
    k->advance = false;
    return k;
  }

  // The sweep thread: applies the packets in order until stopped and empty.
  void SweepLoop() {
    for (;;) {
      Packet* k = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        queued_cv_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
        if (queued_.empty()) return;  // stopping
        k = queued_.front();
        queued_.pop_front();
      }
      ApplyPacket(*k);
      {
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(k);
      }
      free_cv_.notify_one();
    }
  }

  // Waits until the sweep thread has applied every packet queued, and ends it.
  void StopSweeper() {
    if (!sweeper_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    queued_cv_.notify_one();
    sweeper_.join();
  }

  // From here on, one thread: the packets queued and the batch's commands
  // so far are applied first, in order.
  void GoInline() {
    if (inline_) return;
    StopSweeper();
    // `advance` is set only at the batch's end; no process before a batch.
    if (!packet_->cmds.empty()) ApplyPacket(*packet_);
    packet_->cmds.clear();
    inline_ = true;
  }

  bool inline_;
  // Packets of part of a batch, a dozen of them: three packets of a whole
  // batch each (~100,000 commands, 5 MB) were a few % slower on the 50 M-event
  // summary and took 6 MB more; 4,096 commands x 8 let the arrival wait
  // on the sweep (too little of a batch's worth queued).
  static constexpr size_t kPacketCmds = 16384;  // 768 KiB
  static constexpr size_t kPackets = 12;
  std::array<Packet, kPackets> packets_;
  Packet* packet_ = nullptr;  // being filled (the reading thread's); null inline
  ProcessState* process_ = nullptr;  // of the batch being added
  std::thread sweeper_;
  std::mutex mu_;
  std::condition_variable queued_cv_;  // a packet was queued, or stopping
  std::condition_variable free_cv_;    // a packet was applied
  std::deque<Packet*> queued_;         // guarded by mu_: in order, for the sweep thread
  std::vector<Packet*> free_;          // guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  std::vector<std::string> warnings_;
  uint64_t warnings_omitted_ = 0;
};

// -------------------------------------------------------------- ModelBuilder --

ModelBuilder::ModelBuilder(const ModelOptions& options) : impl_(std::make_unique<Impl>(options)) {}
ModelBuilder::~ModelBuilder() = default;

void ModelBuilder::OnHeader(const reader::ProcessTables& tables, const proto::ProcessHeader& header,
                            const reader::ChunkPlace&) {
  impl_->OnHeader(tables, header);
}
void ModelBuilder::OnBatch(const reader::ResolvedBatch& batch) { impl_->OnBatch(batch); }
void ModelBuilder::OnEnd(const reader::ProcessTables& tables, const proto::ProcessEnd& end,
                         const reader::ChunkPlace&) {
  impl_->OnEnd(tables, end);
}

// The reader keeps its warnings in the TraceIndex that Finish() receives;
// storing them here too printed each one twice.
void ModelBuilder::OnWarning(std::string_view) {}

TraceModel ModelBuilder::Finish(reader::ReadResult read) {
  TraceModel model = impl_->Finish(std::move(read.index));
  model.timebase = std::move(read.timebase);
  model.tables = std::move(read.tables);
  return model;
}

reader::ReadOptions ReadOptionsFor(const ModelOptions& options) {
  reader::ReadOptions read_options;
  read_options.max_warnings = options.max_warnings;
  return read_options;
}

TraceModel BuildModel(const std::vector<std::string>& paths, const ModelOptions& options,
                      const std::vector<reader::EventSink*>& more_sinks) {
  ModelBuilder builder(options);
  std::vector<reader::EventSink*> sinks = {&builder};
  sinks.insert(sinks.end(), more_sinks.begin(), more_sinks.end());
  // Unreadable files are recorded in the index; the builder never stops.
  return builder.Finish(reader::ReadEvents(paths, sinks, ReadOptionsFor(options)));
}

TraceModel BuildModelFromBuffer(const std::string& name, const uint8_t* data, size_t size,
                                const ModelOptions& options) {
  ModelOptions one_thread = options;
  one_thread.threads = 1;  // one window: no thread to start and join
  ModelBuilder builder(one_thread);
  reader::ReadOptions read_options = ReadOptionsFor(options);
  read_options.decode_threads = 1;  // one window: no pool to start and join
  reader::EventReader reader({&builder}, read_options);
  (void)reader.ReadBuffer(name, data, size);  // what cannot be read is recorded in the index
  return builder.Finish(reader.Finish());
}

}  // namespace gpscope::model
