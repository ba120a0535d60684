#include "inject/diag_switches.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpscope::inject::diag {
namespace {

constexpr std::pair<const char*, uint32_t> kOffNames[] = {
    {"memcpy", kOffMemcpy}, {"memset", kOffMemset}, {"sync", kOffSync},
    {"overhead", kOffOverhead}};

bool IsOne(const char* v) { return v != nullptr && strcmp(v, "1") == 0; }

// GPSCOPE_DIAG_OFF: the named kinds (comma-separated, empty items skipped);
// unknown names get one line and are ignored.
uint32_t ParseOffKinds(const char* v, std::vector<std::string>* problems) {
  if (v == nullptr || *v == '\0') return 0;
  uint32_t off = 0;
  std::string unknown;
  const std::string list(v);
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    bool known = false;
    for (const auto& [name, bit] : kOffNames) {
      if (item == name) {
        off |= bit;
        known = true;
      }
    }
    if (!known && !item.empty()) unknown += (unknown.empty() ? "" : ",") + item;
  }
  if (!unknown.empty() && problems != nullptr) {
    problems->push_back("GPSCOPE_DIAG_OFF: unknown kind(s) " + unknown +
                        " (known: memcpy, memset, sync, overhead); ignored");
  }
  return off;
}

}  // namespace

Switches ParseSwitches(GetEnvFn get_env, std::vector<std::string>* problems) {
  Switches s;
  s.off_kinds = ParseOffKinds(get_env("GPSCOPE_DIAG_OFF"), problems);
  s.gate_kernels = IsOne(get_env("GPSCOPE_DIAG_GATE_KERNELS"));
  // Range-checked by the capturer (0 or above its ring: the default).
  if (const char* ring = get_env("GPSCOPE_DIAG_STACK_RING")) {
    s.stack_ring_slots = static_cast<uint32_t>(strtoul(ring, nullptr, 10));
  }
  s.stack_no_launch = IsOne(get_env("GPSCOPE_DIAG_STACK_NO_LAUNCH"));
  return s;
}

std::string OffKindsText(uint32_t off_kinds) {
  std::string out;
  for (const auto& [name, bit] : kOffNames) {
    if (off_kinds & bit) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

}  // namespace gpscope::inject::diag
