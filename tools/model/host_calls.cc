// tools/model/host_calls.cc: see host_calls.h.
#include "tools/model/host_calls.h"

#include <algorithm>
#include <vector>

namespace gpscope::model {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}
bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

const char* ImplicitGroupName(int group) {
  switch (group) {
    case kImplicitDeviceAlloc:
      return "device memory allocation and free";
    case kImplicitHostAlloc:
      return "pinned host memory allocation and free";
    case kImplicitSyncCopy:
      return "synchronous copies";
    case kImplicitPageableCopy:
      return "asynchronous copies from or to pageable memory";
    case kImplicitSyncMemset:
      return "synchronous memsets";
    default:
      return "other";
  }
}

const char* ImplicitGroupKey(int group) {
  switch (group) {
    case kImplicitDeviceAlloc:
      return "device_alloc";
    case kImplicitHostAlloc:
      return "host_alloc";
    case kImplicitSyncCopy:
      return "sync_copy";
    case kImplicitPageableCopy:
      return "pageable_copy";
    case kImplicitSyncMemset:
      return "sync_memset";
    default:
      return "other";
  }
}

bool IsAsyncCopyApi(std::string_view name) {
  return (StartsWith(name, "cudaMemcpy") || StartsWith(name, "cuMemcpy")) && Contains(name, "Async");
}

int ImplicitGroupOfApi(std::string_view name) {
  // Stream-ordered allocation and every other *Async call is ordered on a
  // stream, not against the whole device.
  if (Contains(name, "Async")) return -1;
  // Page-locked host memory first: "cudaMallocHost" also starts with
  // "cudaMalloc".
  static constexpr std::string_view kHost[] = {"cudaMallocHost", "cudaHostAlloc", "cudaFreeHost",
                                               "cuMemAllocHost", "cuMemHostAlloc", "cuMemFreeHost"};
  for (std::string_view h : kHost) {
    if (name == h) return kImplicitHostAlloc;
  }
  static constexpr std::string_view kDevice[] = {
      "cudaMalloc",       "cudaFree",      "cudaMallocManaged", "cudaMallocPitch",
      "cudaMalloc3D",     "cudaMallocArray", "cudaFreeArray",   "cuMemAlloc",
      "cuMemFree",        "cuMemAllocManaged", "cuMemAllocPitch"};
  for (std::string_view d : kDevice) {
    if (name == d) return kImplicitDeviceAlloc;
  }
  if (StartsWith(name, "cudaMemcpy") || StartsWith(name, "cuMemcpy")) return kImplicitSyncCopy;
  if (StartsWith(name, "cudaMemset") || StartsWith(name, "cuMemset")) return kImplicitSyncMemset;
  return -1;
}

void ImplicitIndex::Insert(uint64_t start_ns, uint64_t end_ns, int group) {
  const Item v{start_ns, std::max(start_ns, end_ns), group};
  if (items_.empty() || items_.back().start_ns <= start_ns) {
    items_.push_back(v);
  } else {
    auto it = std::upper_bound(items_.begin(), items_.end(), start_ns,
                               [](uint64_t t, const Item& i) { return t < i.start_ns; });
    items_.insert(it, v);
  }
  if (items_.size() > kMaxItems) items_.pop_front();
}

void ImplicitIndex::PruneBefore(uint64_t t_ns) {
  while (!items_.empty() && items_.front().end_ns < t_ns) items_.pop_front();
}

uint64_t ImplicitIndex::Overlap(uint64_t a_ns, uint64_t b_ns, uint64_t slack_ns,
                                uint64_t relaunch_ns,
                                std::array<uint64_t, kImplicitGroups>* by_group,
                                bool* began_in_call) const {
  if (began_in_call != nullptr) *began_in_call = false;
  if (b_ns <= a_ns || items_.empty()) return 0;
  // The calls that start before b and may reach past a, clipped to [a, b).
  auto it = std::lower_bound(items_.begin(), items_.end(), b_ns,
                             [](const Item& i, uint64_t t) { return i.start_ns < t; });
  std::vector<Item> clipped;
  for (int n = 0; n < kScan && it != items_.begin(); ++n) {
    --it;
    if (it->end_ns <= a_ns) continue;
    uint64_t end = it->end_ns;
    if (it->start_ns <= a_ns + slack_ns) {
      end += relaunch_ns;  // the GPU ran dry while the host was in this call
      if (began_in_call != nullptr) *began_in_call = true;
    }
    clipped.push_back({std::max(it->start_ns, a_ns), std::min(end, b_ns), it->group});
  }
  if (clipped.empty()) return 0;
  std::sort(clipped.begin(), clipped.end(),
            [](const Item& x, const Item& y) { return x.start_ns < y.start_ns; });
  uint64_t covered_to = a_ns, total = 0;
  for (const Item& c : clipped) {
    const uint64_t from = std::max(c.start_ns, covered_to);
    if (c.end_ns <= from) continue;
    const uint64_t part = c.end_ns - from;
    total += part;
    if (by_group != nullptr && c.group >= 0 && c.group < kImplicitGroups) {
      (*by_group)[static_cast<size_t>(c.group)] += part;
    }
    covered_to = c.end_ns;
  }
  return total;
}

}  // namespace gpscope::model
