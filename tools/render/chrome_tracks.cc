// tools/render/chrome_tracks.cc: see chrome_tracks.h.
#include "tools/render/chrome_tracks.h"

#include <algorithm>

namespace gpscope::render {

int LaneAssigner::Fits(const Lane& lane, int64_t start_ns, int64_t end_ns) {
  if (start_ns < lane.last_start_ns) return -1;
  // Slices that ended by start_ns close; the new one must end within the
  // innermost slice still open.
  size_t open = lane.open_ends_ns.size();
  while (open > 0 && lane.open_ends_ns[open - 1] <= start_ns) --open;
  if (open > 0 && end_ns > lane.open_ends_ns[open - 1]) return -1;
  if (open >= kMaxDepth) return -1;
  return static_cast<int>(open);
}

uint32_t LaneAssigner::Place(int64_t start_ns, int64_t end_ns) {
  end_ns = std::max(end_ns, start_ns);
  for (size_t i = 0; i <= lanes_.size(); ++i) {
    if (i == lanes_.size()) {
      if (lanes_.size() >= kMaxLanes) break;
      lanes_.emplace_back();
    }
    Lane& lane = lanes_[i];
    const int open = Fits(lane, start_ns, end_ns);
    if (open < 0) continue;
    lane.open_ends_ns.resize(static_cast<size_t>(open));
    lane.open_ends_ns.push_back(end_ns);
    lane.last_start_ns = start_ns;
    return static_cast<uint32_t>(i);
  }
  // Every lane taken: the last one starts over from this slice.
  ++forced_;
  Lane& last = lanes_.back();
  last.open_ends_ns.assign(1, end_ns);
  last.last_start_ns = std::max(last.last_start_ns, start_ns);
  return static_cast<uint32_t>(lanes_.size() - 1);
}

void FlowMatcher::Launch(uint64_t key, const FlowEnd& api, std::vector<Flow>* out) {
  auto [it, inserted] = launches_.try_emplace(key, api);
  if (!inserted) {
    it->second = api;  // a reused correlation id: the newer call
  } else {
    launch_order_.push_back(key);
  }
  auto w = waiting_.find(key);
  if (w != waiting_.end()) {
    for (const FlowEnd& work : w->second) out->push_back({next_id_++, api, work});
    waiting_.erase(w);
  }
  Bound();
}

void FlowMatcher::Work(uint64_t key, const FlowEnd& work, std::vector<Flow>* out) {
  auto it = launches_.find(key);
  if (it != launches_.end()) {
    out->push_back({next_id_++, it->second, work});
    return;
  }
  auto [w, inserted] = waiting_.try_emplace(key);
  if (inserted) waiting_order_.push_back(key);
  if (w->second.size() < 4096) w->second.push_back(work);
  Bound();
}

void FlowMatcher::Bound() {
  // Oldest first: a call whose work never came, work whose call never came.
  while (launch_order_.size() > kMaxPending) {
    launches_.erase(launch_order_.front());
    launch_order_.pop_front();
  }
  while (waiting_order_.size() > kMaxPending / 4) {
    waiting_.erase(waiting_order_.front());
    waiting_order_.pop_front();
  }
  // Keys matched (erased from waiting_) leave stale entries in the order
  // queue; they are dropped when they reach its front.
  while (!waiting_order_.empty() && !waiting_.contains(waiting_order_.front())) {
    waiting_order_.pop_front();
  }
}

std::string SyncKindName(uint32_t kind) {
  switch (kind) {
    case 0: return "unknown sync";
    case 1: return "event synchronize";
    case 2: return "stream wait event";
    case 3: return "stream synchronize";
    case 4: return "context synchronize";
    default: return "sync kind " + std::to_string(kind);
  }
}

std::string MemcpyKindName(uint32_t kind) {
  static constexpr const char* kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  if (kind < sizeof(kNames) / sizeof(kNames[0])) return kNames[kind];
  return "kind " + std::to_string(kind);
}

std::string MemoryKindName(uint32_t kind) {
  static constexpr const char* kNames[] = {"unknown", "pageable", "pinned",        "device",
                                           "array",   "managed",  "device static", "managed static"};
  if (kind < sizeof(kNames) / sizeof(kNames[0])) return kNames[kind];
  return "kind " + std::to_string(kind);
}

}  // namespace gpscope::render
