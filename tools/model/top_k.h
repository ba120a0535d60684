// tools/model/top_k.h: keeps the k largest items seen (by a key), in O(k)
// memory, for evidence ("the 5 longest gaps") without keeping every item.
//
//   TopK<Gap> longest(32);
//   longest.Add(gap.length_ns, gap);
//   for (const auto& [key, gap] : longest.Sorted()) ...   // largest first
//
// Ties keep the item seen first. Thread model: a value type.
#ifndef GPSCOPE_TOOLS_MODEL_TOP_K_H_
#define GPSCOPE_TOOLS_MODEL_TOP_K_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpscope::model {

template <typename T>
class TopK {
 public:
  explicit TopK(size_t k = 16) : k_(k) {}

  void Add(uint64_t key, const T& item) {
    if (k_ == 0) return;
    if (heap_.size() < k_) {
      heap_.push_back({key, seq_++, item});
      std::push_heap(heap_.begin(), heap_.end(), Greater);
      return;
    }
    if (key <= heap_.front().key) return;
    std::pop_heap(heap_.begin(), heap_.end(), Greater);
    heap_.back() = {key, seq_++, item};
    std::push_heap(heap_.begin(), heap_.end(), Greater);
  }

  // Would an item with this key be kept? Lets callers skip building items.
  bool Accepts(uint64_t key) const { return heap_.size() < k_ || key > heap_.front().key; }

  size_t size() const { return heap_.size(); }

  // Largest first; equal keys in the order they were added.
  std::vector<std::pair<uint64_t, T>> Sorted() const {
    std::vector<Entry> entries = heap_;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.key != b.key ? a.key > b.key : a.seq < b.seq;
    });
    std::vector<std::pair<uint64_t, T>> out;
    out.reserve(entries.size());
    for (const Entry& e : entries) out.emplace_back(e.key, e.item);
    return out;
  }

 private:
  struct Entry {
    uint64_t key;
    uint64_t seq;
    T item;
  };
  // Min-heap on (key, later first): the front is the item to drop next.
  static bool Greater(const Entry& a, const Entry& b) {
    return a.key != b.key ? a.key > b.key : a.seq < b.seq;
  }

  size_t k_;
  uint64_t seq_ = 0;
  std::vector<Entry> heap_;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_TOP_K_H_
