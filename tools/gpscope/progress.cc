// tools/gpscope/progress.cc: see progress.h.
#include "tools/gpscope/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpscope::launcher {

std::string FormatClock(uint64_t ms) {
  const uint64_t s = ms / 1000;
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%02d:%02d", s / 60, s % 60);
}

std::string FormatCount(uint64_t n) {
  if (n < 10'000) return absl::StrCat(n);
  const char* units[] = {"k", "M", "G", "T"};
  double v = static_cast<double>(n) / 1000;
  int u = 0;
  for (; v >= 999.95 && u < 3; ++u) v /= 1000;
  return absl::StrFormat("%.1f%s", v, units[u]);
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  for (; v >= 1023.95 && u < 3; ++u) v /= 1024;
  return absl::StrFormat("%.1f %s", v, units[u]);
}

namespace {

std::string Fit(std::string line, size_t width) {
  if (line.size() > width) line.resize(width);
  return line;
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return absl::StrCat(FormatCount(n), " ", n == 1 ? one : many);
}

// What the launcher can say about the window from the command line alone.
std::string WindowText(const RunProgress& p) {
  const WindowPlan& w = p.window;
  if (w.delay_ms == 0 && w.duration_ms == 0) {
    return w.triggered ? "window: NVTX range/steps" : "";
  }
  if (p.elapsed_ms < w.delay_ms) return absl::StrCat("starts in ", FormatClock(w.delay_ms - p.elapsed_ms + 999));
  if (w.duration_ms == 0) return "window open";
  const uint64_t end_ms = w.delay_ms + w.duration_ms;
  if (p.elapsed_ms < end_ms) return absl::StrCat("window ", FormatClock(end_ms - p.elapsed_ms + 999), " left");
  return "window over";
}

}  // namespace

std::string RenderRunProgress(const RunProgress& p, size_t width) {
  const reader::TailStats& s = p.stats;
  std::string line = absl::StrCat("gpscope ", FormatClock(p.elapsed_ms));
  const std::string window = WindowText(p);
  if (!window.empty()) absl::StrAppend(&line, " | ", window);
  absl::StrAppend(&line, " | ", Plural(s.processes, "process", "processes"), " | ",
                  Plural(s.events, "event", "events"), " | ", FormatBytes(s.bytes), " | ",
                  Plural(s.drops, "drop", "drops"));
  if (s.damaged_regions > 0) absl::StrAppend(&line, " | ", s.damaged_regions, " damaged");
  return Fit(std::move(line), width);
}

std::string RenderAttachProgress(uint64_t elapsed_ms, uint64_t total_ms, uint64_t events,
                                 uint64_t drops, size_t width) {
  constexpr size_t kBarCells = 20;
  const uint64_t done = std::min(elapsed_ms, total_ms);
  const size_t filled = total_ms == 0 ? kBarCells : static_cast<size_t>(done * kBarCells / total_ms);
  const uint64_t percent = total_ms == 0 ? 100 : done * 100 / total_ms;
  std::string bar = std::string(filled, '#') + std::string(kBarCells - filled, '.');
  std::string line =
      absl::StrFormat("gpscope attach [%s] %3d%%  %s / %s | %s | %s", bar, percent,
                      FormatClock(done), FormatClock(total_ms), Plural(events, "event", "events"),
                      Plural(drops, "drop", "drops"));
  return Fit(std::move(line), width);
}

void ProgressPrinter::Show(const std::string& line) {
  if (!enabled_) return;
  out_ << '\r' << line << "\x1b[K" << std::flush;
  shown_ = true;
}

void ProgressPrinter::Clear() {
  if (!enabled_ || !shown_) return;
  out_ << "\r\x1b[K" << std::flush;
  shown_ = false;
}

size_t TerminalWidth(int fd, size_t fallback) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col - 1;
  return fallback;
}

}  // namespace gpscope::launcher
