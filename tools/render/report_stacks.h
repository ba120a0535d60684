// tools/render/report_stacks.h: the call stacks of `gpscope-analyze report`
// (issue 20): the report document's "stacks" key, written only when the
// trace has stacks (report_data.h documents the rest of the schema):
//   stacks   {nodes {name[], category[] ("python"|"native"|"unknown"), parent[]
//            (node index, -1 for an outermost frame), process[] (processes[]
//            index)}: the stacks as a prefix tree, outermost frame at the root;
//            leaves[] {node (its innermost frame), process, stack_id, gpu_lost_ns,
//            gpu_sync_idle_ns, gpu_host_after_ns, gpu_host_before_ns, sync_calls,
//            sync_blocked_ns, samples, kernel_ns (estimated, analyses/sites.h)}: what
//            each stack cost; sites[]: per summary.source_lines.sites[] entry, the
//            node of its representative stack (-1 none); calls[] {lane (timeline
//            lane index), t[] (report ns of the call's start), node[]}: the API calls
//            with a stack, by start, for "click a sync: see its stack";
//            calls_not_kept (past render::kMaxStackCalls)}
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_REPORT_STACKS_H_
#define GPSCOPE_TOOLS_RENDER_REPORT_STACKS_H_

#include "tools/analyses/gpu_report.h"
#include "tools/render/chrome_stacks.h"
#include "tools/model/trace_model.h"
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tools/render/report_timeline.h"

namespace gpscope::render {

// Writes `"stacks": {...}` into an open object of `j` (report_data.cc's
// compact writer); nothing without stacks.
template <typename Json>
void WriteReportStacks(const model::TraceModel& model, const analyses::SummaryReport& summary,
                       const TimelineData& t, Json& j) {
  if (!t.stacks || !t.stacks->any()) return;
  const ChromeStacks& stacks = *t.stacks;
  const std::vector<ChromeStacks::Node>& nodes = stacks.nodes();
  // Node -> timeline process, by pid (the tree keeps the pid of its process).
  absl::flat_hash_map<uint32_t, int> process_of_pid;
  for (size_t i = 0; i < t.processes.size(); ++i) {
    process_of_pid.try_emplace(t.processes[i].pid, static_cast<int>(i));
  }
  j.Key("stacks").BeginObject();
  j.Key("nodes").BeginObject();
  j.Key("name").BeginArray();
  for (const ChromeStacks::Node& n : nodes) j.String(stacks.name(n));
  j.EndArray();
  j.Key("category").BeginArray();
  for (const ChromeStacks::Node& n : nodes) j.String(n.category);
  j.EndArray();
  j.Key("parent").BeginArray();
  for (const ChromeStacks::Node& n : nodes) j.Int(static_cast<int64_t>(n.parent) - 1);
  j.EndArray();
  j.Key("process").BeginArray();
  for (const ChromeStacks::Node& n : nodes) {
    auto it = process_of_pid.find(n.pid);
    j.Int(it == process_of_pid.end() ? -1 : it->second);
  }
  j.EndArray();
  j.EndObject();
  j.Key("leaves").BeginArray();
  for (const analyses::ProcessStacks& ps : summary.sites.processes) {
    const model::ProcessModel& p = model.processes[ps.process];
    const model::StackModel& sm = *ps.model;
    const int process = t.FindProcess(p.process_uid);
    for (const model::WeightedStack& s : sm.stacks) {
      const uint32_t node = stacks.LeafOf(p.process_uid, s.id);
      if (node == 0) continue;
      const double kernel_ns =
          sm.sampled_kernel_ns > 0
              ? s.w.sampled_kernel_ns / sm.sampled_kernel_ns * static_cast<double>(ps.kernel_ns)
              : 0;
      j.BeginObject().Key("node").Uint(node - 1).Key("process").Int(process);
      j.Key("stack_id").Uint(s.id).Key("gpu_lost_ns").Uint(s.w.gpu_lost_ns());
      j.Key("gpu_sync_idle_ns").Uint(s.w.gpu_sync_idle_ns);
      j.Key("gpu_host_after_ns").Uint(s.w.gpu_host_after_ns);
      j.Key("gpu_host_before_ns").Uint(s.w.gpu_host_before_ns);
      j.Key("sync_calls").Uint(s.w.sync_calls).Key("sync_blocked_ns").Uint(s.w.sync_blocked_ns);
      j.Key("samples").Uint(s.w.samples).Key("kernel_ns").Double(kernel_ns).EndObject();
    }
  }
  j.EndArray();
  j.Key("sites").BeginArray();
  for (const analyses::SiteRow& s : summary.sites.rows) {
    const uint32_t node = stacks.LeafOf(s.process_uid, s.top_stack);
    j.Int(static_cast<int64_t>(node) - 1);
  }
  j.EndArray();
  j.Key("calls").BeginArray();
  for (size_t i = 0; i < t.lanes.size(); ++i) {
    const TimelineLane& lane = t.lanes[i];
    if (lane.stack_calls.empty()) continue;
    j.BeginObject().Key("lane").Uint(i).Key("t").BeginArray();
    for (const auto& c : lane.stack_calls) j.Uint(c.first);
    j.EndArray().Key("node").BeginArray();
    for (const auto& c : lane.stack_calls) j.Uint(c.second - 1);
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.Key("calls_not_kept").Uint(t.stack_calls_not_kept);
  j.EndObject();
}


}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_REPORT_STACKS_H_
