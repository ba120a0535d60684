#include "metrics/nvml_backend.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "common/posix.h"

namespace gpscope::metrics {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr const char* kNotExported =
    "entry point not exported by this libnvidia-ml (driver too old)";

struct GpmId {
  GpuMetric metric;
  unsigned nvml_id;
  double scale;  // NVML value -> our unit
};
constexpr GpmId kGpmIds[] = {
    {GpuMetric::kGpmSmUtil, nvml::kGpmSmUtil, 1.0},
    {GpuMetric::kGpmSmOccupancy, nvml::kGpmSmOccupancy, 1.0},
    {GpuMetric::kGpmTensorUtil, nvml::kGpmAnyTensorUtil, 1.0},
    {GpuMetric::kGpmDramBwUtil, nvml::kGpmDramBwUtil, 1.0},
    {GpuMetric::kGpmFp16Util, nvml::kGpmFp16Util, 1.0},
    {GpuMetric::kGpmFp32Util, nvml::kGpmFp32Util, 1.0},
    {GpuMetric::kGpmFp64Util, nvml::kGpmFp64Util, 1.0},
    {GpuMetric::kGpmPcieTxBytesPerS, nvml::kGpmPcieTxPerSec, kMiB},
    {GpuMetric::kGpmPcieRxBytesPerS, nvml::kGpmPcieRxPerSec, kMiB},
    {GpuMetric::kGpmNvlinkTxBytesPerS, nvml::kGpmNvlinkTotalTxPerSec, kMiB},
    {GpuMetric::kGpmNvlinkRxBytesPerS, nvml::kGpmNvlinkTotalRxPerSec, kMiB},
};
static_assert(sizeof(kGpmIds) / sizeof(kGpmIds[0]) == kGpuMetricCount - kFirstGpmMetric,
              "every GPM metric has an NVML id");

void CopyBasename(const char* path, char* buf, size_t len) {
  const char* slash = std::strrchr(path, '/');
  const char* base = slash != nullptr ? slash + 1 : path;
  std::snprintf(buf, len, "%s", base);
}

}  // namespace

bool SelectVisibleDevices(const char* visible, const char* const* uuids, uint32_t count,
                          int* ordinal) {
  for (uint32_t i = 0; i < count; ++i) ordinal[i] = static_cast<int>(i);
  if (visible == nullptr) return false;
  std::string_view rest(visible);
  auto trim = [](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    return t;
  };
  if (trim(rest).empty()) return false;
  if (rest.find("MIG-") != std::string_view::npos) return false;
  for (uint32_t i = 0; i < count; ++i) ordinal[i] = -1;
  int next = 0;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    int match = -1;
    bool digits = !entry.empty();
    for (char c : entry) digits &= c >= '0' && c <= '9';
    if (digits && entry.size() < 6) {
      const uint32_t index = static_cast<uint32_t>(std::atoi(std::string(entry).c_str()));
      if (index < count) match = static_cast<int>(index);
    } else if (entry.size() > 4 && entry.substr(0, 4) == "GPU-") {
      for (uint32_t i = 0; i < count; ++i) {
        if (uuids[i] != nullptr && std::string_view(uuids[i]).substr(0, entry.size()) == entry) {
          if (match >= 0) {  // ambiguous prefix: CUDA treats it as invalid
            match = -1;
            break;
          }
          match = static_cast<int>(i);
        }
      }
    }
    if (match < 0 || ordinal[match] >= 0) break;  // CUDA stops at an invalid entry
    ordinal[match] = next++;
  }
  return true;
}

NvmlBackend::NvmlBackend() : NvmlBackend(Options{}) {}
NvmlBackend::NvmlBackend(const Options& options) : options_(options) {}

NvmlBackend::~NvmlBackend() {
  for (uint32_t d = 0; d < device_count_; ++d) {
    for (int s = 0; s < 2; ++s) {
      if (gpm_[d][s] != nullptr && api_.GpmSampleFree != nullptr) api_.GpmSampleFree(gpm_[d][s]);
    }
  }
  if (initialized_ && api_.Shutdown != nullptr) api_.Shutdown();
  nvml::UnloadApi(&api_);
  delete[] procs_;
  delete[] util_;
  delete gpm_get_;
}

