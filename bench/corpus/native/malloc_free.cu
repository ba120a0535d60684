// bench/corpus/native/malloc_free.cu: a processing loop that allocates its
// two 64 MiB scratch buffers with cudaMalloc at the top of every iteration
// and releases them with cudaFree at the end, the way a naive C++ library
// call does (~1 ms of kernels per iteration).
//
// Bottleneck: implicitly synchronizing allocation and free. cudaFree waits
// for the device to finish, and cudaMalloc/cudaFree spend host time in the
// driver while nothing is queued, so the GPU idles between iterations.
// Fix: allocate once and reuse, or use the stream-ordered allocator
// (cudaMallocAsync / cudaFreeAsync with a memory pool).
#include "corpus_native.h"

namespace {

constexpr size_t kFloats = size_t{16} << 20;  // 64 MiB

__global__ void Stage(const float* __restrict__ in, float* __restrict__ tmp, size_t n, int rounds) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    float x = in[i];
    for (int r = 0; r < rounds; ++r) x = __sinf(x) * 1.0001f + 0.5f;
    tmp[i] = x;
  }
}

__global__ void Combine(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    out[i] = 0.5f * (a[i] + b[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  corpus::g_name = "malloc_free";
  const double seconds = corpus::Seconds(argc, argv, 4.0);
  int sms = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 8, threads = 256;
  float *in = nullptr, *out = nullptr;
  CORPUS_CHECK(cudaMalloc(&in, kFloats * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&out, kFloats * sizeof(float)));
  CORPUS_CHECK(cudaMemset(in, 0, kFloats * sizeof(float)));

  auto iterate = [&] {
    float *a = nullptr, *b = nullptr;
    CORPUS_CHECK(cudaMalloc(&a, kFloats * sizeof(float)));  // site:malloc
    CORPUS_CHECK(cudaMalloc(&b, kFloats * sizeof(float)));
    Stage<<<blocks, threads>>>(in, a, kFloats, 96);
    Stage<<<blocks, threads>>>(out, b, kFloats, 96);
    Combine<<<blocks, threads>>>(a, b, out, kFloats);
    CORPUS_CHECK(cudaGetLastError());
    CORPUS_CHECK(cudaFree(a));  // site:free
    CORPUS_CHECK(cudaFree(b));
  };
  for (int i = 0; i < 5; ++i) iterate();
  CORPUS_CHECK(cudaDeviceSynchronize());

  corpus::Steady steady(seconds);
  while (steady.Running()) {
    iterate();
    steady.Tick();
  }
  CORPUS_CHECK(cudaDeviceSynchronize());
  steady.Print(", \"scratch_mib_per_iteration\": 128");
  return 0;
}
