// tools/analyses/capture_windows.h: the capture windows of a process: the
// spans of its run that were traced, between the intervals the collector
// marked as outside a window (proto::LOST_TRACING_DISABLED lost intervals,
// `gpscope run --delay/--duration`, `--capture-range`, `gpscope attach`).
// An open interval (end_ns 0) runs to the process's last event.
//
//   for (const CaptureWindow& w : CaptureWindows(process)) ... w.start_ns, w.end_ns
//
// Thread model: pure function of the model.
#ifndef GPSCOPE_TOOLS_ANALYSES_CAPTURE_WINDOWS_H_
#define GPSCOPE_TOOLS_ANALYSES_CAPTURE_WINDOWS_H_

#include <cstdint>
#include <vector>

#include "tools/model/trace_model.h"

namespace gpscope::analyses {

struct CaptureWindow {
  uint64_t start_ns = 0;  // CUPTI ns of the process
  uint64_t end_ns = 0;
};

// The traced spans from the process's first to last event, in time order;
// one span (the whole run) when nothing was switched off, none when the
// whole run was outside.
std::vector<CaptureWindow> CaptureWindows(const model::ProcessModel& process);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_CAPTURE_WINDOWS_H_
