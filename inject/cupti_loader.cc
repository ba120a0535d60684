#include "inject/cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/safe_path.h"

namespace gpscope::inject {
namespace {

constexpr const char* kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

bool Resolve(void* handle, CuptiApi* api, std::string* missing) {
#define GPSCOPE_CUPTI_FN(name)                                                   \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle, #name));     \
  if (api->name == nullptr && missing->empty()) *missing = #name;
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
  api->cuptiSubscribe_v2 =
      reinterpret_cast<decltype(api->cuptiSubscribe_v2)>(dlsym(handle, "cuptiSubscribe_v2"));
  api->cuptiGetDeviceId =
      reinterpret_cast<decltype(api->cuptiGetDeviceId)>(dlsym(handle, "cuptiGetDeviceId"));
  return missing->empty();
}

int CollectCudartDirs(struct dl_phdr_info* info, size_t, void* data) {
  auto* dirs = static_cast<std::vector<std::string>*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || strstr(name, "libcudart.so") == nullptr) return 0;
  std::string dir(name);
  size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return 0;
  dir.resize(slash);
  dirs->push_back(dir);
  // pip layouts: nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib
  size_t rt = dir.find("cuda_runtime");
  if (rt != std::string::npos) {
    dirs->push_back(dir.substr(0, rt) + "cuda_cupti" + dir.substr(rt + strlen("cuda_runtime")));
  }
  return 0;
}

}  // namespace

const char* CuptiApi::ErrorString(CUptiResult r) const {
  const char* s = nullptr;
  if (cuptiGetResultString != nullptr && cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error";
}

bool LoadCupti(const std::string& explicit_path, CuptiApi* api, std::string* error) {
  std::vector<std::string> tried;
  auto try_open = [&](const std::string& path, int flags) -> bool {
    // A FIFO (or device) at the name would block dlopen's open() forever,
    // inside cuInit: only regular files are handed to the loader.
    if (!(flags & RTLD_NOLOAD)) {
      std::string why;
      if (!common::SearchPathIsSafe(path, &why)) {  // a path: stat; a name: LD_LIBRARY_PATH
        tried.push_back(why);
        return false;
      }
    }
    void* h = dlopen(path.c_str(), flags);
    if (h == nullptr) {
      const char* why = dlerror();  // read once: dlerror() clears itself
      if (!(flags & RTLD_NOLOAD)) tried.push_back(why != nullptr ? why : path);
      return false;
    }
    std::string missing;
    if (!Resolve(h, api, &missing)) {
      tried.push_back(path + " (no " + missing + ")");
      dlclose(h);
      return false;
    }
    api->handle = h;
    Dl_info info;
    api->path = (dladdr(reinterpret_cast<void*>(api->cuptiGetVersion), &info) && info.dli_fname)
                    ? info.dli_fname
                    : path;
    return true;
  };

  if (!explicit_path.empty()) {
    if (try_open(explicit_path, RTLD_NOW | RTLD_LOCAL)) return true;
    *error = "GPSCOPE_CUPTI_PATH=" + explicit_path + " could not be loaded (" + tried.back() +
             ")";
    return false;
  }
  for (const char* so : kSonames) {
    if (try_open(so, RTLD_NOW | RTLD_NOLOAD)) return true;
  }
  for (const char* so : kSonames) {
    if (try_open(so, RTLD_NOW | RTLD_LOCAL)) return true;
  }
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = getenv(var); v && *v) {
      dirs.push_back(std::string(v) + "/lib64");
      dirs.push_back(std::string(v) + "/extras/CUPTI/lib64");
    }
  }
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/local/cuda/lib");
  dirs.push_back("/usr/local/cuda/extras/CUPTI/lib64");
  dl_iterate_phdr(CollectCudartDirs, &dirs);
  for (const std::string& dir : dirs) {
    for (const char* so : kSonames) {
      if (try_open(dir + "/" + so, RTLD_NOW | RTLD_LOCAL)) return true;
    }
  }
  *error = "libcupti not found (tried the loaded libraries, the linker path, $CUDA_HOME, "
           "/usr/local/cuda and next to libcudart); set GPSCOPE_CUPTI_PATH=/path/to/libcupti.so";
  return false;
}

}  // namespace gpscope::inject
