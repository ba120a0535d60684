#include "metrics/nvml_api.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "common/safe_path.h"

namespace gpscope::metrics::nvml {

// The struct layouts NVML writes into (x86-64 / aarch64 LP64).
static_assert(sizeof(Utilization) == 8, "nvmlUtilization_t");
static_assert(sizeof(Memory) == 24, "nvmlMemory_t");
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t");
static_assert(sizeof(ProcessInfo) == 24, "nvmlProcessInfo_t (v2/v3)");
static_assert(offsetof(ProcessInfo, used_gpu_memory) == 8, "nvmlProcessInfo_t");
static_assert(sizeof(ProcessUtilizationSample) == 32, "nvmlProcessUtilizationSample_t");
static_assert(sizeof(GpmMetric) == 40, "nvmlGpmMetric_t");
static_assert(offsetof(GpmMetricsGet, metrics) == 24, "nvmlGpmMetricsGet_t");
static_assert(sizeof(GpmSupport) == 8, "nvmlGpmSupport_t");

const char* ReturnName(Return r) {
  switch (r) {
    case 0:
      return "NVML_SUCCESS";
    case 1:
      return "NVML_ERROR_UNINITIALIZED";
    case 2:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case 3:
      return "NVML_ERROR_NOT_SUPPORTED";
    case 4:
      return "NVML_ERROR_NO_PERMISSION";
    case 5:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6:
      return "NVML_ERROR_NOT_FOUND";
    case 7:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10:
      return "NVML_ERROR_TIMEOUT";
    case 11:
      return "NVML_ERROR_IRQ_ISSUE";
    case 12:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15:
      return "NVML_ERROR_GPU_IS_LOST";
    case 16:
      return "NVML_ERROR_RESET_REQUIRED";
    case 17:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case 18:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19:
      return "NVML_ERROR_IN_USE";
    case 20:
      return "NVML_ERROR_MEMORY";
    case 21:
      return "NVML_ERROR_NO_DATA";
    case 22:
      return "NVML_ERROR_VGPU_ECC_NOT_ENABLED";
    case 23:
      return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case 24:
      return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case 25:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case 26:
      return "NVML_ERROR_DEPRECATED";
    case 27:
      return "NVML_ERROR_NOT_READY";
    case 28:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case 29:
      return "NVML_ERROR_INVALID_STATE";
    default:
      return "NVML_ERROR_UNKNOWN";
  }
}

const char* Api::Error(Return r) const {
  if (ErrorString != nullptr) {
    const char* s = ErrorString(r);
    if (s != nullptr) return s;
  }
  return ReturnName(r);
}

namespace {

template <typename Fn>
void Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

bool LoadApi(Api* api, const char** error, const char* library) {
  *api = Api{};
  const char* lib = library != nullptr ? library : "libnvidia-ml.so.1";
  // Only a regular file reaches dlopen: a FIFO there would block its open()
  // forever with the loader lock held, and the application's exit() waits
  // for that lock (GPSCOPE_NVML_PATH=<fifo> hung it). Cold path, the
  // sampler thread only: one static buffer for the reason.
  static char why_buf[512];
  std::string why;
  if (!common::SearchPathIsSafe(lib, &why)) {
    snprintf(why_buf, sizeof(why_buf), "%s", why.c_str());
    *error = why_buf;
    return false;
  }
  // RTLD_LOCAL: NVML's symbols must not satisfy lookups of the application.
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    *error = e != nullptr ? e : "dlopen failed";
    return false;
  }
  api->handle = h;
#define GPSCOPE_NVML_RESOLVE(field, symbol) Resolve(h, symbol, &api->field)
  GPSCOPE_NVML_RESOLVE(Init_v2, "nvmlInit_v2");
  GPSCOPE_NVML_RESOLVE(Shutdown, "nvmlShutdown");
  GPSCOPE_NVML_RESOLVE(ErrorString, "nvmlErrorString");
  GPSCOPE_NVML_RESOLVE(SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  GPSCOPE_NVML_RESOLVE(SystemGetProcessName, "nvmlSystemGetProcessName");
  GPSCOPE_NVML_RESOLVE(DeviceGetCount_v2, "nvmlDeviceGetCount_v2");
  GPSCOPE_NVML_RESOLVE(DeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2");
  GPSCOPE_NVML_RESOLVE(DeviceGetName, "nvmlDeviceGetName");
  GPSCOPE_NVML_RESOLVE(DeviceGetUUID, "nvmlDeviceGetUUID");
  GPSCOPE_NVML_RESOLVE(DeviceGetPciInfo_v3, "nvmlDeviceGetPciInfo_v3");
  GPSCOPE_NVML_RESOLVE(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
  GPSCOPE_NVML_RESOLVE(DeviceGetClockInfo, "nvmlDeviceGetClockInfo");
  GPSCOPE_NVML_RESOLVE(DeviceGetCurrentClocksEventReasons,
                       "nvmlDeviceGetCurrentClocksEventReasons");
  GPSCOPE_NVML_RESOLVE(DeviceGetCurrentClocksThrottleReasons,
                       "nvmlDeviceGetCurrentClocksThrottleReasons");
  GPSCOPE_NVML_RESOLVE(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
  GPSCOPE_NVML_RESOLVE(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit");
  GPSCOPE_NVML_RESOLVE(DeviceGetTemperature, "nvmlDeviceGetTemperature");
  GPSCOPE_NVML_RESOLVE(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
  GPSCOPE_NVML_RESOLVE(DeviceGetPcieThroughput, "nvmlDeviceGetPcieThroughput");
  GPSCOPE_NVML_RESOLVE(DeviceGetComputeRunningProcesses_v3,
                       "nvmlDeviceGetComputeRunningProcesses_v3");
  GPSCOPE_NVML_RESOLVE(DeviceGetComputeRunningProcesses_v2,
                       "nvmlDeviceGetComputeRunningProcesses_v2");
  GPSCOPE_NVML_RESOLVE(DeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization");
  GPSCOPE_NVML_RESOLVE(GpmQueryDeviceSupport, "nvmlGpmQueryDeviceSupport");
  GPSCOPE_NVML_RESOLVE(GpmSampleAlloc, "nvmlGpmSampleAlloc");
  GPSCOPE_NVML_RESOLVE(GpmSampleFree, "nvmlGpmSampleFree");
  GPSCOPE_NVML_RESOLVE(GpmSampleGet, "nvmlGpmSampleGet");
  GPSCOPE_NVML_RESOLVE(GpmMetricsGet, "nvmlGpmMetricsGet");
#undef GPSCOPE_NVML_RESOLVE
  api->running_processes = api->DeviceGetComputeRunningProcesses_v3
                               ? api->DeviceGetComputeRunningProcesses_v3
                               : api->DeviceGetComputeRunningProcesses_v2;
  api->clock_event_reasons = api->DeviceGetCurrentClocksEventReasons
                                 ? api->DeviceGetCurrentClocksEventReasons
                                 : api->DeviceGetCurrentClocksThrottleReasons;
  if (api->Init_v2 == nullptr || api->DeviceGetCount_v2 == nullptr ||
      api->DeviceGetHandleByIndex_v2 == nullptr) {
    *error =
        "libnvidia-ml lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2 "
        "(driver too old)";
    UnloadApi(api);
    return false;
  }
  return true;
}

void UnloadApi(Api* api) {
  if (api->handle != nullptr) dlclose(api->handle);
  *api = Api{};
}

}  // namespace gpscope::metrics::nvml
