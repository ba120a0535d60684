// tools/render/summary_render.h: the renderers of `gpscope-analyze summary`
// (analyses/summary.h computes what they show): text that fits 100 columns,
// JSON with every number, one CSV table at a time; and the findings rules
// as text (`summary --rules`).
//
//   std::unique_ptr<analyses::SummaryResult> r = analyses::ComputeSummaryResult(paths, mo, o);
//   std::string text = render::RenderSummaryText(*r);
//   std::string csv = render::RenderSummaryCsv(*r, "kernels");
//
// The text's strings from the trace pass through render::Printable (text_block.h); the JSON
// writer escapes; the command passes text and CSV through SanitizeTerminal as the last step.
//
// JSON schema ("schema": "gpscope.summary/1"). Keys are stable; new keys may
// be added, none renamed or removed within a schema version. Times are ns
// (CUPTI clock, CLOCK_REALTIME-based) unless the key says otherwise; ratios
// are 0..1; a Distribution is {count, total, mean, stddev, min, p50, p95,
// p99, max} in the unit of its key (ns). Window-based numbers cover the GPU's
// steady window; whole-run numbers say so.
//
//   schema                  "gpscope.summary/1"
//   options                 {idle_gap_threshold_ns, long_gap_ns, top_kernels, window_ns}
//   events                  events read, all processes
//   files[]                 {path, error (null or text), frames, damaged_regions,
//                            skipped_bytes, truncated}
//   findings[]              criticals, then warnings, then info; each most costly first:
//     rule, title, severity ("info"|"warning"|"critical"), cost_ns,
//     gpu (index into gpus[] or null), process (index into processes[] or null),
//     scope, summary, evidence[] {key, value, unit ("ratio"|"ns"|"count"|"bytes"|
//     "GB/s"|"per_step"|"per_s"|"bool" (1 or 0))}, ranges[] {start_ns, end_ns, offset_ns (from the
//     GPU's or process's first activity), note}, fixes[] (text), grouped[]: the
//     findings this one causes (analyses/rules.h), each with the same keys but
//     `relation` (text: "consequence: ...", "on the straggler itself: ...") in
//     place of `grouped`; a cause's severity and cost are the worst of its group
//   rules[]                 the catalogue: {id, title, trigger, source}
//   gpus[]
//     index, label, process_uid (hex), pid, hostname, device_id,
//     device                null or {name, uuid, pci_bus_id, sm_count,
//                           compute_capability, global_memory_bytes}
//     span                  {first_ns, last_ns, length_ns}: first to last GPU activity
//     window                {start_ns, end_ns, length_ns, basis, untraced_ns}: the steady
//                           window; untraced_ns of it in lost intervals (between capture
//                           windows), left out of every share, like idle.one_time
//     four_numbers
//       sm_util             {percent (null when unavailable), source ("measured"|
//                           "estimated"|"unavailable"), basis}
//       dram_bw_util        the same
//       kernel_duration_ns  {p50, p95} over all kernels of the run
//       idle_gap_share      idle in gaps >= threshold / window
//       idle_gap_share_span the same over the whole span
//     sampled               NVML/GPM state in the window: {throttled_share (share of
//                           nvml.clock_event_reasons samples with a power/thermal
//                           slowdown; null when not sampled), clock_reason_samples,
//                           other_process_sm_util (mean percent of other processes; null),
//                           other_processes[]: {pid, label, mean_sm_util, max_sm_util,
//                           samples} (whole run)}
//     busy                  {busy_ns (union of kernels, copies, memsets), kernel_busy_ns
//                           (union of kernels), kernel_ns, copy_ns, memset_ns (summed
//                           durations), busy_share} in the window
//     idle                  in the window:
//       gaps_at_least_threshold {host_wait_ns, sync_wait_ns, other_ns, count,
//                               implicit_sync_ns (the host in an implicitly synchronizing
//                               call, model/host_calls.h), input_host_wait_ns (host wait of
//                               gaps in which an input copy, H2D > 64 KB, was issued),
//                               after_sync_host_wait_ns (host wait of gaps that began in a
//                               sync)}
//       gaps_below_threshold    {host_wait_ns, sync_wait_ns, kernel_wait_ns, implicit_sync_ns,
//                               after_sync_host_wait_ns}
//       long_gaps               {count, total_ns} (>= long_gap_ns)
//       pauses                  {count, total_ns, copy_ns}: kernel-free intervals >= long_gap_ns
//                               (idle or copies only) that are not one-time
//       one_time                {count, total_ns}: long gaps followed by kernels never run
//                               before (compilation, autotuning, loading): start-up, left
//                               out of the shares
//       per_stream              {host_wait_ns, sync_wait_ns, kernel_wait_ns, other_ns,
//                               implicit_sync_ns} (HTA)
//       streams[]               whole run: {context_id, stream_id, ops, busy_ns, first_ns,
//                               last_ns, idle_ns: {host_wait, sync_wait, kernel_wait, other}}
//     kernels               whole run: {count, names, tiny_count (< 10 us),
//                           shorter_than_launch (HTA short kernels), launches_matched,
//                           est_sm_efficiency (null when shapes unknown),
//                           duration_ns: Distribution,
//                           top[]: {name (mangled), demangled, count, total_ns, share,
//                           mean_ns, median_ns, min_ns, max_ns, p95_ns, p99_ns, stddev_ns,
//                           tiny_count, shorter_than_launch, est_sm_efficiency (or null),
//                           blocks: {min, max}, collective ("all_reduce", ... for NCCL
//                           kernels, else null), est_occupancy (or null), library
//                           ("cuBLAS", "cuDNN", ..., "generated", "" for the program's
//                           own kernels; analyses/names.h LibraryOf)},
//                           est_occupancy (theoretical, from launch shapes and the
//                           device's SM limits, time-weighted, large-tile launches and
//                           library kernels left out; null when unknown),
//                           occupancy_known_share, large_tile_share (>= 64 KiB shared
//                           memory per block) and library_share (all of kernel time)}
//     copies                {share_of_gpu_time (whole run), rows[], memsets[], window:
//                           {pageable_count, pageable_ns, d2h_count}}; a row is
//                           {direction ("H2D", "D2H", "D2D", "P2P", "H2H", ...; "memset"),
//                           memory (host side: "pageable", "pinned", "device", "managed",
//                           ...), count, bytes, duration_ns, gb_per_s, share_of_gpu_time,
//                           sync: {count, bytes, duration_ns}}
//     host                  {queue_delay_ns: Distribution, queue_delay_outliers (> 100 us),
//                           launches_unmatched, sync_calls (window), sync_blocked_ns (window),
//                           implicit_syncs[] (window, most host time first): {group
//                           ("device_alloc"|"host_alloc"|"sync_copy"|"pageable_copy"|
//                           "sync_memset"), calls, blocked_ns, gpu_idle_ns, top_call (the
//                           API name with the most host time, whole run)}, long_launches
//                           (launches of kernels >= 50 us, window), long_launches_blocking
//                           (of those, the calls that returned after their kernel ended)}
//     steps                 null without steps, else {count (warm-up included),
//                           example_name, period_ns: Distribution, range_ns: Distribution
//                           (steps after the first; empty when inferred), per_step:
//                           {compute_ns, copy_ns, idle_ns, comm_ns (communication kernels
//                           running, part of compute_ns)} (means), warmup: Step,
//                           slowest[]: Step (NVTX steps only), source ("nvtx"|"inferred":
//                           found without NVTX from a repeating event, see
//                           model::InferredSteps), anchor (inferred: the kernel name,
//                           "D2H copy", "H2D copy", "GPU restart after idle" or a host
//                           series "<API> calls of thread N"; else null),
//                           candidates (inferred: series that agreed; else null)}; a Step is
//                           {index, start_ns, end_ns, period_ns, range_ns, compute_ns,
//                           copy_ns, idle_ns, comm_ns}
//     late_ops              GPU records that arrived after their time was swept
//     communication         NCCL kernels (old, older and new names; model/collectives.h):
//                           {kernels, kernel_ns (whole run), busy_ns (union, window), share
//                           (busy / window), overlap_ns (non-communication kernels running
//                           while communication runs, window), overlap (overlap_ns /
//                           busy_ns, HTA; null without communication), compute_busy_ns
//                           (union of the other kernels, window), collectives[]: {kind
//                           ("all_reduce"|"all_gather"|"reduce_scatter"|"broadcast"|
//                           "reduce"|"all_to_all"|"send_recv"|"other"), count, kernel_ns,
//                           share_of_comm} (whole run), nvtx_ranges: {count, total_ns}
//                           (ranges in NCCL's NVTX domain, the process, whole run)}
//     windows               {requested_ns (--window-ms), width_ns (larger when a long run
//                           was coarsened: beyond 16384 windows pairs merge), coarsened,
//                           columns[], rows[][]}: one row per window from the GPU's first
//                           to last activity, values in `columns` order: start_ns, end_ns,
//                           busy_ns, busy_share, kernel_count, kernel_mean_ns (null
//                           without kernels), h2d_bytes, d2h_bytes, d2d_bytes,
//                           other_copy_bytes, idle_gap_share (idle in gaps >= threshold /
//                           row length), comm_busy_ns, sm_util_pct, dram_bw_util_pct,
//                           tensor_util_pct (means of gpm.* samples; null when not
//                           sampled), cpu_user_pct, cpu_system_pct (the process's
//                           host.process_cpu_*_pct samples; null when not sampled). The
//                           column list is append-only (analyses/windows.h)
//     minutes               the same for 60 s rows from the GPU's first activity
//                           (requested_ns = width_ns = 60 s)
//   processes[]
//     index, process_uid, pid, hostname, path, cmdline[], events, api_calls, gpus[]
//     launch_call_ns        Distribution of CPU launch-call durations
//     launch_call_outliers  calls > 50 us (HTA)
//     sync                  {source ("api"|"records"), threads[]: {thread_id, calls,
//                           blocked_ns, max_ns}}
//     completeness          {complete, dropped: {reason: records}, dropped_total,
//                           lost_intervals: {count, total_ns, outside_window_count,
//                           outside_window_ns (of those, outside capture windows: not a
//                           loss), first[]: {start_ns, end_ns, reason, detail}},
//                           lost_frames, undecodable_batches, clean_exit,
//                           end_reason, unavailable[], cupti_refusals[] (only when
//                           another CUPTI client was refused while gpscope held CUPTI:
//                           {api, caller, count, first_ns, last_ns (CUPTI ns), result}:
//                           that profiler recorded no GPU events)}
//     collector             what gpscope cost this process, from its own samples (percent
//                           of one core): {all_threads, sampler}: {cpu_pct_mean,
//                           cpu_pct_max (null without samples), samples}; all_threads is
//                           every gpscope-* thread (gpscope.collector_cpu_pct), sampler the
//                           metrics sampler alone (older traces have only that one)
//     identity              {rank, local_rank, world_size (-1/-1/0 when unknown), job_id}
//     clocks                {snapshots, offset_ns (CLOCK_REALTIME - CUPTI at the first),
//                           drift_ns (how far that offset moved over the run)}
//   ranks                   per-rank comparison (analyses/ranks.h): {matched_collectives,
//                           stride (sampling), end_spread_ns (median spread of matched
//                           collectives' ends: the residual clock error), straggler (index
//                           into rows or null), late_order[] (the straggler ranking: indexes
//                           into rows with matched collectives, latest mean start first),
//                           rows[]: {gpu, rank, pid, hostname, device_id,
//                           label, step_source, step_p50_ns, step_p95_ns (0 without
//                           steps), window_ns, compute_busy_ns, comm_busy_ns, busy_share,
//                           idle_ns (window), comm_overlap (or null), collectives (matched),
//                           wait_ns (time in collectives beyond the fastest GPU's, TB),
//                           mean_late_ns (start after the other GPUs' median, aligned
//                           clocks), last_share, clock_offset_ns, clock_drift_ns,
//                           clock_snapshots}}; rows by rank, unknown (-1) last
//   source_lines            only when a process sent call stacks (issue 20): the sites
//                           (file:line of the innermost user frame) ranked by GPU time
//                           lost, with the stacks; keys in render/sites_render.h. A finding
//                           about host code then has sites[] {site (index into
//                           source_lines.sites), label, role, value_ns (over its GPU's
//                           steady window, as its summary says: site_findings.h)}
//   warnings[], warnings_omitted
//
// CSV (--format csv --table T): one header line, then rows; RFC 4180 quoting;
// integral numbers as integers, others with 12 significant digits, not
// sampled as an empty field. Every table starts with gpu (index into gpus[])
// and rank (-1 unknown), except ranks, which is rows of `ranks` above.
//   kernels   name, demangled, count, total_ns, share, mean_ns, p50_ns, p95_ns, p99_ns,
//             min_ns, max_ns, stddev_ns, tiny_count, collective (top --top per GPU)
//   windows   start_ns, end_ns and the window columns above; minutes the same
//   copies    direction, memory, count, bytes, duration_ns, gb_per_s, share_of_gpu_time,
//             sync_count, sync_bytes, sync_duration_ns (memsets as direction "memset")
//   steps     source, anchor, count, period_p50_ns, period_p95_ns, period_mean_ns,
//             compute_ns, copy_ns, comm_ns, idle_ns (per-step means), warmup_period_ns
//   ranks     gpu, rank, pid, hostname, device_id, step_source, step_p50_ns, step_p95_ns,
//             window_ns, compute_busy_ns, comm_busy_ns, idle_ns, busy_share, comm_overlap,
//             collectives, wait_ns, mean_late_ns, last_share, straggler (1 or 0),
//             clock_offset_ns, clock_drift_ns
//   lines     source lines from call stacks (render/sites_render.h); the header only when
//             the trace has no stacks
//
// Thread model: pure functions of the result.
#ifndef GPSCOPE_TOOLS_RENDER_SUMMARY_RENDER_H_
#define GPSCOPE_TOOLS_RENDER_SUMMARY_RENDER_H_

#include <string>
#include <string_view>

#include "tools/analyses/summary.h"

namespace gpscope::render {

std::string RenderSummaryText(const analyses::SummaryResult& result);
std::string RenderSummaryJson(const analyses::SummaryResult& result);
// One CSV table (IsSummaryCsvTable): kernels, windows, minutes, copies,
// steps, ranks or lines; empty for another name.
std::string RenderSummaryCsv(const analyses::SummaryResult& result, std::string_view table);
bool IsSummaryCsvTable(std::string_view table);
// `summary --rules`: the findings rules with their triggers and sources.
std::string RenderRulesText();

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_SUMMARY_RENDER_H_
