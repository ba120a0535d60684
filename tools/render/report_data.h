// tools/render/report_data.h: the data of `gpscope-analyze report`, as the
// one JSON document the HTML page reads (schema "gpscope.report/1"). The
// page (report/src/) only presents it; every number is computed here or by
// the analyzer.
//
// Data contract. Times named *_ns are integers in "report ns": ns since
// t0_realtime_ns (CLOCK_REALTIME, a decimal string because it exceeds 2^53);
// all processes, files and hosts share this one time base (CUPTI ns mapped
// through each process's ClockSnapshots). Ratios are 0..1, utilizations
// percent.
//
//   schema, generator, files[] {path, bytes, error}
//   t0_realtime_ns (string), span_ns
//   summary           the analyzer's `summary --format json` document
//                     (gpscope.summary/1, render/summary_render.h) verbatim;
//                     its own times are CUPTI ns, use the fields below to place
//                     them on the timeline
//   processes[]       {pid, uid, hostname, rank, local_rank, world_size, job,
//                     launcher, cmdline[], exe, driver_version, cuda_driver_version,
//                     cupti_version, gpscope_version, summary_index, group,
//                     devices[] {id, name, uuid, cc, sm_count, memory_bytes},
//                     lost[] {start_ns, end_ns, reason, detail}, lost_not_kept}
//   gpus[]            one per summary.gpus[] entry, same order:
//                     {process, device_id, group (timeline group of its streams),
//                     metrics_group (of its counter lanes, -1 without),
//                     window {start_ns, end_ns} (steady window),
//                     trend {start_ns, width_ns, series {key: [value|null]}}
//                     (every GPU's windows have one width and start on a
//                     multiple of it: the ranks' charts line up),
//                     trend_keys[] {key, label, unit}, histograms {kernel_duration,
//                     idle_gap: {edges_ns[], counts[], total_ns[]}}, steps (null or
//                     {start_ns[], period_ns[], compute_ns[], copy_ns[], idle_ns[],
//                     not_shown}), correlation {keys[], labels[], windows, r[][]
//                     (null where undefined)}, counters[] (timeline lane indexes)}
//   findings[]        one per summary.findings[] entry, same order:
//                     {group, ranges[] {start_ns, end_ns, note}}
//   completeness      {events_kept, events_not_kept, undecodable_batches}
//   timeline          {names[], short_names[] ("" = same as names), configs[]
//                     [gx, gy, gz, bx, by, bz, registers, shared_bytes],
//                     bin_count, bin_ns, groups[] {label, kind ("process", and
//                     under it "gpu" (streams, sync waits), "gpu_metrics" (the
//                     GPU's counters), "threads", "metrics" (host counters)),
//                     parent, process, device_id}, lanes[] {group, kind, label, count, rows,
//                     max_dur_ns, not_kept, unit, metric, cols (null when
//                     tiled) {NAME: [offset, bytes]}, tiles (only lanes over
//                     tile_events) {events (per tile), rows, aux (whether the
//                     columns are there), first_ns[] (each tile's first start),
//                     parts[] {cols, bytes, data}}, bins (null or {busy, count,
//                     top, cat}), levels[] (lanes with bins) {bin_count, bin_ns,
//                     cols, bytes, data}},
//                     blob {encoding ("gzip+base64"|"base64"), bytes, data}}
//
// Lane columns in the blob (report/src/decode.js reads them): event lanes
// have start (varint deltas from 0, sorted), dur (varint ns), name (varint,
// timeline.names index), cat (byte, EventCategory), and when needed row
// (byte) and aux (varint: launch config index + 1, bytes, or return value).
// Counter lanes have t (varint deltas) and v (float64 LE). Lanes with more
// than ReportDataOptions::bin_threshold events also carry bins: bin_count
// equal bins over [0, span_ns): busy (byte, 0..255 = share of the bin covered),
// count (varint, events overlapping), top (varint, the name with the most
// time in it), cat (byte). The page draws bins when zoomed out and exact
// events when zoomed in.
//
// Tiles by zoom level (issue 24: every event of a 10 M-event trace
// reachable, the page interactive in 3 s): a lane with more than
// tiled_above events keeps no columns in the blob; its events are tiles of
// tile_events events by start, each its own {bytes, data} (gzip+base64 like
// the blob, or base64 with the blob's encoding "base64"), with columns as
// above except start: gap (zigzag varint, z = 2g for g >= 0 else -2g - 1:
// start minus the previous event's start + dur within the tile, the first
// from 0). Between the whole-run bins
// and exact events, busy lanes have finer bin levels (levels[]), each packed
// the same way: the page decodes the blob (small lanes, level-0 bins) at
// load, and a level or a tile only when a zoom needs it.
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_REPORT_DATA_H_
#define GPSCOPE_TOOLS_RENDER_REPORT_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/analyses/gpu_report.h"
#include "tools/analyses/rules.h"
#include "tools/model/trace_model.h"
#include "tools/render/report_timeline.h"

namespace gpscope::render {

struct ReportDataOptions {
  uint32_t bin_count = 2048;          // per lane, over the whole span
  uint64_t bin_threshold = 4000;      // lanes with more events also get bins
  // Lanes with more than tiled_above events are written in tiles of
  // tile_events events, packed one by one (the page decodes a tile when a
  // zoom needs it); smaller lanes decode at load, as they always did.
  uint64_t tiled_above = 131072;
  uint64_t tile_events = 65536;
  // Finer bin levels of busy lanes: up to `levels` in all (bins is level 0),
  // level l with bin_count * level_factor^l bins, while the lane has more
  // than level_events events per level_factor^l.
  uint32_t levels = 3;
  uint32_t level_factor = 8;
  uint64_t level_events = 20000;
  uint32_t trend_windows = 120;       // per GPU, over its span
  uint32_t correlation_windows = 60;  // per GPU, over its steady window
  size_t max_steps = 20000;
  bool compress = true;  // gzip the blob (the page inflates it natively)
};

struct ReportInputs {
  const model::TraceModel* model = nullptr;
  const analyses::SummaryReport* summary = nullptr;
  const std::vector<analyses::Finding>* findings = nullptr;
  std::string summary_json;  // RenderSummaryJson() of the same result
  const TimelineData* timeline = nullptr;
  std::string generator;  // "gpscope-analyze 0.1.0"
};

// The report's JSON document (compact). Trace strings are JSON-escaped but
// not yet HTML-safe: pass the result through RenderReportHtml().
std::string BuildReportJson(const ReportInputs& inputs, const ReportDataOptions& options = {});

// Pearson correlation of two series over the indexes where both are finite;
// NaN with fewer than 3 such points or a constant series.
double Pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_REPORT_DATA_H_
