#include "metrics/host_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "common/posix.h"

namespace gpscope::metrics {
namespace {

// Cursor over a text buffer that is not NUL-terminated.
struct Cursor {
  const char* p;
  const char* end;
  void SkipBlanks() {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
  }
  bool Int(int64_t* out) {
    SkipBlanks();
    bool neg = false;
    if (p < end && *p == '-') {
      neg = true;
      ++p;
    }
    if (p >= end || *p < '0' || *p > '9') return false;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }
  bool Uint(uint64_t* out) {
    int64_t v;
    if (!Int(&v) || v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  bool Skip(int n) {  // n blank-separated fields
    for (int i = 0; i < n; ++i) {
      SkipBlanks();
      if (p >= end || *p == '\n') return false;
      while (p < end && *p != ' ' && *p != '\t' && *p != '\n') ++p;
    }
    return true;
  }
};

// pread at offset 0 into buf (NUL-terminated); length or -1.
ssize_t ReadAt0(int fd, char* buf, size_t size) {
  if (fd < 0) return -1;
  ssize_t n;
  do {
    n = pread(fd, buf, size - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

}  // namespace

bool ParseTaskStat(const char* text, size_t len, TaskStat* out) {
  const char* end = text + len;
  const char* open = static_cast<const char*>(std::memchr(text, '(', len));
  if (open == nullptr) return false;
  const char* close = nullptr;
  for (const char* q = end; q > open;) {
    if (*--q == ')') {
      close = q;
      break;
    }
  }
  if (close == nullptr) return false;
  *out = TaskStat{};
  size_t name_len = static_cast<size_t>(close - open - 1);
  if (name_len >= sizeof(out->comm)) name_len = sizeof(out->comm) - 1;
  std::memcpy(out->comm, open + 1, name_len);
  out->comm[name_len] = '\0';
  Cursor c{close + 1, end};
  c.SkipBlanks();
  if (c.p >= end) return false;
  out->state = *c.p++;
  // Fields 4..13 precede utime (14) and stime (15).
  if (!c.Skip(10) || !c.Uint(&out->utime_ticks) || !c.Uint(&out->stime_ticks)) return false;
  // 16 cutime 17 cstime 18 priority 19 nice, then 20 num_threads.
  if (!c.Skip(4) || !c.Int(&out->num_threads)) return false;
  // 21 itrealvalue 22 starttime 23 vsize, then 24 rss.
  if (!c.Skip(3) || !c.Int(&out->rss_pages)) return false;
  return true;
}

bool ParseSystemStat(const char* text, size_t len, SystemCpuTimes* out) {
  if (len < 4 || std::memcmp(text, "cpu", 3) != 0 || (text[3] != ' ' && text[3] != '\t')) {
    return false;
  }
  Cursor c{text + 3, text + len};
  uint64_t* fields[] = {&out->user,   &out->nice, &out->system,  &out->idle,
                        &out->iowait, &out->irq,  &out->softirq, &out->steal};
  *out = SystemCpuTimes{};
  int n = 0;
  for (uint64_t* f : fields) {
    if (!c.Uint(f)) break;
    ++n;
  }
  return n >= 4;  // kernels before 2.6 had four; every field after is optional
}

bool ParseStatm(const char* text, size_t len, uint64_t* resident_pages) {
  Cursor c{text, text + len};
  uint64_t size;
  return c.Uint(&size) && c.Uint(resident_pages);
}

double CpuPercent(uint64_t cpu_delta_ns, uint64_t wall_delta_ns) {
  if (wall_delta_ns == 0) return 0;
  return 100.0 * static_cast<double>(cpu_delta_ns) / static_cast<double>(wall_delta_ns);
}

bool ComputeSystemCpuShare(const SystemCpuTimes& before, const SystemCpuTimes& after,
                           SystemCpuShare* out) {
  if (after.total() <= before.total() || after.busy() < before.busy() ||
      after.iowait < before.iowait) {
    return false;
  }
  double total = static_cast<double>(after.total() - before.total());
  out->busy_pct = 100.0 * static_cast<double>(after.busy() - before.busy()) / total;
  out->iowait_pct = 100.0 * static_cast<double>(after.iowait - before.iowait) / total;
  return true;
}

// ------------------------------------------------------------ ProcHostSource --

ProcHostSource::ProcHostSource(const char* proc_root)
    : root_(proc_root), real_proc_(root_ == "/proc") {}

ProcHostSource::~ProcHostSource() {
  for (int fd : {self_stat_fd_, statm_fd_, stat_fd_, task_dir_fd_}) {
    if (fd >= 0) close(fd);
  }
}

bool ProcHostSource::Open(const char** reason) {
  long tps = sysconf(_SC_CLK_TCK);
  if (tps > 0) ticks_per_second_ = static_cast<uint64_t>(tps);
  long page = sysconf(_SC_PAGESIZE);
  if (page > 0) page_bytes_ = static_cast<uint64_t>(page);
  auto open_file = [&](const char* rel, int flags) {
    std::string path = root_ + rel;
    return open(path.c_str(), flags | O_RDONLY | O_CLOEXEC);
  };
  // Opened once: /proc/self resolves now, so these stay this process's files.
  // With the real /proc, process CPU time comes from getrusage().
  if (!real_proc_) self_stat_fd_ = open_file("/self/stat", 0);
  statm_fd_ = open_file("/self/statm", 0);
  stat_fd_ = open_file("/stat", 0);
  task_dir_fd_ = open_file("/self/task", O_DIRECTORY);
  if (task_dir_fd_ >= 0) dirents_.reset(new (std::nothrow) char[kDirentBytes]);
  if (self_stat_fd_ < 0 && statm_fd_ < 0 && stat_fd_ < 0 && task_dir_fd_ < 0 && !real_proc_) {
    error_ = "cannot open " + root_ + "/self/stat, /self/statm, /stat or /self/task";
    *reason = error_.c_str();
    return false;
  }
  return true;
}

void ProcHostSource::Read(HostSnapshot* out) {
  *out = HostSnapshot{};
  out->mono_ns = common::ClockNs(CLOCK_MONOTONIC);
  char buf[1024];
  if (real_proc_) {
    rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
      out->has_process_cpu = true;
      out->user_ns = static_cast<uint64_t>(ru.ru_utime.tv_sec) * 1000000000ull +
                     static_cast<uint64_t>(ru.ru_utime.tv_usec) * 1000ull;
      out->system_ns = static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1000000000ull +
                       static_cast<uint64_t>(ru.ru_stime.tv_usec) * 1000ull;
    }
  } else {
    ssize_t n = ReadAt0(self_stat_fd_, buf, sizeof(buf));
    TaskStat ts;
    if (n > 0 && ParseTaskStat(buf, static_cast<size_t>(n), &ts)) {
      out->has_process_cpu = true;
      out->user_ns = ts.utime_ticks * (1000000000ull / ticks_per_second_);
      out->system_ns = ts.stime_ticks * (1000000000ull / ticks_per_second_);
    }
  }
  // /proc/stat is long on big nodes (a line per CPU, thousands of IRQ
  // counters); the aggregate line comes first and is all we read.
  ssize_t n = ReadAt0(stat_fd_, buf, 512);
  if (n > 0) out->has_system = ParseSystemStat(buf, static_cast<size_t>(n), &out->system);
  n = ReadAt0(statm_fd_, buf, sizeof(buf));
  uint64_t pages;
  if (n > 0 && ParseStatm(buf, static_cast<size_t>(n), &pages)) {
    out->has_rss = true;
    out->rss_bytes = pages * page_bytes_;
  }
}

bool ProcHostSource::ReadThreads(ThreadCpu* out, size_t cap, ThreadScan* scan) {
  *scan = ThreadScan{};
  scan->mono_ns = common::ClockNs(CLOCK_MONOTONIC);
  size_t* total = &scan->total;
  if (task_dir_fd_ < 0 || dirents_ == nullptr) return false;
  if (lseek(task_dir_fd_, 0, SEEK_SET) != 0) return false;
  size_t count = 0;
  for (;;) {
    long got = syscall(SYS_getdents64, task_dir_fd_, dirents_.get(), kDirentBytes);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, char name[].
      const char* rec = dirents_.get() + off;
      uint16_t reclen;
      std::memcpy(&reclen, rec + 16, sizeof(reclen));
      const char* name = rec + 19;
      off += reclen;
      uint64_t tid = 0;
      const char* q = name;
      for (; *q >= '0' && *q <= '9'; ++q) tid = tid * 10 + static_cast<uint64_t>(*q - '0');
      if (q == name || *q != '\0' || tid == 0 || tid > 0xffffffffull) continue;  // ".", ".."
      ++*total;
      if (count == cap) continue;
      // "<tid>/stat", relative to the task directory.
      char rel[32];
      size_t len = static_cast<size_t>(q - name);
      if (len + 6 > sizeof(rel)) continue;
      std::memcpy(rel, name, len);
      std::memcpy(rel + len, "/stat", 6);
      int fd = openat(task_dir_fd_, rel, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;  // the thread just exited
      char buf[1024];
      ssize_t n = ReadAt0(fd, buf, sizeof(buf));
      close(fd);
      TaskStat ts;
      if (n <= 0 || !ParseTaskStat(buf, static_cast<size_t>(n), &ts)) continue;
      ThreadCpu& t = out[count++];
      t.tid = static_cast<uint32_t>(tid);
      t.cpu_ticks = ts.utime_ticks + ts.stime_ticks;
      std::memcpy(t.comm, ts.comm, sizeof(t.comm) - 1);
      t.comm[sizeof(t.comm) - 1] = '\0';
    }
  }
  scan->count = count;
  return true;
}

}  // namespace gpscope::metrics
