// tools/render/report_timeline.cc: see report_timeline.h.
#include "tools/render/report_timeline.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "tools/analyses/gpu_report.h"
#include "tools/analyses/names.h"
#include "tools/model/model_builder.h"
#include "tools/reader/limits.h"

namespace gpscope::render {
namespace {

constexpr uint32_t kNoStream = 0xffffffffu;

// Where a lane sits inside its process group; lanes sort by this.
enum Section : int {
  kSectionDevice = 0,   // stream, sync and counter lanes of one GPU
  kSectionThread = 1,   // NVTX and API lanes of one host thread
  kSectionProcess = 2,  // process-level sync waits (device unknown), overheads
  kSectionCounters = 3  // host, process and thread counters
};

using LaneKey =
    std::tuple<int /*section*/, uint32_t /*device*/, int /*kind*/, uint32_t /*a*/, uint32_t /*b*/>;

std::string SyncKindName(uint32_t kind) {
  switch (kind) {
    case proto::SYNC_EVENT_SYNCHRONIZE:
      return "wait: event synchronize";
    case proto::SYNC_STREAM_WAIT_EVENT:
      return "wait: stream wait event";
    case proto::SYNC_STREAM_SYNCHRONIZE:
      return "wait: stream synchronize";
    case proto::SYNC_CONTEXT_SYNCHRONIZE:
      return "wait: context synchronize";
    default:
      return "wait: synchronize";
  }
}

std::string OverheadKindName(uint32_t kind) {
  switch (kind) {
    case proto::OVERHEAD_DRIVER_COMPILER:
      return "overhead: driver JIT compiler";
    case proto::OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "overhead: CUPTI buffer flush";
    case proto::OVERHEAD_CUPTI_INSTRUMENTATION:
      return "overhead: CUPTI instrumentation";
    case proto::OVERHEAD_CUPTI_RESOURCE:
      return "overhead: CUPTI resource";
    case proto::OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "overhead: module loading";
    case proto::OVERHEAD_LAZY_FUNCTION_LOADING:
      return "overhead: lazy function loading";
    case proto::OVERHEAD_COMMAND_BUFFER_FULL:
      return "overhead: command buffer full";
    case proto::OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "overhead: activity buffer request";
    case proto::OVERHEAD_UVM_ACTIVITY_INIT:
      return "overhead: UVM activity init";
    default:
      return "overhead";
  }
}

EventCategory CopyCategory(uint32_t copy_kind) {
  switch (copy_kind) {
    case proto::MEMCPY_HTOD:
    case proto::MEMCPY_HTOA:
      return EventCategory::kH2D;
    case proto::MEMCPY_DTOH:
    case proto::MEMCPY_ATOH:
      return EventCategory::kD2H;
    case proto::MEMCPY_DTOD:
    case proto::MEMCPY_ATOA:
    case proto::MEMCPY_ATOD:
    case proto::MEMCPY_DTOA:
      return EventCategory::kD2D;
    case proto::MEMCPY_PTOP:
      return EventCategory::kP2P;
    default:
      return EventCategory::kCopyOther;
  }
}

}  // namespace

const char* LaneKindName(LaneKind kind) {
  switch (kind) {
    case LaneKind::kStream:
      return "stream";
    case LaneKind::kSync:
      return "sync";
    case LaneKind::kApi:
      return "api";
    case LaneKind::kNvtx:
      return "nvtx";
    case LaneKind::kOverhead:
      return "overhead";
    case LaneKind::kCounter:
      return "counter";
  }
  return "unknown";
}

bool IsCommKernelName(std::string_view mangled_name) {
  return mangled_name.find("ncclKernel") != std::string_view::npos ||
         mangled_name.find("ncclDevKernel") != std::string_view::npos;
}

uint64_t TimelineData::ToReportNs(size_t process, uint64_t cupti_ns) const {
  if (process >= processes.size()) return 0;
  const uint64_t realtime = processes[process].clocks.ToRealtimeNs(cupti_ns);  // one alignment
  return realtime > t0_realtime_ns ? realtime - t0_realtime_ns : 0;
}

int TimelineData::FindProcess(uint64_t process_uid) const {
  for (size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].process_uid == process_uid) return static_cast<int>(i);
  }
  return -1;
}

