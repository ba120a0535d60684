// tools/reader/timebase.h: the one time base of every output. Each
// process's CUPTI timestamps go to CLOCK_REALTIME through its ClockAlign
// (all of its snapshots: header, flushes, end), and the time origin is the
// earliest event of all the files of a pass on that common timebase. Every
// time a command prints is "ns since the origin" on it, and every command
// prints the origin, so a time read in `summary` finds the same event in the
// report, in `export` (Perfetto) and in `dump`.
//
//   reader::Timebase tb = result.timebase;               // after a pass
//   uint64_t t = tb.ToOriginNs(gpu.process_uid, k.start_ns);
//   std::string when = tb.OriginUtc();                   // "2026-11-29T09:26:55.905855123Z"
//
// "Earliest event": any decoded event (kernel, copy, memset, sync, API call,
// NVTX range or mark, overhead, metric sample) with a nonzero timestamp (0 is
// CUPTI's mark of an incomplete record). A time that maps before the origin
// (only possible with hostile clock snapshots) is clamped to 0.
//
// Thread model: a value type.
#ifndef GPSCOPE_TOOLS_READER_TIMEBASE_H_
#define GPSCOPE_TOOLS_READER_TIMEBASE_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "tools/reader/clock_align.h"

namespace gpscope::reader {

class Timebase {
 public:
  // CLOCK_REALTIME ns of the origin; 0 when the pass read no event.
  uint64_t origin_realtime_ns() const { return origin_realtime_ns_; }
  bool has_origin() const { return has_origin_; }
  // "2026-11-29T09:26:55.905855123Z", "" without an origin.
  std::string OriginUtc() const;

  // The process's clock alignment (identity for an unknown process).
  const ClockAlign& Clocks(uint64_t process_uid) const;
  uint64_t ToRealtimeNs(uint64_t process_uid, uint64_t cupti_ns) const {
    return Clocks(process_uid).ToRealtimeNs(cupti_ns);
  }
  // ns since the origin, clamped at 0.
  uint64_t ToOriginNs(uint64_t process_uid, uint64_t cupti_ns) const {
    return RealtimeToOriginNs(ToRealtimeNs(process_uid, cupti_ns));
  }
  uint64_t RealtimeToOriginNs(uint64_t realtime_ns) const {
    return realtime_ns > origin_realtime_ns_ ? realtime_ns - origin_realtime_ns_ : 0;
  }

  // Built by the reader (event_reader.cc).
  void SetClocks(uint64_t process_uid, const ClockAlign& clocks) { clocks_[process_uid] = clocks; }
  // Considers an event of a process at realtime_ns for the origin.
  void ConsiderEvent(uint64_t realtime_ns) {
    if (!has_origin_ || realtime_ns < origin_realtime_ns_) origin_realtime_ns_ = realtime_ns;
    has_origin_ = true;
  }

 private:
  uint64_t origin_realtime_ns_ = 0;
  bool has_origin_ = false;
  absl::flat_hash_map<uint64_t, ClockAlign> clocks_;
};

// "2026-11-29T09:26:55.905855123Z".
std::string UtcTime(uint64_t realtime_ns);

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_TIMEBASE_H_
