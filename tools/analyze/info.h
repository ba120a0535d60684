// tools/analyze/info.h: `gpscope-analyze info FILE...`: what a set of trace
// files holds. Per process: identity, command line, the allow-listed
// environment the collector recorded (CUDA_LAUNCH_BLOCKING, NCCL_*...),
// devices, time span (wall clock), frames read and lost, event counts per
// kind, drops by reason, lost intervals, unavailable collector parts and
// whether the process ended cleanly; plus the reader's warnings about
// damaged data.
//
//   gpscope-analyze info --format json run.gpscope
//
// Flags, then one library call (analyses/trace_info.h: CollectInfo, one
// event sink of the reader's pass) and one renderer (render/info_render.h:
// text that fits 100 columns, or JSON with stable keys, for scripts).
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_INFO_H_
#define GPSCOPE_TOOLS_ANALYZE_INFO_H_

#include <ostream>
#include <string>
#include <vector>

#include "tools/analyses/trace_info.h"
#include "tools/render/info_render.h"

namespace gpscope::analyze {

// The library's names, as the tests and the fuzz targets use them here.
using analyses::CollectInfo;
using analyses::EventCounts;
using analyses::InfoProcess;
using analyses::InfoReport;
using render::RenderInfoJson;
using render::RenderInfoText;

int RunInfo(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_INFO_H_
