// bench/corpus/native/sgemm.cu: an FP32 GEMM loop through cuBLAS
// (cublasSgemm, 8192 x 8192 x 8192, default math mode: no TF32), two GEMMs
// in flight (events polled, no synchronizing call in the loop).
//
// Healthy control for library kernels: the GPU is busy in cuBLAS's own
// SGEMM kernel the whole time (compute-bound). Its launch shape (large
// tiles, many registers, low theoretical occupancy by design) is cuBLAS's
// choice, which the user cannot change: no launch-bounds/register advice
// (low-occupancy) should appear; nothing above info expected. The one
// useful hint, tensor cores (TF32/bf16), is info at most.
#include <cublas_v2.h>

#include <vector>

#include "corpus_native.h"

namespace {

void CheckBlas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) corpus::Fail(what, cublasGetStatusString(s));
}

__global__ void Fill(float* p, size_t n, float scale) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    p[i] = scale * static_cast<float>((i * 2654435761u) % 1000) / 1000.f;
  }
}

}  // namespace

int main(int argc, char** argv) {
  corpus::g_name = "sgemm";
  const double seconds = corpus::Seconds(argc, argv, 4.0);
  constexpr int kN = 8192;
  const size_t elems = size_t{kN} * kN;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CORPUS_CHECK(cudaMalloc(&a, elems * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&b, elems * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&c, elems * sizeof(float)));
  Fill<<<1024, 256>>>(a, elems, 1.f);
  Fill<<<1024, 256>>>(b, elems, 0.5f);
  CORPUS_CHECK(cudaGetLastError());
  cublasHandle_t handle = nullptr;
  CheckBlas(cublasCreate(&handle), "cublasCreate");
  const float alpha = 1.f, beta = 0.f;
  auto gemm = [&] {
    CheckBlas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &alpha, a, kN, b, kN,  // site:sgemm
                          &beta, c, kN),
              "cublasSgemm");
  };
  for (int i = 0; i < 3; ++i) gemm();
  CORPUS_CHECK(cudaDeviceSynchronize());

  corpus::Pacer pacer(2);
  corpus::Steady steady(seconds);
  while (steady.Running()) {
    gemm();
    pacer.Tick();
    steady.Tick();
  }
  CORPUS_CHECK(cudaDeviceSynchronize());
  char extra[96];
  snprintf(extra, sizeof extra, ", \"n\": %d, \"tflop_per_gemm\": %.3f", kN, 2.0 * kN * kN * kN / 1e12);
  steady.Print(extra);
  cublasDestroy(handle);
  return 0;
}
