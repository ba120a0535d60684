// Tests of tools/monitor/window_tracker.h: the monitor's --traces follows a
// growing trace and summarizes each capture window when it closes (the
// trace's time outside windows begins, the process ends, a duty window's
// time is over), with bounded memory, and skips what it may not read
// (links, other users' files: "another user" needs root, SKIPPED
// otherwise) and damage, with one log line each. Clocks are the test's.
#include "tools/monitor/window_tracker.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/tools/monitor/duty_trace.h"

namespace gpscope::monitor {
namespace {

using testing::DutyTrace;
using testing::TraceBuilder;

constexpr uint64_t kS = 1'000'000'000;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpscope_window_tracker_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void Append(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

WindowTrackerOptions Options(const std::string& dir) {
  WindowTrackerOptions o;
  o.dirs = {dir};
  o.uid = geteuid();
  o.settle_ns = 1 * kS;
  o.ttl_ns = 60 * kS;
  return o;
}

// A trace whose windows are not duty windows (attach, delay/duration):
// window 1 closes when the trace's time outside windows begins, window 2
// when the process ends; a frame cut in half waits for its second half.
TEST(WindowTrackerTest, EachWindowOfAGrowingTraceIsSummarizedWhenItCloses) {
  TempDir tmp;
  const std::string path = tmp.path() + "/job-42_node7.gpscope";
  DutyTrace d;
  testing::BuildDutyTrace(&d, /*duty=*/"");
  WindowTracker tracker(Options(tmp.path()));

  Append(path, d.bytes().data(), d.first_window_bytes);
  WindowTracker::Result r = tracker.Poll(0, 1 * kS);
  EXPECT_TRUE(r.summaries.empty()) << "window 1 is still open: nothing says it ended";
  EXPECT_TRUE(r.log.empty());
  EXPECT_EQ(tracker.processes(), 1u);

  // The rest, the end frame torn in two: it waits for its second half.
  const size_t end_frame = d.trace.frame_offsets().back();
  const size_t half = end_frame + (d.bytes().size() - end_frame) / 2;
  Append(path, d.bytes().data() + d.first_window_bytes, half - d.first_window_bytes);
  r = tracker.Poll(0, 2 * kS);
  ASSERT_EQ(r.summaries.size(), 1u) << "the time outside windows began: window 1 closed";
  Append(path, d.bytes().data() + half, d.bytes().size() - half);
  WindowTracker::Result r2 = tracker.Poll(0, 3 * kS);
  ASSERT_EQ(r2.summaries.size(), 1u);

  const analyses::WindowSummary& busy = r.summaries[0];
  EXPECT_EQ(busy.close_reason, "tracing_disabled");
  EXPECT_EQ(busy.job_id, "job-42");
  EXPECT_EQ(busy.hostname, "node7");
  EXPECT_EQ(busy.rank, 3);
  EXPECT_EQ(busy.pid, 4242u);
  EXPECT_EQ(busy.trace_path, path);
  ASSERT_EQ(busy.gpus.size(), 1u);
  EXPECT_LT(busy.gpus[0].idle_share, 0.01);
  EXPECT_GT(busy.gpus[0].busy_share, 0.95);
  EXPECT_EQ(busy.gpus[0].kernels, 500u);
  EXPECT_TRUE(busy.top_severity.empty() || busy.top_severity == "info") << busy.top_rule;
  // Window 1 ends where the time outside windows begins.
  EXPECT_EQ(busy.end_realtime_ns, 1'700'000'000'000'000'000ull + d.first_window_end_ns - kS);

  const analyses::WindowSummary& idle = r2.summaries[0];
  EXPECT_EQ(idle.close_reason, "process_end");
  ASSERT_EQ(idle.gpus.size(), 1u);
  EXPECT_GT(idle.gpus[0].idle_share, 0.85);
  EXPECT_EQ(idle.gpus[0].kernels, 200u) << "only window 2's kernels";
  EXPECT_EQ(idle.top_rule, "host-bound");
  EXPECT_EQ(idle.top_severity, "critical");
  EXPECT_GT(idle.top_cost_share, 0.8);
  EXPECT_GE(idle.start_realtime_ns, 1'700'000'000'000'000'000ull + d.second_window_start_ns - kS);
  EXPECT_EQ(idle.events_not_analysed, 0u);
  EXPECT_EQ(tracker.stats().windows, 2u);
  EXPECT_EQ(tracker.processes(), 0u) << "an ended process keeps no state";

  // Forgotten once silent for the ttl.
  EXPECT_TRUE(tracker.Poll(0, 30 * kS).gone.empty());
  EXPECT_EQ(tracker.Poll(0, 64 * kS).gone, std::vector<uint64_t>{0xD00D});
}

// Under GPSCOPE_DUTY a window ends at most ON after its first activity: it
// is summarized once that time (and settle_ns without activity) has passed,
// not when the next window opens a PERIOD later.
TEST(WindowTrackerTest, ADutyWindowClosesOnItsScheduleBeforeTheNextOpens) {
  TempDir tmp;
  const std::string path = tmp.path() + "/job.gpscope";
  DutyTrace d;
  testing::BuildDutyTrace(&d, "1s/10s");
  WindowTracker tracker(Options(tmp.path()));
  Append(path, d.bytes().data(), d.first_window_bytes);
  // The window's first activity is at wall time 1.7e18 + 1 s (DefaultHeader).
  const uint64_t first_wall = 1'700'000'000'000'000'000ull + kS;
  EXPECT_TRUE(tracker.Poll(first_wall + kS, 10 * kS).summaries.empty()) << "ON not over";
  EXPECT_TRUE(tracker.Poll(first_wall + 5 * kS, 10 * kS + kS / 2).summaries.empty())
      << "activity came less than settle_ns ago";
  WindowTracker::Result r = tracker.Poll(first_wall + 5 * kS, 11 * kS);
  ASSERT_EQ(r.summaries.size(), 1u);
  EXPECT_EQ(r.summaries[0].close_reason, "duty_schedule");
  EXPECT_LT(r.summaries[0].gpus.at(0).idle_share, 0.01);

  Append(path, d.bytes().data() + d.first_window_bytes, d.bytes().size() - d.first_window_bytes);
  r = tracker.Poll(first_wall + 30 * kS, 12 * kS);
  ASSERT_EQ(r.summaries.size(), 1u) << "window 1 is not summarized twice";
  EXPECT_EQ(r.summaries[0].top_rule, "host-bound");
}

// Past the cap, the window's further events are left out, counted, and
// recorded in its trace as a drop: the summary says it undercounts.
TEST(WindowTrackerTest, AWindowPastTheEventCapIsSummarizedAsIncomplete) {
  TempDir tmp;
  DutyTrace d;
  testing::BuildDutyTrace(&d, "");
  Append(tmp.path() + "/job.gpscope", d.bytes().data(), d.bytes().size());
  WindowTrackerOptions o = Options(tmp.path());
  o.max_window_events = 300;
  WindowTracker tracker(o);
  const WindowTracker::Result r = tracker.Poll(0, kS);
  ASSERT_EQ(r.summaries.size(), 2u);
  for (const analyses::WindowSummary& s : r.summaries) {
    EXPECT_GT(s.events_not_analysed, 0u);
    EXPECT_LE(s.events, 300u);
    EXPECT_EQ(s.top_rule, "incomplete-data") << "its numbers undercount, and it says so";
    EXPECT_EQ(s.top_severity, "critical");
  }
  EXPECT_EQ(tracker.stats().events_not_analysed,
            r.summaries[0].events_not_analysed + r.summaries[1].events_not_analysed);
}

// A symbolic link, another user's file and a file that is no trace are
// each one log line, then skipped; damage inside a followed file is skipped
// to the next frame; the windows of the good file are still summarized.
TEST(WindowTrackerTest, FilesItMayNotReadAreOneLineEachAndDamageIsSkipped) {
  TempDir tmp;
  const std::string good = tmp.path() + "/good.gpscope";
  DutyTrace d;
  testing::BuildDutyTrace(&d, "");
  Append(good, d.bytes().data(), d.first_window_bytes);
  const uint8_t junk[64] = {0x47, 0x50, 1, 2, 3};
  Append(good, junk, sizeof(junk));
  Append(good, d.bytes().data() + d.first_window_bytes, d.bytes().size() - d.first_window_bytes);
  ASSERT_EQ(symlink(good.c_str(), (tmp.path() + "/link.gpscope").c_str()), 0);
  std::ofstream(tmp.path() + "/notes.gpscope") << "not a trace at all, but named like one";
  const bool root = geteuid() == 0;
  if (root) {
    const std::string other = tmp.path() + "/other.gpscope";
    Append(other, d.bytes().data(), d.bytes().size());
    ASSERT_EQ(chown(other.c_str(), 12345, 12345), 0);
  }

  WindowTracker tracker(Options(tmp.path()));
  WindowTracker::Result r = tracker.Poll(0, kS);
  EXPECT_EQ(r.summaries.size(), 2u);
  std::string log;
  for (const std::string& line : r.log) log += line + "\n";
  EXPECT_EQ(r.log.size(), root ? 3u : 2u) << log;
  EXPECT_NE(log.find("link.gpscope: a symbolic link"), std::string::npos) << log;
  EXPECT_NE(log.find("notes.gpscope: not a gpscope trace"), std::string::npos) << log;
  if (root) {
    EXPECT_NE(log.find("other.gpscope: belongs to uid 12345"), std::string::npos) << log;
  }
  EXPECT_EQ(tracker.stats().damaged_regions, 1u);
  EXPECT_EQ(tracker.stats().files_refused, root ? 3u : 2u);

  r = tracker.Poll(0, 2 * kS);
  EXPECT_TRUE(r.log.empty()) << "each refusal is logged once";
  EXPECT_TRUE(r.summaries.empty());
}

}  // namespace
}  // namespace gpscope::monitor
