// tools/gpscope/progress.h: the live progress line of `gpscope run` and the
// progress bar of `gpscope attach`, on stderr.
//
// Rendering is pure (tested with synthetic numbers); ProgressPrinter writes
// it over itself ("\r" + line + erase-to-end) only when enabled, which the
// launcher sets from isatty(stderr): piped or logged stderr stays clean.
//
//   gpscope 01:23 | window 00:37 left | 2 processes | 1.2M events | 12.3 MiB | 0 drops
//   gpscope attach [########............]  40%  04:00 / 10:00 | 1.2M events | 0 drops
//
// Thread model: single-threaded (the launcher's main thread).
#ifndef GPSCOPE_TOOLS_GPSCOPE_PROGRESS_H_
#define GPSCOPE_TOOLS_GPSCOPE_PROGRESS_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "tools/reader/trace_tail.h"

namespace gpscope::launcher {

// The capture window as given on the command line, relative to the start
// of the run (the collector's own clock starts a moment later: the
// launcher's numbers are an estimate).
struct WindowPlan {
  uint64_t delay_ms = 0;
  uint64_t duration_ms = 0;  // 0: until exit
  bool triggered = false;    // an NVTX range or step count decides too
};

struct RunProgress {
  uint64_t elapsed_ms = 0;
  WindowPlan window;
  reader::TailStats stats;
};

// "01:23", "1:02:03".
std::string FormatClock(uint64_t ms);
// 999 -> "999", 12345 -> "12.3k", 1234567 -> "1.2M".
std::string FormatCount(uint64_t n);
// "512 B", "12.3 KiB", "1.5 MiB", "2.0 GiB".
std::string FormatBytes(uint64_t bytes);

// One line, at most `width` columns.
std::string RenderRunProgress(const RunProgress& p, size_t width);
std::string RenderAttachProgress(uint64_t elapsed_ms, uint64_t total_ms, uint64_t events,
                                 uint64_t drops, size_t width);

class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, bool enabled) : out_(out), enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  // Replaces the line shown.
  void Show(const std::string& line);
  // Erases the line (before other output, and at the end).
  void Clear();

 private:
  std::ostream& out_;
  bool enabled_;
  bool shown_ = false;
};

// Columns of the terminal on fd, or `fallback`.
size_t TerminalWidth(int fd, size_t fallback = 100);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_PROGRESS_H_
