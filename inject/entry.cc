// inject/entry.cc: the only exported symbols of libgpscope_inject.so.
//
//   CUDA_INJECTION64_PATH=/path/libgpscope_inject.so  — the CUDA driver
//     dlopens the library inside cuInit and calls InitializeInjection().
//   LD_PRELOAD=/path/libgpscope_inject.so  — the constructor below points
//     CUDA_INJECTION64_PATH at this same file (if unset), so the driver calls
//     InitializeInjection() at cuInit exactly as above; dlopen of an already
//     loaded file returns the same instance.
#include <dlfcn.h>
#include <stdlib.h>

#include "inject/collector.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return gpscope::inject::StartCollector();
  } catch (...) {
    // Nothing may unwind into the driver's frames.
    return 1;
  }
}

namespace {

__attribute__((constructor)) void ArrangeInjectionWhenPreloaded() {
  const char* current = getenv("CUDA_INJECTION64_PATH");
  if (current != nullptr && *current != '\0') return;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&InitializeInjection), &info) != 0 &&
      info.dli_fname != nullptr) {
    setenv("CUDA_INJECTION64_PATH", info.dli_fname, 0);
  }
}

}  // namespace
