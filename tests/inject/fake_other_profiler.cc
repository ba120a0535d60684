// tests/inject/fake_other_profiler.cc: a stand-in for another profiler in
// the traced process (torch.profiler's Kineto): a library that links the
// stand-in libcupti (tests/inject/fake_cupti.cc) and calls CUPTI through its
// own PLT/GOT, as Kineto calls libcupti. Built twice: bound at load
// (-z now) and lazily (-z lazy), for inject/cupti_hooks.h's two cases.
#include <cupti.h>

namespace {

void CUPTIAPI Callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  static uint8_t arena[64 * 1024] __attribute__((aligned(8)));
  *buffer = arena;
  *size = sizeof(arena);
  *max_records = 0;
}
void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t*, size_t, size_t) {}

}  // namespace

// The CUptiResult of each call, as the profiler would see it. (Not tail
// calls: the hooks name the caller by the return address.)
volatile int g_last_result = 0;

extern "C" __attribute__((visibility("default"))) int other_profiler_subscribe(void) {
  CUpti_SubscriberHandle handle = nullptr;
  g_last_result = static_cast<int>(cuptiSubscribe(&handle, Callback, nullptr));
  return g_last_result;
}

extern "C" __attribute__((visibility("default"))) int other_profiler_register(void) {
  g_last_result = static_cast<int>(cuptiActivityRegisterCallbacks(Request, Complete));
  return g_last_result;
}