// ------------------------------------------------------------------ Impl --

class TimelineCollector::Impl {
 public:
  explicit Impl(const TimelineOptions& options) : options_(options) {}

  struct ProcessState;

  ProcessState& State(const reader::ProcessTables& t) {
    auto [it, inserted] = slot_.try_emplace(t.process_uid(), states_.size());
    if (inserted) {
      states_.emplace_back();
      ProcessState& s = states_.back();
      s.p.process_uid = t.process_uid();
      s.p.pid = t.pid();
      s.tables = &t;
    }
    return states_[it->second];
  }

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h) {
    ProcessState& s = State(t);
    s.p.hostname = h.hostname();
    s.p.rank = h.identity().rank();
    s.p.devices = t.devices();
  }

  void OnBatch(const reader::ResolvedBatch& b) {
    ProcessState& s = State(b.tables);
    if (b.batch.devices_size() > 0) s.p.devices = b.tables.devices();
    AddBatch(slot_.at(b.tables.process_uid()), b);
  }

  TimelineData Finish(const reader::Timebase& timebase, const model::TraceModel* symbolized);

  struct ProcessState {
    TimelineProcess p;
    // The reader's tables: strings, launch shapes, contexts, metrics, devices.
    const reader::ProcessTables* tables = nullptr;
    absl::flat_hash_map<uint64_t, uint32_t> names;    // (role << 32 | string id) -> name
    absl::flat_hash_map<uint32_t, uint32_t> configs;  // LaunchConfig id -> configs index + 1
    std::map<LaneKey, size_t> lanes;
    absl::flat_hash_map<uint32_t, size_t> metric_lane;
    // A sync wait (CUPTI's synchronization record) shows the stack of the
    // API call it waited in: both carry its correlation id, in either order
    // across batches. Bounded: the oldest entries go first (kMaxSyncJoin).
    absl::flat_hash_map<uint32_t, uint32_t> call_node;                    // corr -> node
    absl::flat_hash_map<uint32_t, std::pair<size_t, uint64_t>> sync_wait;  // corr -> (lane, start)
    std::deque<uint32_t> call_order, sync_order;
  };
  static constexpr size_t kMaxSyncJoin = 1 << 14;

  void AddStackCall(size_t lane, uint64_t start_ns, uint32_t node) {
    if (stack_calls_ < kMaxStackCalls) {
      ++stack_calls_;
      lanes_[lane].stack_calls.emplace_back(start_ns, node);
    } else {
      ++stack_calls_not_kept_;
    }
  }
  // Remembers `key -> value` in a map bounded to kMaxSyncJoin entries.
  template <typename V>
  static void RememberBounded(absl::flat_hash_map<uint32_t, V>* map, std::deque<uint32_t>* order,
                              uint32_t key, V value) {
    if (!map->insert_or_assign(key, value).second) return;
    order->push_back(key);
    if (order->size() > kMaxSyncJoin) {
      map->erase(order->front());
      order->pop_front();
    }
  }
  enum NameRole : uint64_t { kRoleKernel = 1, kRoleApi = 2, kRoleNvtx = 3 };

  uint32_t Name(std::string_view text) {
    auto [it, inserted] = name_ids_.try_emplace(std::string(text), names_.size());
    if (inserted) names_.emplace_back(text);
    return it->second;
  }

  const std::string& String(const ProcessState& s, uint32_t id) { return s.tables->String(id); }

  uint32_t RoleName(ProcessState& s, NameRole role, uint32_t id) {
    const uint64_t key = (static_cast<uint64_t>(role) << 32) | id;
    auto it = s.names.find(key);
    if (it != s.names.end()) return it->second;
    const std::string& raw = String(s, id);
    // Ids the trace never defined each get a name ("kernel #12") up to a
    // point; past it they share one, so hostile ids cannot grow the tables.
    if (raw.empty() && id != 0 && ++undefined_names_ > kMaxUndefinedNames) {
      return Name(role == kRoleKernel ? "kernel (undefined name)" : "(undefined name)");
    }
    uint32_t name = 0;
    switch (role) {
      case kRoleKernel:
        name = Name(raw.empty() ? absl::StrCat("kernel #", id) : analyses::Demangle(raw));
        break;
      case kRoleApi:
        name = Name(raw.empty() ? std::string("CUDA API call")
                                : std::string(model::NormalizeApiName(raw)));
        break;
      case kRoleNvtx:
        name = Name(raw.empty() ? std::string("(unnamed range)") : raw);
        break;
    }
    s.names.emplace(key, name);
    return name;
  }

  // The lane of `key`, or kNoLane past kMaxLanesPerProcess (its events
  // are counted in lanes_not_kept_).
  size_t Lane(size_t process, LaneKey key, LaneKind kind) {
    ProcessState& s = states_[process];
    if (s.lanes.size() >= kMaxLanesPerProcess && !s.lanes.count(key)) {
      ++lanes_not_kept_;
      return kNoLane;
    }
    auto [it, inserted] = s.lanes.try_emplace(key, lanes_.size());
    if (inserted) {
      TimelineLane lane;
      lane.kind = kind;
      lane.process = process;
      lanes_.push_back(std::move(lane));
      lane_keys_.push_back(key);
    }
    return it->second;
  }

  // Device of a context, or -1.
  int64_t ContextDevice(const ProcessState& s, uint32_t context_id) const {
    return s.tables->ContextDevice(context_id);
  }

  size_t StreamLane(size_t process, uint32_t device, uint32_t context, uint32_t stream) {
    const size_t i = Lane(process, {kSectionDevice, device, 0, context, stream}, LaneKind::kStream);
    if (i == kNoLane) return i;
    TimelineLane& lane = lanes_[i];
    if (lane.label.empty()) {
      lane.has_device = true;
      lane.device_id = device;
      lane.context_id = context;
      lane.stream_id = stream;
      lane.label = absl::StrCat("stream ", stream);
    }
    return i;
  }

  void Keep(size_t lane_index, const TimelineEvent& e) {
    if (lane_index == kNoLane) return;
    TimelineLane& lane = lanes_[lane_index];
    // A zero timestamp is a damaged record (CUPTI writes 0 when its device
    // buffer overflowed); kept, it would stretch the time axis to 1970.
    if (e.start_ns == 0) {
      ++lane.not_kept;
      return;
    }
    if (!KeepMore()) {
      ++lane.not_kept;
      return;
    }
    lane.events.push_back(e);
  }

  // Whether one more event is kept: under max_events and, checked every
  // 64 Ki events, RSS plus what the report's output needs for the events
  // kept so far (kOutputBytesPerEvent each) under the reading limit.
  bool KeepMore() {
    if (kept_ >= options_.max_events || over_budget_) return false;
    if ((++kept_ & 0xFFFF) == 0 && reader::MemoryBudgetExceeded(kept_ * kOutputBytesPerEvent)) {
      over_budget_ = true;
    }
    return true;
  }

  void AddBatch(size_t process, const reader::ResolvedBatch& b);

  TimelineOptions options_;
  absl::flat_hash_map<uint64_t, size_t> slot_;
  std::vector<ProcessState> states_;
  // A deque: a lane added late (a metric, a thread) must not copy the
  // others (TimelineLane's move may throw, so a vector would copy them).
  std::deque<TimelineLane> lanes_;
  std::vector<LaneKey> lane_keys_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, uint32_t> name_ids_;
  std::vector<LaunchShape> configs_;
  std::shared_ptr<ChromeStacks> stacks_ = std::make_shared<ChromeStacks>();
  size_t stack_calls_ = 0;
  uint64_t stack_calls_not_kept_ = 0;
  uint64_t kept_ = 0;
  bool over_budget_ = false;
  uint64_t undecodable_ = 0;
  uint64_t undefined_names_ = 0;
  uint64_t lanes_not_kept_ = 0;
  static constexpr size_t kNoLane = ~size_t{0};
  static constexpr size_t kMaxLanesPerProcess = 4096;
  static constexpr uint64_t kMaxUndefinedNames = 4096;
};

