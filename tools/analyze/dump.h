// tools/analyze/dump.h: `gpscope-analyze dump FILE...`: every event of the
// traces as JSON lines, names resolved, timestamps absolute (CUPTI ns, which
// on Linux are CLOCK_REALTIME ns). For scripts, tests (tests/e2e) and for
// looking at exactly what the collector wrote.
//
// One object per line; "type" is one of process, device, context, kernel,
// memcpy, memset, sync, api, nvtx_range, nvtx_mark, overhead, metric,
// metric_descriptor, drop, lost, capability, end. Every event carries "pid".
// Enum values are written as their proto names without the prefix
// ("HTOD", "PAGEABLE", "STREAM_SYNCHRONIZE"). The first line is the time
// origin ("time_origin": realtime_ns, utc); every timed event also carries
// t_ns, ns since that origin on the common timebase.
//
//   gpscope-analyze dump --kind kernel,memcpy --pid 846 t.gpscope
//   gpscope-analyze dump --kind nvtx --time relative t.gpscope | jq .t_ns
//
// --kind K[,K] keeps only those types ("nvtx": nvtx_range and nvtx_mark,
// "marker": nvtx_mark); --pid P[,P] only those processes; the time_origin
// line and a "partial" line are always written. --time relative writes
// only times since the origin: t_ns (an interval's start, an instant),
// end_t_ns (an interval's end; "end": its end_ns; "lost": start and end),
// first_t_ns/last_t_ns ("drop"), null where CUPTI left 0; the absolute
// CUPTI ns (start_ns, end_ns, timestamp_ns, first_ns, last_ns), about
// 1.8e18 and so past 2^53, where JavaScript and jq numbers lose digits,
// are left out, and the origin's realtime_ns is written as a string.
//
// Thread model: single-threaded; memory is bounded by one batch plus the
// per-process name tables.
#ifndef GPSCOPE_TOOLS_ANALYZE_DUMP_H_
#define GPSCOPE_TOOLS_ANALYZE_DUMP_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpscope::analyze {

int RunDump(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_DUMP_H_
