// metrics/gpu_backend.h: where the sampler gets GPU readings from.
//
// GpuBackend is the seam between the Sampler (metrics/sampler.h) and
// a source of per-GPU readings: NvmlBackend (the driver's NVML, dlopen'd) in
// production, ReplayBackend (a recorded text file) in tests and in the node
// monitor's tests. Everything above this interface builds and tests without
// a GPU.
//
//   NvmlBackend nvml;                    // or ReplayBackend replay(text);
//   const char* why;
//   if (!nvml.Open(&why)) { ... record "nvml unavailable: why" ... }
//   GpuProbe probe[kMaxDevices];
//   nvml.Probe(probe);                   // cold: what each GPU supports, and why not
//   ...every interval:
//   nvml.BeginSample(now_ns);
//   nvml.Read(dev, probe[dev].supported & ~kGpmMask, &readings);
//
// GPM metrics are rates between two hardware snapshots: GpmSnapshot() takes
// one into a slot (0 or 1) and GpmRead() computes the metrics between two
// slots. The Sampler alternates slots, so each interval's values cover
// exactly the time since the previous sample.
//
// Thread model: a backend is used by one thread at a time (the sampler
// thread). Open/Probe/ProcessName are cold (may allocate, block, sleep);
// BeginSample/Read/GpmSnapshot/GpmRead/ReadProcesses never allocate.
#ifndef GPSCOPE_METRICS_GPU_BACKEND_H_
#define GPSCOPE_METRICS_GPU_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpscope::metrics {

// GPUs sampled per process; more are ignored and recorded once.
inline constexpr uint32_t kMaxDevices = 16;

enum class GpuMetric : uint8_t {
  // Instantaneous NVML readings.
  kGpuUtil,            // nvml.gpu_util          percent (time with a kernel running)
  kMemUtil,            // nvml.mem_util          percent (time memory was read/written)
  kSmClockMhz,         // nvml.sm_clock_mhz      MHz
  kMemClockMhz,        // nvml.mem_clock_mhz     MHz
  kClockEventReasons,  // nvml.clock_event_reasons  bitmask (nvmlClocksEventReason*)
  kPowerW,             // nvml.power_w           W
  kPowerLimitW,        // nvml.power_limit_w     W (enforced limit)
  kTemperatureC,       // nvml.temperature_c     C
  kMemoryUsedBytes,    // nvml.memory_used_bytes bytes
  kPcieTxBytesPerS,    // nvml.pcie_tx_bytes_per_s  bytes/s (opt-in: the call blocks ~20 ms)
  kPcieRxBytesPerS,    // nvml.pcie_rx_bytes_per_s  bytes/s
  // GPM (Hopper+): averages over the interval between two snapshots.
  kGpmSmUtil,             // gpm.sm_util             percent
  kGpmSmOccupancy,        // gpm.sm_occupancy        percent
  kGpmTensorUtil,         // gpm.tensor_util         percent (any tensor pipe)
  kGpmDramBwUtil,         // gpm.dram_bw_util        percent of peak DRAM bandwidth
  kGpmFp16Util,           // gpm.fp16_util           percent
  kGpmFp32Util,           // gpm.fp32_util           percent
  kGpmFp64Util,           // gpm.fp64_util           percent
  kGpmPcieTxBytesPerS,    // gpm.pcie_tx_bytes_per_s    bytes/s
  kGpmPcieRxBytesPerS,    // gpm.pcie_rx_bytes_per_s    bytes/s
  kGpmNvlinkTxBytesPerS,  // gpm.nvlink_tx_bytes_per_s  bytes/s (all links)
  kGpmNvlinkRxBytesPerS,  // gpm.nvlink_rx_bytes_per_s  bytes/s
  kCount
};
inline constexpr int kGpuMetricCount = static_cast<int>(GpuMetric::kCount);
inline constexpr int kFirstGpmMetric = static_cast<int>(GpuMetric::kGpmSmUtil);

using MetricMask = uint32_t;  // bit i = GpuMetric i
static_assert(kGpuMetricCount <= 32, "MetricMask is 32 bits");
constexpr MetricMask Bit(GpuMetric m) { return MetricMask{1} << static_cast<int>(m); }
inline constexpr MetricMask kAllGpuMetrics = (MetricMask{1} << kGpuMetricCount) - 1;
inline constexpr MetricMask kGpmMask = kAllGpuMetrics & ~((MetricMask{1} << kFirstGpmMetric) - 1);
inline constexpr MetricMask kNvmlMask = kAllGpuMetrics & ~kGpmMask;

