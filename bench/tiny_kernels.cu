// bench/tiny_kernels.cu: the launch-bound workload of the overhead benchmark:
// N empty kernels back to back on one stream, timed on the host.
// Prints one JSON line: {"kernels": N, "us_per_launch": ...}.
//
//   tiny_kernels [N]                                  N launches (default 200000)
//   tiny_kernels --seconds S --step-log F [--per-step K]
//       for bench/overhead_ab.py: "steps" of K launches (default 1000), each
//       ended by cudaDeviceSynchronize, for S seconds; one "start_ns end_ns"
//       line per step (CLOCK_MONOTONIC) to F.
//   tiny_kernels --baton IN,OUT,READY [--per-step K]
//       for bench/overhead_baton.py: one block of K launches (default 1000) plus
//       cudaDeviceSynchronize per token of the relay (protocol in
//       bench/workloads/baton.py); prints every block's time as "block_us".
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

__global__ void gpscope_bench_empty() {}

namespace {

long long MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// One block: per_step empty kernels and a device synchronize; false on a CUDA error.
bool LaunchBlock(int per_step) {
  for (int i = 0; i < per_step; ++i) gpscope_bench_empty<<<1, 32>>>();
  return cudaDeviceSynchronize() == cudaSuccess;
}

// The median of the block times over the launches of a block.
double MedianPerLaunch(std::vector<double> us, int per_step) {
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2] / per_step;
}

int RunSteps(double seconds, const char* log_path, int per_step) {
  FILE* log = log_path[0] != '\0' ? fopen(log_path, "w") : nullptr;
  if (log_path[0] != '\0' && log == nullptr) return 2;
  const long long deadline = MonotonicNs() + static_cast<long long>(seconds * 1e9);
  std::vector<double> us;
  for (long long t0 = MonotonicNs(); t0 < deadline; t0 = MonotonicNs()) {
    if (!LaunchBlock(per_step)) return 3;
    const long long t1 = MonotonicNs();
    us.push_back((t1 - t0) / 1e3);
    if (log != nullptr) {
      fprintf(log, "%lld %lld\n", t0, t1);
      fflush(log);
    }
  }
  if (log != nullptr) fclose(log);
  if (cudaGetLastError() != cudaSuccess || us.empty()) return 3;
  printf("{\"steps\": %zu, \"us_per_launch\": %.4f}\n", us.size(), MedianPerLaunch(us, per_step));
  return 0;
}

// The relay's worker side (bench/workloads/baton.py has the protocol).
int RunBaton(const std::string& spec, int per_step) {
  const size_t a = spec.find(','), b = spec.find(',', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos) return 2;
  const int in = open(spec.substr(0, a).c_str(), O_RDWR);
  const int out = open(spec.substr(a + 1, b - a - 1).c_str(), O_RDWR);
  const int ready = open(spec.substr(b + 1).c_str(), O_RDWR);
  if (in < 0 || out < 0 || ready < 0) return 2;
  char tok = 'r';
  if (write(ready, &tok, 1) != 1) return 2;
  std::vector<double> us;
  while (read(in, &tok, 1) == 1 && tok != 'q') {
    const long long t0 = MonotonicNs();
    if (!LaunchBlock(per_step)) return 3;
    us.push_back((MonotonicNs() - t0) / 1e3);
    if (write(out, &tok, 1) != 1) return 2;
  }
  tok = 'q';
  if (write(out, &tok, 1) != 1) return 2;
  if (cudaGetLastError() != cudaSuccess || us.empty()) return 3;
  printf("{\"per_step\": %d, \"block_us\": [", per_step);
  for (size_t i = 0; i < us.size(); ++i) printf("%s%.2f", i ? ", " : "", us[i]);
  printf("], \"us_per_launch\": %.4f}\n", MedianPerLaunch(us, per_step));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 200000;
  double seconds = 0;
  const char* step_log = "";
  std::string baton;
  int per_step = 1000;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--step-log") == 0 && i + 1 < argc) {
      step_log = argv[++i];
    } else if (strcmp(argv[i], "--baton") == 0 && i + 1 < argc) {
      baton = argv[++i];
    } else if (strcmp(argv[i], "--per-step") == 0 && i + 1 < argc) {
      per_step = std::max(1, atoi(argv[++i]));
    } else {
      n = atoi(argv[i]);
    }
  }
  for (int i = 0; i < 1000; ++i) gpscope_bench_empty<<<1, 32>>>();  // warm-up
  if (cudaDeviceSynchronize() != cudaSuccess) return 3;
  if (!baton.empty()) return RunBaton(baton, per_step);
  if (seconds > 0) return RunSteps(seconds, step_log, per_step);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) gpscope_bench_empty<<<1, 32>>>();
  if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) return 3;
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  printf("{\"kernels\": %d, \"us_per_launch\": %.4f}\n", n, us / n);
  return 0;
}
