// metrics/nvml_backend.h: GpuBackend over the driver's NVML.
//
// Open() dlopen()s libnvidia-ml.so.1 and calls nvmlInit_v2 (which can take
// hundreds of ms on a node without persistence mode: run it on the sampler
// thread, never on an application thread). Probe() calls every entry point
// once per GPU and keeps those that answer; GPM support is asked with
// nvmlGpmQueryDeviceSupport, and each GPM metric is tried between two
// snapshots `gpm_probe_ms` apart (NVLink metrics fail on GPUs without it).
//
// Thread model: as GpuBackend. The destructor frees the GPM samples and
// shuts NVML down; destroy it on the thread that used it, after the last read.
#ifndef GPSCOPE_METRICS_NVML_BACKEND_H_
#define GPSCOPE_METRICS_NVML_BACKEND_H_

#include <cstdint>
#include <string>

#include "metrics/gpu_backend.h"
#include "metrics/nvml_api.h"

namespace gpscope::metrics {

// Which NVML devices a CUDA_VISIBLE_DEVICES value selects, as CUDA reads it:
// comma-separated entries, each a device index or a UUID prefix ("GPU-8c3f");
// the list ends at the first entry that matches nothing (or repeats one).
// ordinal[i] = CUDA ordinal of NVML device i, or -1 when not visible. An
// unset or empty value selects every device in NVML order; entries naming
// MIG instances ("MIG-...") cannot be matched to a whole GPU here, so they
// select every device too (returns false in those two cases).
bool SelectVisibleDevices(const char* visible, const char* const* uuids, uint32_t count,
                          int* ordinal);

class NvmlBackend : public GpuBackend {
 public:
  struct Options {
    const char* library = nullptr;  // default "libnvidia-ml.so.1"
    // nvmlDeviceGetPcieThroughput measures over 20 ms per call (per the NVML
    // docs), so it is off unless asked for; GPM's PCIe metrics need no wait.
    bool nvml_pcie_throughput = false;
    uint32_t gpm_probe_ms = 20;
    // CUDA_VISIBLE_DEVICES of the profiled process (null: every GPU): only
    // those GPUs are sampled, numbered as CUDA numbers them. The node
    // monitor leaves it null.
    const char* visible_devices = nullptr;
  };
  NvmlBackend();
  explicit NvmlBackend(const Options& options);
  ~NvmlBackend() override;
  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  bool Open(const char** reason) override;
  uint32_t device_count() const override { return device_count_; }
  uint32_t ignored_device_count() const override { return ignored_devices_; }
  const GpuDeviceInfo& device(uint32_t dev) const override { return info_[dev]; }
  void Probe(GpuProbe* out) override;

  void Read(uint32_t dev, MetricMask wanted, GpuReadings* out) override;
  bool GpmSnapshot(uint32_t dev, int slot) override;
  void GpmRead(uint32_t dev, int older, int newer, MetricMask wanted, GpuReadings* out) override;
  size_t ReadProcesses(uint32_t dev, GpuProcessReading* out, size_t cap, bool* more) override;
  void ProcessName(uint32_t pid, char* buf, size_t len) override;

  // After Open: "580.159" or "".
  const char* driver_version() const { return driver_version_; }
  const nvml::Api& api() const { return api_; }

 private:
  static constexpr size_t kProcessBuffer = 256;  // entries per query, all GPUs share it

  Options options_;
  nvml::Api api_;
  bool initialized_ = false;
  std::string open_error_;
  char driver_version_[nvml::kSystemDriverVersionBufferSize] = {};
  uint32_t device_count_ = 0;
  uint32_t ignored_devices_ = 0;
  nvml::Device handle_[kMaxDevices] = {};
  GpuDeviceInfo info_[kMaxDevices];
  nvml::GpmSample gpm_[kMaxDevices][2] = {};
  unsigned long long last_util_us_[kMaxDevices] = {};  // lastSeenTimeStamp per GPU
  bool processes_ok_[kMaxDevices] = {};                // from Probe
  bool process_util_ok_[kMaxDevices] = {};
  // Steady-path scratch, allocated once in Open().
  nvml::ProcessInfo* procs_ = nullptr;
  nvml::ProcessUtilizationSample* util_ = nullptr;
  nvml::GpmMetricsGet* gpm_get_ = nullptr;
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_NVML_BACKEND_H_
