// bench/corpus/native/sync_memcpy.cu: a Jacobi solver for Laplace's equation
// on a 4096 x 4096 grid that checks convergence every iteration: two
// relaxation sweeps and a residual reduction (~0.1 ms of GPU), then a
// synchronous cudaMemcpy of the 4-byte residual into a host float, then the
// host decides whether to go on.
//
// Bottleneck: a host sync every iteration. cudaMemcpy to pageable memory
// returns only when the GPU is done, so the host never queues ahead and
// the GPU idles while the host comes back and launches the next iteration
// (~15-20% of the time at this kernel length). Fix: test convergence
// every N iterations, or cudaMemcpyAsync into pinned memory with an event
// and read it one iteration late.
#include "corpus_native.h"

namespace {

constexpr int kN = 4096;

__global__ void Relax(const float* __restrict__ in, float* __restrict__ out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n * n; i += gridDim.x * blockDim.x) {
    const int r = i / n, c = i % n;
    if (r == 0 || c == 0 || r == n - 1 || c == n - 1) {
      out[i] = in[i];  // fixed boundary
    } else {
      out[i] = 0.25f * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n]);
    }
  }
}

__global__ void Residual(const float* __restrict__ a, const float* __restrict__ b, int count,
                         float* sum) {
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    acc += fabsf(a[i] - b[i]);
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

__global__ void Init(float* u, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n * n; i += gridDim.x * blockDim.x) {
    u[i] = (i / n == 0) ? 1.f : 0.f;  // hot top edge
  }
}

}  // namespace

int main(int argc, char** argv) {
  corpus::g_name = "sync_memcpy";
  const double seconds = corpus::Seconds(argc, argv, 4.0);
  int sms = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = size_t{kN} * kN * sizeof(float);
  float *u = nullptr, *v = nullptr, *d_sum = nullptr;
  CORPUS_CHECK(cudaMalloc(&u, bytes));
  CORPUS_CHECK(cudaMalloc(&v, bytes));
  CORPUS_CHECK(cudaMalloc(&d_sum, sizeof(float)));
  const int blocks = sms * 8, threads = 256;
  Init<<<blocks, threads>>>(u, kN);
  Init<<<blocks, threads>>>(v, kN);
  CORPUS_CHECK(cudaGetLastError());

  float residual = 0.f;
  auto iterate = [&] {
    Relax<<<blocks, threads>>>(u, v, kN);
    Relax<<<blocks, threads>>>(v, u, kN);
    CORPUS_CHECK(cudaMemsetAsync(d_sum, 0, sizeof(float)));
    Residual<<<blocks, threads>>>(u, v, kN * kN, d_sum);
    CORPUS_CHECK(cudaMemcpy(&residual, d_sum, sizeof(float), cudaMemcpyDeviceToHost));  // site:memcpy
    return residual;
  };
  for (int i = 0; i < 10; ++i) iterate();

  corpus::Steady steady(seconds);
  float first = -1.f;
  while (steady.Running()) {
    const float r = iterate();
    if (first < 0) first = r;
    if (r < 1e-6f * first) break;  // converged (it will not, in a few seconds)
    steady.Tick();
    if (steady.steps() % 5000 == 0) fprintf(stderr, "[sync_memcpy] iteration %ld residual %g\n", steady.steps(), r);
  }
  CORPUS_CHECK(cudaDeviceSynchronize());
  char extra[96];
  snprintf(extra, sizeof extra, ", \"residual\": %.6g, \"grid\": %d", residual, kN);
  steady.Print(extra);
  return 0;
}
