// tools/model/host_calls.h: what the model knows about the host side of a
// trace beyond launches and explicit syncs: the implicitly synchronizing
// CUDA calls and the index that tells how much of a GPU idle gap the host
// spent blocked in them.
//
// Implicit synchronization (CUDA C++ Programming Guide, "Implicit
// Synchronization"; /work/shared/ANALYSIS-NOTES.md): device memory
// allocation and free, page-locked host memory allocation and free,
// synchronous copies and memory sets, and copies to or from pageable host
// memory make the host wait for the device (or for the driver's staging
// through a bounce buffer). Frameworks hide most of them (PyTorch's caching
// allocator, JAX's preallocation) until a program defeats that
// (torch.cuda.empty_cache() in a loop, varying shapes, fragmentation).
//
//   int group = ImplicitGroupOfApi(NormalizeApiName(name));  // -1: not implicit
//   ImplicitIndex index;
//   index.Insert(call_start_ns, call_end_ns, group);
//   std::array<uint64_t, kImplicitGroups> by_group{};
//   uint64_t blocked = index.Overlap(gap_start_ns, gap_end_ns, &by_group);
//
// Thread model: plain data, one thread.
#ifndef GPSCOPE_TOOLS_MODEL_HOST_CALLS_H_
#define GPSCOPE_TOOLS_MODEL_HOST_CALLS_H_

#include <array>
#include <cstdint>
#include <deque>
#include <string_view>

namespace gpscope::model {

// The groups the implicit-sync rule reports, each with its own fixes.
enum ImplicitGroup : int {
  kImplicitDeviceAlloc = 0,  // cudaMalloc/cudaFree, cuMemAlloc/cuMemFree, managed allocation
  kImplicitHostAlloc,        // cudaMallocHost/cudaHostAlloc/cudaFreeHost, cuMemAllocHost/...
  kImplicitSyncCopy,         // cudaMemcpy, cudaMemcpy2D/3D/Peer/ToSymbol..., cuMemcpy* (no Async)
  kImplicitPageableCopy,     // asynchronous copies to or from pageable host memory
  kImplicitSyncMemset,       // cudaMemset, cudaMemset2D, cuMemsetD8/16/32 (no Async)
  kImplicitGroups
};

// "device allocation and free", ... for people; "device_alloc", ... as keys.
const char* ImplicitGroupName(int group);
const char* ImplicitGroupKey(int group);

// The group of a CUDA runtime or driver call by its normalized name
// (NormalizeApiName: no _vNNNN, _ptsz, _ptds), or -1. Asynchronous copies
// are never implicit by name (only by their memory: kImplicitPageableCopy,
// decided when the copy's record is seen); stream-ordered allocation
// (cudaMallocAsync, cuMemAllocFromPoolAsync...) is not implicit.
int ImplicitGroupOfApi(std::string_view name);

// Whether a copy call is an asynchronous one (cudaMemcpyAsync,
// cuMemcpyHtoDAsync_v2...): only those can be "pageable" implicit syncs.
bool IsAsyncCopyApi(std::string_view name);

// Implicitly synchronizing calls by start time, for "how long was the host
// blocked in them inside [a, b)". Calls come roughly in start order (per
// thread exactly); memory is bounded (the oldest go past kMaxItems).
class ImplicitIndex {
 public:
  static constexpr size_t kMaxItems = 1 << 20;
  // How many calls before `b` an overlap query looks at.
  static constexpr int kScan = 64;

  void Insert(uint64_t start_ns, uint64_t end_ns, int group);
  void PruneBefore(uint64_t t_ns);
  // Length of [a, b) covered by calls (union: two threads blocked at once
  // count once), split by the group of the call that covers each part
  // (added to *by_group); the total is returned. When a call was already
  // running at a + slack_ns (the GPU ran dry while the host was in it), the
  // `relaunch_ns` after it returns count as its time too, like the moment
  // the host needs to launch again after an explicit sync
  // (trace_model.h: kSyncRelaunchNs); *began_in_call says whether one was.
  uint64_t Overlap(uint64_t a_ns, uint64_t b_ns, uint64_t slack_ns, uint64_t relaunch_ns,
                   std::array<uint64_t, kImplicitGroups>* by_group, bool* began_in_call) const;
  size_t size() const { return items_.size(); }

 private:
  struct Item {
    uint64_t start_ns;
    uint64_t end_ns;
    int group;
  };
  std::deque<Item> items_;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_HOST_CALLS_H_
