// metrics/nvml_api.h: the few NVML types and entry points the sampler
// uses, declared here (there is no nvml.h at build time) and resolved at run
// time with dlopen("libnvidia-ml.so.1") + dlsym.
//
// Layouts and values follow NVIDIA's public nvml.h (NVML API 12; checked
// against the 12.2 header). Only plain C types cross the boundary. Versioned
// entry points are named by their versioned symbols (nvmlInit_v2,
// nvmlDeviceGetComputeRunningProcesses_v3, ...): the unversioned symbols keep
// their old, smaller structs for binary compatibility.
//
// A missing symbol leaves its pointer null; callers check before use, so a
// driver older than an entry point disables only what needs it.
//
// Thread model: NVML itself is thread-safe. NvmlApi is filled once by Load()
// (cold path) and read-only afterwards.
#ifndef GPSCOPE_METRICS_NVML_API_H_
#define GPSCOPE_METRICS_NVML_API_H_

#include <cstdint>

namespace gpscope::metrics::nvml {

// nvmlReturn_t values (subset).
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorNoData = 21;
inline constexpr Return kErrorArgumentVersionMismatch = 25;
inline constexpr Return kErrorUnknown = 999;

// Our own text for a return code; used when nvmlErrorString is missing and
// for messages built before NVML is loaded. Never null; static storage.
const char* ReturnName(Return r);

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
struct GpmSampleSt;
using GpmSample = GpmSampleSt*;  // nvmlGpmSample_t

inline constexpr unsigned kDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kDeviceUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kSystemDriverVersionBufferSize = 80;
inline constexpr unsigned long long kValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE

struct Utilization {    // nvmlUtilization_t
  unsigned int gpu;     // percent of the last sample period with a kernel running
  unsigned int memory;  // percent of the period with device memory read or written
};

struct Memory {  // nvmlMemory_t (v1; nvmlDeviceGetMemoryInfo)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct PciInfo {  // nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};

// nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3 (and
// _v2, same layout). The unversioned (v1) symbol fills a 16-byte struct
// without the instance ids: never call it with this one.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes, or kValueNotAvailable
  unsigned int gpu_instance_id;        // 0xFFFFFFFF without MIG
  unsigned int compute_instance_id;
};

struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long time_stamp_us;  // CPU timestamp, microseconds
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
};

// nvmlClockType_t
inline constexpr int kClockGraphics = 0;
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
// nvmlTemperatureSensors_t
inline constexpr int kTemperatureGpu = 0;
// nvmlPcieUtilCounter_t
inline constexpr int kPcieUtilTxBytes = 0;
inline constexpr int kPcieUtilRxBytes = 1;

// nvmlGpmMetricId_t (subset).
inline constexpr unsigned kGpmSmUtil = 2;
inline constexpr unsigned kGpmSmOccupancy = 3;
inline constexpr unsigned kGpmAnyTensorUtil = 5;
inline constexpr unsigned kGpmDramBwUtil = 10;
inline constexpr unsigned kGpmFp64Util = 11;
inline constexpr unsigned kGpmFp32Util = 12;
inline constexpr unsigned kGpmFp16Util = 13;
inline constexpr unsigned kGpmPcieTxPerSec = 20;         // MiB/s
inline constexpr unsigned kGpmPcieRxPerSec = 21;         // MiB/s
inline constexpr unsigned kGpmNvlinkTotalRxPerSec = 60;  // MiB/s
inline constexpr unsigned kGpmNvlinkTotalTxPerSec = 61;  // MiB/s

struct GpmMetric {         // nvmlGpmMetric_t
  unsigned int metric_id;  // in
  Return nvml_return;      // out: value valid only when kSuccess
  double value;            // out
  struct {
    char* short_name;
    char* long_name;
    char* unit;
  } metric_info;  // out, may be null
};

// nvmlGpmMetricsGet_t. NVML_GPM_METRIC_MAX was 98 in the 12.2 header and grew
// later (210); NVML touches only metrics[0, num_metrics), so a larger array is
// safe with either, and we never ask for more than a dozen.
inline constexpr unsigned kGpmMetricsGetVersion = 1;  // NVML_GPM_METRICS_GET_VERSION
inline constexpr unsigned kGpmMetricSlots = 210;
struct GpmMetricsGet {
  unsigned int version;      // in: kGpmMetricsGetVersion
  unsigned int num_metrics;  // in
  GpmSample sample1;         // in: the older sample
  GpmSample sample2;         // in: the newer sample
  GpmMetric metrics[kGpmMetricSlots];
};

