// bench/cupti_floor.cc: the overhead floor for gpscope's benchmark — a
// minimal CUDA_INJECTION64_PATH library that enables exactly the activity
// kinds and API records gpscope enables, counts the records and throws them
// away. gpscope's added time is compared against this one's in
// bench/overhead.py: what gpscope adds above it is the cost of our own
// machinery (pool hand-off, conversion, encoding, compression, writes).
//
// Same buffer size as gpscope's default (4 MiB), buffers from a pool of 16,
// recycled immediately. Prints the record count at exit.
//
// Windows (what standby between windows costs, CUPTI's share of it):
// GPSCOPE_FLOOR_WINDOWS=A-B,C-D (seconds after start) enables the kinds
// only in those windows, from a timer thread, and disables them at each
// end; GPSCOPE_FLOOR_DETACH=1 also detaches CUPTI after each window
// (forced flush and cuptiFinalize in the next runtime API call's exit
// callback, as NVIDIA's cupti_finalize sample) and subscribes again at the
// next window's start. Each window's record count goes to stderr.
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <thread>
#include <unistd.h>
#include <vector>

#include "inject/api_cbids.h"

namespace {

constexpr size_t kBufferBytes = 4 << 20;
constexpr int kBuffers = 16;
alignas(8) uint8_t g_buffers[kBuffers][kBufferBytes];
std::atomic<uint32_t> g_free_mask{(1u << kBuffers) - 1};
std::atomic<uint64_t> g_records{0};

void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  for (;;) {
    uint32_t mask = g_free_mask.load();
    if (mask == 0) {
      *buffer = nullptr;
      *size = 0;
      return;
    }
    int i = __builtin_ctz(mask);
    if (g_free_mask.compare_exchange_weak(mask, mask & ~(1u << i))) {
      *buffer = g_buffers[i];
      *size = kBufferBytes;
      return;
    }
  }
}

void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  uint64_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++n;
  g_records.fetch_add(n);
  int i = static_cast<int>((buffer - &g_buffers[0][0]) / kBufferBytes);
  g_free_mask.fetch_or(1u << i);
}

std::atomic<bool> g_detach_requested{false};
std::atomic<bool> g_detached{false};
CUpti_SubscriberHandle g_sub;

void CUPTIAPI OnApi(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || !g_detach_requested.load()) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_EXIT || !g_detach_requested.exchange(false)) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiFinalize();
  g_detached.store(true);
}

void AtExit() {
  if (!g_detached.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  fprintf(stderr, "cupti_floor: %llu records\n", static_cast<unsigned long long>(g_records.load()));
}

bool Is(const char* name, const char* value) {
  const char* v = getenv(name);
  return v != nullptr && strcmp(v, value) == 0;
}

void Subscribe() {
  cuptiSubscribe(&g_sub, OnApi, nullptr);
  uint8_t zeroed = 1;
  size_t bytes = 1;
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &bytes, &zeroed);
  cuptiActivityRegisterCallbacks(Requested, Completed);
}

std::vector<CUpti_ActivityKind> Kinds() {
  // GPSCOPE_FLOOR_KERNEL_ONLY=1: the kernel kind alone (what the others add on top shows).
  if (Is("GPSCOPE_FLOOR_KERNEL_ONLY", "1")) return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
          CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_OVERHEAD,
          CUPTI_ACTIVITY_KIND_DEVICE,            CUPTI_ACTIVITY_KIND_CONTEXT,
          CUPTI_ACTIVITY_KIND_MARKER};
}

// Mid-run, per-id API records are refused (COLLECTOR-NOTES): the whole kinds.
void SetWindow(bool on) {
  for (CUpti_ActivityKind k : Kinds()) on ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
  if (!Is("GPSCOPE_API", "0")) {
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
      on ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
    }
  }
}

void RunWindows(std::vector<std::pair<double, double>> windows, bool detach) {
  const auto t0 = std::chrono::steady_clock::now();
  auto sleep_until = [&](double s) {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(s));
  };
  for (const auto& [a, b] : windows) {
    sleep_until(a);
    if (g_detached.exchange(false)) Subscribe();
    const uint64_t before = g_records.load();
    SetWindow(true);
    sleep_until(b);
    SetWindow(false);
    cuptiActivityFlushAll(0);
    if (detach) {
      cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
      g_detach_requested.store(true);
      for (int i = 0; i < 200 && !g_detached.load(); ++i) usleep(1000);
    }
    fprintf(stderr, "cupti_floor: window %.1f-%.1f s: %llu records%s\n", a, b,
            static_cast<unsigned long long>(g_records.load() - before),
            g_detached.load() ? ", detached" : "");
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  Subscribe();
  atexit(AtExit);
  const char* spec = getenv("GPSCOPE_FLOOR_WINDOWS");
  if (spec == nullptr || spec[0] == '\0') {
    for (CUpti_ActivityKind k : Kinds()) cuptiActivityEnable(k);
    if (!Is("GPSCOPE_API", "0")) {
      for (CUpti_CallbackId id : gpscope::inject::kRuntimeCbids) cuptiActivityEnableRuntimeApi(id, 1);
      for (CUpti_CallbackId id : gpscope::inject::kDriverCbids) cuptiActivityEnableDriverApi(id, 1);
    }
    return 1;
  }
  std::vector<std::pair<double, double>> windows;
  for (const char* p = spec; *p != '\0';) {
    char* end = nullptr;
    const double a = strtod(p, &end);
    if (*end != '-') break;
    const double b = strtod(end + 1, &end);
    windows.emplace_back(a, b);
    p = *end == ',' ? end + 1 : end;
    if (*end != ',') break;
  }
  std::thread(RunWindows, windows, Is("GPSCOPE_FLOOR_DETACH", "1")).detach();
  return 1;
}
