// tools/render/info_render.h: `gpscope-analyze info` as text (100
// columns, strings from the trace made printable) or JSON, from
// analyses/trace_info.h's report.
//
//   std::string text = render::RenderInfoText(analyses::CollectInfo(paths));
//
// Thread model: pure functions of the report.
#ifndef GPSCOPE_TOOLS_RENDER_INFO_RENDER_H_
#define GPSCOPE_TOOLS_RENDER_INFO_RENDER_H_

#include <string>

#include "tools/analyses/trace_info.h"

namespace gpscope::render {

std::string RenderInfoText(const analyses::InfoReport& report);
std::string RenderInfoJson(const analyses::InfoReport& report);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_INFO_RENDER_H_
