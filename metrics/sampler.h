// metrics/sampler.h: hardware and host metrics, sampled alongside the
// trace (issue 4). One Sampler reads a GpuBackend (NVML, or a replay) and a
// HostSource (/proc) and turns the readings into the trace's metric model:
// MetricDescriptor definitions (what an id means), CapabilityNotice entries
// (what is unavailable and why, recorded once) and format::MetricSample
// values.
//
//   auto sampler = std::make_unique<Sampler>(std::make_unique<NvmlBackend>(),
//                                            std::make_unique<ProcHostSource>(),
//                                            SamplerOptions{});
//   sampler->Init(&sink);                 // cold: discovers, defines, notes
//   for (;;) sampler->SampleOnce(now_ns, &sink);  // every interval
//
// Metric names and units (proto MetricDescriptor.unit):
//   device (SCOPE_DEVICE, device_id = the CUDA ordinal, best effort; label =
//   the GPU UUID, the same text as DeviceRecord.uuid: the reliable join key):
//     nvml.gpu_util, nvml.mem_util (percent), nvml.sm_clock_mhz,
//     nvml.mem_clock_mhz (MHz), nvml.clock_event_reasons (bitmask),
//     nvml.power_w, nvml.power_limit_w (W), nvml.temperature_c (C),
//     nvml.memory_used_bytes (bytes), nvml.pcie_{tx,rx}_bytes_per_s (bytes/s,
//     opt-in), gpm.sm_util, gpm.sm_occupancy, gpm.tensor_util,
//     gpm.dram_bw_util, gpm.fp16_util, gpm.fp32_util, gpm.fp64_util
//     (percent), gpm.pcie_{tx,rx}_bytes_per_s, gpm.nvlink_{tx,rx}_bytes_per_s
//     (bytes/s)
//   a process on a GPU (SCOPE_PROCESS, device_id, pid, label = its name;
//   defined when the pid first appears): nvml.process_sm_util (percent),
//   nvml.process_memory_bytes (bytes)
//   this process (SCOPE_PROCESS, pid): host.process_cpu_user_pct,
//     host.process_cpu_system_pct (percent of one core), host.rss_bytes
//     (bytes), gpscope.sampler_cpu_pct (percent of one core: the sampler's
//     own cost), gpscope.collector_cpu_pct (all gpscope-* threads together,
//     every thread scan: the collector's own CPU cost)
//   this process's busiest threads (SCOPE_THREAD, thread_id, label = thread
//     name): host.thread_cpu_pct (percent of one core, over the thread-scan
//     interval, default 1 s; the top few above a floor)
//   the node (SCOPE_HOST): host.cpu_util_pct, host.iowait_pct (percent of
//     all CPUs)
// Rates and averages (CPU %, gpm.*) are stamped with the end of the
// interval they cover. CPU rates start at the first SampleOnce (Init reads
// the baseline); gpm.* values at the second (GPM needs two snapshots).
//
// Thread model: Init() and SampleOnce() run on one thread (the sampler
// thread; see sampler_thread.h). Init() is cold: it may allocate, load NVML
// and wait ~20 ms for the GPM probe. After Init(), SampleOnce() does not
// allocate: every table is sized in Init(); pids and threads beyond the caps
// are ignored and counted in stats(). The definitions (MetricDef,
// CapabilityDef) keep their addresses for the Sampler's life, so a sink may
// pass pointers to them to another thread. stats() may be read from any
// thread; the descriptor/capability/device accessors only on the sampler
// thread or after it has stopped (the tables grow within their capacity).
#ifndef GPSCOPE_METRICS_SAMPLER_H_
#define GPSCOPE_METRICS_SAMPLER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "metrics/gpu_backend.h"
#include "metrics/host_stats.h"
#include "proto/enums.h"
#include "proto/events.h"
#include "proto/records.h"