struct GpuMetricInfo {
  const char* name;  // "nvml.power_w"
  const char* unit;  // proto MetricDescriptor.unit: "percent", "W", "MHz", "bytes", ...
};
const GpuMetricInfo& GetGpuMetricInfo(GpuMetric m);
inline const GpuMetricInfo& GetGpuMetricInfo(int m) {
  return GetGpuMetricInfo(static_cast<GpuMetric>(m));
}
// Inverse of GetGpuMetricInfo().name; false for an unknown name.
bool GpuMetricFromName(std::string_view name, GpuMetric* out);

struct GpuDeviceInfo {
  uint32_t index = 0;  // NVML index (PCI bus order)
  // This process's CUDA ordinal for the GPU, best effort (position in
  // CUDA_VISIBLE_DEVICES, else the NVML index, which equals CUDA's order
  // under CUDA_DEVICE_ORDER=PCI_BUS_ID and on most homogeneous nodes).
  // The UUID is the reliable key.
  uint32_t cuda_ordinal = 0;
  char name[96] = {};        // "NVIDIA H200"
  char uuid[96] = {};        // "GPU-8c3f...", the same text as DeviceRecord.uuid
  char pci_bus_id[32] = {};  // "00000000:19:00.0"
};

// What one device can report (Probe, cold). Reasons are static or
// backend-owned text that stays valid while the backend lives.
struct GpuProbe {
  MetricMask supported = 0;
  const char* reason[kGpuMetricCount] = {};  // for metrics not in `supported`
  bool gpm = false;                          // GPM as a whole
  const char* gpm_reason = nullptr;
  bool processes = false;  // running processes and their memory
  const char* processes_reason = nullptr;
  bool process_util = false;  // per-process SM utilization
  const char* process_util_reason = nullptr;
};

// One device's readings for one sample. Only metrics in `valid` hold values;
// those in `failed` were asked for and the call failed (reason in `error`).
struct GpuReadings {
  MetricMask valid = 0;
  MetricMask failed = 0;
  double value[kGpuMetricCount] = {};
  const char* error[kGpuMetricCount] = {};

  void Clear() { valid = failed = 0; }
  void Set(GpuMetric m, double v) {
    valid |= Bit(m);
    value[static_cast<int>(m)] = v;
  }
  void Fail(GpuMetric m, const char* why) {
    failed |= Bit(m);
    error[static_cast<int>(m)] = why;
  }
};

// A process with a context on a GPU (any process, not only this one).
struct GpuProcessReading {
  uint32_t pid = 0;  // as NVML reports it: the host's pid namespace
  bool has_memory = false;
  bool has_sm_util = false;  // false when no utilization sample fell in the interval
  uint64_t memory_bytes = 0;
  double sm_util_pct = 0;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // Cold. False when no GPU metrics can be had at all; *reason then says why.
  virtual bool Open(const char** reason) = 0;
  // Devices known after Open (at most kMaxDevices).
  virtual uint32_t device_count() const = 0;
  // Devices present beyond kMaxDevices, ignored.
  virtual uint32_t ignored_device_count() const { return 0; }
  virtual const GpuDeviceInfo& device(uint32_t dev) const = 0;
  // Cold: out[0, device_count()). May take tens of ms (GPM needs two snapshots).
  virtual void Probe(GpuProbe* out) = 0;

  // Steady path, never allocates. BeginSample() once per sample, before any read.
  virtual void BeginSample(uint64_t now_ns) { (void)now_ns; }
  // Instantaneous metrics in `wanted` (GPM bits are ignored).
  virtual void Read(uint32_t dev, MetricMask wanted, GpuReadings* out) = 0;
  // GPM snapshot into slot 0 or 1. False when it failed.
  virtual bool GpmSnapshot(uint32_t dev, int slot) = 0;
  // GPM metrics in `wanted` between the snapshots in `older` and `newer`.
  virtual void GpmRead(uint32_t dev, int older, int newer, MetricMask wanted, GpuReadings* out) = 0;
  // Up to `cap` processes on `dev`; *more = true when some did not fit.
  virtual size_t ReadProcesses(uint32_t dev, GpuProcessReading* out, size_t cap, bool* more) = 0;

  // Cold, once per newly seen pid: a short name for labels ("" if unknown).
  virtual void ProcessName(uint32_t pid, char* buf, size_t len) = 0;
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_GPU_BACKEND_H_
