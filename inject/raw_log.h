// inject/raw_log.h: the collector's only logger. Formats into a stack buffer
// and emits one write(2) to stderr, prefixed "gpscope[PID]: ". Never
// allocates. The message is sanitized (inject/safe_text.h) before it is
// written: whatever a value echoed in it holds, it stays one line and no
// control character reaches the terminal.
// Cold paths only (start-up, errors, exit): the hot path never logs.
#ifndef GPSCOPE_INJECT_RAW_LOG_H_
#define GPSCOPE_INJECT_RAW_LOG_H_

namespace gpscope::inject {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// Messages above this level are suppressed (set from GPSCOPE_LOG_LEVEL).
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

// printf-style; a trailing newline is added.
void RawLog(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace gpscope::inject

#define GPSCOPE_LOG_ERROR(...) ::gpscope::inject::RawLog(::gpscope::inject::LogLevel::kError, __VA_ARGS__)
#define GPSCOPE_LOG_WARNING(...) ::gpscope::inject::RawLog(::gpscope::inject::LogLevel::kWarning, __VA_ARGS__)
#define GPSCOPE_LOG_INFO(...) ::gpscope::inject::RawLog(::gpscope::inject::LogLevel::kInfo, __VA_ARGS__)
#define GPSCOPE_LOG_DEBUG(...) ::gpscope::inject::RawLog(::gpscope::inject::LogLevel::kDebug, __VA_ARGS__)

#endif  // GPSCOPE_INJECT_RAW_LOG_H_
