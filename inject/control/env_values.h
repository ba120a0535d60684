// inject/control/env_values.h: validated GPSCOPE_* values for the control
// modules (capture window, control channel). Internal to gpscope_control.
//
// Same contract and message shape as inject/config.cc (which keeps its parser
// private): an unset or empty variable leaves the default; a bad value
// appends one line "NAME='value' is not EXPECTED; using DEFAULT" to
// *problems and leaves the default.
//
// Thread model: cold path (start-up), any one thread. Allocates.
#ifndef GPSCOPE_INJECT_CONTROL_ENV_VALUES_H_
#define GPSCOPE_INJECT_CONTROL_ENV_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gpscope::inject::control {

// The same type as inject/config.h's GetEnvFn (getenv or a test fake).
using GetEnvFn = const char* (*)(const char*);

class EnvValues {
 public:
  EnvValues(GetEnvFn get_env, std::vector<std::string>* problems)
      : get_env_(get_env), problems_(problems) {}

  // The raw value, or nullptr when unset or empty.
  const char* Get(const char* name) const;
  // True when the variable is set to something non-empty.
  bool IsSet(const char* name) const { return Get(name) != nullptr; }

  void Bool(const char* name, bool* out);
  void WholeNumber(const char* name, uint64_t lo, uint64_t hi, uint64_t* out);
  // Seconds with up to three decimals ("30", "2.5"), stored as ms; locale-free.
  void SecondsAsMs(const char* name, uint64_t max_s, uint64_t* out_ms);
  void String(const char* name, std::string* out);

  // Adds a free-form problem line.
  void Problem(std::string line);
  void Problem(const char* name, const char* value, const std::string& expected,
               const std::string& fallback);

 private:
  GetEnvFn get_env_;
  std::vector<std::string>* problems_;
};

// "1500" -> "1.5"; "30000" -> "30".
std::string MsAsSeconds(uint64_t ms);

}  // namespace gpscope::inject::control

#endif  // GPSCOPE_INJECT_CONTROL_ENV_VALUES_H_
