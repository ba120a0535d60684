// inject/api_classes.h: how call-site stacks treat each CUDA call of
// inject/api_cbids.h (inject/stack_capture.h): synchronizing, a launch, or
// neither. Compile-time tables; the collector's CUPTI callback looks up its
// call here.
#ifndef GPSCOPE_INJECT_API_CLASSES_H_
#define GPSCOPE_INJECT_API_CLASSES_H_

#include <cupti.h>

#include "inject/api_cbids.h"
#include "inject/stack_capture.h"

namespace gpscope::inject {
namespace api_classes_internal {

// api_cbids.h's calls by class, built at compile time.
struct ApiClasses {
  ApiClass runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {};
  ApiClass driver[CUPTI_DRIVER_TRACE_CBID_SIZE] = {};
  constexpr ApiClasses() {
    // Every listed call synchronizes (or may: copies from pageable memory)
    // unless it only enqueues work: those are the "launches".
    for (CUpti_CallbackId id : kRuntimeCbids) runtime[id] = ApiClass::kSync;
    for (CUpti_CallbackId id : kDriverCbids) driver[id] = ApiClass::kSync;
    constexpr CUpti_CallbackId kRuntimeLaunches[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
        CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000,
    };
    constexpr CUpti_CallbackId kDriverLaunches[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    };
    for (CUpti_CallbackId id : kRuntimeLaunches) runtime[id] = ApiClass::kLaunch;
    for (CUpti_CallbackId id : kDriverLaunches) driver[id] = ApiClass::kLaunch;
  }
};
inline constexpr ApiClasses kApiClasses;

}  // namespace api_classes_internal

inline ApiClass ClassifyApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? api_classes_internal::kApiClasses.runtime[cbid] : ApiClass::kOther;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? api_classes_internal::kApiClasses.driver[cbid] : ApiClass::kOther;
  }
  return ApiClass::kOther;
}

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_API_CLASSES_H_
