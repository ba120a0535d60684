// inject/stacks/stack_settings.cc: see stack_settings.h.
#include "inject/stacks/stack_settings.h"

#include <strings.h>

#include <cstring>

namespace gpscope::inject::stacks {
namespace {

void Problem(std::vector<std::string>* problems, const char* name, const char* value,
             const std::string& expected, const std::string& fallback) {
  if (problems == nullptr) return;
  problems->push_back(std::string(name) + "='" + value + "' is not " + expected + "; using " + fallback);
}

bool AnyOf(const char* v, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (strcasecmp(v, w) == 0) return true;
  }
  return false;
}

}  // namespace

const char* StackModeName(StackMode m) {
  switch (m) {
    case StackMode::kOff:
      return "0";
    case StackMode::kAuto:
      return "1";
    case StackMode::kPython:
      return "python";
    case StackMode::kNative:
      return "native";
  }
  return "1";
}

StackSettings ParseStackSettings(StackGetEnvFn get_env, std::vector<std::string>* problems) {
  StackSettings s;
  if (const char* v = get_env("GPSCOPE_STACKS"); v != nullptr && *v != '\0') {
    if (AnyOf(v, {"1", "true", "on", "yes"})) {
      s.mode = StackMode::kAuto;
    } else if (AnyOf(v, {"0", "false", "off", "no"})) {
      s.mode = StackMode::kOff;
    } else if (AnyOf(v, {"python"})) {
      s.mode = StackMode::kPython;
    } else if (AnyOf(v, {"native"})) {
      s.mode = StackMode::kNative;
    } else {
      Problem(problems, "GPSCOPE_STACKS", v, "one of 1|0|python|native", StackModeName(s.mode));
    }
  }
  if (const char* v = get_env("GPSCOPE_STACK_SAMPLE_MS"); v != nullptr && *v != '\0') {
    constexpr uint32_t kMax = 60000;
    uint64_t n = 0;
    bool ok = true;
    for (const char* p = v; *p != '\0'; ++p) {
      if (*p < '0' || *p > '9' || n > kMax) {
        ok = false;
        break;
      }
      n = n * 10 + static_cast<uint64_t>(*p - '0');
    }
    if (!ok || n > kMax) {
      Problem(problems, "GPSCOPE_STACK_SAMPLE_MS", v, "a whole number in 0.." + std::to_string(kMax),
              std::to_string(s.sample_interval_ms));
    } else {
      s.sample_interval_ms = static_cast<uint32_t>(n);
    }
  }
  return s;
}

std::vector<std::pair<std::string, std::string>> StackSettingsAsKeyValues(const StackSettings& s) {
  return {{"GPSCOPE_STACKS", StackModeName(s.mode)},
          {"GPSCOPE_STACK_SAMPLE_MS", std::to_string(s.sample_interval_ms)}};
}

}  // namespace gpscope::inject::stacks