bool NvmlBackend::Open(const char** reason) {
  const char* lib = options_.library != nullptr ? options_.library : "libnvidia-ml.so.1";
  const char* err = nullptr;
  if (!nvml::LoadApi(&api_, &err, options_.library)) {
    open_error_ = std::string("cannot load ") + lib + ": " + (err != nullptr ? err : "?");
    *reason = open_error_.c_str();
    return false;
  }
  nvml::Return r = api_.Init_v2();
  if (r != nvml::kSuccess) {
    open_error_ = std::string("nvmlInit_v2 failed: ") + api_.Error(r);
    nvml::UnloadApi(&api_);
    *reason = open_error_.c_str();
    return false;
  }
  initialized_ = true;
  if (api_.SystemGetDriverVersion != nullptr) {
    api_.SystemGetDriverVersion(driver_version_, sizeof(driver_version_));
  }
  unsigned int count = 0;
  r = api_.DeviceGetCount_v2(&count);
  if (r != nvml::kSuccess) {
    open_error_ = std::string("nvmlDeviceGetCount_v2 failed: ") + api_.Error(r);
    *reason = open_error_.c_str();
    return false;
  }
  // Every device NVML lists, then those this process can see, numbered as
  // CUDA numbers them.
  struct Listed {
    bool ok;
    nvml::Device handle;
    GpuDeviceInfo info;
  };
  std::vector<Listed> listed(count, Listed{});
  for (unsigned int i = 0; i < count; ++i) {
    Listed& l = listed[i];
    // A GPU outside this container's cgroup answers NO_PERMISSION: skip it
    // (but keep its place: CUDA_VISIBLE_DEVICES indices count it).
    l.ok = api_.DeviceGetHandleByIndex_v2(i, &l.handle) == nvml::kSuccess;
    if (!l.ok) continue;
    GpuDeviceInfo& info = l.info;
    info.index = i;
    if (api_.DeviceGetName != nullptr) api_.DeviceGetName(l.handle, info.name, sizeof(info.name));
    if (api_.DeviceGetUUID != nullptr) api_.DeviceGetUUID(l.handle, info.uuid, sizeof(info.uuid));
    nvml::PciInfo pci{};
    if (api_.DeviceGetPciInfo_v3 != nullptr &&
        api_.DeviceGetPciInfo_v3(l.handle, &pci) == nvml::kSuccess) {
      std::snprintf(info.pci_bus_id, sizeof(info.pci_bus_id), "%.*s",
                    static_cast<int>(sizeof(pci.bus_id)), pci.bus_id);
    }
  }
  std::vector<const char*> uuids;
  for (const Listed& l : listed) uuids.push_back(l.info.uuid);
  std::vector<int> ordinal(count);
  SelectVisibleDevices(options_.visible_devices, uuids.data(), count, ordinal.data());
  // Sampled in CUDA order.
  for (int want = 0; want < static_cast<int>(count); ++want) {
    for (unsigned int i = 0; i < count; ++i) {
      if (ordinal[i] != want || !listed[i].ok) continue;
      if (device_count_ == kMaxDevices) {
        ++ignored_devices_;
        continue;
      }
      info_[device_count_] = listed[i].info;
      info_[device_count_].cuda_ordinal = static_cast<uint32_t>(want);
      handle_[device_count_++] = listed[i].handle;
    }
  }
  for (unsigned int i = 0; i < count; ++i) ignored_devices_ += ordinal[i] < 0 || !listed[i].ok;
  procs_ = new (std::nothrow) nvml::ProcessInfo[kProcessBuffer];
  util_ = new (std::nothrow) nvml::ProcessUtilizationSample[kProcessBuffer];
  gpm_get_ = new (std::nothrow) nvml::GpmMetricsGet;
  if (procs_ == nullptr || util_ == nullptr || gpm_get_ == nullptr) {
    open_error_ = "out of memory";
    *reason = open_error_.c_str();
    return false;
  }
  if (device_count_ == 0) {
    open_error_ = count == 0 ? "NVML sees no GPU" : "no GPU accessible through NVML";
    *reason = open_error_.c_str();
    return false;
  }
  return true;
}

