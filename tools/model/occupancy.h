// tools/model/occupancy.h: the theoretical occupancy of a launch shape, as
// the CUDA occupancy calculator computes it, for GPUs without hardware
// counters (TB's "est. achieved occupancy" input): resident blocks per SM
// are limited by threads (warps), registers, shared memory and the block
// limit of the SM; occupancy = resident warps / the SM's maximum warps.
//
// Approximations (documented, conservative): registers are allocated per
// warp in units of 256; shared memory without the per-block reservation or
// allocation granularity (at most ~1 KiB per block on sm_80+); the grid's
// size is not considered (that is the SM-efficiency estimate's job).
//
//   double occ = TheoreticalOccupancy({256, 64, 48 * 1024}, limits);  // 0.5
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_MODEL_OCCUPANCY_H_
#define GPSCOPE_TOOLS_MODEL_OCCUPANCY_H_

#include <cstdint>

namespace gpscope::model {

// Launches with at least this much shared memory per block are tiled by
// design to run one or two blocks per SM (cuBLAS/CUTLASS GEMMs, Flash
// Attention on Hopper: 12-19% theoretical occupancy while the tensor cores
// are saturated); their occupancy says nothing about latency hiding.
inline constexpr uint32_t kLargeTileSharedBytes = 64 * 1024;

struct LaunchShape {
  uint32_t threads_per_block = 0;
  uint32_t registers_per_thread = 0;  // 0: unknown (no register limit applied)
  uint32_t shared_memory_bytes = 0;   // static + dynamic, per block
};

// From DeviceInfo; all must be known (> 0).
struct SmLimits {
  uint32_t max_threads_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_registers_per_sm = 0;
  uint32_t max_shared_memory_per_sm_bytes = 0;
  bool known() const {
    return max_threads_per_sm > 0 && max_blocks_per_sm > 0 && max_registers_per_sm > 0 &&
           max_shared_memory_per_sm_bytes > 0;
  }
};

// 0..1, or -1 when the shape or the limits are unknown.
double TheoreticalOccupancy(const LaunchShape& shape, const SmLimits& limits);

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_OCCUPANCY_H_
