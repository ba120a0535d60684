#include "metrics/gpu_backend.h"

#include "proto/metric_names.h"

namespace gpscope::metrics {
namespace {

// Index = GpuMetric. Names: proto/metric_names.h; units are those of proto
// MetricDescriptor.unit.
constexpr GpuMetricInfo kInfo[kGpuMetricCount] = {
    {metric_names::kNvmlGpuUtil, "percent"},
    {metric_names::kNvmlMemUtil, "percent"},
    {metric_names::kNvmlSmClockMhz, "MHz"},
    {metric_names::kNvmlMemClockMhz, "MHz"},
    {metric_names::kNvmlClockEventReasons, "bitmask"},
    {metric_names::kNvmlPowerW, "W"},
    {metric_names::kNvmlPowerLimitW, "W"},
    {metric_names::kNvmlTemperatureC, "C"},
    {metric_names::kNvmlMemoryUsedBytes, "bytes"},
    {metric_names::kNvmlPcieTxBytesPerS, "bytes/s"},
    {metric_names::kNvmlPcieRxBytesPerS, "bytes/s"},
    {metric_names::kGpmSmUtil, "percent"},
    {metric_names::kGpmSmOccupancy, "percent"},
    {metric_names::kGpmTensorUtil, "percent"},
    {metric_names::kGpmDramBwUtil, "percent"},
    {metric_names::kGpmFp16Util, "percent"},
    {metric_names::kGpmFp32Util, "percent"},
    {metric_names::kGpmFp64Util, "percent"},
    {metric_names::kGpmPcieTxBytesPerS, "bytes/s"},
    {metric_names::kGpmPcieRxBytesPerS, "bytes/s"},
    {metric_names::kGpmNvlinkTxBytesPerS, "bytes/s"},
    {metric_names::kGpmNvlinkRxBytesPerS, "bytes/s"},
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