void NvmlBackend::Probe(GpuProbe* out) {
  for (uint32_t d = 0; d < device_count_; ++d) {
    GpuProbe& p = out[d];
    p = GpuProbe{};
    nvml::Device h = handle_[d];
    auto note = [&](GpuMetric m, bool exported, nvml::Return r) {
      if (!exported) {
        p.reason[static_cast<int>(m)] = kNotExported;
      } else if (r == nvml::kSuccess) {
        p.supported |= Bit(m);
      } else {
        p.reason[static_cast<int>(m)] = api_.Error(r);
      }
    };
    nvml::Return r = nvml::kErrorFunctionNotFound;
    nvml::Utilization u{};
    if (api_.DeviceGetUtilizationRates) r = api_.DeviceGetUtilizationRates(h, &u);
    note(GpuMetric::kGpuUtil, api_.DeviceGetUtilizationRates != nullptr, r);
    note(GpuMetric::kMemUtil, api_.DeviceGetUtilizationRates != nullptr, r);
    unsigned int v = 0;
    if (api_.DeviceGetClockInfo) r = api_.DeviceGetClockInfo(h, nvml::kClockSm, &v);
    note(GpuMetric::kSmClockMhz, api_.DeviceGetClockInfo != nullptr, r);
    if (api_.DeviceGetClockInfo) r = api_.DeviceGetClockInfo(h, nvml::kClockMem, &v);
    note(GpuMetric::kMemClockMhz, api_.DeviceGetClockInfo != nullptr, r);
    unsigned long long reasons = 0;
    if (api_.clock_event_reasons) r = api_.clock_event_reasons(h, &reasons);
    note(GpuMetric::kClockEventReasons, api_.clock_event_reasons != nullptr, r);
    if (api_.DeviceGetPowerUsage) r = api_.DeviceGetPowerUsage(h, &v);
    note(GpuMetric::kPowerW, api_.DeviceGetPowerUsage != nullptr, r);
    if (api_.DeviceGetEnforcedPowerLimit) r = api_.DeviceGetEnforcedPowerLimit(h, &v);
    note(GpuMetric::kPowerLimitW, api_.DeviceGetEnforcedPowerLimit != nullptr, r);
    if (api_.DeviceGetTemperature) r = api_.DeviceGetTemperature(h, nvml::kTemperatureGpu, &v);
    note(GpuMetric::kTemperatureC, api_.DeviceGetTemperature != nullptr, r);
    nvml::Memory mem{};
    if (api_.DeviceGetMemoryInfo) r = api_.DeviceGetMemoryInfo(h, &mem);
    note(GpuMetric::kMemoryUsedBytes, api_.DeviceGetMemoryInfo != nullptr, r);
    if (!options_.nvml_pcie_throughput) {
      static constexpr const char* kOff =
          "off by default: nvmlDeviceGetPcieThroughput measures for 20 ms per call (GPM PCIe "
          "metrics are used where the GPU has GPM)";
      p.reason[static_cast<int>(GpuMetric::kPcieTxBytesPerS)] = kOff;
      p.reason[static_cast<int>(GpuMetric::kPcieRxBytesPerS)] = kOff;
    } else {
      if (api_.DeviceGetPcieThroughput)
        r = api_.DeviceGetPcieThroughput(h, nvml::kPcieUtilTxBytes, &v);
      note(GpuMetric::kPcieTxBytesPerS, api_.DeviceGetPcieThroughput != nullptr, r);
      if (api_.DeviceGetPcieThroughput)
        r = api_.DeviceGetPcieThroughput(h, nvml::kPcieUtilRxBytes, &v);
      note(GpuMetric::kPcieRxBytesPerS, api_.DeviceGetPcieThroughput != nullptr, r);
    }

    if (api_.running_processes == nullptr) {
      p.processes_reason = kNotExported;
    } else {
      unsigned int n = 0;
      r = api_.running_processes(h, &n, nullptr);
      p.processes = r == nvml::kSuccess || r == nvml::kErrorInsufficientSize;
      if (!p.processes) p.processes_reason = api_.Error(r);
      processes_ok_[d] = p.processes;
    }
    if (api_.DeviceGetProcessUtilization == nullptr) {
      p.process_util_reason = kNotExported;
    } else {
      unsigned int n = 0;
      r = api_.DeviceGetProcessUtilization(h, nullptr, &n, 0);
      // NOT_FOUND: no samples yet, which is fine.
      p.process_util =
          r == nvml::kSuccess || r == nvml::kErrorInsufficientSize || r == nvml::kErrorNotFound;
      if (!p.process_util) p.process_util_reason = api_.Error(r);
      process_util_ok_[d] = p.process_util;
      last_util_us_[d] = common::ClockNs(CLOCK_REALTIME) / 1000;
    }

    if (!api_.has_gpm()) {
      p.gpm_reason = "this libnvidia-ml has no GPM entry points (driver older than r520)";
      continue;
    }
    nvml::GpmSupport support{};
    support.version = nvml::kGpmSupportVersion;
    r = api_.GpmQueryDeviceSupport(h, &support);
    if (r != nvml::kSuccess) {
      p.gpm_reason = api_.Error(r);
      continue;
    }
    if (support.is_supported_device == 0) {
      p.gpm_reason = "GPM not supported on this GPU (needs Hopper or newer)";
      continue;
    }
    for (int s = 0; s < 2; ++s) {
      if (gpm_[d][s] == nullptr && (r = api_.GpmSampleAlloc(&gpm_[d][s])) != nvml::kSuccess) {
        gpm_[d][s] = nullptr;
        p.gpm_reason = api_.Error(r);
      }
    }
    if (p.gpm_reason != nullptr) continue;
    r = api_.GpmSampleGet(h, gpm_[d][0]);
    if (r != nvml::kSuccess) {
      p.gpm_reason = api_.Error(r);
      continue;
    }
    p.gpm = true;  // provisionally; the metrics are tried below
  }

  // One wait for all GPUs, then each GPM metric between the two snapshots.
  bool any_gpm = false;
  for (uint32_t d = 0; d < device_count_; ++d) any_gpm |= out[d].gpm;
  if (!any_gpm) return;
  timespec wait{0, static_cast<long>(options_.gpm_probe_ms) * 1000000L};
  nanosleep(&wait, nullptr);
  for (uint32_t d = 0; d < device_count_; ++d) {
    GpuProbe& p = out[d];
    if (!p.gpm) continue;
    nvml::Return r = api_.GpmSampleGet(handle_[d], gpm_[d][1]);
    if (r != nvml::kSuccess) {
      p.gpm = false;
      p.gpm_reason = api_.Error(r);
      continue;
    }
    GpuReadings readings;
    GpmRead(d, 0, 1, kGpmMask, &readings);
    p.supported |= readings.valid;
    for (int m = kFirstGpmMetric; m < kGpuMetricCount; ++m) {
      if ((readings.failed >> m) & 1) p.reason[m] = readings.error[m];
    }
    if ((readings.valid & kGpmMask) == 0) {
      p.gpm = false;
      p.gpm_reason = readings.error[kFirstGpmMetric] != nullptr ? readings.error[kFirstGpmMetric]
                                                                : "no GPM metric answered";
    }
  }
}

