// tools/model/collectives.h: which GPU kernels and NVTX ranges are
// communication (NCCL), and which collective they run.
//
// NCCL names its kernels three ways over its versions, and HTA's straggler
// analysis missed the newest one (HTA#360), so all three are matched:
//   old (<= 2.18)   ncclKernel_AllReduce_RING_LL_Sum_float
//   older           ncclAllReduceRingLLKernel_sum_f32
//   new (>= 2.19)   ncclDevKernel_AllReduce_Sum_f32_RING_LL
// each possibly mangled (_Z39ncclDevKernel_...) or with a parameter list.
// NCCL's own NVTX ranges are in the domain "NCCL" (ncclAllReduce, ...).
//
//   CollectiveKind k = ClassifyCommKernel("ncclDevKernel_SendRecv(...)");  // kSendRecv
//   bool comm = k != CollectiveKind::kNone;
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_MODEL_COLLECTIVES_H_
#define GPSCOPE_TOOLS_MODEL_COLLECTIVES_H_

#include <cstdint>
#include <string_view>

namespace gpscope::model {

enum class CollectiveKind : uint8_t {
  kNone = 0,       // not communication
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,       // also Send, Recv (point-to-point, pipeline parallelism)
  kOther,          // an NCCL kernel of another kind
};
inline constexpr int kCollectiveKinds = 9;

// "all_reduce", "all_gather", ..., "other"; "none" for kNone.
const char* CollectiveName(CollectiveKind kind);

// The collective of an NCCL kernel name (mangled or not), or kNone.
CollectiveKind ClassifyCommKernel(std::string_view kernel_name);

// The collective of an NVTX range in NCCL's domain ("ncclAllReduce",
// "ncclGroupEnd" -> kOther), or kNone when the domain is not NCCL's.
CollectiveKind ClassifyCommRange(std::string_view domain, std::string_view range_name);

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_COLLECTIVES_H_
