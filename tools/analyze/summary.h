// tools/analyze/summary.h: `gpscope-analyze summary FILE...`: why is the GPU
// idle or slow, and what to change. Findings first (most severe first, then
// by the GPU time they likely cost; consequences grouped under their cause),
// then per GPU the four numbers (SM utilization,
// memory-bandwidth utilization, kernel duration P50/P95, idle-gap share),
// busy and idle time with HTA's idle breakdown, top kernels, copies, host
// side, steps, and data completeness.
//
//   gpscope-analyze summary run.gpscope
//   gpscope-analyze summary --format json --idle-gap-ms 5 --top 20 node*.gpscope
//   gpscope-analyze summary --format csv --table windows --window-ms 50 run.gpscope
//
// Flags, then one library call (analyses/summary.h: ComputeSummaryResult,
// one streaming pass and the pure analyses) and one renderer
// (render/summary_render.h: text that fits 100 columns, JSON with every
// number, or one CSV table). The JSON schema (gpscope.summary/1) and the
// CSV columns are documented in render/summary_render.h.
//// Exit codes: 0 ok (also with damaged data, see completeness), 1 a file could
// not be read, 2 bad usage.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_SUMMARY_H_
#define GPSCOPE_TOOLS_ANALYZE_SUMMARY_H_

#include <ostream>
#include <string>
#include <vector>

#include "tools/analyses/summary.h"
#include "tools/model/model_builder.h"
#include "tools/render/summary_render.h"

namespace gpscope::analyze {

// The library's names, as the commands, diff and the tests use them here.
using analyses::ComputeSummaryResult;
using analyses::SummaryResult;
using render::IsSummaryCsvTable;
using render::RenderSummaryCsv;
using render::RenderSummaryJson;
using render::RenderSummaryText;

struct ParsedArgs;
// --idle-gap-ms, --window-ms and --top, as summary and diff take them; an
// error message (without the program name) or "".
std::string ParseCommonFlags(const ParsedArgs& parsed, model::ModelOptions* model_options,
                             size_t* top);

// The command: `summary [--format text|json|csv] [--table T] [--idle-gap-ms N]
// [--window-ms N] [--top N] FILE...`.
int RunSummary(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_SUMMARY_H_