void NvmlBackend::Read(uint32_t dev, MetricMask wanted, GpuReadings* out) {
  nvml::Device h = handle_[dev];
  nvml::Return r;
  if (wanted & (Bit(GpuMetric::kGpuUtil) | Bit(GpuMetric::kMemUtil))) {
    nvml::Utilization u{};
    r = api_.DeviceGetUtilizationRates(h, &u);
    for (GpuMetric m : {GpuMetric::kGpuUtil, GpuMetric::kMemUtil}) {
      if (!(wanted & Bit(m))) continue;
      if (r == nvml::kSuccess) {
        out->Set(m, m == GpuMetric::kGpuUtil ? u.gpu : u.memory);
      } else {
        out->Fail(m, api_.Error(r));
      }
    }
  }
  unsigned int v = 0;
  auto uint_metric = [&](GpuMetric m, nvml::Return rr, double scale) {
    if (rr == nvml::kSuccess) {
      out->Set(m, v * scale);
    } else {
      out->Fail(m, api_.Error(rr));
    }
  };
  if (wanted & Bit(GpuMetric::kSmClockMhz)) {
    uint_metric(GpuMetric::kSmClockMhz, api_.DeviceGetClockInfo(h, nvml::kClockSm, &v), 1.0);
  }
  if (wanted & Bit(GpuMetric::kMemClockMhz)) {
    uint_metric(GpuMetric::kMemClockMhz, api_.DeviceGetClockInfo(h, nvml::kClockMem, &v), 1.0);
  }
  if (wanted & Bit(GpuMetric::kClockEventReasons)) {
    unsigned long long reasons = 0;
    r = api_.clock_event_reasons(h, &reasons);
    if (r == nvml::kSuccess) {
      out->Set(GpuMetric::kClockEventReasons, static_cast<double>(reasons));  // exact below 2^53
    } else {
      out->Fail(GpuMetric::kClockEventReasons, api_.Error(r));
    }
  }
  if (wanted & Bit(GpuMetric::kPowerW)) {
    uint_metric(GpuMetric::kPowerW, api_.DeviceGetPowerUsage(h, &v), 1e-3);
  }
  if (wanted & Bit(GpuMetric::kPowerLimitW)) {
    uint_metric(GpuMetric::kPowerLimitW, api_.DeviceGetEnforcedPowerLimit(h, &v), 1e-3);
  }
  if (wanted & Bit(GpuMetric::kTemperatureC)) {
    uint_metric(GpuMetric::kTemperatureC, api_.DeviceGetTemperature(h, nvml::kTemperatureGpu, &v),
                1.0);
  }
  if (wanted & Bit(GpuMetric::kMemoryUsedBytes)) {
    nvml::Memory mem{};
    r = api_.DeviceGetMemoryInfo(h, &mem);
    if (r == nvml::kSuccess) {
      out->Set(GpuMetric::kMemoryUsedBytes, static_cast<double>(mem.used));
    } else {
      out->Fail(GpuMetric::kMemoryUsedBytes, api_.Error(r));
    }
  }
  if (wanted & Bit(GpuMetric::kPcieTxBytesPerS)) {  // KB/s
    uint_metric(GpuMetric::kPcieTxBytesPerS,
                api_.DeviceGetPcieThroughput(h, nvml::kPcieUtilTxBytes, &v), 1024.0);
  }
  if (wanted & Bit(GpuMetric::kPcieRxBytesPerS)) {
    uint_metric(GpuMetric::kPcieRxBytesPerS,
                api_.DeviceGetPcieThroughput(h, nvml::kPcieUtilRxBytes, &v), 1024.0);
  }
}

