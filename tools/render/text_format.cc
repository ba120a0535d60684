// tools/render/text_format.cc: see text_format.h.
#include "tools/render/text_format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

}  // namespace gpscope::render
