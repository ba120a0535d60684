// tests/metrics/fake_nvml.cc: a stand-in libnvidia-ml for
// NvmlBackend's tests. It exports the entry points NvmlBackend resolves,
// with struct layouts written out here from NVIDIA's public nvml.h (not
// from metrics/nvml_api.h, so the two are checked against each
// other), and canned readings:
//   GPU 0 "Fake H200": everything, GPM (NVLink metrics NOT_SUPPORTED);
//   GPU 1 "Fake T4": no GPM, no enforced power limit, process utilization
//         NO_PERMISSION.
// Only the deprecated ...ClocksThrottleReasons name is exported, to test
// the fallback. fake_nvml_control() steers a few behaviours.
#include <stdio.h>
#include <string.h>
#include <time.h>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[98];
} nvmlGpmMetricsGet_t;
typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

#define FAKE_EXPORT __attribute__((visibility("default")))

enum {
  kOk = 0,
  kInvalid = 2,
  kNotSupported = 3,
  kNoPermission = 4,
  kNotFound = 6,
  kInsufficientSize = 7,
  kUninit = 1
};

static int g_init = 0;
static int g_no_util_samples = 0;
static int g_process_count = 2;
static struct nvmlDevice_st { int index; } g_dev[2] = {{0}, {1}};
struct nvmlGpmSample_st {
  int in_use;
  unsigned long long seq;
};
static nvmlGpmSample_st g_samples[8];
static unsigned long long g_seq = 0;

static int Index(nvmlDevice_t d) {
  if (d == &g_dev[0]) return 0;
  if (d == &g_dev[1]) return 1;
  return -1;
}
static unsigned long long NowUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000ull;
}

// what: 1 = no process-utilization samples from now on; 2 = process count.
FAKE_EXPORT void fake_nvml_control(int what, int value) {
  if (what == 1) g_no_util_samples = value;
  if (what == 2) g_process_count = value;
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) { return ++g_init, kOk; }
FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) { return --g_init, kOk; }
FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kOk:
      return "Success";
    case kNotSupported:
      return "Not Supported";
    case kNoPermission:
      return "Insufficient Permissions";
    default:
      return "Fake Error";
  }
}
FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned int n) {
  snprintf(v, n, "580.159");
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int n) {
  if (pid == 100) return snprintf(name, n, "/usr/bin/python3.11"), kOk;
  return kNotFound;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (!g_init) return kUninit;
  *n = 2;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i >= 2) return kInvalid;
  *d = &g_dev[i];
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int n) {
  snprintf(name, n, Index(d) == 0 ? "Fake H200" : "Fake T4");
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned int n) {
  snprintf(uuid, n,
           Index(d) == 0 ? "GPU-aaaa0000-0000-0000-0000-000000000000"
                         : "GPU-bbbb0000-0000-0000-0000-000000000000");
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  memset(p, 0, sizeof(*p));
  snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0", 0x19 + Index(d));
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = Index(d) == 0 ? 97 : 3;
  u->memory = Index(d) == 0 ? 41 : 1;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t, int type, unsigned int* mhz) {
  if (type == 1) return *mhz = 1980, kOk;
  if (type == 2) return *mhz = 3201, kOk;
  return kInvalid;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t,
                                                                   unsigned long long* r) {
  *r = 0x4 | 0x20;  // SW power cap | SW thermal slowdown
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int* mw) {
  *mw = 612250;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int* mw) {
  if (Index(d) == 1) return kNotSupported;
  *mw = 700000;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t, int sensor, unsigned int* c) {
  if (sensor != 0) return kInvalid;
  *c = 61;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t* m) {
  m->total = 150000000000ull;
  m->used = 80000000000ull;
  m->free = m->total - m->used;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t, int counter, unsigned int* kb) {
  *kb = counter == 0 ? 1000 : 2000;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int* n,
                                                                 nvmlProcessInfo_t* p) {
  const unsigned int count = Index(d) == 0 ? (unsigned)g_process_count : 0;
  if (*n < count) {
    *n = count;
    return kInsufficientSize;
  }
  *n = count;
  for (unsigned int i = 0; i < count; ++i) {
    p[i].pid = 100 + i;
    p[i].usedGpuMemory = i == 1 ? ~0ull : (i + 1) * 1000000ull;  // NOT_AVAILABLE for one
    p[i].gpuInstanceId = p[i].computeInstanceId = 0xFFFFFFFFu;
  }
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                         nvmlProcessUtilizationSample_t* s,
                                                         unsigned int* n,
                                                         unsigned long long last_seen) {
  if (Index(d) == 1) return kNoPermission;
  if (g_no_util_samples) return kNotFound;
  const unsigned long long now = NowUs();
  if (now <= last_seen) return kNotFound;
  if (s == nullptr || *n < 3) {
    *n = 3;
    return kInsufficientSize;
  }
  // pid 100 twice (40 and 60: averages to 50), pid 555 (not in the list).
  const unsigned int pids[3] = {100, 100, 555}, util[3] = {40, 60, 7};
  for (int i = 0; i < 3; ++i) {
    memset(&s[i], 0, sizeof(s[i]));
    s[i].pid = pids[i];
    s[i].timeStamp = now - 2 + (unsigned)i;
    s[i].smUtil = util[i];
  }
  *n = 3;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* s) {
  if (s->version != 1) return kInvalid;
  s->isSupportedDevice = Index(d) == 0;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* out) {
  for (auto& s : g_samples) {
    if (!s.in_use) {
      s.in_use = 1;
      s.seq = 0;
      *out = &s;
      return kOk;
    }
  }
  return 20;  // NVML_ERROR_MEMORY
}
FAKE_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  s->in_use = 0;
  return kOk;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) {
  if (Index(d) != 0) return kNotSupported;
  s->seq = ++g_seq;
  return kOk;
}
// value = metric id * 10 + (snapshots taken between the two samples).
FAKE_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* g) {
  if (g->version != 1 || g->numMetrics > 98 || g->sample1 == nullptr || g->sample2 == nullptr) {
    return kInvalid;
  }
  for (unsigned int i = 0; i < g->numMetrics; ++i) {
    nvmlGpmMetric_t& m = g->metrics[i];
    if (m.metricId == 60 || m.metricId == 61) {
      m.nvmlReturn = kNotSupported;
      continue;
    }
    m.nvmlReturn = kOk;
    m.value = m.metricId * 10.0 + (double)(g->sample2->seq - g->sample1->seq);
  }
  return kOk;
}

}  // extern "C"
