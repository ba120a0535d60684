// tools/render/metrics_render.h: `gpscope-analyze metrics` as text (a
// table per GPU, window by window, then idle GPUs, sharing and trends) or
// JSON (schema gpscope.metrics/1), from analyses/node_metrics.h's report.
//
//   std::string text = render::RenderMetricsText(analyses::CollectMetrics(paths, {}));
//
// Thread model: pure functions of the report.
#ifndef GPSCOPE_TOOLS_RENDER_METRICS_RENDER_H_
#define GPSCOPE_TOOLS_RENDER_METRICS_RENDER_H_

#include <string>

#include "tools/analyses/node_metrics.h"

namespace gpscope::render {

std::string RenderMetricsText(const analyses::MetricsReport& report);
std::string RenderMetricsJson(const analyses::MetricsReport& report);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_METRICS_RENDER_H_
