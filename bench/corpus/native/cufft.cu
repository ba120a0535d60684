// bench/corpus/native/cufft.cu: spectral filtering with cuFFT: 64 signals of
// 2^20 complex samples (512 MiB), forward C2C FFT, a low-pass filter kernel
// in the frequency domain, inverse FFT, two iterations in flight (events
// polled, no synchronizing call in the loop).
//
// Bottleneck: memory bandwidth. FFTs of this size make several passes over
// the data with little arithmetic per byte; cuFFT's kernels and the filter
// run at DRAM speed. Nothing to fix in the calling code beyond fusing the
// filter into the FFT (cuFFT callbacks / cuFFTDx) or using fewer, larger
// transforms; low-occupancy/register advice about cuFFT's own kernels would
// be wrong.
#include <cufft.h>

#include "corpus_native.h"

namespace {

constexpr int kPoints = 1 << 20;
constexpr int kBatch = 64;

void CheckFft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) {
    char buf[32];
    snprintf(buf, sizeof buf, "cufftResult %d", static_cast<int>(r));
    corpus::Fail(what, buf);
  }
}

__global__ void Fill(cufftComplex* x, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float t = static_cast<float>(i % kPoints) / kPoints;
    x[i] = make_float2(__sinf(6283.f * t) + 0.1f * __sinf(917.f * t * t), 0.f);
  }
}

// Keeps the lowest `keep` frequencies (and their mirror), scaled by 1/N so
// the inverse transform returns the filtered signal.
__global__ void LowPass(cufftComplex* x, size_t n, int keep) {
  const float scale = 1.f / kPoints;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const int k = static_cast<int>(i % kPoints);
    const bool pass = k < keep || k > kPoints - keep;
    x[i].x = pass ? x[i].x * scale : 0.f;
    x[i].y = pass ? x[i].y * scale : 0.f;
  }
}

}  // namespace

int main(int argc, char** argv) {
  corpus::g_name = "cufft";
  const double seconds = corpus::Seconds(argc, argv, 4.0);
  int sms = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t n = size_t{kPoints} * kBatch;
  cufftComplex* x = nullptr;
  CORPUS_CHECK(cudaMalloc(&x, n * sizeof(cufftComplex)));
  Fill<<<sms * 8, 256>>>(x, n);
  CORPUS_CHECK(cudaGetLastError());
  cufftHandle plan;
  CheckFft(cufftPlan1d(&plan, kPoints, CUFFT_C2C, kBatch), "cufftPlan1d");
  auto iterate = [&] {
    CheckFft(cufftExecC2C(plan, x, x, CUFFT_FORWARD), "cufftExecC2C forward");  // site:fft
    LowPass<<<sms * 8, 256>>>(x, n, kPoints / 8);
    CheckFft(cufftExecC2C(plan, x, x, CUFFT_INVERSE), "cufftExecC2C inverse");
  };
  for (int i = 0; i < 3; ++i) iterate();
  CORPUS_CHECK(cudaDeviceSynchronize());

  corpus::Pacer pacer(2);
  corpus::Steady steady(seconds);
  while (steady.Running()) {
    iterate();
    pacer.Tick();
    steady.Tick();
  }
  CORPUS_CHECK(cudaDeviceSynchronize());
  char extra[96];
  snprintf(extra, sizeof extra, ", \"points\": %d, \"batch\": %d", kPoints, kBatch);
  steady.Print(extra);
  cufftDestroy(plan);
  return 0;
}
