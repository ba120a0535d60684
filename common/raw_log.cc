#include "common/raw_log.h"

#include "common/safe_text.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace gpscope::common {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void RawLog(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  const int saved_errno = errno;  // logging must not disturb the caller's errno
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  const size_t text_len = static_cast<size_t>(m) < sizeof(text) ? static_cast<size_t>(m)
                                                                 : sizeof(text) - 1;
  // One line whatever the message holds: values from the environment,
  // paths and library names are echoed in it (safe_text.h).
  char line[1280];
  int n = snprintf(line, sizeof(line), "gpscope[%d]: ", static_cast<int>(getpid()));
  size_t len = static_cast<size_t>(n);
  len += SanitizeInto(text, text_len, line + len, sizeof(line) - len - 1);
  line[len++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
  errno = saved_errno;
}

void RawLogError(const char* line) { RawLog(LogLevel::kError, "%s", line); }

}  // namespace gpscope::common