void TimelineCollector::Impl::AddBatch(size_t process, const reader::ResolvedBatch& b) {
  ProcessState& s = states_[process];
  const proto::EventBatch& batch = b.batch;
  // The launch shapes this batch (re)defines, as the report shows them.
  for (const proto::LaunchConfig& c : batch.launch_configs()) {
    const reader::LaunchShape* l = s.tables->Launch(c.id());
    if (l == nullptr) continue;  // past the reader's limits
    LaunchShape shape;
    for (int i = 0; i < 3; ++i) {
      shape.grid[i] = l->grid[i];
      shape.block[i] = l->block[i];
    }
    shape.registers_per_thread = l->registers_per_thread;
    shape.shared_memory_bytes = l->shared_memory_bytes();
    configs_.push_back(shape);
    s.configs[c.id()] = static_cast<uint32_t>(configs_.size());
  }
  for (const proto::LostInterval& l : batch.lost_intervals()) {
    if (s.p.lost.size() < 1000) {
      s.p.lost.push_back(l);
    } else {
      ++s.p.lost_not_kept;
    }
  }
  // Call stacks (issue 20): this batch's tables, before its API calls.
  stacks_->AddBatch(*s.tables, batch);
  if (!b.decode_status.ok()) {
    ++undecodable_;
    return;
  }
  const reader::DecodedBatch& events_ = b.events;

  for (const format::KernelEvent& k : events_.kernels) {
    const size_t lane = StreamLane(process, k.device_id, k.context_id, k.stream_id);
    TimelineEvent e;
    e.start_ns = k.start_ns;
    e.duration_ns = k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0;
    e.name = RoleName(s, kRoleKernel, k.name_id);
    e.category = IsCommKernelName(String(s, k.name_id)) ? EventCategory::kCommKernel
                                                        : EventCategory::kKernel;
    auto config = s.configs.find(k.launch_config_id);
    e.aux = config == s.configs.end() ? 0 : config->second;
    Keep(lane, e);
  }
  for (const format::MemcpyEvent& m : events_.memcpys) {
    const size_t lane = StreamLane(process, m.device_id, m.context_id, m.stream_id);
    TimelineEvent e;
    e.start_ns = m.start_ns;
    e.duration_ns = m.end_ns > m.start_ns ? m.end_ns - m.start_ns : 0;
    e.category = CopyCategory(m.copy_kind);
    // The host side's memory kind matters (pageable vs pinned); for
    // device-to-device copies both sides are device memory.
    const uint32_t host_kind = e.category == EventCategory::kD2H ? m.dst_kind : m.src_kind;
    e.name =
        Name(absl::StrCat("memcpy ", analyses::CopyDirectionName(m.copy_kind), " · ",
                          analyses::MemoryKindName(host_kind), (m.flags & 1) ? "" : " · sync"));
    e.aux = m.bytes;
    Keep(lane, e);
  }
  for (const format::MemsetEvent& m : events_.memsets) {
    const size_t lane = StreamLane(process, m.device_id, m.context_id, m.stream_id);
    TimelineEvent e;
    e.start_ns = m.start_ns;
    e.duration_ns = m.end_ns > m.start_ns ? m.end_ns - m.start_ns : 0;
    e.category = EventCategory::kMemset;
    e.name = Name(absl::StrCat("memset · ", analyses::MemoryKindName(m.memory_kind),
                               (m.flags & 1) ? "" : " · sync"));
    e.aux = m.bytes;
    Keep(lane, e);
  }
  for (const format::SyncEvent& y : events_.syncs) {
    const int64_t device = ContextDevice(s, y.context_id);
    size_t lane;
    if (device >= 0) {
      lane =
          Lane(process, {kSectionDevice, static_cast<uint32_t>(device), 1, 0, 0}, LaneKind::kSync);
      if (lane == kNoLane) continue;
      lanes_[lane].has_device = true;
      lanes_[lane].device_id = static_cast<uint32_t>(device);
    } else {
      lane = Lane(process, {kSectionProcess, 0, 1, 0, 0}, LaneKind::kSync);
    }
    if (lane == kNoLane) continue;
    if (lanes_[lane].label.empty()) lanes_[lane].label = "sync waits (host blocked)";
    TimelineEvent e;
    e.start_ns = y.start_ns;
    e.duration_ns = y.end_ns > y.start_ns ? y.end_ns - y.start_ns : 0;
    e.category = EventCategory::kSync;
    std::string name = SyncKindName(y.sync_kind);
    if (y.stream_id != kNoStream) absl::StrAppend(&name, " · stream ", y.stream_id);
    if (y.thread_id != 0) absl::StrAppend(&name, " · tid ", y.thread_id);
    e.name = Name(name);
    if (stacks_->any() && y.correlation_id != 0) {
      auto it = s.call_node.find(y.correlation_id);
      if (it != s.call_node.end()) {
        AddStackCall(lane, y.start_ns, it->second);
      } else {
        RememberBounded(&s.sync_wait, &s.sync_order, y.correlation_id,
                        std::pair<size_t, uint64_t>(lane, y.start_ns));
      }
    }
    Keep(lane, e);
  }
  for (const format::ApiCallEvent& a : events_.api_calls) {
    const size_t lane = Lane(process, {kSectionThread, 0, 1, a.thread_id, 0}, LaneKind::kApi);
    if (lane == kNoLane) continue;
    if (lanes_[lane].label.empty()) {
      lanes_[lane].thread_id = a.thread_id;
      lanes_[lane].label = absl::StrCat("tid ", a.thread_id, " · CUDA API");
    }
    TimelineEvent e;
    e.start_ns = a.start_ns;
    e.duration_ns = a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0;
    e.name = RoleName(s, kRoleApi, a.api_name_id);
    e.category = names_[e.name].find("Synchronize") != std::string::npos ? EventCategory::kApiSync
                                                                         : EventCategory::kApi;
    e.aux = a.return_value;
    if (stacks_->any()) {
      if (const uint32_t node = stacks_->TakeNode(s.p.process_uid, a.thread_id, a.correlation_id)) {
        AddStackCall(lane, a.start_ns, node);
        auto wait = s.sync_wait.find(a.correlation_id);
        if (wait != s.sync_wait.end()) {
          AddStackCall(wait->second.first, wait->second.second, node);
          s.sync_wait.erase(wait);  // its sync_order entry expires harmlessly
        } else {
          RememberBounded(&s.call_node, &s.call_order, a.correlation_id, node);
        }
      }
    }
    Keep(lane, e);
  }
  for (const format::NvtxRangeEvent& r : events_.nvtx_ranges) {
    const size_t lane = Lane(process, {kSectionThread, 0, 0, r.thread_id, 0}, LaneKind::kNvtx);
    if (lane == kNoLane) continue;
    if (lanes_[lane].label.empty()) {
      lanes_[lane].thread_id = r.thread_id;
      lanes_[lane].label = absl::StrCat("tid ", r.thread_id, " · NVTX");
    }
    TimelineEvent e;
    e.start_ns = r.start_ns;
    e.duration_ns = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
    e.name = RoleName(s, kRoleNvtx, r.name_id);
    e.category =
        model::IsStepName(String(s, r.name_id)) ? EventCategory::kNvtxStep : EventCategory::kNvtx;
    Keep(lane, e);
  }
  for (const format::NvtxMarkEvent& m : events_.nvtx_marks) {
    const size_t lane = Lane(process, {kSectionThread, 0, 0, m.thread_id, 0}, LaneKind::kNvtx);
    if (lane == kNoLane) continue;
    if (lanes_[lane].label.empty()) {
      lanes_[lane].thread_id = m.thread_id;
      lanes_[lane].label = absl::StrCat("tid ", m.thread_id, " · NVTX");
    }
    TimelineEvent e;
    e.start_ns = m.timestamp_ns;
    e.name = RoleName(s, kRoleNvtx, m.name_id);
    e.category = EventCategory::kNvtxMark;
    Keep(lane, e);
  }
  for (const format::OverheadEvent& o : events_.overheads) {
    const size_t lane = Lane(process, {kSectionProcess, 0, 2, 0, 0}, LaneKind::kOverhead);
    if (lane == kNoLane) continue;
    if (lanes_[lane].label.empty()) lanes_[lane].label = "profiler overhead";
    TimelineEvent e;
    e.start_ns = o.start_ns;
    e.duration_ns = o.end_ns > o.start_ns ? o.end_ns - o.start_ns : 0;
    e.category = EventCategory::kOverhead;
    e.name = Name(OverheadKindName(o.overhead_kind));
    Keep(lane, e);
  }
  for (const format::MetricSample& m : events_.metrics) {
    auto it = s.metric_lane.find(m.metric_id);
    size_t lane;
    if (it != s.metric_lane.end()) {
      lane = it->second;
    } else {
      proto::MetricDescriptor desc;
      if (const proto::MetricDescriptor* d = s.tables->Metric(m.metric_id)) desc = *d;
      const bool on_device = desc.scope() == proto::SCOPE_DEVICE;
      lane = on_device
                 ? Lane(process, {kSectionDevice, desc.device_id(), 2, m.metric_id, 0},
                        LaneKind::kCounter)
                 : Lane(process, {kSectionCounters, 0, 3, m.metric_id, 0}, LaneKind::kCounter);
      if (lane == kNoLane) continue;
      s.metric_lane[m.metric_id] = lane;
      TimelineLane& l = lanes_[lane];
      l.has_device = on_device;
      l.device_id = desc.device_id();
      l.thread_id = desc.thread_id();
      l.metric_name = desc.name().empty() ? absl::StrCat("metric ", m.metric_id) : desc.name();
      l.unit = desc.unit();
      l.scope = desc.scope();
      l.label = l.metric_name;
      if (desc.scope() == proto::SCOPE_THREAD)
        absl::StrAppend(&l.label, " · tid ", desc.thread_id());
      if (desc.scope() == proto::SCOPE_PROCESS && desc.pid() != 0 && desc.pid() != s.p.pid) {
        absl::StrAppend(&l.label, " · pid ", desc.pid());
      }
      if (!desc.label().empty()) absl::StrAppend(&l.label, " (", desc.label(), ")");
    }
    TimelineLane& l = lanes_[lane];
    if (!KeepMore()) {
      ++l.not_kept;
      continue;
    }
    l.samples.push_back({m.timestamp_ns, m.value});
  }
}

