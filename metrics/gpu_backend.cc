#include "metrics/gpu_backend.h"

namespace gpscope::metrics {
namespace {

// Index = GpuMetric. Units are those of proto MetricDescriptor.unit.
constexpr GpuMetricInfo kInfo[kGpuMetricCount] = {
    {"nvml.gpu_util", "percent"},
    {"nvml.mem_util", "percent"},
    {"nvml.sm_clock_mhz", "MHz"},
    {"nvml.mem_clock_mhz", "MHz"},
    {"nvml.clock_event_reasons", "bitmask"},
    {"nvml.power_w", "W"},
    {"nvml.power_limit_w", "W"},
    {"nvml.temperature_c", "C"},
    {"nvml.memory_used_bytes", "bytes"},
    {"nvml.pcie_tx_bytes_per_s", "bytes/s"},
    {"nvml.pcie_rx_bytes_per_s", "bytes/s"},
    {"gpm.sm_util", "percent"},
    {"gpm.sm_occupancy", "percent"},
    {"gpm.tensor_util", "percent"},
    {"gpm.dram_bw_util", "percent"},
    {"gpm.fp16_util", "percent"},
    {"gpm.fp32_util", "percent"},
    {"gpm.fp64_util", "percent"},
    {"gpm.pcie_tx_bytes_per_s", "bytes/s"},
    {"gpm.pcie_rx_bytes_per_s", "bytes/s"},
    {"gpm.nvlink_tx_bytes_per_s", "bytes/s"},
    {"gpm.nvlink_rx_bytes_per_s", "bytes/s"},
};

}  // namespace

const GpuMetricInfo& GetGpuMetricInfo(GpuMetric m) { return kInfo[static_cast<int>(m)]; }

bool GpuMetricFromName(std::string_view name, GpuMetric* out) {
  for (int i = 0; i < kGpuMetricCount; ++i) {
    if (name == kInfo[i].name) {
      *out = static_cast<GpuMetric>(i);
      return true;
    }
  }
  return false;
}

}  // namespace gpscope::metrics
