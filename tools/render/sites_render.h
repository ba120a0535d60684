// tools/render/sites_render.h: the source-lines section of `summary` (issue
// 20; analyses/sites.h) as text, JSON and the `--table lines` CSV. Every
// renderer writes nothing (the CSV: its header only) when no process sent
// call stacks, so traces without stacks render as before.
//
// JSON (`source_lines`, only with stacks):
//   processes[]  {process (index into processes[]), pid, stack_samples, joined, unjoined,
//                no_stack, unknown_stack_ids, unknown_frame_ids, tables_dropped,
//                undecodable, sampled_launches, sampled_kernel_ns, kernel_ns,
//                gpu_idle_attributed_ns, gpu_idle_unattributed_ns,
//                sync_calls_unstacked, sync_blocked_unstacked_ns; where native frames
//                were symbolized offline or a user module's file could not be used
//                (model/symbolizer.h): frames_symbolized, symbol_notes[] {module, text}}
//   sites[]      GPU time lost first: {process, label, kind ("python"|"native"|"unknown"),
//                file, line (native: the source file and line when symbolized, else the
//                module and 0), function, user (bool), gpu_lost_ns, gpu_sync_idle_ns,
//                gpu_implicit_idle_ns, gpu_host_after_ns, gpu_host_before_ns, sync_calls,
//                sync_blocked_ns, implicit_calls, implicit_blocked_ns, main_thread_syncs
//                (of sync_calls, made by threads without Python while the main thread
//                was here), gaps, readback_gaps (of gaps, those that began when this
//                site's copy to the host ended: the host's code after a read-back),
//                launches, samples, kernel: null or {ns, error_ns (95%), share},
//                next: null or {site, gaps, host_ns_mean, gpu_host_ns}, prev: null or
//                {site, gaps, host_ns_mean}, stack_id, stacks, truncated, stack[] (frame
//                text, innermost first)}
// CSV (`--table lines`): gpu (the process's first GPU, -1 none), rank, pid, site, kind,
//   file, line, function, user, gpu_lost_ns, gpu_sync_idle_ns, gpu_implicit_idle_ns,
//   gpu_host_after_ns, gpu_host_before_ns, sync_calls, sync_blocked_ns, readback_gaps
//   (as in the JSON), launches, samples, kernel_ns, kernel_error_ns, next_site,
//   next_host_ns, stack (" <- " joined)
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_SITES_RENDER_H_
#define GPSCOPE_TOOLS_RENDER_SITES_RENDER_H_

#include <string>
#include <vector>

#include "tools/analyses/gpu_report.h"
#include "tools/model/trace_model.h"
#include "tools/render/csv_writer.h"
#include "tools/render/json_writer.h"

namespace gpscope::render {

// Lines of at most 100 columns (trace text escaped), no trailing newline;
// empty without stacks. `top`: sites listed per process.
std::vector<std::string> SitesText(const model::TraceModel& model,
                                   const analyses::SummaryReport& report, size_t top);
// Writes `"source_lines": {...}` into an open object; nothing without stacks.
void SitesJson(const model::TraceModel& model, const analyses::SummaryReport& report,
               JsonWriter& j);
void SitesCsv(const model::TraceModel& model, const analyses::SummaryReport& report,
              CsvWriter& csv);
// "python", "native", "unknown".
const char* FrameKindName(int kind);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_SITES_RENDER_H_
