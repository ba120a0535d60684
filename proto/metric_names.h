// proto/metric_names.h: the one catalogue of the names a trace's metrics
// carry (MetricDescriptor.name, proto/gpscope/trace.proto) and of the
// capability components that readers look for (CapabilityNotice.component).
// The sampler (metrics/) writes these names; the model, the analyses, the
// renderers and the node monitor's Prometheus mapping recognise them by the
// same constants, so no consumer retypes a name it has to match.
//
//   AddDef(metric_names::kGpmSmUtil, "percent", kScopeDevice, ...);   // metrics/sampler.cc
//   if (descriptor.name() == metric_names::kGpmSmUtil) ...            // tools/model
//
// A name is <source>.<reading>[_<unit>]: nvml.* (NVML device and process
// readings), gpm.* (GPM counters, Hopper and newer), host.* (/proc: this
// process, its threads, the node), gpscope.* (gpscope's own cost). Names are
// part of the format: traces written before a rename keep the old one, so
// a name is added, never changed (units: proto MetricDescriptor.unit).
//
// Header-only constants, no allocation: usable in the collector.
#ifndef GPSCOPE_PROTO_METRIC_NAMES_H_
#define GPSCOPE_PROTO_METRIC_NAMES_H_

namespace gpscope::metric_names {

// ---- NVML, per GPU (scope DEVICE) ------------------------------------------
inline constexpr char kNvmlGpuUtil[] = "nvml.gpu_util";  // time a kernel ran, percent
inline constexpr char kNvmlMemUtil[] = "nvml.mem_util";  // time memory was read/written
inline constexpr char kNvmlSmClockMhz[] = "nvml.sm_clock_mhz";
inline constexpr char kNvmlMemClockMhz[] = "nvml.mem_clock_mhz";
inline constexpr char kNvmlClockEventReasons[] = "nvml.clock_event_reasons";  // bitmask
inline constexpr char kNvmlPowerW[] = "nvml.power_w";
inline constexpr char kNvmlPowerLimitW[] = "nvml.power_limit_w";
inline constexpr char kNvmlTemperatureC[] = "nvml.temperature_c";
inline constexpr char kNvmlMemoryUsedBytes[] = "nvml.memory_used_bytes";
inline constexpr char kNvmlPcieTxBytesPerS[] = "nvml.pcie_tx_bytes_per_s";
inline constexpr char kNvmlPcieRxBytesPerS[] = "nvml.pcie_rx_bytes_per_s";

// ---- NVML, per process on a GPU (scope PROCESS, with the GPU) --------------
inline constexpr char kNvmlProcessMemoryBytes[] = "nvml.process_memory_bytes";
inline constexpr char kNvmlProcessSmUtil[] = "nvml.process_sm_util";

// ---- GPM, per GPU (scope DEVICE) -------------------------------------------
inline constexpr char kGpmSmUtil[] = "gpm.sm_util";
inline constexpr char kGpmSmOccupancy[] = "gpm.sm_occupancy";
inline constexpr char kGpmTensorUtil[] = "gpm.tensor_util";
inline constexpr char kGpmDramBwUtil[] = "gpm.dram_bw_util";
inline constexpr char kGpmFp16Util[] = "gpm.fp16_util";
inline constexpr char kGpmFp32Util[] = "gpm.fp32_util";
inline constexpr char kGpmFp64Util[] = "gpm.fp64_util";
inline constexpr char kGpmPcieTxBytesPerS[] = "gpm.pcie_tx_bytes_per_s";
inline constexpr char kGpmPcieRxBytesPerS[] = "gpm.pcie_rx_bytes_per_s";
inline constexpr char kGpmNvlinkTxBytesPerS[] = "gpm.nvlink_tx_bytes_per_s";
inline constexpr char kGpmNvlinkRxBytesPerS[] = "gpm.nvlink_rx_bytes_per_s";

// ---- the host (/proc) ------------------------------------------------------
// This process (scope PROCESS): CPU time as a share of one core, memory.
inline constexpr char kHostProcessCpuUserPct[] = "host.process_cpu_user_pct";
inline constexpr char kHostProcessCpuSystemPct[] = "host.process_cpu_system_pct";
inline constexpr char kHostRssBytes[] = "host.rss_bytes";
// Its busiest threads (scope THREAD).
inline constexpr char kHostThreadCpuPct[] = "host.thread_cpu_pct";
// The node (scope HOST).
inline constexpr char kHostCpuUtilPct[] = "host.cpu_util_pct";
inline constexpr char kHostIowaitPct[] = "host.iowait_pct";

// ---- gpscope's own cost (scope PROCESS) ------------------------------------
inline constexpr char kGpscopeSamplerCpuPct[] = "gpscope.sampler_cpu_pct";
inline constexpr char kGpscopeCollectorCpuPct[] = "gpscope.collector_cpu_pct";

// Every metric name above, for tests and lookups.
inline constexpr const char* kAllMetricNames[] = {
    kNvmlGpuUtil,          kNvmlMemUtil,          kNvmlSmClockMhz,
    kNvmlMemClockMhz,      kNvmlClockEventReasons, kNvmlPowerW,
    kNvmlPowerLimitW,      kNvmlTemperatureC,     kNvmlMemoryUsedBytes,
    kNvmlPcieTxBytesPerS,  kNvmlPcieRxBytesPerS,  kNvmlProcessMemoryBytes,
    kNvmlProcessSmUtil,    kGpmSmUtil,            kGpmSmOccupancy,
    kGpmTensorUtil,        kGpmDramBwUtil,        kGpmFp16Util,
    kGpmFp32Util,          kGpmFp64Util,          kGpmPcieTxBytesPerS,
    kGpmPcieRxBytesPerS,   kGpmNvlinkTxBytesPerS, kGpmNvlinkRxBytesPerS,
    kHostProcessCpuUserPct, kHostProcessCpuSystemPct, kHostRssBytes,
    kHostThreadCpuPct,     kHostCpuUtilPct,       kHostIowaitPct,
    kGpscopeSamplerCpuPct, kGpscopeCollectorCpuPct,
};

// ---- capability components (CapabilityNotice.component) --------------------
// A metric that is unavailable is noted under its own name (above); these
// name the sources and the readings that are not one metric.
inline constexpr char kCapNvml[] = "nvml";  // NVML itself (loaded, which version)
inline constexpr char kCapNvmlDevices[] = "nvml.devices";
inline constexpr char kCapNvmlProcesses[] = "nvml.processes";
inline constexpr char kCapNvmlProcessUtil[] = "nvml.process_util";
// NVML reports host pids that the collector could not map to its own (a
// container): per-process readings cannot be told apart from other jobs'.
inline constexpr char kCapNvmlProcessPids[] = "nvml.process_pids";
inline constexpr char kCapGpm[] = "gpm";
inline constexpr char kCapHost[] = "host";
inline constexpr char kCapHostProcessCpu[] = "host.process_cpu";
inline constexpr char kCapHostCpu[] = "host.cpu";
inline constexpr char kCapHostThreads[] = "host.threads";
inline constexpr char kCapMonitorBackend[] = "monitor.backend";  // the monitor replays readings

}  // namespace gpscope::metric_names

#endif  // GPSCOPE_PROTO_METRIC_NAMES_H_
