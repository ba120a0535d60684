// bench/corpus/native/small_gemm.cu: 2,048 independent 64 x 64 x 64 FP32
// products per step, issued one cublasSgemm call each (a loop over the
// samples of a batch), then one reduction kernel.
//
// Bottleneck: launch-bound. Each GEMM runs a few microseconds on one or a
// few SMs, shorter than the host needs to issue it, so the GPU idles
// between launches. Fix: one cublasSgemmStridedBatched (or
// cublasGemmBatchedEx) call for the whole batch, or capture the loop in a
// CUDA graph.
#include <cublas_v2.h>

#include "corpus_native.h"

namespace {

constexpr int kDim = 64;
constexpr int kBatch = 2048;

void CheckBlas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) corpus::Fail(what, cublasGetStatusString(s));
}

__global__ void Fill(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    p[i] = static_cast<float>((i * 40503u) % 97) / 97.f;
  }
}

__global__ void SumAll(const float* __restrict__ c, size_t n, float* out) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    acc += c[i];
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

}  // namespace

int main(int argc, char** argv) {
  corpus::g_name = "small_gemm";
  const double seconds = corpus::Seconds(argc, argv, 1.5);
  const size_t per = size_t{kDim} * kDim;
  const size_t total = per * kBatch;
  float *a = nullptr, *b = nullptr, *c = nullptr, *sum = nullptr;
  CORPUS_CHECK(cudaMalloc(&a, total * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&b, total * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&c, total * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&sum, sizeof(float)));
  Fill<<<1024, 256>>>(a, total);
  Fill<<<1024, 256>>>(b, total);
  CORPUS_CHECK(cudaGetLastError());
  cublasHandle_t handle = nullptr;
  CheckBlas(cublasCreate(&handle), "cublasCreate");
  const float alpha = 1.f, beta = 0.f;
  auto step = [&] {
    for (int s = 0; s < kBatch; ++s) {
      CheckBlas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kDim, kDim, &alpha,  // site:small_gemm
                            a + s * per, kDim, b + s * per, kDim, &beta, c + s * per, kDim),
                "cublasSgemm");
    }
    CORPUS_CHECK(cudaMemsetAsync(sum, 0, sizeof(float)));
    SumAll<<<264, 256>>>(c, total, sum);
  };
  step();
  CORPUS_CHECK(cudaDeviceSynchronize());

  corpus::Pacer pacer(2);
  corpus::Steady steady(seconds);
  while (steady.Running()) {
    step();
    pacer.Tick();
    steady.Tick();
  }
  CORPUS_CHECK(cudaDeviceSynchronize());
  char extra[64];
  snprintf(extra, sizeof extra, ", \"gemms_per_step\": %d", kBatch);
  steady.Print(extra);
  cublasDestroy(handle);
  return 0;
}
