// metrics/host_stats.h: host-side readings for the sampler: this
// process's CPU time and RSS, its threads' CPU time and names, and the
// node's CPU busy and iowait shares. They tell "GPU idle, CPU busy" from
// "GPU idle, CPU idle".
//
// Two layers:
//  - pure parsers of /proc text (ParseTaskStat, ParseSystemStat, ParseStatm)
//    and the derivations between two readings (CpuPercent, SystemCpuShare),
//    unit-tested with fixture strings;
//  - HostSource, the reader: ProcHostSource opens the files once and re-reads
//    them with pread() into fixed buffers (procfs regenerates the text on
//    every read at offset 0), so steady-state reads make no allocation and
//    one syscall per file. Tests give it a fixture directory as `proc_root`,
//    or fake HostSource entirely.
//
//   ProcHostSource host;            // "/proc"
//   host.Open(&why);
//   HostSnapshot a, b;
//   host.Read(&a); ...; host.Read(&b);
//   double user_pct = CpuPercent(b.user_ns - a.user_ns, b.mono_ns - a.mono_ns);
//
// Thread model: a HostSource is used by one thread (the sampler thread).
// Reading /proc costs syscalls, so it never runs on an application thread.
#ifndef GPSCOPE_METRICS_HOST_STATS_H_
#define GPSCOPE_METRICS_HOST_STATS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gpscope::metrics {

// ---------------------------------------------------------------- parsers --

// One line of /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat.
struct TaskStat {
  char comm[32] = {};        // the name between the parentheses (<= 15 chars in Linux)
  char state = 0;            // 'R', 'S', ...
  uint64_t utime_ticks = 0;  // field 14, clock ticks (sysconf(_SC_CLK_TCK))
  uint64_t stime_ticks = 0;  // field 15
  int64_t num_threads = 0;   // field 20
  int64_t rss_pages = 0;     // field 24
};
// The name may hold blanks and parentheses ("(my (odd) name)"): it runs from
// the first '(' to the last ')'. False on malformed text.
bool ParseTaskStat(const char* text, size_t len, TaskStat* out);

// The aggregate "cpu" line of /proc/stat, in clock ticks.
struct SystemCpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  // guest time is already inside user/nice, so it is not added again.
  uint64_t busy() const { return user + nice + system + irq + softirq + steal; }
  uint64_t total() const { return busy() + idle + iowait; }
};
bool ParseSystemStat(const char* text, size_t len, SystemCpuTimes* out);

// /proc/<pid>/statm: the second field, resident pages.
bool ParseStatm(const char* text, size_t len, uint64_t* resident_pages);

// CPU time as a percentage of one core over a wall interval (may exceed 100
// for several threads). 0 when no wall time passed.
double CpuPercent(uint64_t cpu_delta_ns, uint64_t wall_delta_ns);

// Node CPU shares between two readings: busy and iowait as percent of all
// CPU time (0-100). False when the counters did not advance (or went back).
struct SystemCpuShare {
  double busy_pct = 0;
  double iowait_pct = 0;
};
bool ComputeSystemCpuShare(const SystemCpuTimes& before, const SystemCpuTimes& after,
                           SystemCpuShare* out);

// ---------------------------------------------------------------- readers --

struct HostSnapshot {
  uint64_t mono_ns = 0;  // CLOCK_MONOTONIC when read (for rates)
  bool has_process_cpu = false;
  uint64_t user_ns = 0;  // this process, all threads
  uint64_t system_ns = 0;
  bool has_system = false;
  SystemCpuTimes system;  // ticks
  bool has_rss = false;
  uint64_t rss_bytes = 0;
};

struct ThreadCpu {
  uint32_t tid = 0;
  uint64_t cpu_ticks = 0;  // utime + stime
  char comm[16] = {};
};

struct ThreadScan {
  size_t count = 0;      // entries written
  size_t total = 0;      // threads found (more than count when over cap)
  uint64_t mono_ns = 0;  // CLOCK_MONOTONIC when read
};

class HostSource {
 public:
  virtual ~HostSource() = default;
  // Cold. False when nothing can be read; *reason says why.
  virtual bool Open(const char** reason) = 0;
  // Steady path, no allocation. Fills what it can; has_* say what.
  virtual void Read(HostSnapshot* out) = 0;
  // Steady path, no allocation: the CPU time of up to `cap` threads of this
  // process, in no particular order. False when the thread list cannot be read.
  virtual bool ReadThreads(ThreadCpu* out, size_t cap, ThreadScan* scan) = 0;
  virtual uint64_t ticks_per_second() const = 0;
};

// Reads <proc_root>/self/{stat,statm,task/}, <proc_root>/stat. With the real
// "/proc", process CPU time comes from getrusage() (microseconds, not 10 ms
// ticks); with a fixture root, from <proc_root>/self/stat. Keeps three or
// four fds open (O_CLOEXEC) for its life; /proc/self is resolved at Open(),
// so a fork child must open its own.
class ProcHostSource : public HostSource {
 public:
  explicit ProcHostSource(const char* proc_root = "/proc");
  ~ProcHostSource() override;
  ProcHostSource(const ProcHostSource&) = delete;
  ProcHostSource& operator=(const ProcHostSource&) = delete;

  bool Open(const char** reason) override;
  void Read(HostSnapshot* out) override;
  bool ReadThreads(ThreadCpu* out, size_t cap, ThreadScan* scan) override;
  uint64_t ticks_per_second() const override { return ticks_per_second_; }

 private:
  std::string root_;
  bool real_proc_;
  uint64_t ticks_per_second_ = 100;
  uint64_t page_bytes_ = 4096;
  int self_stat_fd_ = -1;
  int statm_fd_ = -1;
  int stat_fd_ = -1;
  int task_dir_fd_ = -1;
  std::string error_;
  std::unique_ptr<char[]> dirents_;  // getdents64 buffer
  static constexpr size_t kDirentBytes = 32 * 1024;
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_HOST_STATS_H_
