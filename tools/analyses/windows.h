// tools/analyses/windows.h: per-GPU windows and minute trends: how busy the
// GPU was, what ran and what the samplers saw, window by window, for charts
// and for spotting phases (warm-up, evaluation, slow-downs) that whole-run
// numbers hide.
//
// A row covers [start_ns, end_ns) of one GPU. Windows are the rows of
// GpuModel::windows (ModelOptions::window_ns wide, 100 ms by default, exact
// sums); when a run outgrows model::kMaxWindowRows windows, pairs merge and
// the width doubles (`coarsened`), which bounds memory by the run's length
// at 16384 rows x 15 counters. Minutes are 60 s rows from the GPU's first
// activity, summed from the windows (a window that straddles a minute
// boundary is split in proportion). Rows run from the window holding the
// GPU's first activity to the one holding its last, at most
// model::kMaxWindowRows of them (for minutes: 11 days).
//
//   WindowTable w = ComputeWindows(model, gpu_index);
//   for (const WindowRow& r : w.rows) r.values[kColBusyShare] ...
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_WINDOWS_H_
#define GPSCOPE_TOOLS_ANALYSES_WINDOWS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "tools/model/trace_model.h"

namespace gpscope::analyses {

// The traced part of a row or chart bucket `full_ns` long with `untraced_ns`
// of it inside lost intervals (between capture windows): the denominator of
// its shares; NaN when under 1% of it was traced (it has no shares).
double TracedRowNs(double full_ns, double untraced_ns);

// Value columns of a window/minute row (after start_ns and end_ns); NaN
// (JSON null, empty CSV cell) when not sampled. The names are
// WindowColumnName(); they are a stable interface (summary --format
// json/csv), append only.
enum WindowColumn : int {
  kColBusyNs = 0,      // union of kernels, copies, memsets
  kColBusyShare,       // busy / row length
  kColKernelCount,     // kernels starting in the row
  kColKernelMeanNs,    // their mean duration (NaN without kernels)
  kColH2dBytes,        // copy bytes by direction
  kColD2hBytes,
  kColD2dBytes,
  kColOtherCopyBytes,
  kColIdleGapShare,    // idle in gaps >= the idle-gap threshold / row length
  kColCommBusyNs,      // union of communication kernels
  kColSmUtilPct,       // mean of gpm.sm_util samples
  kColDramUtilPct,     // gpm.dram_bw_util
  kColTensorUtilPct,   // gpm.tensor_util
  kColCpuUserPct,      // host.process_cpu_user_pct of the GPU's process
  kColCpuSystemPct,    // host.process_cpu_system_pct
  kWindowColumns
};
const char* WindowColumnName(int column);

struct WindowRow {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::array<double, kWindowColumns> values{};
};

struct WindowTable {
  uint64_t requested_ns = 0;  // ModelOptions::window_ns, or 60 s for minutes
  uint64_t width_ns = 0;      // actual width (coarsened beyond kMaxWindowRows)
  bool coarsened = false;
  std::vector<WindowRow> rows;
};

inline constexpr uint64_t kMinuteNs = 60'000'000'000;

WindowTable ComputeWindows(const model::TraceModel& model, size_t gpu_index);
WindowTable ComputeMinutes(const model::TraceModel& model, size_t gpu_index);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_WINDOWS_H_
