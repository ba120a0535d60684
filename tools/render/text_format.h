// tools/render/text_format.h: numbers for people in the text renderers:
// three significant digits with a unit, thousands separators.
//
//   Time(8.21e6) -> "8.21 ms"   Count(1234567) -> "1,234,567"
//   Percent(0.372) -> "37.2%"   Bytes(2.5e9) -> "2.5 GB"
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_TEXT_FORMAT_H_
#define GPSCOPE_TOOLS_RENDER_TEXT_FORMAT_H_

#include <cstdint>
#include <string>

namespace gpscope::render {

std::string Count(uint64_t n);
std::string Count(double n);  // rounded, negative as 0
// "8.21 ms", "1.44 s", "94.2 us", "812 ns"; negative as 0.
std::string Time(double ns);
std::string Time(uint64_t ns);
// A ratio as a percentage with one decimal; "n/a" when not finite.
std::string Percent(double ratio);
std::string Bytes(double bytes);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_TEXT_FORMAT_H_
