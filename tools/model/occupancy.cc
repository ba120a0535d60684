// tools/model/occupancy.cc: see occupancy.h.
#include "tools/model/occupancy.h"

#include <algorithm>
#include <cstdint>

namespace gpscope::model {

double TheoreticalOccupancy(const LaunchShape& shape, const SmLimits& limits) {
  constexpr uint64_t kWarp = 32;
  constexpr uint64_t kRegisterUnit = 256;  // registers are allocated per warp in these units
  constexpr uint32_t kMaxRegistersPerThread = 255;  // every CUDA architecture's limit
  if (!limits.known() || shape.threads_per_block == 0) return -1;
  // A trace's values are untrusted: wider arithmetic, and a register count
  // no GPU allows means the shape is unknown (it wrapped to a zero divisor).
  if (shape.registers_per_thread > kMaxRegistersPerThread) return -1;
  const uint64_t max_warps = limits.max_threads_per_sm / kWarp;
  const uint64_t warps_per_block = (uint64_t{shape.threads_per_block} + kWarp - 1) / kWarp;
  if (max_warps == 0 || warps_per_block > max_warps) return -1;
  uint64_t blocks = std::min<uint64_t>(limits.max_blocks_per_sm, max_warps / warps_per_block);
  if (shape.registers_per_thread > 0) {
    const uint64_t per_warp =
        (shape.registers_per_thread * kWarp + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
    const uint64_t warps = limits.max_registers_per_sm / per_warp;
    blocks = std::min(blocks, warps / warps_per_block);
  }
  if (shape.shared_memory_bytes > 0) {
    blocks = std::min<uint64_t>(blocks,
                                limits.max_shared_memory_per_sm_bytes / shape.shared_memory_bytes);
  }
  return static_cast<double>(blocks * warps_per_block) / static_cast<double>(max_warps);
}

}  // namespace gpscope::model
