// inject/cupti_loader.h: finds libcupti at run time and resolves the entry
// points gpscope uses. The injected library never links CUPTI: `ldd` shows
// only the C runtime, and a process whose CUPTI is missing or too old gets
// one clear line and runs on untraced.
//
// Search order (first hit wins):
//   1. GPSCOPE_CUPTI_PATH;
//   2. a libcupti already loaded in the process (PyTorch links one): using
//      the same instance as the application is required, two CUPTI copies in
//      one process would fight over the driver's callbacks;
//   3. the dynamic linker's search path (LD_LIBRARY_PATH, ldconfig);
//   4. $CUDA_HOME and /usr/local/cuda: lib64, lib, extras/CUPTI/lib64;
//   5. next to a loaded libcudart (pip wheels: nvidia/cu13/lib, nvidia/cuda_cupti/lib).
// Cold path, called once from InitializeInjection.
#ifndef GPSCOPE_INJECT_CUPTI_LOADER_H_
#define GPSCOPE_INJECT_CUPTI_LOADER_H_

#include <cupti.h>

#include <string>

namespace gpscope::inject {

struct CuptiApi {
#define GPSCOPE_CUPTI_FN(name) decltype(&::name) name = nullptr;
  GPSCOPE_CUPTI_FN(cuptiGetVersion)
  GPSCOPE_CUPTI_FN(cuptiGetResultString)
  GPSCOPE_CUPTI_FN(cuptiGetTimestamp)
  GPSCOPE_CUPTI_FN(cuptiSetThreadIdType)
  GPSCOPE_CUPTI_FN(cuptiActivityRegisterCallbacks)
  GPSCOPE_CUPTI_FN(cuptiActivityEnable)
  GPSCOPE_CUPTI_FN(cuptiActivityDisable)
  GPSCOPE_CUPTI_FN(cuptiActivityEnableRuntimeApi)
  GPSCOPE_CUPTI_FN(cuptiActivityEnableDriverApi)
  GPSCOPE_CUPTI_FN(cuptiActivitySetAttribute)
  GPSCOPE_CUPTI_FN(cuptiActivityGetNextRecord)
  GPSCOPE_CUPTI_FN(cuptiActivityGetNumDroppedRecords)
  GPSCOPE_CUPTI_FN(cuptiActivityFlushAll)
  GPSCOPE_CUPTI_FN(cuptiSubscribe)
  GPSCOPE_CUPTI_FN(cuptiUnsubscribe)
  GPSCOPE_CUPTI_FN(cuptiEnableCallback)
  GPSCOPE_CUPTI_FN(cuptiEnableDomain)
  GPSCOPE_CUPTI_FN(cuptiGetCallbackName)
  GPSCOPE_CUPTI_FN(cuptiFinalize)
#undef GPSCOPE_CUPTI_FN
  // Optional (CUPTI 12.6+): named subscriber; tells who holds CUPTI when
  // subscribing fails. Null on older libraries.
  decltype(&::cuptiSubscribe_v2) cuptiSubscribe_v2 = nullptr;
  // Optional: the device of a context (for the resource callback). Null:
  // the device of a new context is unknown (every GPU is sampled).
  decltype(&::cuptiGetDeviceId) cuptiGetDeviceId = nullptr;
  std::string path;  // the file the functions came from
  void* handle = nullptr;

  // Readable name of a CUptiResult (works before/without CUPTI too).
  const char* ErrorString(CUptiResult r) const;
};

// Loads CUPTI. On failure returns false and sets *error to one line that says
// what was tried and how to fix it (GPSCOPE_CUPTI_PATH).
bool LoadCupti(const std::string& explicit_path, CuptiApi* api, std::string* error);

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CUPTI_LOADER_H_