bool NvmlBackend::GpmSnapshot(uint32_t dev, int slot) {
  if (gpm_[dev][slot] == nullptr) return false;
  return api_.GpmSampleGet(handle_[dev], gpm_[dev][slot]) == nvml::kSuccess;
}

void NvmlBackend::GpmRead(uint32_t dev, int older, int newer, MetricMask wanted, GpuReadings* out) {
  if (gpm_[dev][older] == nullptr || gpm_[dev][newer] == nullptr) return;
  nvml::GpmMetricsGet& g = *gpm_get_;
  g.version = nvml::kGpmMetricsGetVersion;
  g.num_metrics = 0;
  g.sample1 = gpm_[dev][older];
  g.sample2 = gpm_[dev][newer];
  const GpmId* asked[kGpuMetricCount];
  for (const GpmId& id : kGpmIds) {
    if (!(wanted & Bit(id.metric))) continue;
    nvml::GpmMetric& m = g.metrics[g.num_metrics];
    std::memset(&m, 0, sizeof(m));
    m.metric_id = id.nvml_id;
    asked[g.num_metrics++] = &id;
  }
  if (g.num_metrics == 0) return;
  nvml::Return r = api_.GpmMetricsGet(&g);
  for (unsigned i = 0; i < g.num_metrics; ++i) {
    const GpmId& id = *asked[i];
    nvml::Return mr = r != nvml::kSuccess ? r : g.metrics[i].nvml_return;
    if (mr == nvml::kSuccess) {
      out->Set(id.metric, g.metrics[i].value * id.scale);
    } else {
      out->Fail(id.metric, api_.Error(mr));
    }
  }
}

