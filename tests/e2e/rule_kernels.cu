// tests/e2e/rule_kernels.cu: CUDA C++ workloads for rules_gpu.sh where no
// PyTorch op has the launch shape a rule is about.
//
//   rule_kernels low-occupancy SECONDS
//
// low-occupancy: a latency-bound gather (each thread chases a pseudo-random
// index chain through 256 MiB) in blocks of one warp with 40 KiB of dynamic
// shared memory each: at most 5 blocks (5 warps of 64) fit on an H100/H200
// SM, 7.8% theoretical occupancy (< 25%, and below the 64 KiB per block that
// marks a large-tile GEMM). The grid (8 blocks per SM) fills every SM, so SM
// efficiency is fine; the kernels run ~1 ms each, back to back, 20 per
// stream synchronization (the GPU idles only for the relaunch).
// Prints one JSON line: {"scenario", "kernels", "kernel_ms", "seconds"}.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kThreads = 32;
constexpr size_t kSharedBytes = 40 * 1024;
constexpr size_t kElements = size_t{64} << 20;  // 256 MiB of floats

__global__ void LowOccupancyGather(const float* __restrict__ in, float* __restrict__ out,
                                   unsigned mask, int hops) {
  extern __shared__ float scratch[];
  unsigned idx = (blockIdx.x * blockDim.x + threadIdx.x) * 2654435761u;
  float acc = 0.f;
  for (int i = 0; i < hops; ++i) {
    idx = (idx * 1103515245u + 12345u) & mask;
    acc += in[idx];
    idx ^= __float_as_uint(acc) & 7u;  // each load depends on the last
  }
  scratch[threadIdx.x] = acc;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = scratch[(threadIdx.x + 1) % blockDim.x];
}

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  fprintf(stderr, "rule_kernels: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

int LowOccupancy(double seconds) {
  int device = 0, sms = 0;
  if (!Check(cudaGetDevice(&device), "cudaGetDevice") ||
      !Check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count")) {
    return 1;
  }
  float* in = nullptr;
  float* out = nullptr;
  const int blocks = sms * 8;
  if (!Check(cudaMalloc(&in, kElements * sizeof(float)), "cudaMalloc") ||
      !Check(cudaMalloc(&out, size_t(blocks) * kThreads * sizeof(float)), "cudaMalloc") ||
      !Check(cudaMemset(in, 0, kElements * sizeof(float)), "cudaMemset")) {
    return 1;
  }
  const unsigned mask = static_cast<unsigned>(kElements - 1);
  // Size the chain so one kernel takes ~1 ms.
  int hops = 256;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float ms = 0;
  for (int round = 0; round < 6; ++round) {
    cudaEventRecord(a);
    LowOccupancyGather<<<blocks, kThreads, kSharedBytes>>>(in, out, mask, hops);
    cudaEventRecord(b);
    if (!Check(cudaEventSynchronize(b), "kernel")) return 1;
    cudaEventElapsedTime(&ms, a, b);
    if (ms > 0.7f && ms < 1.5f) break;
    hops = static_cast<int>(hops * (1.0f / (ms > 0.001f ? ms : 0.001f)));
    if (hops < 16) hops = 16;
    if (hops > 1 << 20) hops = 1 << 20;
  }
  long kernels = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 20; ++i) {
      LowOccupancyGather<<<blocks, kThreads, kSharedBytes>>>(in, out, mask, hops);
    }
    kernels += 20;
    if (!Check(cudaStreamSynchronize(nullptr), "kernels")) return 1;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  printf("{\"scenario\": \"low-occupancy\", \"kernels\": %ld, \"kernel_ms\": %.3f, "
         "\"hops\": %d, \"seconds\": %.2f}\n",
         kernels, ms, hops, elapsed);
  cudaFree(in);
  cudaFree(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || strcmp(argv[1], "low-occupancy") != 0) {
    fprintf(stderr, "usage: rule_kernels low-occupancy SECONDS\n");
    return 2;
  }
  return LowOccupancy(atof(argv[2]));
}
