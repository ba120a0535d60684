// bench/tiny_kernels.cu: the launch-bound workload of the overhead benchmark:
// N empty kernels back to back on one stream, timed on the host.
// Prints one JSON line: {"kernels": N, "us_per_launch": ...}.
//
//   tiny_kernels [N]                                  N launches (default 200000)
//   tiny_kernels --seconds S --step-log F [--per-step K]
//       for bench/overhead_ab.py: "steps" of K launches (default 1000), each
//       ended by cudaDeviceSynchronize, for S seconds; one "start_ns end_ns"
//       line per step (CLOCK_MONOTONIC) to F.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

__global__ void gpscope_bench_empty() {}

namespace {

long long MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int RunSteps(double seconds, const char* log_path, int per_step) {
  FILE* log = log_path[0] != '\0' ? fopen(log_path, "w") : nullptr;
  if (log_path[0] != '\0' && log == nullptr) return 2;
  const long long deadline = MonotonicNs() + static_cast<long long>(seconds * 1e9);
  std::vector<double> us;
  for (long long t0 = MonotonicNs(); t0 < deadline; t0 = MonotonicNs()) {
    for (int i = 0; i < per_step; ++i) gpscope_bench_empty<<<1, 32>>>();
    if (cudaDeviceSynchronize() != cudaSuccess) return 3;
    const long long t1 = MonotonicNs();
    us.push_back((t1 - t0) / 1e3);
    if (log != nullptr) {
      fprintf(log, "%lld %lld\n", t0, t1);
      fflush(log);
    }
  }
  if (log != nullptr) fclose(log);
  if (cudaGetLastError() != cudaSuccess || us.empty()) return 3;
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  printf("{\"steps\": %zu, \"us_per_launch\": %.4f}\n", us.size(), us[us.size() / 2] / per_step);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 200000;
  double seconds = 0;
  const char* step_log = "";
  int per_step = 1000;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--step-log") == 0 && i + 1 < argc) {
      step_log = argv[++i];
    } else if (strcmp(argv[i], "--per-step") == 0 && i + 1 < argc) {
      per_step = std::max(1, atoi(argv[++i]));
    } else {
      n = atoi(argv[i]);
    }
  }
  for (int i = 0; i < 1000; ++i) gpscope_bench_empty<<<1, 32>>>();  // warm-up
  if (cudaDeviceSynchronize() != cudaSuccess) return 3;
  if (seconds > 0) return RunSteps(seconds, step_log, per_step);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) gpscope_bench_empty<<<1, 32>>>();
  if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) return 3;
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  printf("{\"kernels\": %d, \"us_per_launch\": %.4f}\n", n, us / n);
  return 0;
}
