// tools/render/enum_names.h: the trace's reason enums as the outputs name
// them: "DROP_RING_FULL" -> "ring_full" (JSON keys and values), values this
// build does not know -> "reason_17"; Spaced() turns them into text
// ("ring full").
//
//   DropName(proto::DROP_RING_FULL) == "ring_full"
//   LostName(99) == "reason_99"
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_ENUM_NAMES_H_
#define GPSCOPE_TOOLS_RENDER_ENUM_NAMES_H_

#include <string>

namespace gpscope::render {

std::string DropName(int reason);  // proto::DropReason
std::string LostName(int reason);  // proto::LostReason
std::string EndName(int reason);   // proto::EndReason
// "ring_full" -> "ring full".
std::string Spaced(std::string name);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_ENUM_NAMES_H_
