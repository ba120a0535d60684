// tools/render/text_format.h: the one set of unit formatters of the text
// renderers (summary, info, metrics, diff, stats): three significant digits
// with a decimal unit for every size and duration, so a number reads the
// same in every command. Wall-clock times: UTC.
//
//   Time(8.21e6) -> "8.21 ms"   Count(1234567) -> "1,234,567"
//   Percent(0.372) -> "37.2%"   Bytes(2.5e9) -> "2.5 GB"
//   Things(2, "frame") -> "2 frames"      UtcIso(ns, 3) -> "2023-11-14T22:13:20.000Z"
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_TEXT_FORMAT_H_
#define GPSCOPE_TOOLS_RENDER_TEXT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gpscope::render {

std::string Count(uint64_t n);
std::string Count(double n);  // rounded, negative as 0
// "8.21 ms", "1.44 s", "94.2 us", "812 ns"; negative as 0.
std::string Time(double ns);
std::string Time(uint64_t ns);
// A ratio as a percentage with one decimal; "n/a" when not finite.
std::string Percent(double ratio);
std::string Bytes(double bytes);

// "1,234 frames", "1 frame".
std::string Things(uint64_t n, std::string_view thing);

// CLOCK_REALTIME ns as UTC: "2023-11-14 22:13:20.000500" (microseconds).
std::string UtcText(uint64_t realtime_ns);
// "2023-11-14 22:13:20.000500 .. 22:13:20.003250 UTC": the date once when
// both ends share it.
std::string UtcSpanText(uint64_t first_realtime_ns, uint64_t last_realtime_ns);
// ISO 8601 with `digits` decimals of the second (0..9) and "Z".
std::string UtcIso(uint64_t realtime_ns, int digits);
// absl::FormatTime(`format`, the time, UTC), e.g. "%H:%M:%S".
std::string UtcFormat(const char* format, uint64_t realtime_ns);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_TEXT_FORMAT_H_
