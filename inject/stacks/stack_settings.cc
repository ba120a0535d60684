// inject/stacks/stack_settings.cc: see stack_settings.h.
#include "inject/stacks/stack_settings.h"

#include <strings.h>

#include <cstring>

#include "common/env_values.h"

namespace gpscope::inject::stacks {
namespace {

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
  common::EnvValues env(get_env, problems);
  if (const char* v = env.Get("GPSCOPE_STACKS")) {
    if (AnyOf(v, {"1", "true", "on", "yes"})) {
      s.mode = StackMode::kAuto;
    } else if (AnyOf(v, {"0", "false", "off", "no"})) {
      s.mode = StackMode::kOff;
    } else if (AnyOf(v, {"python"})) {
      s.mode = StackMode::kPython;
    } else if (AnyOf(v, {"native"})) {
      s.mode = StackMode::kNative;
    } else {
      env.Problem("GPSCOPE_STACKS", v, "one of 1|0|python|native", StackModeName(s.mode));
    }
  }
  env.WholeNumber("GPSCOPE_STACK_SAMPLE_MS", 0, 60000, &s.sample_interval_ms);
  return s;
}

std::vector<std::pair<std::string, std::string>> StackSettingsAsKeyValues(const StackSettings& s) {
  return {{"GPSCOPE_STACKS", StackModeName(s.mode)},
          {"GPSCOPE_STACK_SAMPLE_MS", std::to_string(s.sample_interval_ms)}};
}

}  // namespace gpscope::inject::stacks
