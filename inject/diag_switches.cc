#include "inject/diag_switches.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/env_values.h"

namespace gpscope::inject::diag {
namespace {

constexpr std::pair<const char*, uint32_t> kOffNames[] = {
    {"memcpy", kOffMemcpy}, {"memset", kOffMemset}, {"sync", kOffSync},
    {"overhead", kOffOverhead}};

bool IsOne(const char* v) { return v != nullptr && strcmp(v, "1") == 0; }

// GPSCOPE_DIAG_OFF: the named kinds (comma-separated, empty items skipped);
// unknown names get one line and are ignored.
uint32_t ParseOffKinds(const char* v, common::EnvValues* env) {
  if (v == nullptr) return 0;
  uint32_t off = 0;
  std::string unknown;
  common::ForEachListItem(v, [&](const std::string& item) {
    for (const auto& [name, bit] : kOffNames) {
      if (item == name) {
        off |= bit;
        return;
      }
    }
    if (!item.empty()) unknown += (unknown.empty() ? "" : ",") + item;
  });
  if (!unknown.empty()) {
    env->Problem("GPSCOPE_DIAG_OFF: unknown kind(s) " + unknown +
                 " (known: memcpy, memset, sync, overhead); ignored");
  }
  return off;
}

}  // namespace

Switches ParseSwitches(GetEnvFn get_env, std::vector<std::string>* problems) {
  common::EnvValues env(get_env, problems);  // common/env_values.h, as the settings
  Switches s;
  s.off_kinds = ParseOffKinds(env.Get("GPSCOPE_DIAG_OFF"), &env);
  s.gate_kernels = IsOne(env.Get("GPSCOPE_DIAG_GATE_KERNELS"));
  // Range-checked by the capturer (0 or above its ring: the default; else
  // rounded down to a power of two).
  if (const char* ring = env.Get("GPSCOPE_DIAG_STACK_RING")) {
    s.stack_ring_slots = static_cast<uint32_t>(strtoul(ring, nullptr, 10));
  }
  s.stack_no_launch = IsOne(env.Get("GPSCOPE_DIAG_STACK_NO_LAUNCH"));
  s.stack_driver_launches = IsOne(env.Get("GPSCOPE_DIAG_STACK_DRIVER_LAUNCHES"));
  if (const char* ring = env.Get("GPSCOPE_DIAG_API_ROW_RING")) {
    s.api_row_slots = static_cast<uint32_t>(strtoul(ring, nullptr, 10));
  }
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
