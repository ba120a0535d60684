#include "metrics/sampler.h"

#include <cmath>

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "common/posix.h"
#include "proto/metric_names.h"

namespace gpscope::metrics {
namespace {

template <size_t N>
void CopyText(char (&dst)[N], const char* src) {
  std::snprintf(dst, N, "%s", src != nullptr ? src : "");
}

// Devices as "0" or "0,1,3" for notices.
std::string DeviceList(const std::vector<uint32_t>& devs) {
  std::string s;
  for (uint32_t d : devs) {
    if (!s.empty()) s += ",";
    s += std::to_string(d);
  }
  return s;
}

}  // namespace

format::MetricDescriptorRecord ToRecord(const MetricDef& def) {
  format::MetricDescriptorRecord r{};
  r.id = def.id;
  r.name = format::MakeStringRef(def.name);
  r.unit = format::MakeStringRef(def.unit);
  r.scope = def.scope;
  r.device_id = def.device_id;
  r.pid = def.pid;
  r.thread_id = def.thread_id;
  r.label = format::MakeStringRef(def.label);
  return r;
}

format::CapabilityRecord ToRecord(const CapabilityDef& cap) {
  return format::CapabilityRecord{format::MakeStringRef(cap.component), cap.available,
                                  format::MakeStringRef(cap.reason)};
}

Sampler::Sampler(std::unique_ptr<GpuBackend> gpu, std::unique_ptr<HostSource> host,
                 const SamplerOptions& options)
    : gpu_(std::move(gpu)), host_(std::move(host)), options_(options) {
  if (options_.self_pid == 0) options_.self_pid = static_cast<uint32_t>(getpid());
  if (options_.max_threads == 0) options_.threads = false;
  if (options_.thread_scan_interval_ms == 0) options_.thread_scan_interval_ms = 1;
}

Sampler::~Sampler() = default;

const GpuDeviceInfo& Sampler::gpu_device(uint32_t i) const { return devices_[i]; }

uint32_t Sampler::AddDef(const char* name, const char* unit, uint32_t scope, uint32_t device_id,
                         uint32_t pid, uint32_t thread_id, const char* label) {
  // After Init the capacity is fixed: published defs must never move.
  if (initialized_ && defs_.size() == defs_.capacity()) return kNone;
  MetricDef d;
  d.id = options_.first_metric_id + static_cast<uint32_t>(defs_.size());
  d.name = name;
  d.unit = unit;
  d.scope = scope;
  d.device_id = device_id;
  d.pid = pid;
  d.thread_id = thread_id;
  CopyText(d.label, label);
  defs_.push_back(d);
  return static_cast<uint32_t>(defs_.size() - 1);
}

void Sampler::AddCapability(const char* component, bool available, const char* reason) {
  if (initialized_ && caps_.size() == caps_.capacity()) {
    stats_.notices_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  CapabilityDef c;
  CopyText(c.component, component);
  c.available = available;
  CopyText(c.reason, reason);
  caps_.push_back(c);
}

void Sampler::Publish(MetricSink* sink) {
  while (defs_published_ < defs_.size() && sink->OnDescriptor(defs_[defs_published_])) {
    ++defs_published_;
  }
  while (caps_published_ < caps_.size() && sink->OnCapability(caps_[caps_published_])) {
    ++caps_published_;
  }
}

void Sampler::Emit(MetricSink* sink, uint32_t def, uint64_t now_ns, double value) {
  if (def == kNone) return;
  if (def >= defs_published_) {
    stats_.values_held_back.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // GPM returns NaN for a ratio over an empty interval (seen on the H200 for
  // gpm.dram_bw_util): no value, rather than one no reader can use.
  if (!std::isfinite(value)) {
    stats_.values_not_finite.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  sink->OnSample(format::MetricSample{now_ns, defs_[def].id, value});
  stats_.values.fetch_add(1, std::memory_order_relaxed);
}

bool Sampler::Init(MetricSink* sink) {
  if (initialized_) return gpu_ok_ || host_ok_;
  // Nothing is published until the end of Init, so the vectors may still
  // grow (and move) here.
  InitHost();
  InitGpu();
  if (options_.self_cost) {
    def_self_ = AddDef(metric_names::kGpscopeSamplerCpuPct, "percent", kScopeProcess, 0,
                       options_.self_pid, 0, "gpscope-sampler");
    if (threads_ok_) {
      def_collector_ = AddDef(metric_names::kGpscopeCollectorCpuPct, "percent", kScopeProcess, 0,
                              options_.self_pid, 0, "gpscope");
    }
  }
  self_since_mono_ns_ = common::ClockNs(CLOCK_MONOTONIC);
  // Room for what SampleOnce may define or note later; fixed from here on.
  size_t lazy_defs = 0;
  if (gpu_ok_ && options_.gpu_processes) lazy_defs += 2 * size_t{options_.max_gpu_processes};
  if (gpu_ok_ && options_.active_devices != nullptr) {
    lazy_defs += dev_state_.size() * size_t{kGpuMetricCount};
  }
  if (threads_ok_) lazy_defs += options_.max_thread_descriptors;
  defs_.reserve(defs_.size() + lazy_defs);
  caps_.reserve(caps_.size() + kRuntimeNoticeReserve);
  proc_slots_.reserve(options_.max_gpu_processes);
  thread_defs_.reserve(options_.max_thread_descriptors);
  initialized_ = true;
  Publish(sink);
  return gpu_ok_ || host_ok_;
}

void Sampler::InitHost() {
  if (host_ == nullptr) return;
  const char* why = "unknown";
  if (!host_->Open(&why)) {
    AddCapability(metric_names::kCapHost, false, why);
    return;
  }
  host_ok_ = true;
  HostSnapshot s;
  host_->Read(&s);
  const uint32_t pid = options_.self_pid;
  const char* self_name = program_invocation_short_name;
  if (s.has_process_cpu) {
    def_user_ = AddDef(metric_names::kHostProcessCpuUserPct, "percent", kScopeProcess, 0, pid, 0,
                       self_name);
    def_system_ =
        AddDef(metric_names::kHostProcessCpuSystemPct, "percent", kScopeProcess, 0, pid, 0,
               self_name);
  } else {
    AddCapability(metric_names::kCapHostProcessCpu, false, "cannot read this process's CPU time");
  }
  if (s.has_rss) {
    def_rss_ = AddDef(metric_names::kHostRssBytes, "bytes", kScopeProcess, 0, pid, 0, self_name);
  } else {
    AddCapability(metric_names::kHostRssBytes, false, "cannot read /proc/self/statm");
  }
  if (s.has_system) {
    def_cpu_ = AddDef(metric_names::kHostCpuUtilPct, "percent", kScopeHost, 0, 0, 0, "");
    def_iowait_ = AddDef(metric_names::kHostIowaitPct, "percent", kScopeHost, 0, 0, 0, "");
  } else {
    AddCapability(metric_names::kCapHostCpu, false, "cannot read /proc/stat");
  }
  prev_host_ = s;  // the first baseline for rates
  have_prev_host_ = true;

  if (!options_.threads) return;
  for (auto& scan : scan_) scan.resize(options_.max_threads);
  thread_pct_.resize(options_.max_threads);
  thread_order_.resize(options_.max_threads);
  ThreadScan scan;
  if (!host_->ReadThreads(scan_[0].data(), scan_[0].size(), &scan)) {
    AddCapability(metric_names::kCapHostThreads, false, "cannot list /proc/self/task");
    return;
  }
  threads_ok_ = true;
  std::sort(scan_[0].begin(), scan_[0].begin() + static_cast<std::ptrdiff_t>(scan.count),
            [](const ThreadCpu& a, const ThreadCpu& b) { return a.tid < b.tid; });
  scan_count_[0] = scan.count;
  cur_scan_ = 0;
  have_prev_scan_ = true;
  prev_scan_mono_ns_ = scan.mono_ns;
}

void Sampler::InitGpu() {
  if (gpu_ == nullptr) return;
  const char* why = "unknown";
  if (!gpu_->Open(&why)) {
    AddCapability(metric_names::kCapNvml, false, why);
    return;
  }
  const uint32_t n = std::min(gpu_->device_count(), kMaxDevices);
  devices_.reserve(n);
  for (uint32_t d = 0; d < n; ++d) devices_.push_back(gpu_->device(d));
  std::vector<GpuProbe> probes(n);
  gpu_->Probe(probes.data());
  gpu_ok_ = true;
  std::string text = std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
  for (uint32_t d = 0; d < n; ++d) text += std::string(d == 0 ? ": " : ", ") + devices_[d].name;
  AddCapability(metric_names::kCapNvml, true, text.c_str());
  if (gpu_->ignored_device_count() > 0) {
    text = std::to_string(gpu_->ignored_device_count()) +
           " GPU(s) not sampled (not in CUDA_VISIBLE_DEVICES, not accessible, or beyond " +
           std::to_string(kMaxDevices) + ")";
    AddCapability(metric_names::kCapNvmlDevices, false, text.c_str());
  }

  // One notice per (component, availability, reason), listing its GPUs: eight
  // GPUs without GPM make one notice, not eight.
  struct Group {
    std::string component;
    bool available;
    std::string reason;
    std::vector<uint32_t> devs;
  };
  std::vector<Group> groups;
  auto note = [&](const char* component, bool available, const char* reason, uint32_t index) {
    std::string r = reason != nullptr ? reason : "unavailable";
    for (Group& g : groups) {
      if (g.component == component && g.available == available && g.reason == r) {
        g.devs.push_back(index);
        return;
      }
    }
    groups.push_back(Group{component, available, r, {index}});
  };

  dev_state_.resize(n);
  for (uint32_t d = 0; d < n; ++d) {
    DeviceState& ds = dev_state_[d];
    ds.probe = probes[d];
    const uint32_t index = devices_[d].cuda_ordinal;
    std::fill(std::begin(ds.def), std::end(ds.def), kNone);
    ds.nvml = ds.probe.supported & kNvmlMask;
    if (!ds.probe.gpm) {
      note(metric_names::kCapGpm, false, ds.probe.gpm_reason, index);
    } else if (!options_.gpm) {
      note(metric_names::kCapGpm, false, "disabled by configuration", index);
    } else {
      ds.gpm = ds.probe.supported & kGpmMask;
      note(metric_names::kCapGpm, true, "available", index);
    }
    for (int m = 0; m < kGpuMetricCount; ++m) {
      const bool is_gpm = m >= kFirstGpmMetric;
      if (is_gpm && ds.gpm == 0) continue;  // covered by the "gpm" notice
      if (!((ds.probe.supported >> m) & 1)) {
        note(GetGpuMetricInfo(m).name, false, ds.probe.reason[m], index);
      }
    }
    if (options_.gpu_processes) {
      ds.processes = ds.probe.processes;
      ds.process_util = ds.probe.process_util;
      if (!ds.processes) {
        note(metric_names::kCapNvmlProcesses, false, ds.probe.processes_reason, index);
      }
      if (!ds.process_util) {
        note(metric_names::kCapNvmlProcessUtil, false, ds.probe.process_util_reason, index);
      }
    }
    if (options_.active_devices == nullptr) DefineDevice(d);
  }
  for (const Group& g : groups) {
    std::string reason = "GPU " + DeviceList(g.devs) + ": " + g.reason;
    AddCapability(g.component.c_str(), g.available, reason.c_str());
  }
  proc_scratch_.resize(options_.max_processes_per_device);
}

// Defines the device's metrics: in Init, or on the sampler thread when the
// process first uses the GPU (within the capacity Init reserved).
void Sampler::DefineDevice(uint32_t dev) {
  DeviceState& ds = dev_state_[dev];
  const MetricMask sampled = ds.nvml | ds.gpm;
  for (int m = 0; m < kGpuMetricCount; ++m) {
    if (!((sampled >> m) & 1)) continue;
    const GpuMetricInfo& info = GetGpuMetricInfo(m);
    ds.def[m] = AddDef(info.name, info.unit, kScopeDevice, devices_[dev].cuda_ordinal, 0, 0,
                       devices_[dev].uuid);
  }
  ds.defined = true;
}

void Sampler::SampleOnce(uint64_t now_ns, MetricSink* sink) {
  if (!initialized_) return;
  const uint64_t cpu_start = common::ClockNs(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t mono = common::ClockNs(CLOCK_MONOTONIC);
  Publish(sink);  // whatever the sink refused last time
  if (def_self_ != kNone && stats_.samples.load(std::memory_order_relaxed) > 0) {
    Emit(sink, def_self_, now_ns, CpuPercent(self_cpu_ns_, mono - self_since_mono_ns_));
    self_cpu_ns_ = 0;
    self_since_mono_ns_ = mono;
  }
  stats_.samples.fetch_add(1, std::memory_order_relaxed);
  if (host_ok_) SampleHost(now_ns, sink);
  if (gpu_ok_) SampleGpu(now_ns, sink);
  Publish(sink);  // run-time notices
  const uint64_t spent = common::ClockNs(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  self_cpu_ns_ += spent;
  stats_.cpu_ns.fetch_add(spent, std::memory_order_relaxed);
}

void Sampler::SampleHost(uint64_t now_ns, MetricSink* sink) {
  HostSnapshot s;
  host_->Read(&s);
  if (s.has_rss) Emit(sink, def_rss_, now_ns, static_cast<double>(s.rss_bytes));
  const HostSnapshot& p = prev_host_;
  if (have_prev_host_ && s.mono_ns > p.mono_ns) {
    const uint64_t wall = s.mono_ns - p.mono_ns;
    if (s.has_process_cpu && p.has_process_cpu) {
      Emit(sink, def_user_, now_ns,
           CpuPercent(s.user_ns >= p.user_ns ? s.user_ns - p.user_ns : 0, wall));
      Emit(sink, def_system_, now_ns,
           CpuPercent(s.system_ns >= p.system_ns ? s.system_ns - p.system_ns : 0, wall));
    }
  }
  // /proc/stat counts in ticks: keep the old baseline until a tick passes.
  SystemCpuShare share;
  bool keep_system = false;
  if (s.has_system && p.has_system) {
    if (ComputeSystemCpuShare(p.system, s.system, &share)) {
      Emit(sink, def_cpu_, now_ns, share.busy_pct);
      Emit(sink, def_iowait_, now_ns, share.iowait_pct);
    } else if (s.system.total() == p.system.total()) {
      keep_system = true;
    }
  }
  const SystemCpuTimes old_system = p.system;
  prev_host_ = s;
  have_prev_host_ = true;
  if (keep_system) prev_host_.system = old_system;
  if (threads_ok_) ScanThreads(now_ns, sink);
}

void Sampler::ScanThreads(uint64_t now_ns, MetricSink* sink) {
  const uint64_t interval_ns = uint64_t{options_.thread_scan_interval_ms} * 1000000ull;
  if (next_scan_ns_ == 0) {  // the baseline scan was taken in Init
    next_scan_ns_ = now_ns + interval_ns;
    last_scan_ns_ = now_ns;
    return;
  }
  // A clock stepped back: scan now rather than wait for the old deadline.
  if (now_ns < next_scan_ns_ && now_ns >= last_scan_ns_) return;
  next_scan_ns_ = now_ns + interval_ns;
  last_scan_ns_ = now_ns;

  const int prev = cur_scan_;
  const int cur = 1 - prev;
  std::vector<ThreadCpu>& now = scan_[cur];
  ThreadScan scan;
  if (!host_->ReadThreads(now.data(), now.size(), &scan)) return;
  if (scan.total > scan.count) {
    stats_.threads_ignored.fetch_add(scan.total - scan.count, std::memory_order_relaxed);
  }
  const size_t count = scan.count;
  std::sort(now.begin(), now.begin() + static_cast<std::ptrdiff_t>(count),
            [](const ThreadCpu& a, const ThreadCpu& b) { return a.tid < b.tid; });

  if (have_prev_scan_ && scan.mono_ns > prev_scan_mono_ns_) {
    const uint64_t wall = scan.mono_ns - prev_scan_mono_ns_;
    const uint64_t ns_per_tick = 1000000000ull / std::max<uint64_t>(host_->ticks_per_second(), 1);
    const std::vector<ThreadCpu>& before = scan_[prev];
    const size_t before_count = scan_count_[prev];
    // Both sorted by tid: one merge pass. -1 = new thread, no rate yet.
    size_t j = 0, candidates = 0;
    for (size_t i = 0; i < count; ++i) {
      while (j < before_count && before[j].tid < now[i].tid) ++j;
      thread_pct_[i] = -1;
      if (j < before_count && before[j].tid == now[i].tid &&
          now[i].cpu_ticks >= before[j].cpu_ticks) {
        thread_pct_[i] = CpuPercent((now[i].cpu_ticks - before[j].cpu_ticks) * ns_per_tick, wall);
        if (thread_pct_[i] >= options_.min_thread_cpu_pct) {
          thread_order_[candidates++] = static_cast<uint32_t>(i);
        }
      }
    }
    // gpscope's own threads together (gpscope-writer, -sampler, -ctl):
    // every scan, so the collector's cost can be averaged from the trace
    // (host.thread_cpu_pct shows only the busiest threads above a floor).
    if (def_collector_ != kNone) {
      double ours = 0;
      for (size_t i = 0; i < count; ++i) {
        if (thread_pct_[i] > 0 && std::strncmp(now[i].comm, "gpscope", 7) == 0) {
          ours += thread_pct_[i];
        }
      }
      Emit(sink, def_collector_, now_ns, ours);
    }
    const size_t top = std::min<size_t>(candidates, options_.top_threads);
    std::partial_sort(thread_order_.begin(),
                      thread_order_.begin() + static_cast<std::ptrdiff_t>(top),
                      thread_order_.begin() + static_cast<std::ptrdiff_t>(candidates),
                      [this](uint32_t a, uint32_t b) { return thread_pct_[a] > thread_pct_[b]; });
    // The busiest threads, plus one more value for each thread shown last
    // time (so its series ends at its real level, not at its last peak).
    for (ThreadDefSlot& slot : thread_defs_) slot.emitted_now = false;
    for (size_t k = 0; k < top; ++k) {
      const ThreadCpu& t = now[thread_order_[k]];
      size_t s = 0;
      while (s < thread_defs_.size() && thread_defs_[s].tid != t.tid) ++s;
      if (s == thread_defs_.size()) {
        const uint32_t def = thread_defs_.size() < thread_defs_.capacity()
                                 ? AddDef(metric_names::kHostThreadCpuPct, "percent",
                                          kScopeThread, 0, options_.self_pid, t.tid, t.comm)
                                 : kNone;
        if (def == kNone) {
          stats_.threads_ignored.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        thread_defs_.push_back(ThreadDefSlot{t.tid, def, false, false});
        Publish(sink);
      }
      Emit(sink, thread_defs_[s].def, now_ns, thread_pct_[thread_order_[k]]);
      thread_defs_[s].emitted_now = true;
    }
    for (ThreadDefSlot& slot : thread_defs_) {
      if (slot.emitted_last && !slot.emitted_now) {
        auto it = std::lower_bound(now.begin(), now.begin() + static_cast<std::ptrdiff_t>(count),
                                   slot.tid,
                                   [](const ThreadCpu& a, uint32_t tid) { return a.tid < tid; });
        const size_t i = static_cast<size_t>(it - now.begin());
        if (i < count && now[i].tid == slot.tid && thread_pct_[i] >= 0) {
          Emit(sink, slot.def, now_ns, thread_pct_[i]);
        }
      }
      slot.emitted_last = slot.emitted_now;
    }
  }
  cur_scan_ = cur;
  scan_count_[cur] = count;
  prev_scan_mono_ns_ = scan.mono_ns;
  have_prev_scan_ = true;
}

void Sampler::NoteFailures(uint32_t dev, const GpuReadings& r) {
  DeviceState& ds = dev_state_[dev];
  for (int m = 0; m < kGpuMetricCount; ++m) {
    if (!((r.failed >> m) & 1)) continue;
    stats_.gpu_read_failures.fetch_add(1, std::memory_order_relaxed);
    if ((ds.failure_noted >> m) & 1) continue;
    ds.failure_noted |= MetricMask{1} << m;
    char reason[256];
    std::snprintf(reason, sizeof(reason),
                  "GPU %u: failed at run time (%s); later failures are counted, not reported",
                  devices_[dev].cuda_ordinal, r.error[m] != nullptr ? r.error[m] : "unknown error");
    AddCapability(GetGpuMetricInfo(m).name, false, reason);
  }
}

void Sampler::SampleGpu(uint64_t now_ns, MetricSink* sink) {
  gpu_->BeginSample(now_ns);
  // The clock going backwards (a realtime step) restarts the cadence.
  const bool processes_due = now_ns >= next_process_ns_ || now_ns < last_process_ns_;
  if (processes_due) {
    last_process_ns_ = now_ns;
    next_process_ns_ = now_ns + uint64_t{options_.process_interval_ms} * 1000000ull;
  }
  const uint64_t active = options_.active_devices != nullptr
                              ? options_.active_devices->load(std::memory_order_acquire)
                              : ~uint64_t{0};
  for (uint32_t d = 0; d < dev_state_.size(); ++d) {
    DeviceState& ds = dev_state_[d];
    if (!ds.defined) {
      const uint32_t ordinal = devices_[d].cuda_ordinal;
      if (ordinal >= 64 || !((active >> ordinal) & 1)) continue;
      DefineDevice(d);
      Publish(sink);  // the descriptors before the first values
    }
    GpuReadings r;
    if (ds.nvml != 0) gpu_->Read(d, ds.nvml, &r);
    if (ds.gpm != 0) {
      // Alternate slots: the new snapshot goes where the one before last
      // was, and the metrics cover the time since the previous sample. A
      // failed snapshot keeps the previous one as the start.
      const int slot = ds.gpm_slot;
      if (gpu_->GpmSnapshot(d, slot)) {
        if (ds.gpm_have_prev) gpu_->GpmRead(d, 1 - slot, slot, ds.gpm, &r);
        ds.gpm_have_prev = true;
        ds.gpm_slot = 1 - slot;
      } else {
        stats_.gpm_snapshot_failures.fetch_add(1, std::memory_order_relaxed);
      }
    }
    MetricMask valid = r.valid;
    while (valid != 0) {
      const int m = __builtin_ctz(valid);
      valid &= valid - 1;
      Emit(sink, ds.def[m], now_ns, r.value[m]);
    }
    if (r.failed != 0) NoteFailures(d, r);
    if (processes_due && (ds.processes || ds.process_util)) SampleProcesses(d, now_ns, sink);
  }
}

void Sampler::SampleProcesses(uint32_t dev, uint64_t now_ns, MetricSink* sink) {
  DeviceState& ds = dev_state_[dev];
  bool more = false;
  const size_t n = gpu_->ReadProcesses(dev, proc_scratch_.data(), proc_scratch_.size(), &more);
  if (more) stats_.gpu_processes_ignored.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    const GpuProcessReading& p = proc_scratch_[i];
    const bool mem = ds.processes && p.has_memory;
    const bool sm = ds.process_util && p.has_sm_util;
    if (!mem && !sm) continue;
    GpuProcSlot* slot = nullptr;
    for (GpuProcSlot& s : proc_slots_) {
      if (s.dev == dev && s.pid == p.pid) {
        slot = &s;
        break;
      }
    }
    if (slot == nullptr) {
      if (proc_slots_.size() == proc_slots_.capacity()) {
        stats_.gpu_processes_ignored.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      char name[96];
      gpu_->ProcessName(p.pid, name, sizeof(name));
      const uint32_t index = devices_[dev].cuda_ordinal;
      GpuProcSlot s{dev, p.pid, kNone, kNone};
      if (ds.processes) {
        s.mem_def = AddDef(metric_names::kNvmlProcessMemoryBytes, "bytes", kScopeProcess, index,
                           p.pid, 0, name);
      }
      if (ds.process_util) {
        s.sm_def = AddDef(metric_names::kNvmlProcessSmUtil, "percent", kScopeProcess, index, p.pid,
                          0, name);
      }
      proc_slots_.push_back(s);
      slot = &proc_slots_.back();
      Publish(sink);
    }
    if (mem) Emit(sink, slot->mem_def, now_ns, static_cast<double>(p.memory_bytes));
    if (sm) Emit(sink, slot->sm_def, now_ns, p.sm_util_pct);
  }
}

}  // namespace gpscope::metrics