inline constexpr unsigned kGpmSupportVersion = 1;  // NVML_GPM_SUPPORT_VERSION
struct GpmSupport {                                // nvmlGpmSupport_t
  unsigned int version;                            // in: kGpmSupportVersion
  unsigned int is_supported_device;                // out
};

// Function table. Null = the loaded library lacks that symbol.
struct Api {
  void* handle = nullptr;

  Return (*Init_v2)() = nullptr;
  Return (*Shutdown)() = nullptr;
  const char* (*ErrorString)(Return) = nullptr;
  Return (*SystemGetDriverVersion)(char*, unsigned int) = nullptr;
  Return (*SystemGetProcessName)(unsigned int, char*, unsigned int) = nullptr;

  Return (*DeviceGetCount_v2)(unsigned int*) = nullptr;
  Return (*DeviceGetHandleByIndex_v2)(unsigned int, Device*) = nullptr;
  Return (*DeviceGetName)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetUUID)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetPciInfo_v3)(Device, PciInfo*) = nullptr;

  Return (*DeviceGetUtilizationRates)(Device, Utilization*) = nullptr;
  Return (*DeviceGetClockInfo)(Device, int, unsigned int*) = nullptr;  // MHz
  // The newer name (driver r535+) and the deprecated one; same signature.
  Return (*DeviceGetCurrentClocksEventReasons)(Device, unsigned long long*) = nullptr;
  Return (*DeviceGetCurrentClocksThrottleReasons)(Device, unsigned long long*) = nullptr;
  Return (*DeviceGetPowerUsage)(Device, unsigned int*) = nullptr;          // mW
  Return (*DeviceGetEnforcedPowerLimit)(Device, unsigned int*) = nullptr;  // mW
  Return (*DeviceGetTemperature)(Device, int, unsigned int*) = nullptr;    // C
  Return (*DeviceGetMemoryInfo)(Device, Memory*) = nullptr;
  Return (*DeviceGetPcieThroughput)(Device, int, unsigned int*) = nullptr;  // KB/s

  Return (*DeviceGetComputeRunningProcesses_v3)(Device, unsigned int*, ProcessInfo*) = nullptr;
  Return (*DeviceGetComputeRunningProcesses_v2)(Device, unsigned int*, ProcessInfo*) = nullptr;
  Return (*DeviceGetProcessUtilization)(Device, ProcessUtilizationSample*, unsigned int*,
                                        unsigned long long) = nullptr;

  Return (*GpmQueryDeviceSupport)(Device, GpmSupport*) = nullptr;
  Return (*GpmSampleAlloc)(GpmSample*) = nullptr;
  Return (*GpmSampleFree)(GpmSample) = nullptr;
  Return (*GpmSampleGet)(Device, GpmSample) = nullptr;
  Return (*GpmMetricsGet)(GpmMetricsGet*) = nullptr;

  // Running-process query, whichever version exists (same struct).
  Return (*running_processes)(Device, unsigned int*, ProcessInfo*) = nullptr;
  // Clock-event reasons, whichever name exists.
  Return (*clock_event_reasons)(Device, unsigned long long*) = nullptr;

  // Text for a return code: nvmlErrorString when loaded, else ReturnName.
  const char* Error(Return r) const;
  bool has_gpm() const {
    return GpmQueryDeviceSupport && GpmSampleAlloc && GpmSampleFree && GpmSampleGet &&
           GpmMetricsGet;
  }
};

// Cold path. dlopen()s `library` (default "libnvidia-ml.so.1") and resolves
// every symbol; does not call nvmlInit. False when the library cannot be
// opened or lacks the init/device-enumeration core; *error (a static or
// dlerror() string, copy it at once) says why.
bool LoadApi(Api* api, const char** error, const char* library = nullptr);
// dlclose()s. Call nvmlShutdown first.
void UnloadApi(Api* api);

}  // namespace gpscope::metrics::nvml

#endif  // GPSCOPE_METRICS_NVML_API_H_
