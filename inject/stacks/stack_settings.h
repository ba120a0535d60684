// inject/stacks/stack_settings.h: the call-site stack settings, parsed from
// the environment by a pure function (the lead wires it into inject/config).
//
//   GPSCOPE_STACKS            1|0|python|native   default 1
//       1       Python stacks on threads that run Python, native stacks on
//               the others (C++ programs, XLA's thread pools)
//       python  Python stacks only; threads without Python get none
//       native  native stacks on every thread (Python threads show the
//               interpreter's C frames)
//       0       none (also false/off/no; 1 also true/on/yes)
//   GPSCOPE_STACK_SAMPLE_MS   0..60000            default 1
//       at most one time-based sample of other CUDA launches per thread per
//       interval; 0: no time-based samples (synchronizing calls and the
//       first launch after an idle gap still get stacks)
//
// Parsed as every GPSCOPE_* value is (common/env_values.h): an unset or
// empty variable leaves the default; a bad value appends one line
// "NAME='value' is not EXPECTED; using DEFAULT" to *problems and keeps the
// default.
//
// Thread model: cold path (start-up), any one thread. Allocates.
#ifndef GPSCOPE_INJECT_STACKS_STACK_SETTINGS_H_
#define GPSCOPE_INJECT_STACKS_STACK_SETTINGS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/env_values.h"
#include "inject/stacks/capture_record.h"

namespace gpscope::inject::stacks {

enum class StackMode : uint8_t { kOff, kAuto, kPython, kNative };

struct StackSettings {
  StackMode mode = StackMode::kAuto;
  uint32_t sample_interval_ms = 1;

  bool enabled() const { return mode != StackMode::kOff; }
  bool python() const { return mode == StackMode::kAuto || mode == StackMode::kPython; }
  bool native() const { return mode == StackMode::kAuto || mode == StackMode::kNative; }
  // Which capture to try first on a thread, and whether a thread without a
  // Python thread state falls back to a native stack.
  bool native_when_no_python() const { return mode == StackMode::kAuto; }
};

using StackGetEnvFn = common::GetEnvFn;

StackSettings ParseStackSettings(StackGetEnvFn get_env, std::vector<std::string>* problems);

// The effective values as GPSCOPE_* name/value pairs (ProcessHeader.config).
std::vector<std::pair<std::string, std::string>> StackSettingsAsKeyValues(const StackSettings& s);

const char* StackModeName(StackMode m);  // "1", "0", "python", "native"

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_STACK_SETTINGS_H_