namespace gpscope::metrics {

// proto MetricScope values (proto/enums.h).
inline constexpr uint32_t kScopeDevice = wire::SCOPE_DEVICE;
inline constexpr uint32_t kScopeProcess = wire::SCOPE_PROCESS;
inline constexpr uint32_t kScopeHost = wire::SCOPE_HOST;
inline constexpr uint32_t kScopeThread = wire::SCOPE_THREAD;

// One MetricDescriptor. name/unit point to static text.
struct MetricDef {
  uint32_t id = 0;
  const char* name = "";
  const char* unit = "";
  uint32_t scope = 0;  // kScope*
  uint32_t device_id = 0;
  uint32_t pid = 0;
  uint32_t thread_id = 0;
  char label[96] = {};
};

// One CapabilityNotice.
struct CapabilityDef {
  char component[48] = {};  // "nvml", "gpm", "nvml.power_w", "host.threads", ...
  bool available = false;
  char reason[256] = {};
};

// Views for BatchBuilder / ChunkWriter; they borrow the def's text.
format::MetricDescriptorRecord ToRecord(const MetricDef& def);
format::CapabilityRecord ToRecord(const CapabilityDef& cap);

// Where the sampler's output goes. Called on the sampler thread.
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  // False: cannot take it now (e.g. a full ring). The Sampler offers it again
  // at the next SampleOnce and holds back that metric's samples until taken,
  // so no sample ever precedes its descriptor.
  virtual bool OnDescriptor(const MetricDef& def) = 0;
  virtual bool OnCapability(const CapabilityDef& cap) = 0;
  virtual void OnSample(const format::MetricSample& sample) = 0;
};

struct SamplerOptions {
  uint32_t first_metric_id = 1;            // ids are dense from here
  uint32_t self_pid = 0;                   // 0 = getpid()
  bool gpm = true;                         // GPM metrics where the GPU has them
  bool gpu_processes = true;               // per-process memory and SM utilization
  // Per-process reads cost ~3 ms per device on the H200 (NVML walks the
  // driver's process table), 30x a device read: they run at this slower
  // cadence. NVML averages process utilization since the last read, so
  // nothing is lost but resolution.
  uint32_t process_interval_ms = 1000;
  uint32_t max_processes_per_device = 64;  // read per device per sample
  uint32_t max_gpu_processes = 64;         // (device, pid) pairs defined, over the Sampler's life
  bool threads = true;                     // host.thread_cpu_pct
  uint32_t thread_scan_interval_ms = 1000;
  uint32_t top_threads = 8;
  double min_thread_cpu_pct = 1.0;
  uint32_t max_threads = 1024;           // threads read per scan
  uint32_t max_thread_descriptors = 64;  // distinct threads defined, over the Sampler's life
  bool self_cost = true;                 // gpscope.sampler_cpu_pct
  // The collector's: bit d set once this process has a CUDA context on the
  // GPU with CUDA ordinal d (written by other threads). GPUs are defined and
  // read only from then on, so a rank samples its own GPU, not all eight of
  // the node, and a process without a context samples none. Null (the
  // monitor): every GPU from the start.
  const std::atomic<uint64_t>* active_devices = nullptr;
};

// Counters; relaxed atomics, readable from any thread.
struct SamplerStats {
  std::atomic<uint64_t> samples{0};            // SampleOnce calls
  std::atomic<uint64_t> values{0};             // OnSample calls
  std::atomic<uint64_t> values_held_back{0};   // skipped: descriptor not yet taken by the sink
  std::atomic<uint64_t> values_not_finite{0};  // skipped: NaN or infinite reading
  std::atomic<uint64_t> gpu_read_failures{0};  // metric reads that failed after Init
  std::atomic<uint64_t> gpm_snapshot_failures{0};
  std::atomic<uint64_t> gpu_processes_ignored{0};  // beyond the caps
  std::atomic<uint64_t> threads_ignored{0};        // beyond max_threads or max_thread_descriptors
  std::atomic<uint64_t> notices_dropped{0};        // run-time notices beyond the reserve
  std::atomic<uint64_t> cpu_ns{0};                 // thread CPU spent in SampleOnce
};

class Sampler {
 public:
  // Either source may be null (host-only or GPU-only sampling).
  Sampler(std::unique_ptr<GpuBackend> gpu, std::unique_ptr<HostSource> host,
          const SamplerOptions& options = SamplerOptions{});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Cold. Opens the sources, defines the metrics, records what is missing,
  // and offers all of it to `sink`. False when nothing at all can be sampled.
  bool Init(MetricSink* sink);
  // Reads everything once and emits samples stamped `now_ns` (the trace's
  // timebase). Never allocates.
  void SampleOnce(uint64_t now_ns, MetricSink* sink);

