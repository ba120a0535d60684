// common/env_values.h: the one parser of GPSCOPE_* values, for the
// collector's settings (inject/config.h, inject/stacks/stack_settings.h), the
// capture window and the control socket (common/control/), and the
// launcher and the monitor where they check a value the same way.
//
// The contract: an unset or empty variable leaves the default; a bad value
// appends one line "NAME='value' is not EXPECTED; using DEFAULT" to
// *problems (the caller logs each) and leaves the default. Numbers are plain
// digits: no sign, no space, no exponent, no locale.
//
//   std::vector<std::string> problems;
//   EnvValues env(getenv, &problems);
//   uint32_t flush_ms = 2000;
//   env.WholeNumber("GPSCOPE_FLUSH_INTERVAL_MS", 100, 60000, &flush_ms);
//   static constexpr const char* kModes[] = {"node", "process"};
//   int mode = env.Choice("GPSCOPE_FILE_MODE", kModes, 0);
//
// Thread model: cold path (start-up), any one thread. Allocates.
#ifndef GPSCOPE_COMMON_ENV_VALUES_H_
#define GPSCOPE_COMMON_ENV_VALUES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpscope::common {

// getenv, or a test's fake environment.
using GetEnvFn = const char* (*)(const char*);

class EnvValues {
 public:
  EnvValues(GetEnvFn get_env, std::vector<std::string>* problems)
      : get_env_(get_env), problems_(problems) {}

  // The raw value, or nullptr when unset or empty.
  const char* Get(const char* name) const;
  // True when the variable is set to something non-empty.
  bool IsSet(const char* name) const { return Get(name) != nullptr; }

  // 1|true|yes|on or 0|false|no|off (any case).
  void Bool(const char* name, bool* out);
  void WholeNumber(const char* name, uint64_t lo, uint64_t hi, uint64_t* out);
  void WholeNumber(const char* name, uint32_t lo, uint32_t hi, uint32_t* out);
  // Seconds with up to three decimals ("30", "2.5"), stored as ms.
  void SecondsAsMs(const char* name, uint64_t max_s, uint64_t* out_ms);
  void String(const char* name, std::string* out);
  // One of `choices` (any case): its index; `current` when unset or bad.
  template <size_t N>
  int Choice(const char* name, const char* const (&choices)[N], int current) {
    return ChoiceOf(name, choices, N, current);
  }

  // Adds a free-form problem line.
  void Problem(std::string line);
  void Problem(const char* name, const char* value, const std::string& expected,
               const std::string& fallback);

 private:
  int ChoiceOf(const char* name, const char* const* choices, size_t n, int current);

  GetEnvFn get_env_;
  std::vector<std::string>* problems_;
};

// The number parser behind EnvValues: plain digits in lo..hi. False (and
// *out untouched) otherwise. For flags checked as the variables are.
bool ParseWholeNumber(const char* text, uint64_t lo, uint64_t hi, uint64_t* out);

// Calls item(text) for each comma-separated item of `list`, empty ones
// included ("a,,b" -> "a", "", "b").
template <typename Fn>
void ForEachListItem(const char* list, Fn item) {
  const std::string text(list);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    item(text.substr(start, comma - start));
    start = comma + 1;
  }
}

// "1500" -> "1.5"; "30000" -> "30".
std::string MsAsSeconds(uint64_t ms);

}  // namespace gpscope::common

#endif  // GPSCOPE_COMMON_ENV_VALUES_H_
