// tools/render/stats_render.h: the `gpscope-analyze stats` tables
// (analyses/stats.h) as text, CSV or JSON. Each report is one table with
// nsys-like columns; times are ns (nsys stats' default unit).
//
//   std::string csv = RenderStatsCsv(report, "cuda_api_sum", timebase);
//
// JSON ("schema": "gpscope.stats/1"): {schema, time_origin, names ("full"|
// "short"|"base"), reports: {<name>: {columns[], rows[][]}}}, a row's values
// in `columns` order (numbers as numbers, names as strings).
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_STATS_RENDER_H_
#define GPSCOPE_TOOLS_RENDER_STATS_RENDER_H_

#include <string>
#include <string_view>
#include <vector>

#include "tools/analyses/stats.h"
#include "tools/reader/timebase.h"

namespace gpscope::render {

// The report names, in output order: nvtx_sum, nvtx_gpu_proj, cuda_api_sum,
// cuda_gpu_kern_sum, cuda_gpu_mem_sum.
const std::vector<std::string_view>& StatsReportNames();
bool IsStatsReport(std::string_view name);

// `reports` are names from StatsReportNames().
std::string RenderStatsText(const analyses::StatsReport& report,
                            const std::vector<std::string_view>& reports,
                            const reader::Timebase& timebase);
std::string RenderStatsJson(const analyses::StatsReport& report,
                            const std::vector<std::string_view>& reports,
                            const reader::Timebase& timebase, std::string_view names);
// One table: a "# time origin" comment line, the header, the rows.
std::string RenderStatsCsv(const analyses::StatsReport& report, std::string_view name,
                           const reader::Timebase& timebase);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_STATS_RENDER_H_
