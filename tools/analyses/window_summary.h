// tools/analyses/window_summary.h: the summary of one capture window of one
// process (issue 24, the always-on duty cycle): per GPU the idle-gap share,
// busy share and the "four numbers" of gpu_report.h, and the window's top
// finding (rules.h). Computed from a trace that holds that window only (a
// WindowCut, tools/reader/window_cut.h) with the summary analyses of
// `gpscope-analyze summary` (summary.h), so the numbers are the analyzer's.
//
// The node monitor (`gpscope-monitor --traces DIR`) cuts each closed window
// out of the traces it follows, summarizes it here, writes the summary into
// its own trace (proto WindowSummary) and exposes it on /metrics;
// `gpscope-analyze metrics` reads the summaries back (FromProto).
//
//   std::unique_ptr<SummaryResult> r = ComputeSummaryResultFromBuffer("w", bytes, {}, {});
//   WindowSummary s = SummarizeWindow(*r, {start_ns, end_ns});
//   for (const WindowGpuSummary& g : s.gpus) ... g.idle_share, g.sm_util_pct
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_WINDOW_SUMMARY_H_
#define GPSCOPE_TOOLS_ANALYSES_WINDOW_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpscope/trace.pb.h"
#include "tools/analyses/summary.h"

namespace gpscope::analyses {

struct WindowGpuSummary {
  uint32_t device_id = 0;      // CUDA ordinal, as in the process's trace
  std::string uuid;            // "" when the trace had none
  double idle_share = 0;       // GpuReport::idle_gap_share: idle in gaps >= the threshold
  double busy_share = 0;       // GpuReport::busy_share
  double sm_util_pct = -1;     // measured (gpm.sm_util) or estimated; -1 unavailable
  bool sm_util_estimated = false;
  double mem_bw_util_pct = -1;  // gpm.dram_bw_util; -1 unavailable (no metrics)
  uint64_t kernel_p50_ns = 0;
  uint64_t kernel_p95_ns = 0;
  uint64_t kernels = 0;
  uint64_t traced_ns = 0;  // the window's traced steady length the shares are of
};

struct WindowSummary {
  uint64_t process_uid = 0;  // the traced process's
  uint32_t pid = 0;
  std::string hostname;
  std::string job_id;
  int32_t rank = -1;  // -1 unknown
  uint64_t start_realtime_ns = 0;  // the window's first activity
  uint64_t end_realtime_ns = 0;    // its end (the close point when known)
  // Why the window was taken as closed: "tracing_disabled" (the trace's
  // time outside windows began), "process_end", "duty_schedule" (its
  // GPSCOPE_DUTY time was over and nothing came since).
  std::string close_reason;
  uint64_t events = 0;               // events analysed
  uint64_t events_not_analysed = 0;  // past the summarizer's cap (recorded as a drop)
  uint64_t events_dropped = 0;       // records the trace reported lost in the window
  std::vector<WindowGpuSummary> gpus;
  // The top finding (most severe, then costliest: rules.h); rule "" none.
  std::string top_rule;
  std::string top_severity;  // "info", "warning", "critical"
  std::string top_title;
  uint64_t top_cost_ns = 0;
  double top_cost_share = 0;  // cost / the traced window (its GPU's, else the longest)
  std::string trace_path;     // the file the window was read from
};

// Window bounds in the process's CUPTI ns; 0: the process's first / last
// event.
struct WindowBounds {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// The summary of the first process of `result` (a window's trace holds one).
// Identity, GPUs and the top finding come from the result; close_reason,
// the event caps and trace_path are the caller's to fill.
WindowSummary SummarizeWindow(const SummaryResult& result, const WindowBounds& bounds);

// A summary as the monitor's trace holds it (the monitor writes it with
// proto/'s encoder: format::WindowSummaryRecord).
WindowSummary FromProto(const proto::WindowSummary& p);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_WINDOW_SUMMARY_H_
