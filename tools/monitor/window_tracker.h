// tools/monitor/window_tracker.h: the node monitor's capture-window
// summaries (issue 24, the always-on duty cycle). Follows the trace files
// that collectors write into one or more directories (`gpscope-monitor
// --traces DIR`: their GPSCOPE_OUTPUT), cuts each traced process's capture
// windows out of them as they close (tools/reader/window_cut.h) and
// summarizes each with the analyzer's own summary analyses
// (tools/analyses/window_summary.h): the traced job pays nothing for it.
//
//   WindowTracker tracker(options);
//   for (;;) {
//     WindowTracker::Result r = tracker.Poll(now_realtime_ns, now_mono_ns);
//     for (const analyses::WindowSummary& s : r.summaries) ...  // closed windows
//     for (uint64_t uid : r.gone) ...                           // forget its series
//   }
//
// A window opens at the first chunk of a process that holds GPU activity or
// CUDA API calls (standby writes only metric samples), and is taken as
// closed when
//   - a LostInterval(TRACING_DISABLED) arrives that starts after the
//     window's first activity (the collector writes it when the next window
//     opens, or at exit): reason "tracing_disabled", the window ends at its
//     start;
//   - the process's end chunk arrives: "process_end";
//   - the process runs a duty cycle (GPSCOPE_DUTY=ON/PERIOD in its header):
//     a duty window ends at most ON after its first activity, and the
//     collector writes its records out 100 ms after it ends; so once the
//     wall clock is past first activity + ON + settle_ns and no activity
//     came for settle_ns: "duty_schedule" (the summary comes seconds after
//     the window, not a PERIOD later). A longer window in such a process
//     (`gpscope attach`) keeps producing activity and closes by the above.
// A window still open when the monitor stops is not summarized.
//
// Memory: per process its header and definitions (bounded by the reader's
// limits) and its open window as a compressed trace of at most
// max_window_events events and max_window_bytes bytes. Past either, the
// window's further events are left out (their chunks keep definitions and
// notices), counted, and recorded in the window's trace as a drop, so its
// summary says that it undercounts (the incomplete-data finding, and
// events_not_analysed). A process with no chunk for ttl_ns (its end chunk
// included) is forgotten and reported in Result::gone.
//
// Files: only regular files of the monitor's user or root, no symbolic
// links (reader::FollowPolicy::trusted_only, docs/security.md). A file that
// is refused or is not a readable trace is one log line and skipped from
// then on; damage inside a file is skipped to the next frame.
//
// Thread model: single-threaded (the monitor's window thread): Poll() reads
// and analyses on the calling thread.
#ifndef GPSCOPE_TOOLS_MONITOR_WINDOW_TRACKER_H_
#define GPSCOPE_TOOLS_MONITOR_WINDOW_TRACKER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tools/analyses/window_summary.h"
#include "tools/reader/trace_tail.h"

namespace gpscope::monitor {

struct WindowTrackerOptions {
  std::vector<std::string> dirs;
  uint64_t max_window_events = 2000000;
  uint64_t max_window_bytes = 64ull << 20;  // the window's compressed trace
  uint64_t settle_ns = 2000000000ull;       // duty windows: see above
  uint64_t ttl_ns = 600ull * 1000000000ull;
  uid_t uid = 0;  // files of this user (and root) are read: the monitor's euid
};

struct WindowTrackerStats {
  uint64_t files = 0;          // followed
  uint64_t files_refused = 0;  // links, other users' files, not traces
  uint64_t windows = 0;        // summarized
  uint64_t events_not_analysed = 0;
  uint64_t damaged_regions = 0;
};

class WindowTracker {
 public:
  explicit WindowTracker(WindowTrackerOptions options);
  ~WindowTracker();
  WindowTracker(const WindowTracker&) = delete;
  WindowTracker& operator=(const WindowTracker&) = delete;

  struct Result {
    std::vector<analyses::WindowSummary> summaries;  // in the order the windows closed
    std::vector<uint64_t> gone;                      // process uids forgotten (ttl_ns)
    std::vector<std::string> log;                    // one line each, for the monitor's log
  };
  // Lists the directories, reads what was appended to every file and
  // closes the windows that ended. The clocks are the caller's (tests pass
  // their own): CLOCK_REALTIME and CLOCK_MONOTONIC, ns.
  Result Poll(uint64_t now_realtime_ns, uint64_t now_mono_ns);

  const WindowTrackerStats& stats() const { return stats_; }
  size_t processes() const;  // tracked now

 private:
  struct Process;
  class Visitor;
  void OnChunk(const std::string& path, const proto::Chunk& chunk);
  void OpenWindow(Process& p, uint64_t first_activity_ns);
  void CloseWindow(Process& p, const char* reason, uint64_t end_ns);

  WindowTrackerOptions options_;
  std::map<std::string, std::unique_ptr<reader::FrameFollower>> followers_;
  std::set<std::string> refused_;
  std::map<uint64_t, std::unique_ptr<Process>> processes_;  // by process_uid
  std::map<uint64_t, uint64_t> last_seen_mono_;             // by process_uid, live or ended
  uint64_t now_mono_ns_ = 0;
  Result* result_ = nullptr;  // during Poll
  WindowTrackerStats stats_;
};

}  // namespace gpscope::monitor

#endif  // GPSCOPE_TOOLS_MONITOR_WINDOW_TRACKER_H_
