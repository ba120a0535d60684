// metrics/replay_backend.h: a GpuBackend that replays recorded
// readings from a small text file, for tests and for the node monitor's
// tests, where there is no GPU. nvml_probe --record writes this format.
//
// Format: one record per line, fields separated by blanks, '#' starts a
// comment line. Header lines (before the first `step`):
//   nvml missing <reason...>          Open() fails with this reason
//   ignored_devices <n>               devices beyond those listed
//   device <dev> <uuid> <name...>     devices, dev = 0, 1, ... in order
//   pci <dev> <bus-id>
//   unsupported <dev> <what> <reason...>
//        what = a metric name ("nvml.power_w", "gpm.fp64_util"), or
//        "gpm" (GPM as a whole), "processes", "process_util"
// Then one block per sample, each opened by a `step` line:
//   <metric> <dev> <value>            e.g. "nvml.gpu_util 0 97"
//   fail <dev> <metric> <reason...>   the read of that metric fails this step
//   proc <dev> <pid> <memory_bytes|-> <sm_util_pct|-> [name]
//
// A metric is supported on a device when it appears in some step and is not
// listed as unsupported. A gpm.* value on step k is the average over the
// interval that ends at step k, so GpmRead() between snapshots taken at
// steps i < j averages steps i+1..j (what NVML computes between two real
// snapshots, for equal step lengths).
//
// BeginSample() moves to the next step; after the last step it stays there
// (or wraps, with `loop`).
//
// Thread model: as GpuBackend; parsing (the constructor) is cold.
#ifndef GPSCOPE_METRICS_REPLAY_BACKEND_H_
#define GPSCOPE_METRICS_REPLAY_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/gpu_backend.h"

namespace gpscope::metrics {

class ReplayBackend : public GpuBackend {
 public:
  explicit ReplayBackend(std::string_view text, bool loop = false);
  // Reads `path`; a file that cannot be read gives a backend whose Open() fails.
  static std::unique_ptr<ReplayBackend> FromFile(const char* path, bool loop = false);

  // Parse result; Open() also fails (with error()) when this is false.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t step_count() const { return steps_.size(); }
  int current_step() const { return current_; }

  bool Open(const char** reason) override;
  uint32_t device_count() const override { return static_cast<uint32_t>(devices_.size()); }
  uint32_t ignored_device_count() const override { return ignored_devices_; }
  const GpuDeviceInfo& device(uint32_t dev) const override { return devices_[dev]; }
  void Probe(GpuProbe* out) override;

  void BeginSample(uint64_t now_ns) override;
  void Read(uint32_t dev, MetricMask wanted, GpuReadings* out) override;
  bool GpmSnapshot(uint32_t dev, int slot) override;
  void GpmRead(uint32_t dev, int older, int newer, MetricMask wanted, GpuReadings* out) override;
  size_t ReadProcesses(uint32_t dev, GpuProcessReading* out, size_t cap, bool* more) override;
  void ProcessName(uint32_t pid, char* buf, size_t len) override;

 private:
  struct ProcLine {
    uint32_t dev;
    GpuProcessReading reading;
  };
  struct Step {
    std::vector<GpuReadings> dev;  // per device: values and failures of this step
    std::vector<ProcLine> procs;
  };
  void Parse(std::string_view text);

  bool loop_;
  std::string error_;
  std::string nvml_missing_;
  uint32_t ignored_devices_ = 0;
  std::vector<GpuDeviceInfo> devices_;
  std::vector<GpuProbe> probe_;
  std::vector<std::unique_ptr<std::string>> reasons_;  // stable text for probe_
  std::vector<Step> steps_;
  std::map<uint32_t, std::string> names_;
  int current_ = -1;
  int gpm_step_[kMaxDevices][2];  // step of each GPM snapshot slot, -1 = none
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_REPLAY_BACKEND_H_
