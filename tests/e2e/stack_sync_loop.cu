// tests/e2e/stack_sync_loop.cu: a plain CUDA C++ loop whose synchronous copy
// call-site stacks must name (tests/e2e/stacks_gpu.sh, case "cuda").
//
//   stack_sync_loop STEPS
//
// Each step: a kernel, then a synchronous cudaMemcpy device-to-host in
// copy_result() (the line marked "sync copy site"), then ~2 ms of host work.
// Built with the shared CUDA runtime (so the executable holds only this
// code), -g (addr2line gives the line) and -rdynamic (dladdr names
// copy_result). Prints {"steps": N} and exits 0 when every call succeeded.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void gpscope_stack_kernel(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * 0.5f + 1.0f;
}

extern "C" __attribute__((noinline)) int copy_result(float* host, const float* dev, size_t bytes) {
  volatile int rc = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);  // sync copy site
  return rc;
}

static double host_work_ms(double ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(long(ms * 1000));
  double x = 0;
  while (std::chrono::steady_clock::now() < until) x += 1e-9;
  return x;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 200;
  const int n = 1 << 20;
  float* dev = nullptr;
  if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) return 3;
  float* host = static_cast<float*>(malloc(n * sizeof(float)));
  if (host == nullptr) return 4;
  double sink = 0;
  for (int s = 0; s < steps; ++s) {
    gpscope_stack_kernel<<<(n + 255) / 256, 256>>>(dev, n);
    if (copy_result(host, dev, n * sizeof(float)) != cudaSuccess) return 5;
    sink += host_work_ms(2.0);
  }
  cudaFree(dev);
  free(host);
  printf("{\"steps\": %d, \"sink\": %d}\n", steps, sink > 0 ? 1 : 0);
  return 0;
}
