// tools/analyze/dump.h: `gpscope-analyze dump FILE...`: every event of the
// traces as JSON lines, names resolved, timestamps absolute (CUPTI ns, which
// on Linux are CLOCK_REALTIME ns). For scripts, tests (tests/e2e) and for
// looking at exactly what the collector wrote.
//
// One object per line; "type" is one of process, device, context, kernel,
// memcpy, memset, sync, api, nvtx_range, nvtx_mark, overhead, metric,
// metric_descriptor, drop, lost, capability, end. Every event carries "pid".
// Enum values are written as their proto names without the prefix
// ("HTOD", "PAGEABLE", "STREAM_SYNCHRONIZE").
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
