// tests/testing/synth.cc: see synth.h.
#include "tests/testing/synth.h"

namespace gpscope::testing {

void HealthyLoop(Synth& s, const LoopOptions& o, uint64_t t0) {
  uint64_t h = t0;
  for (int step = 0; step < o.steps; ++step) {
    const uint64_t start = h;
    uint64_t t = s.Copy(h, o.copy_ns, o.copy_bytes, proto::MEMCPY_HTOD, proto::MEMORY_PINNED);
    if (o.pageable_ns > 0) {
      t = s.Copy(t, o.pageable_ns, 2 << 20, proto::MEMCPY_HTOD, proto::MEMORY_PAGEABLE);
    }
    for (int k = 0; k < o.kernels; ++k) {
      t = s.Kernel(t + 2 * kSynthUs, o.kernel_ns, k % 2 == 0 ? "gemm_bf16_tn" : "gemm_bf16_nt",
                   o.config);
    }
    h = start + o.step_ns;
    if (o.emit_steps) s.Step(start, h - 10 * kSynthUs, static_cast<uint64_t>(step));
  }
}

uint64_t HostBoundLoop(Synth& s, uint64_t t0, int steps) {
  uint64_t h = t0;
  for (int step = 0; step < steps; ++step) {
    const uint64_t start = h;
    uint64_t t = h;
    for (int k = 0; k < 4; ++k) t = s.Kernel(t + 2 * kSynthUs, 500 * kSynthUs, "conv_fwd");
    s.Step(start, t + 50 * kSynthUs, static_cast<uint64_t>(step));
    h = std::max(t, s.gpu_free_ns()) + 20 * kSynthMs;  // host code, no data moves
  }
  return h;
}

}  // namespace gpscope::testing
