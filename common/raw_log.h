// common/raw_log.h: the collector's only logger, and what the shared
// modules beside it log through (the node monitor's trace writer errors).
// Formats into a stack buffer and emits one write(2) to stderr, prefixed
// "gpscope[PID]: ". Never allocates. The message is sanitized
// (common/safe_text.h) before it is written: whatever a value echoed in it
// holds, it stays one line and no control character reaches the terminal.
// Cold paths only (start-up, errors, exit): the hot path never logs.
#ifndef GPSCOPE_COMMON_RAW_LOG_H_
#define GPSCOPE_COMMON_RAW_LOG_H_

namespace gpscope::common {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// Messages above this level are suppressed (set from GPSCOPE_LOG_LEVEL).
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

// printf-style; a trailing newline is added.
void RawLog(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// RawLog(kError, "%s", line): the trace writer's error sink
// (format::ChunkWriter::Options::log_error).
void RawLogError(const char* line);

}  // namespace gpscope::common

#define GPSCOPE_LOG_ERROR(...) ::gpscope::common::RawLog(::gpscope::common::LogLevel::kError, __VA_ARGS__)
#define GPSCOPE_LOG_WARNING(...) ::gpscope::common::RawLog(::gpscope::common::LogLevel::kWarning, __VA_ARGS__)
#define GPSCOPE_LOG_INFO(...) ::gpscope::common::RawLog(::gpscope::common::LogLevel::kInfo, __VA_ARGS__)
#define GPSCOPE_LOG_DEBUG(...) ::gpscope::common::RawLog(::gpscope::common::LogLevel::kDebug, __VA_ARGS__)

#endif  // GPSCOPE_COMMON_RAW_LOG_H_
