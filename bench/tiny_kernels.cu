// bench/tiny_kernels.cu: the launch-bound workload of the overhead benchmark:
// N empty kernels back to back on one stream, timed on the host.
// Prints one JSON line: {"kernels": N, "us_per_launch": ...}.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void gpscope_bench_empty() {}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 200000;
  for (int i = 0; i < 1000; ++i) gpscope_bench_empty<<<1, 32>>>();  // warm-up
  if (cudaDeviceSynchronize() != cudaSuccess) return 3;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) gpscope_bench_empty<<<1, 32>>>();
  if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) return 3;
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  printf("{\"kernels\": %d, \"us_per_launch\": %.4f}\n", n, us / n);
  return 0;
}
