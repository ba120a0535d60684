#include "metrics/host_stats.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace gpscope::metrics {
namespace {

// A real line from /proc/<pid>/stat (a python process), fields 1..52.
constexpr char kPythonStat[] =
    "12345 (python3) S 1 12345 12345 34816 12345 4194560 120005 0 5 0 1500 320 0 0 20 0 42 0 "
    "123456 987654321 5678 18446744073709551615 94000000000000 94000000100000 140720000000000 "
    "0 0 0 0 16781312 134234626 0 0 0 17 3 0 0 0 0 0 94000000200000 94000000210000 "
    "94000001000000 140720000001000 140720000001100 140720000001100 140720000002000 0\n";

bool Parse(const std::string& s, TaskStat* t) { return ParseTaskStat(s.data(), s.size(), t); }

TEST(ParseTaskStatTest, ReadsTimesThreadsAndRss) {
  TaskStat t;
  ASSERT_TRUE(Parse(kPythonStat, &t));
  EXPECT_STREQ(t.comm, "python3");
  EXPECT_EQ(t.state, 'S');
  EXPECT_EQ(t.utime_ticks, 1500u);
  EXPECT_EQ(t.stime_ticks, 320u);
  EXPECT_EQ(t.num_threads, 42);
  EXPECT_EQ(t.rss_pages, 5678);
}

TEST(ParseTaskStatTest, NameMayHoldBlanksAndParentheses) {
  TaskStat t;
  ASSERT_TRUE(Parse("77 (my (odd) name) R 1 77 77 0 -1 0 0 0 0 0 9 8 0 0 20 0 3 0 1 2 4 0\n", &t));
  EXPECT_STREQ(t.comm, "my (odd) name");
  EXPECT_EQ(t.state, 'R');
  EXPECT_EQ(t.utime_ticks, 9u);
  EXPECT_EQ(t.stime_ticks, 8u);
  EXPECT_EQ(t.num_threads, 3);
  EXPECT_EQ(t.rss_pages, 4);
}

TEST(ParseTaskStatTest, NegativeFieldsBeforeUtimeAreSkipped) {
  TaskStat t;  // tty_nr 0, tpgid -1, priority -51 (a real-time thread)
  ASSERT_TRUE(
      Parse("9 (rcu_preempt) I 2 0 0 0 -1 2129984 0 0 0 0 0 731 0 0 -51 0 1 0 11 0 0 0", &t));
  EXPECT_EQ(t.stime_ticks, 731u);
  EXPECT_EQ(t.num_threads, 1);
}

TEST(ParseTaskStatTest, RejectsMalformedText) {
  TaskStat t;
  EXPECT_FALSE(Parse("", &t));
  EXPECT_FALSE(Parse("12 python3 S 1 2 3", &t));                     // no parentheses
  EXPECT_FALSE(Parse("12 (python3 S 1 2 3 4 5 6 7 8 9 10 11", &t));  // no ')'
  EXPECT_FALSE(Parse("12 (python3) S 1 2 3 4 5 6 7 8 9 10", &t));    // ends before utime
  EXPECT_FALSE(Parse("12 (python3) S 1 2 3 4 5 6 7 8 9 10 x 3", &t));
  std::string cut(kPythonStat, 60);  // truncated read
  EXPECT_FALSE(Parse(cut, &t));
}

TEST(ParseTaskStatTest, LongNamesAreTruncatedNotOverflowed) {
  TaskStat t;
  std::string name(100, 'x');
  ASSERT_TRUE(
      Parse("1 (" + name + ") S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21", &t));
  EXPECT_EQ(std::strlen(t.comm), sizeof(t.comm) - 1);
}

constexpr char kProcStatA[] =
    "cpu  4705 356 584 3699176 23060 0 277 0 0 0\n"
    "cpu0 1393 280 290 1849515 11510 0 143 0 0 0\n"
    "intr 1462898 33 0 0 0 0 0\n";

TEST(ParseSystemStatTest, ReadsTheAggregateLine) {
  SystemCpuTimes c;
  ASSERT_TRUE(ParseSystemStat(kProcStatA, sizeof(kProcStatA) - 1, &c));
  EXPECT_EQ(c.user, 4705u);
  EXPECT_EQ(c.nice, 356u);
  EXPECT_EQ(c.system, 584u);
  EXPECT_EQ(c.idle, 3699176u);
  EXPECT_EQ(c.iowait, 23060u);
  EXPECT_EQ(c.irq, 0u);
  EXPECT_EQ(c.softirq, 277u);
  EXPECT_EQ(c.steal, 0u);
  EXPECT_EQ(c.busy(), 4705u + 356 + 584 + 277);
  EXPECT_EQ(c.total(), c.busy() + 3699176 + 23060);
}

TEST(ParseSystemStatTest, AcceptsOldKernelsAndRejectsOtherLines) {
  SystemCpuTimes c;
  const std::string old = "cpu 10 20 30 40\n";
  ASSERT_TRUE(ParseSystemStat(old.data(), old.size(), &c));
  EXPECT_EQ(c.idle, 40u);
  EXPECT_EQ(c.iowait, 0u);
  const std::string per_cpu = "cpu0 1 2 3 4 5\n";
  EXPECT_FALSE(ParseSystemStat(per_cpu.data(), per_cpu.size(), &c));
  const std::string short_line = "cpu 1 2 3\n";
  EXPECT_FALSE(ParseSystemStat(short_line.data(), short_line.size(), &c));
}

TEST(ParseStatmTest, ReadsResidentPages) {
  const std::string s = "1048576 25000 3000 500 0 90000 0\n";
  uint64_t pages = 0;
  ASSERT_TRUE(ParseStatm(s.data(), s.size(), &pages));
  EXPECT_EQ(pages, 25000u);
  EXPECT_FALSE(ParseStatm("123", 3, &pages));
}

TEST(CpuPercentTest, IsAShareOfOneCore) {
  EXPECT_DOUBLE_EQ(CpuPercent(50000000, 100000000), 50.0);
  EXPECT_DOUBLE_EQ(CpuPercent(300000000, 100000000), 300.0);  // three busy threads
  EXPECT_DOUBLE_EQ(CpuPercent(5, 0), 0.0);
}

TEST(SystemCpuShareTest, BusyAndIowaitBetweenTwoReadings) {
  SystemCpuTimes a, b;
  a.user = 1000;
  a.system = 200;
  a.idle = 8000;
  a.iowait = 100;
  b = a;
  b.user += 300;
  b.system += 100;
  b.idle += 500;
  b.iowait += 100;  // 1000 ticks passed
  SystemCpuShare share;
  ASSERT_TRUE(ComputeSystemCpuShare(a, b, &share));
  EXPECT_DOUBLE_EQ(share.busy_pct, 40.0);
  EXPECT_DOUBLE_EQ(share.iowait_pct, 10.0);
  EXPECT_FALSE(ComputeSystemCpuShare(a, a, &share));  // no tick passed
  EXPECT_FALSE(ComputeSystemCpuShare(b, a, &share));  // went back
}

// A fixture /proc tree.
class FixtureProc {
 public:
  FixtureProc() {
    char tmpl[] = "/tmp/gpscope_proc_XXXXXX";
    root_ = mkdtemp(tmpl);
    Mkdir("/self");
    Mkdir("/self/task");
  }
  ~FixtureProc() { std::system(("rm -rf " + root_).c_str()); }
  void Mkdir(const std::string& rel) { mkdir((root_ + rel).c_str(), 0755); }
  void Write(const std::string& rel, const std::string& text) {
    FILE* f = std::fopen((root_ + rel).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const char* root() const { return root_.c_str(); }

 private:
  std::string root_;
};

TEST(ProcHostSourceTest, ReadsAFixtureTree) {
  FixtureProc proc;
  proc.Write("/self/stat", kPythonStat);
  proc.Write("/self/statm", "1048576 25000 3000 500 0 90000 0\n");
  proc.Write("/stat", kProcStatA);
  proc.Mkdir("/self/task/12345");
  proc.Write("/self/task/12345/stat",
             "12345 (python3) S 1 2 3 4 5 6 7 8 9 10 700 100 0 0 20 0 3 0 1 2 4 0\n");
  proc.Mkdir("/self/task/12399");
  proc.Write("/self/task/12399/stat",
             "12399 (pt_autograd_0) R 1 2 3 4 5 6 7 8 9 10 40 2 0 0 20 0 3 0 1 2 4 0\n");
  proc.Mkdir("/self/task/12400");  // a thread that exited between listing and reading

  ProcHostSource host(proc.root());
  const char* why = nullptr;
  ASSERT_TRUE(host.Open(&why));
  HostSnapshot s;
  host.Read(&s);
  ASSERT_TRUE(s.has_process_cpu);
  const uint64_t ns_per_tick = 1000000000ull / host.ticks_per_second();
  EXPECT_EQ(s.user_ns, 1500 * ns_per_tick);
  EXPECT_EQ(s.system_ns, 320 * ns_per_tick);
  ASSERT_TRUE(s.has_rss);
  EXPECT_EQ(s.rss_bytes, 25000ull * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  ASSERT_TRUE(s.has_system);
  EXPECT_EQ(s.system.iowait, 23060u);
  EXPECT_GT(s.mono_ns, 0u);

  ThreadCpu threads[8];
  ThreadScan scan;
  ASSERT_TRUE(host.ReadThreads(threads, 8, &scan));
  EXPECT_EQ(scan.total, 3u);
  ASSERT_EQ(scan.count, 2u);
  if (threads[0].tid > threads[1].tid) std::swap(threads[0], threads[1]);
  EXPECT_EQ(threads[0].tid, 12345u);
  EXPECT_EQ(threads[0].cpu_ticks, 800u);
  EXPECT_STREQ(threads[0].comm, "python3");
  EXPECT_EQ(threads[1].tid, 12399u);
  EXPECT_EQ(threads[1].cpu_ticks, 42u);
  EXPECT_STREQ(threads[1].comm, "pt_autograd_0");

  // Re-reading regenerates; a cap truncates but still counts.
  proc.Write("/self/statm", "1048576 26000 3000 500 0 90000 0\n");
  host.Read(&s);
  EXPECT_EQ(s.rss_bytes, 26000ull * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  ASSERT_TRUE(host.ReadThreads(threads, 1, &scan));
  EXPECT_EQ(scan.count, 1u);
  EXPECT_EQ(scan.total, 3u);
}

TEST(ProcHostSourceTest, MissingTreeFailsToOpen) {
  ProcHostSource host("/nonexistent/gpscope");
  const char* why = nullptr;
  EXPECT_FALSE(host.Open(&why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("/nonexistent/gpscope"), std::string::npos);
}

TEST(ProcHostSourceTest, ReadsThisProcessFromTheRealProc) {
  ProcHostSource host;
  const char* why = nullptr;
  ASSERT_TRUE(host.Open(&why));
  HostSnapshot a, b;
  host.Read(&a);
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < 30000000; ++i) x = x + i;  // burn some user time
  host.Read(&b);
  ASSERT_TRUE(a.has_process_cpu && b.has_process_cpu);
  EXPECT_GT(b.user_ns, a.user_ns);
  EXPECT_GT(b.mono_ns, a.mono_ns);
  EXPECT_TRUE(b.has_rss);
  EXPECT_GT(b.rss_bytes, 0u);
  EXPECT_TRUE(b.has_system);
  EXPECT_GT(b.system.total(), 0u);

  // A named thread shows up with its name.
  std::atomic<bool> done{false};
  std::atomic<uint32_t> tid{0};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "gpscope-test-t");
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    while (!done) std::this_thread::yield();
  });
  while (tid == 0) std::this_thread::yield();
  ThreadCpu threads[256];
  ThreadScan scan;
  ASSERT_TRUE(host.ReadThreads(threads, 256, &scan));
  done = true;
  t.join();
  EXPECT_GE(scan.count, 2u);
  bool found = false;
  for (size_t i = 0; i < scan.count; ++i) {
    if (threads[i].tid == tid.load()) {
      found = true;
      EXPECT_STREQ(threads[i].comm, "gpscope-test-t");
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace gpscope::metrics
