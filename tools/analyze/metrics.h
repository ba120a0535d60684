// tools/analyze/metrics.h: `gpscope-analyze metrics FILE...`: what the GPUs
// of a node did, window by window, from the metric samples of node monitor
// files (gpscope-monitor) or of any trace with metric samples. Flags, then
// one library call (analyses/node_metrics.h: CollectMetrics, the idle GPUs,
// sharing and trends) and one renderer (render/metrics_render.h).
//
//   gpscope-analyze metrics --window 5m --idle-below 2 node/*.gpscope
//
// Exit codes: 0 ok, 1 a file could not be read (or reading was partial),
// 2 bad usage.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_METRICS_H_
#define GPSCOPE_TOOLS_ANALYZE_METRICS_H_

#include <ostream>
#include <string>
#include <vector>

#include "tools/analyses/node_metrics.h"
#include "tools/render/metrics_render.h"

namespace gpscope::analyze {

// The library's names, as the tests use them here.
using analyses::CollectMetrics;
using analyses::MetricsOptions;
using analyses::MetricsReport;
using render::RenderMetricsJson;
using render::RenderMetricsText;

// The command: `metrics [--window 60s] [--idle-below PCT] [--format text|json] FILE...`.
int RunMetrics(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_METRICS_H_
