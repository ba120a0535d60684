// tools/model/interval_union.h: the union of intervals fed in start order,
// one merged interval at a time, with the gaps between them.
//
// Feed intervals sorted by start (ReorderQueue's output). Overlapping and
// touching intervals merge into the open interval; an interval that starts
// after it closes it and opens a gap. An interval that starts before the open
// one (a late record) is merged as far as it overlaps; the part before the
// open interval cannot be placed any more and is counted in late_ns().
//
//   IntervalUnion busy;
//   Interval closed;
//   if (busy.Add(op.start_ns, op.end_ns, &closed)) {
//     // `closed` is done; the gap is [closed.end_ns, op.start_ns).
//   }
//   if (busy.Finish(&closed)) ...   // the last interval
//
// Thread model: a value type.
#ifndef GPSCOPE_TOOLS_MODEL_INTERVAL_UNION_H_
#define GPSCOPE_TOOLS_MODEL_INTERVAL_UNION_H_

#include <algorithm>
#include <cstdint>

namespace gpscope::model {

struct Interval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t length_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

class IntervalUnion {
 public:
  // Adds [start_ns, end_ns). Returns true when this closed the open merged
  // interval (then stored in *closed); the gap is [closed->end_ns, start_ns).
  bool Add(uint64_t start_ns, uint64_t end_ns, Interval* closed) {
    end_ns = std::max(end_ns, start_ns);
    if (!open_) {
      open_ = true;
      current_ = {start_ns, end_ns};
      first_start_ns_ = start_ns;
      return false;
    }
    if (start_ns > current_.end_ns) {
      *closed = current_;
      busy_ns_ += current_.length_ns();
      current_ = {start_ns, end_ns};
      return true;
    }
    if (start_ns < current_.start_ns) {
      late_ns_ += std::min(end_ns, current_.start_ns) - start_ns;
    }
    current_.end_ns = std::max(current_.end_ns, end_ns);
    return false;
  }

  // Closes the open interval, if any, into *closed.
  bool Finish(Interval* closed) {
    if (!open_) return false;
    *closed = current_;
    busy_ns_ += current_.length_ns();
    open_ = false;
    return true;
  }

  bool empty() const { return !open_ && busy_ns_ == 0 && first_start_ns_ == 0; }
  bool open() const { return open_; }
  const Interval& current() const { return current_; }
  // Length of the closed intervals (plus the open one after Finish).
  uint64_t busy_ns() const { return busy_ns_; }
  uint64_t first_start_ns() const { return first_start_ns_; }
  uint64_t late_ns() const { return late_ns_; }

 private:
  bool open_ = false;
  Interval current_;
  uint64_t busy_ns_ = 0;
  uint64_t first_start_ns_ = 0;
  uint64_t late_ns_ = 0;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_INTERVAL_UNION_H_
