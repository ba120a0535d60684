#include "inject/raw_log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace gpscope::inject {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void RawLog(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  const int saved_errno = errno;  // logging must not disturb the caller's errno
  char line[1024];
  int n = snprintf(line, sizeof(line), "gpscope[%d]: ", static_cast<int>(getpid()));
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  size_t len = static_cast<size_t>(n) + static_cast<size_t>(m);
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace gpscope::inject