TimelineData TimelineCollector::Impl::Finish(const reader::Timebase& timebase,
                                             const model::TraceModel* symbolized) {
  TimelineData out;
  // Report ns 0 is the pass's time origin (every command prints it), so a
  // time in the report is the same time in summary, export and dump.
  for (ProcessState& s : states_) s.p.clocks = timebase.Clocks(s.p.process_uid);
  const uint64_t t0 = timebase.origin_realtime_ns();
  uint64_t t_end = t0;
  for (const TimelineLane& lane : lanes_) {
    const reader::ClockAlign& clocks = states_[lane.process].p.clocks;
    for (const TimelineEvent& e : lane.events) {
      t_end = std::max(t_end, clocks.ToRealtimeNs(e.start_ns) + e.duration_ns);
    }
    for (const CounterSample& c : lane.samples) t_end = std::max(t_end, clocks.ToRealtimeNs(c.t_ns));
  }
  out.span_ns = t_end - t0;

  // Processes in display order: ranks first (by rank), then by host and pid.
  std::vector<size_t> order(states_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TimelineProcess& x = states_[a].p;
    const TimelineProcess& y = states_[b].p;
    const bool xr = x.rank >= 0, yr = y.rank >= 0;
    if (xr != yr) return xr;
    if (x.rank != y.rank) return x.rank < y.rank;
    if (x.hostname != y.hostname) return x.hostname < y.hostname;
    return x.pid < y.pid;
  });
  std::vector<size_t> position(states_.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;

  for (size_t i : order) out.processes.push_back(std::move(states_[i].p));
  out.t0_realtime_ns = t0;
  for (TimelineProcess& p : out.processes) {
    for (proto::LostInterval& l : p.lost) {
      const uint64_t start = l.start_ns() == 0 ? 0 : p.clocks.ToRealtimeNs(l.start_ns());
      const uint64_t end = l.end_ns() == 0 ? t_end : p.clocks.ToRealtimeNs(l.end_ns());
      l.set_start_ns(start > t0 ? start - t0 : 0);
      l.set_end_ns(end > t0 ? std::min(end, t_end) - t0 : 0);
    }
  }

  // Lanes in display order, then times to report ns, sorting and rows.
  std::vector<size_t> lane_order(lanes_.size());
  std::iota(lane_order.begin(), lane_order.end(), 0);
  std::stable_sort(lane_order.begin(), lane_order.end(), [&](size_t a, size_t b) {
    const size_t pa = position[lanes_[a].process], pb = position[lanes_[b].process];
    if (pa != pb) return pa < pb;
    if (lanes_[a].kind == LaneKind::kCounter && lanes_[b].kind == LaneKind::kCounter &&
        std::get<0>(lane_keys_[a]) == std::get<0>(lane_keys_[b]) &&
        std::get<1>(lane_keys_[a]) == std::get<1>(lane_keys_[b])) {
      return lanes_[a].label < lanes_[b].label;
    }
    return lane_keys_[a] < lane_keys_[b];
  });
  out.lanes.reserve(lanes_.size());  // growing would copy lanes (see lanes_)
  for (size_t i : lane_order) {
    TimelineLane lane = std::move(lanes_[i]);
    const size_t original_process = lane.process;
    lane.process = position[original_process];
    const reader::ClockAlign& clocks = out.processes[lane.process].clocks;
    for (TimelineEvent& e : lane.events) {
      e.start_ns = timebase.RealtimeToOriginNs(clocks.ToRealtimeNs(e.start_ns));
    }
    for (CounterSample& c : lane.samples) {
      c.t_ns = timebase.RealtimeToOriginNs(clocks.ToRealtimeNs(c.t_ns));
    }
    for (auto& c : lane.stack_calls) {
      c.first = timebase.RealtimeToOriginNs(clocks.ToRealtimeNs(c.first));
    }
    std::sort(lane.stack_calls.begin(), lane.stack_calls.end());
    auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.duration_ns > b.duration_ns;  // parents before children
    };
    // Streams arrive in order: skip the sort when nothing is out of place.
    if (!std::is_sorted(lane.events.begin(), lane.events.end(), by_start)) {
      std::sort(lane.events.begin(), lane.events.end(), by_start);
    }
    std::stable_sort(
        lane.samples.begin(), lane.samples.end(),
        [](const CounterSample& a, const CounterSample& b) { return a.t_ns < b.t_ns; });
    // First fit: the lowest row whose last event has ended.
    std::vector<uint64_t> row_end;
    for (TimelineEvent& e : lane.events) {
      size_t r = 0;
      while (r < row_end.size() && row_end[r] > e.start_ns) ++r;
      if (r >= options_.max_rows) r = options_.max_rows - 1;
      if (r >= row_end.size()) row_end.resize(r + 1, 0);
      row_end[r] = std::max(row_end[r], e.start_ns + e.duration_ns);
      e.row = static_cast<uint8_t>(r);
      lane.max_duration_ns = std::max(lane.max_duration_ns, e.duration_ns);
    }
    lane.rows = static_cast<uint32_t>(std::max<size_t>(1, row_end.size()));
    out.events_kept += lane.events.size() + lane.samples.size();
    out.events_not_kept += lane.not_kept;
    out.lanes.push_back(std::move(lane));
  }

  out.names = std::move(names_);
  out.configs = std::move(configs_);
  out.undecodable_batches = undecodable_;
  out.events_not_kept += lanes_not_kept_;
  out.over_memory_budget = over_budget_;
  if (stacks_->any()) {
    stacks_->Resolve(symbolized);
    out.stacks = std::move(stacks_);
  }
  out.stack_calls_not_kept = stack_calls_not_kept_;
  return out;
}

// -------------------------------------------------------------- wrapper --

TimelineCollector::TimelineCollector(const TimelineOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
TimelineCollector::~TimelineCollector() = default;

void TimelineCollector::OnHeader(const reader::ProcessTables& tables,
                                 const proto::ProcessHeader& header, const reader::ChunkPlace&) {
  impl_->OnHeader(tables, header);
}
void TimelineCollector::OnBatch(const reader::ResolvedBatch& batch) { impl_->OnBatch(batch); }

TimelineData TimelineCollector::Finish(const reader::Timebase& timebase,
                                       const model::TraceModel* symbolized) {
  return impl_->Finish(timebase, symbolized);
}

}  // namespace gpscope::render
