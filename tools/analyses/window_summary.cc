// tools/analyses/window_summary.cc: see window_summary.h.
#include "tools/analyses/window_summary.h"

#include <algorithm>
#include <cmath>

namespace gpscope::analyses {
namespace {

uint64_t RoundNs(double ns) { return ns > 0 ? static_cast<uint64_t>(std::llround(ns)) : 0; }

}  // namespace

WindowSummary SummarizeWindow(const SummaryResult& r, const WindowBounds& bounds) {
  WindowSummary s;
  if (r.model.processes.empty()) return s;
  const model::ProcessModel& p = r.model.processes[0];
  s.process_uid = p.process_uid;
  s.pid = p.pid;
  s.hostname = p.hostname;
  s.job_id = p.job_id;
  s.rank = p.rank;
  const uint64_t start_ns = bounds.start_ns != 0 ? bounds.start_ns : p.first_ns;
  const uint64_t end_ns = std::max(start_ns, bounds.end_ns != 0 ? bounds.end_ns : p.last_ns);
  s.start_realtime_ns = p.clocks.ToRealtimeNs(start_ns);
  s.end_realtime_ns = p.clocks.ToRealtimeNs(end_ns);
  s.events = p.events;
  for (const ProcessReport& pr : r.report.processes) {
    if (pr.process == &p) s.events_dropped = pr.dropped;
  }

  double longest_window_ns = 0;
  for (const GpuReport& g : r.report.gpus) {
    if (g.gpu == nullptr || g.gpu->process_uid != p.process_uid) continue;
    WindowGpuSummary x;
    x.device_id = g.gpu->device_id;
    if (g.gpu->has_device_info) x.uuid = g.gpu->device.uuid();
    x.idle_share = g.idle_gap_share;
    x.busy_share = g.busy_share;
    if (g.sm_util.source != Utilization::Source::kUnavailable) {
      x.sm_util_pct = g.sm_util.percent;
      x.sm_util_estimated = g.sm_util.source == Utilization::Source::kEstimated;
    }
    if (g.dram_util.source == Utilization::Source::kMeasured) x.mem_bw_util_pct = g.dram_util.percent;
    x.kernel_p50_ns = RoundNs(g.kernel_duration.p50);
    x.kernel_p95_ns = RoundNs(g.kernel_duration.p95);
    x.kernels = g.kernel_count;
    x.traced_ns = RoundNs(g.traced_window_ns());
    longest_window_ns = std::max(longest_window_ns, g.traced_window_ns());
    s.gpus.push_back(std::move(x));
  }

  if (!r.findings.empty()) {
    const Finding& f = r.findings.front();  // most severe, then costliest
    s.top_rule = f.rule;
    s.top_severity = SeverityName(f.severity);
    s.top_title = f.title;
    s.top_cost_ns = f.cost_ns;
    double denominator = longest_window_ns;
    if (f.gpu >= 0 && static_cast<size_t>(f.gpu) < r.report.gpus.size()) {
      denominator = r.report.gpus[static_cast<size_t>(f.gpu)].traced_window_ns();
    }
    if (denominator <= 0) denominator = static_cast<double>(std::max<uint64_t>(1, end_ns - start_ns));
    s.top_cost_share = static_cast<double>(f.cost_ns) / denominator;
  }
  return s;
}

WindowSummary FromProto(const proto::WindowSummary& p) {
  WindowSummary s;
  s.process_uid = p.process_uid();
  s.pid = p.pid();
  s.hostname = p.hostname();
  s.job_id = p.job_id();
  s.rank = p.rank();
  s.start_realtime_ns = p.start_realtime_ns();
  s.end_realtime_ns = p.end_realtime_ns();
  s.close_reason = p.close_reason();
  s.events = p.events();
  s.events_not_analysed = p.events_not_analysed();
  s.events_dropped = p.events_dropped();
  for (const proto::WindowGpu& g : p.gpus()) {
    WindowGpuSummary x;
    x.device_id = g.device_id();
    x.uuid = g.uuid();
    x.idle_share = g.idle_share();
    x.busy_share = g.busy_share();
    x.sm_util_pct = g.sm_util_pct();
    x.sm_util_estimated = g.sm_util_estimated();
    x.mem_bw_util_pct = g.mem_bw_util_pct();
    x.kernel_p50_ns = g.kernel_p50_ns();
    x.kernel_p95_ns = g.kernel_p95_ns();
    x.kernels = g.kernels();
    x.traced_ns = g.traced_ns();
    s.gpus.push_back(std::move(x));
  }
  s.top_rule = p.top_rule();
  s.top_severity = p.top_severity();
  s.top_title = p.top_title();
  s.top_cost_ns = p.top_cost_ns();
  s.top_cost_share = p.top_cost_share();
  s.trace_path = p.trace_path();
  return s;
}

}  // namespace gpscope::analyses