  size_t descriptor_count() const { return defs_.size(); }
  const MetricDef& descriptor(size_t i) const { return defs_[i]; }
  size_t capability_count() const { return caps_.size(); }
  const CapabilityDef& capability(size_t i) const { return caps_[i]; }
  uint32_t gpu_device_count() const { return static_cast<uint32_t>(devices_.size()); }
  const GpuDeviceInfo& gpu_device(uint32_t i) const;
  const SamplerStats& stats() const { return stats_; }
  const SamplerOptions& options() const { return options_; }

 private:
  static constexpr uint32_t kNone = ~0u;
  static constexpr size_t kRuntimeNoticeReserve = 32;

  struct DeviceState {
    GpuProbe probe;
    MetricMask nvml = 0;  // read every sample
    MetricMask gpm = 0;   // GPM metrics computed every sample
    MetricMask failure_noted = 0;
    uint32_t def[kGpuMetricCount];
    int gpm_slot = 0;  // slot the next snapshot goes to
    bool gpm_have_prev = false;
    bool processes = false;
    bool process_util = false;
    bool defined = false;  // its metrics are defined and read (SamplerOptions::active_devices)
  };
  struct GpuProcSlot {
    uint32_t dev;
    uint32_t pid;
    uint32_t mem_def;
    uint32_t sm_def;
  };
  struct ThreadDefSlot {
    uint32_t tid;
    uint32_t def;
    bool emitted_last;  // a value went out at the previous scan
    bool emitted_now;
  };

  uint32_t AddDef(const char* name, const char* unit, uint32_t scope, uint32_t device_id,
                  uint32_t pid, uint32_t thread_id, const char* label);
  void AddCapability(const char* component, bool available, const char* reason);
  void Publish(MetricSink* sink);
  void Emit(MetricSink* sink, uint32_t def, uint64_t now_ns, double value);
  void InitGpu();
  void DefineDevice(uint32_t dev);
  void InitHost();
  void SampleGpu(uint64_t now_ns, MetricSink* sink);
  void SampleProcesses(uint32_t dev, uint64_t now_ns, MetricSink* sink);
  void SampleHost(uint64_t now_ns, MetricSink* sink);
  void ScanThreads(uint64_t now_ns, MetricSink* sink);
  void NoteFailures(uint32_t dev, const GpuReadings& r);

  std::unique_ptr<GpuBackend> gpu_;
  std::unique_ptr<HostSource> host_;
  SamplerOptions options_;
  SamplerStats stats_;
  bool initialized_ = false;

  std::vector<MetricDef> defs_;      // capacity fixed in Init: addresses never move
  std::vector<CapabilityDef> caps_;  // same
  size_t defs_published_ = 0;
  size_t caps_published_ = 0;

  // GPU.
  bool gpu_ok_ = false;
  std::vector<GpuDeviceInfo> devices_;
  std::vector<DeviceState> dev_state_;
  std::vector<GpuProcessReading> proc_scratch_;
  std::vector<GpuProcSlot> proc_slots_;  // capacity max_gpu_processes

  // Host.
  bool host_ok_ = false;
  bool have_prev_host_ = false;
  HostSnapshot prev_host_;
  uint32_t def_user_ = kNone, def_system_ = kNone, def_rss_ = kNone;
  uint32_t def_cpu_ = kNone, def_iowait_ = kNone, def_self_ = kNone, def_collector_ = kNone;
  uint64_t next_process_ns_ = 0;  // next per-process read (sample clock)
  uint64_t last_process_ns_ = 0;
  uint64_t self_cpu_ns_ = 0;  // spent in SampleOnce since the last gpscope.sampler_cpu_pct
  uint64_t self_since_mono_ns_ = 0;

  // Threads: two scans, each sorted by tid.
  bool threads_ok_ = false;
  std::vector<ThreadCpu> scan_[2];
  size_t scan_count_[2] = {0, 0};
  int cur_scan_ = 0;
  bool have_prev_scan_ = false;
  uint64_t prev_scan_mono_ns_ = 0;
  uint64_t next_scan_ns_ = 0;
  uint64_t last_scan_ns_ = 0;
  std::vector<double> thread_pct_;
  std::vector<uint32_t> thread_order_;
  std::vector<ThreadDefSlot> thread_defs_;  // capacity max_thread_descriptors
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_SAMPLER_H_
