// tests/e2e/launch_loop.cu: kernel launches from many threads, or forever.
//
//   launch_loop --threads N --kernels K   N threads, each on a stream of its
//                                         own, launching K tiny kernels each,
//                                         then synchronizing; exit 0
//   launch_loop --threads 1 --kernels 0   one thread launching forever and
//                                         never sleeping (SIGTERM mid-launch)
//
// Prints one JSON line at the end: {"threads": N, "kernels": total}.
// Exit code 0 only when every CUDA call succeeded. For
// tests/e2e/hardening_gpu.sh (suites threads64 and sigterm_loop).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

__global__ void gpscope_e2e_loop_kernel(int* out, int v) {
  if (threadIdx.x == 0 && out != nullptr) *out = v;
}

int main(int argc, char** argv) {
  int threads = 1;
  long long kernels = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--kernels") == 0) kernels = atoll(argv[i + 1]);
  }
  if (threads < 1 || threads > 1024 || kernels < 0) {
    fprintf(stderr, "usage: launch_loop --threads N --kernels K (0: forever)\n");
    return 2;
  }
  if (cudaFree(nullptr) != cudaSuccess) return 3;  // the context, before the threads
  std::atomic<int> failures{0};
  std::atomic<long long> launched{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      cudaStream_t s;
      if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        failures.fetch_add(1);
        return;
      }
      for (long long i = 0; kernels == 0 || i < kernels; ++i) {
        gpscope_e2e_loop_kernel<<<1, 32, 0, s>>>(nullptr, t);
        if (kernels == 0 && (i & 0xfff) == 0 && cudaPeekAtLastError() != cudaSuccess) break;
        launched.fetch_add(1, std::memory_order_relaxed);
      }
      if (cudaStreamSynchronize(s) != cudaSuccess || cudaGetLastError() != cudaSuccess) {
        failures.fetch_add(1);
      }
      cudaStreamDestroy(s);
    });
  }
  for (std::thread& t : pool) t.join();
  printf("{\"threads\": %d, \"kernels\": %lld}\n", threads, launched.load());
  return failures.load() == 0 ? 0 : 3;
}
