// bench/cupti_floor.cc: the overhead floor for gpscope's benchmark — a
// minimal CUDA_INJECTION64_PATH library that enables exactly the activity
// kinds and API records gpscope enables, counts the records and throws them
// away. gpscope's added time is compared against this one's in
// bench/overhead.py: what gpscope adds above it is the cost of our own
// machinery (pool hand-off, conversion, encoding, compression, writes).
//
// Same buffer size as gpscope's default (4 MiB), buffers from a pool of 16,
// recycled immediately. Prints the record count at exit.
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

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

void CUPTIAPI Noop(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void AtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  fprintf(stderr, "cupti_floor: %llu records\n", static_cast<unsigned long long>(g_records.load()));
}

}  // namespace


extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  CUpti_SubscriberHandle sub;
  cuptiSubscribe(&sub, Noop, nullptr);
  uint8_t zeroed = 1;
  size_t bytes = 1;
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &bytes, &zeroed);
  cuptiActivityRegisterCallbacks(Requested, Completed);
  // GPSCOPE_FLOOR_KERNEL_ONLY=1: the kernel kind alone (what the others add on top shows).
  const char* kernel_only = getenv("GPSCOPE_FLOOR_KERNEL_ONLY");
  if (kernel_only != nullptr && strcmp(kernel_only, "1") == 0) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  } else {
    for (CUpti_ActivityKind k :
         {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
          CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
          CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_MARKER}) {
      cuptiActivityEnable(k);
    }
  }
  const char* api = getenv("GPSCOPE_API");
  if (api == nullptr || strcmp(api, "0") != 0) {
    for (CUpti_CallbackId id : gpscope::inject::kRuntimeCbids) cuptiActivityEnableRuntimeApi(id, 1);
    for (CUpti_CallbackId id : gpscope::inject::kDriverCbids) cuptiActivityEnableDriverApi(id, 1);
  }
  atexit(AtExit);
  return 1;
}
