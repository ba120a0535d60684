// tests/e2e/workload.cu: a CUDA program whose every GPU event is known in
// advance, so the trace can be checked for exact counts and attributes
// (tests/e2e/check_workload.py holds the same numbers).
//
//   kernels    kAKernels x gpscope_e2e_kernel_a  grid (4,1,1)  block (128,1,1)
//              kBKernels x gpscope_e2e_kernel_b  grid (2,3,1)  block (64,2,1), on stream s1
//              kThreads x kCKernelsPerThread x gpscope_e2e_kernel_c grid (1,1,1) block (32,1,1),
//                each thread on its own stream
//              graph: kGraphReplays x (gpscope_e2e_graph_k1, gpscope_e2e_graph_k2)
//   copies     kPageableH2D x 1 MiB pageable H2D (cudaMemcpy)
//              kPinnedH2D   x 4 MiB pinned H2D (cudaMemcpyAsync, s1)
//              kPinnedD2H   x 2 MiB pinned D2H (cudaMemcpyAsync, s1)
//              kPageableD2H x 1 MiB pageable D2H (cudaMemcpy)
//   memsets    kMemsets x 256 KiB device memset (cudaMemsetAsync, s1)
//   driver API kDriverH2D x 1 MiB pinned H2D (cuMemcpyHtoDAsync, s1), kDriverMemsets x
//              256 KiB memset (cuMemsetD32Async, s1), cuMemAlloc/cuMemFree once,
//              cuStreamSynchronize once: what a driver-API program (JAX/XLA) calls
//   syncs      cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize
//   NVTX       kSteps ranges "gpscope_e2e_step", one mark "gpscope_e2e_mark"
//
// Exit code 0 only when every CUDA call succeeded.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr int kAKernels = 1000;
constexpr int kBKernels = 500;
constexpr int kThreads = 4;
constexpr int kCKernelsPerThread = 250;
constexpr int kGraphReplays = 20;
constexpr int kPageableH2D = 10;
constexpr int kPinnedH2D = 5;
constexpr int kPinnedD2H = 5;
constexpr int kPageableD2H = 3;
constexpr int kMemsets = 3;
constexpr int kSteps = 5;
constexpr int kDriverH2D = 4;
constexpr int kDriverMemsets = 2;

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
              cudaGetErrorString(err_));                                             \
      exit(3);                                                                       \
    }                                                                                \
  } while (0)

#define CHECK_CU(call)                                                               \
  do {                                                                               \
    CUresult err_ = (call);                                                          \
    if (err_ != CUDA_SUCCESS) {                                                      \
      const char* name_ = nullptr;                                                   \
      cuGetErrorName(err_, &name_);                                                  \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
              name_ ? name_ : "?");                                                  \
      exit(3);                                                                       \
    }                                                                                \
  } while (0)

}  // namespace

__global__ void gpscope_e2e_kernel_a(float* x) { x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }
template <typename T>
__global__ void gpscope_e2e_kernel_b(T* x) {
  x[(blockIdx.y * gridDim.x + blockIdx.x) * 128 + threadIdx.y * 64 + threadIdx.x] *= T(2);
}
__global__ void gpscope_e2e_kernel_c(int* x) { atomicAdd(x, 1); }
__global__ void gpscope_e2e_graph_k1(float* x) { x[threadIdx.x] += 2.0f; }
__global__ void gpscope_e2e_graph_k2(float* x) { x[threadIdx.x] *= 0.5f; }

