// tools/reader/clock_align.h: maps one process's CUPTI timestamps onto the
// common timebase of a multi-process, multi-node trace: CLOCK_REALTIME.
//
// Every process records ClockSnapshots (CUPTI ns read next to CLOCK_REALTIME
// and CLOCK_MONOTONIC) in its header, at every flush and at its end. Between
// two snapshots the offset realtime - cupti is interpolated linearly (the
// clocks drift apart slowly and smoothly); before the first and after the
// last the nearest snapshot's offset holds. Without snapshots CUPTI time is
// taken as realtime (on Linux CUPTI's clock is CLOCK_REALTIME-based).
//
// This is the one alignment of the offline pipeline: the reader keeps one per
// process in its tables (process_tables.h) and every output places events on
// the common timebase through it.
//
// Tolerance: within a process, the error is the snapshot's read skew (the
// three clocks are read back to back: ~1 us) plus drift between snapshots
// beyond linear. residual_ns() states the latter from the snapshots
// themselves: each interior snapshot is predicted from its two neighbours
// by the same interpolation, and the largest miss is reported (a 2 s flush
// interval on an NTP-disciplined host gives well under 1 us; an NTP step
// shows as a jump). Across nodes it adds
// how well the nodes' CLOCK_REALTIME agree (NTP: typically 0.1-1 ms; PTP:
// ~1 us); the trace cannot measure that, so the rank analysis checks it with
// collective end times (all ranks leave a collective together) and reports
// the residual (analyses/ranks.h).
//
//   ClockAlign clocks;
//   for (const proto::ClockSnapshot& s : header.clocks()) clocks.Add(s.cupti_ns(), s.realtime_ns());
//   uint64_t wall_ns = clocks.ToRealtimeNs(kernel.start_ns);
//
// Memory: at most kMaxPoints snapshots (every other one is dropped beyond).
// Thread model: a value type.
#ifndef GPSCOPE_TOOLS_READER_CLOCK_ALIGN_H_
#define GPSCOPE_TOOLS_READER_CLOCK_ALIGN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpscope::reader {

class ClockAlign {
 public:
  static constexpr size_t kMaxPoints = 4096;

  // cupti_ns == 0 (CUPTI unavailable) is ignored.
  void Add(uint64_t cupti_ns, uint64_t realtime_ns);
  bool empty() const { return points_.empty(); }
  size_t size() const { return points_.size(); }
  uint64_t ToRealtimeNs(uint64_t cupti_ns) const;
  // realtime - cupti at the first snapshot (0 without snapshots).
  int64_t offset_ns() const { return points_.empty() ? 0 : points_.front().offset_ns; }
  // How far the offset moved over the run (max - min): CUPTI's drift
  // against CLOCK_REALTIME.
  uint64_t drift_ns() const;
  // The interpolation's residual: the largest distance between an interior
  // snapshot's offset and the line through its two neighbours (leave one
  // out); 0 with fewer than three snapshots.
  uint64_t residual_ns() const;

 private:
  struct Point {
    uint64_t cupti_ns;
    int64_t offset_ns;  // realtime - cupti
  };
  std::vector<Point> points_;  // sorted by cupti_ns, unique
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_CLOCK_ALIGN_H_
