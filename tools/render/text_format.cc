// tools/render/text_format.cc: see text_format.h.
#include "tools/render/text_format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace gpscope::render {

std::string Count(uint64_t n) {
  std::string digits = absl::StrCat(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}
std::string Count(double n) { return Count(static_cast<uint64_t>(std::llround(std::max(0.0, n)))); }

std::string Time(double ns) {
  if (ns < 0) ns = 0;
  if (ns < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (ns < 1e6) return absl::StrFormat("%.3g us", ns / 1e3);
  if (ns < 1e9) return absl::StrFormat("%.3g ms", ns / 1e6);
  if (ns < 1e12) return absl::StrFormat("%.3g s", ns / 1e9);
  return absl::StrFormat("%.0f s", ns / 1e9);
}
std::string Time(uint64_t ns) { return Time(static_cast<double>(ns)); }

std::string Percent(double ratio) {
  if (!std::isfinite(ratio)) return "n/a";
  return absl::StrFormat("%.1f%%", 100 * ratio);
}

std::string Bytes(double bytes) {
  if (bytes < 1e3) return absl::StrFormat("%.0f B", bytes);
  if (bytes < 1e6) return absl::StrFormat("%.3g kB", bytes / 1e3);
  if (bytes < 1e9) return absl::StrFormat("%.3g MB", bytes / 1e6);
  if (bytes < 1e12) return absl::StrFormat("%.3g GB", bytes / 1e9);
  return absl::StrFormat("%.3g TB", bytes / 1e12);
}

std::string Things(uint64_t n, std::string_view thing) {
  return absl::StrCat(Count(n), " ", absl::string_view(thing.data(), thing.size()), n == 1 ? "" : "s");
}

namespace {
absl::Time WallTime(uint64_t realtime_ns) {
  return absl::FromUnixNanos(static_cast<int64_t>(std::min<uint64_t>(realtime_ns, INT64_MAX)));
}
}  // namespace

std::string UtcFormat(const char* format, uint64_t realtime_ns) {
  return absl::FormatTime(format, WallTime(realtime_ns), absl::UTCTimeZone());
}

std::string UtcText(uint64_t realtime_ns) { return UtcFormat("%Y-%m-%d %H:%M:%E6S", realtime_ns); }

std::string UtcSpanText(uint64_t first_realtime_ns, uint64_t last_realtime_ns) {
  const std::string first = UtcText(first_realtime_ns);
  std::string last = UtcText(last_realtime_ns);
  if (first.compare(0, 11, last, 0, 11) == 0) last.erase(0, 11);
  return absl::StrCat(first, " .. ", last, " UTC");
}

std::string UtcIso(uint64_t realtime_ns, int digits) {
  digits = std::clamp(digits, 0, 9);
  const std::string format = digits == 0 ? std::string("%Y-%m-%dT%H:%M:%SZ")
                                         : absl::StrCat("%Y-%m-%dT%H:%M:%E", digits, "SZ");
  return UtcFormat(format.c_str(), realtime_ns);
}

}  // namespace gpscope::render