int main() {
  CHECK(cudaSetDevice(0));
  float* d_a = nullptr;
  float* d_b = nullptr;
  int* d_c = nullptr;
  char* d_copy = nullptr;
  CHECK(cudaMalloc(&d_a, 512 * sizeof(float)));
  CHECK(cudaMalloc(&d_b, 6 * 128 * sizeof(float)));
  CHECK(cudaMalloc(&d_c, sizeof(int)));
  CHECK(cudaMalloc(&d_copy, 4 << 20));
  CHECK(cudaMemset(d_a, 0, 512 * sizeof(float)));  // +1 memset (sync API)
  CHECK(cudaMemset(d_b, 0, 6 * 128 * sizeof(float)));  // +1 memset
  CHECK(cudaMemset(d_c, 0, sizeof(int)));  // +1 memset
  cudaStream_t s1;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));

  nvtxMarkA("gpscope_e2e_mark");
  for (int step = 0; step < kSteps; ++step) {
    nvtxRangePushA("gpscope_e2e_step");
    for (int i = 0; i < kAKernels / kSteps; ++i) gpscope_e2e_kernel_a<<<4, 128>>>(d_a);
    for (int i = 0; i < kBKernels / kSteps; ++i) {
      gpscope_e2e_kernel_b<float><<<dim3(2, 3), dim3(64, 2), 0, s1>>>(d_b);
    }
    CHECK(cudaGetLastError());
    nvtxRangePop();
  }
  CHECK(cudaDeviceSynchronize());

  // Copies.
  std::vector<char> pageable(4 << 20, 1);
  char* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, 4 << 20));
  for (int i = 0; i < kPageableH2D; ++i) {
    CHECK(cudaMemcpy(d_copy, pageable.data(), 1 << 20, cudaMemcpyHostToDevice));
  }
  for (int i = 0; i < kPinnedH2D; ++i) {
    CHECK(cudaMemcpyAsync(d_copy, pinned, 4 << 20, cudaMemcpyHostToDevice, s1));
  }
  for (int i = 0; i < kPinnedD2H; ++i) {
    CHECK(cudaMemcpyAsync(pinned, d_copy, 2 << 20, cudaMemcpyDeviceToHost, s1));
  }
  for (int i = 0; i < kMemsets; ++i) CHECK(cudaMemsetAsync(d_copy, 7, 256 << 10, s1));
  CHECK(cudaStreamSynchronize(s1));
  for (int i = 0; i < kPageableD2H; ++i) {
    CHECK(cudaMemcpy(pageable.data(), d_copy, 1 << 20, cudaMemcpyDeviceToHost));
  }

  // The same kinds of work through the driver API, in the runtime's primary
  // context (current on this thread since cudaSetDevice).
  CUdeviceptr d_drv = 0;
  CHECK_CU(cuMemAlloc(&d_drv, 1 << 20));
  for (int i = 0; i < kDriverH2D; ++i) {
    CHECK_CU(cuMemcpyHtoDAsync(d_drv, pinned, 1 << 20, reinterpret_cast<CUstream>(s1)));
  }
  for (int i = 0; i < kDriverMemsets; ++i) {
    CHECK_CU(cuMemsetD32Async(d_drv, 0, (256 << 10) / 4, reinterpret_cast<CUstream>(s1)));
  }
  CHECK_CU(cuStreamSynchronize(reinterpret_cast<CUstream>(s1)));
  CHECK_CU(cuMemFree(d_drv));

  // Several threads, each on its own stream.
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, d_c, &failures] {
      cudaStream_t s;
      if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        failures[t] = 1;
        return;
      }
      for (int i = 0; i < kCKernelsPerThread; ++i) gpscope_e2e_kernel_c<<<1, 32, 0, s>>>(d_c);
      if (cudaStreamSynchronize(s) != cudaSuccess || cudaStreamDestroy(s) != cudaSuccess) {
        failures[t] = 1;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) {
    if (f) {
      fprintf(stderr, "a launching thread failed\n");
      return 3;
    }
  }
  int c_total = 0;
  CHECK(cudaMemcpy(&c_total, d_c, sizeof(int), cudaMemcpyDeviceToHost));  // +1 pageable D2H
  if (c_total != kThreads * kCKernelsPerThread * 32) {
    fprintf(stderr, "kernel_c ran %d times, expected %d\n", c_total,
            kThreads * kCKernelsPerThread * 32);
    return 3;
  }

  // A CUDA graph of two kernels, replayed.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  gpscope_e2e_graph_k1<<<1, 64, 0, s1>>>(d_a);
  gpscope_e2e_graph_k2<<<1, 64, 0, s1>>>(d_a);
  CHECK(cudaStreamEndCapture(s1, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < kGraphReplays; ++i) CHECK(cudaGraphLaunch(exec, s1));

  // An event sync.
  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev));
  CHECK(cudaEventRecord(ev, s1));
  CHECK(cudaEventSynchronize(ev));
  CHECK(cudaDeviceSynchronize());

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(ev));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(d_copy));
  CHECK(cudaFree(d_c));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_a));
  printf("workload done\n");
  return 0;
}