size_t NvmlBackend::ReadProcesses(uint32_t dev, GpuProcessReading* out, size_t cap, bool* more) {
  *more = false;
  if (cap > kProcessBuffer) cap = kProcessBuffer;
  nvml::Device h = handle_[dev];
  size_t count = 0;
  if (processes_ok_[dev]) {
    unsigned int n = kProcessBuffer;
    nvml::Return r = api_.running_processes(h, &n, procs_);
    if (r == nvml::kErrorInsufficientSize) *more = true;  // nothing was filled in
    if (r == nvml::kSuccess) {
      for (unsigned int i = 0; i < n; ++i) {
        if (count == cap) {
          *more = true;
          break;
        }
        GpuProcessReading& p = out[count++];
        p = GpuProcessReading{};
        p.pid = procs_[i].pid;
        if (procs_[i].used_gpu_memory != nvml::kValueNotAvailable) {
          p.has_memory = true;
          p.memory_bytes = procs_[i].used_gpu_memory;
        }
      }
    }
  }
  if (!process_util_ok_[dev]) return count;
  // Samples newer than the last one seen; several per pid when the driver
  // sampled more than once in the interval: average them.
  unsigned int n = kProcessBuffer;
  nvml::Return r = api_.DeviceGetProcessUtilization(h, util_, &n, last_util_us_[dev]);
  if (r != nvml::kSuccess) return count;  // NOT_FOUND: no new samples
  uint32_t samples[kProcessBuffer] = {};
  for (unsigned int i = 0; i < n && i < kProcessBuffer; ++i) {
    const nvml::ProcessUtilizationSample& s = util_[i];
    if (s.time_stamp_us > last_util_us_[dev]) last_util_us_[dev] = s.time_stamp_us;
    size_t k = 0;
    while (k < count && out[k].pid != s.pid) ++k;
    if (k == count) {
      if (count == cap) {
        *more = true;
        continue;
      }
      out[count] = GpuProcessReading{};
      out[count].pid = s.pid;
      ++count;
    }
    out[k].has_sm_util = true;
    out[k].sm_util_pct += s.sm_util;
    ++samples[k];
  }
  for (size_t k = 0; k < count; ++k) {
    if (samples[k] > 0) out[k].sm_util_pct /= samples[k];
  }
  return count;
}

void NvmlBackend::ProcessName(uint32_t pid, char* buf, size_t len) {
  if (len == 0) return;
  buf[0] = '\0';
  char path[256];
  if (api_.SystemGetProcessName != nullptr &&
      api_.SystemGetProcessName(pid, path, sizeof(path)) == nvml::kSuccess) {
    path[sizeof(path) - 1] = '\0';
    CopyBasename(path, buf, len);
    if (buf[0] != '\0') return;
  }
  // NVML pids are the host's; inside a pid namespace this may name another
  // process or none.
  char file[64];
  std::snprintf(file, sizeof(file), "/proc/%u/comm", pid);
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, path, sizeof(path) - 1);
  close(fd);
  if (n <= 0) return;
  path[n] = '\0';
  if (path[n - 1] == '\n') path[n - 1] = '\0';
  std::snprintf(buf, len, "%s", path);
}

}  // namespace gpscope::metrics
