// tools/analyses/windows.cc: see windows.h.
#include "tools/analyses/windows.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpscope::analyses {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const model::ProcessModel* ProcessOf(const model::TraceModel& model, const model::GpuModel& g) {
  for (const model::ProcessModel& p : model.processes) {
    if (p.process_uid == g.process_uid) return &p;
  }
  return nullptr;
}

double Mean(double sum, double samples) { return samples > 0 ? sum / samples : kNaN; }

WindowRow Row(const model::GpuModel& g, const model::ProcessModel* p, uint64_t start_ns,
              uint64_t end_ns) {
  const model::Timeline& t = g.windows;
  auto sum = [&](int field) { return t.Sum(field, start_ns, end_ns); };
  // Shares are of the traced part; a row with almost nothing traced (between
  // capture windows) has none (NaN: a gap in the charts, skipped by spreads).
  const double length = TracedRowNs(static_cast<double>(std::max<uint64_t>(1, end_ns - start_ns)),
                                    sum(model::kWinUntracedNs));
  WindowRow r;
  auto& v = r.values;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  v[kColBusyNs] = sum(model::kWinBusyNs);
  v[kColBusyShare] = v[kColBusyNs] / length;
  v[kColKernelCount] = sum(model::kWinKernelCount);
  v[kColKernelMeanNs] = Mean(sum(model::kWinKernelNs), v[kColKernelCount]);
  v[kColH2dBytes] = sum(model::kWinH2dBytes);
  v[kColD2hBytes] = sum(model::kWinD2hBytes);
  v[kColD2dBytes] = sum(model::kWinD2dBytes);
  v[kColOtherCopyBytes] = sum(model::kWinOtherCopyBytes);
  v[kColIdleGapShare] = sum(model::kWinGapNs) / length;
  v[kColCommBusyNs] = sum(model::kWinCommBusyNs);
  v[kColSmUtilPct] = Mean(sum(model::kWinSmUtilSum), sum(model::kWinSmUtilSamples));
  v[kColDramUtilPct] = Mean(sum(model::kWinDramUtilSum), sum(model::kWinDramUtilSamples));
  v[kColTensorUtilPct] = Mean(sum(model::kWinTensorUtilSum), sum(model::kWinTensorUtilSamples));
  v[kColCpuUserPct] = kNaN;
  v[kColCpuSystemPct] = kNaN;
  if (p != nullptr && p->has_cpu_samples) {
    const model::Timeline& pt = p->windows;
    auto psum = [&](int field) { return pt.Sum(field, start_ns, end_ns); };
    v[kColCpuUserPct] = Mean(psum(model::kPWinCpuUserSum), psum(model::kPWinCpuUserSamples));
    v[kColCpuSystemPct] = Mean(psum(model::kPWinCpuSystemSum), psum(model::kPWinCpuSystemSamples));
  }
  // Busy time and idle share are exact per window; rounding in the
  // proration of minutes must not push them past the row length.
  v[kColBusyShare] = std::min(v[kColBusyShare], 1.0);
  v[kColIdleGapShare] = std::min(v[kColIdleGapShare], 1.0);
  return r;
}

// Rows per GPU: kMaxWindowRows for one or two GPUs, shared out past that, so
// a trace naming hundreds of GPUs (hostile device ids, each with a nonsense
// span) cannot make every one of them a full-length table: the tables'
// memory and time stay those of two full ones. The window table widens its
// rows to fit (ComputeWindows); the minute table ends at its cap.
size_t MaxRowsPerGpu(const model::TraceModel& model) {
  constexpr size_t kNodeGpus = 2;
  const size_t gpus = std::max<size_t>(model.gpus.size(), 1);
  if (gpus <= kNodeGpus) return model::kMaxWindowRows;
  return std::max<size_t>(64, model::kMaxWindowRows * kNodeGpus / gpus);
}

WindowTable Rows(const model::TraceModel& model, size_t gpu_index, uint64_t width_ns,
                 uint64_t origin_ns) {
  const size_t max_rows = MaxRowsPerGpu(model);
  const model::GpuModel& g = model.gpus[gpu_index];
  const model::ProcessModel* p = ProcessOf(model, g);
  WindowTable table;
  table.width_ns = width_ns;
  if (!g.windows.valid() || g.ops == 0 || width_ns == 0) return table;
  const uint64_t first = g.first_ns < origin_ns ? origin_ns : g.first_ns;
  const uint64_t last = std::max(first, g.last_ns);
  uint64_t start = origin_ns + (first - origin_ns) / width_ns * width_ns;
  // Bounded even for nonsense timestamps (a damaged trace): stop at the cap
  // or where the next start would wrap around.
  do {
    table.rows.push_back(Row(g, p, start, start + width_ns));
    if (start > UINT64_MAX - 2 * width_ns) break;
    start += width_ns;
  } while (start < last && table.rows.size() < max_rows);
  return table;
}

}  // namespace

double TracedRowNs(double full_ns, double untraced_ns) {
  const double traced = full_ns - std::min(full_ns, untraced_ns);
  return traced >= 0.01 * full_ns ? std::max(1.0, traced) : kNaN;
}

const char* WindowColumnName(int column) {
  static constexpr const char* kNames[kWindowColumns] = {
      "busy_ns",       "busy_share",
      "kernel_count",    "kernel_mean_ns",  "h2d_bytes",     "d2h_bytes",
      "d2d_bytes",       "other_copy_bytes", "idle_gap_share", "comm_busy_ns",
      "sm_util_pct",     "dram_bw_util_pct", "tensor_util_pct", "cpu_user_pct",
      "cpu_system_pct",
  };
  return column >= 0 && column < kWindowColumns ? kNames[column] : "unknown";
}

WindowTable ComputeWindows(const model::TraceModel& model, size_t gpu_index) {
  const model::Timeline& t = model.gpus[gpu_index].windows;
  // Rows of several timeline windows when the timeline has more than this
  // GPU's share of rows: the whole run stays in the table.
  const size_t max_rows = MaxRowsPerGpu(model);
  const uint64_t merge = t.windows() > max_rows ? (t.windows() + max_rows - 1) / max_rows : 1;
  const uint64_t width = t.window_ns() * merge;
  WindowTable table = Rows(model, gpu_index, width, t.anchor_ns());
  table.requested_ns = t.first_width_ns();
  table.coarsened = width != t.first_width_ns();
  return table;
}

WindowTable ComputeMinutes(const model::TraceModel& model, size_t gpu_index) {
  const model::GpuModel& g = model.gpus[gpu_index];
  WindowTable table = Rows(model, gpu_index, kMinuteNs, g.first_ns);
  table.requested_ns = kMinuteNs;
  return table;
}

}  // namespace gpscope::analyses
