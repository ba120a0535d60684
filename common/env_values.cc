// common/env_values.cc: see env_values.h.
#include "common/env_values.h"

#include <strings.h>

#include <cstring>
#include <utility>

namespace gpscope::common {

const char* EnvValues::Get(const char* name) const {
  const char* v = get_env_(name);
  return v == nullptr || *v == '\0' ? nullptr : v;
}

void EnvValues::Problem(std::string line) {
  if (problems_ != nullptr) problems_->push_back(std::move(line));
}

void EnvValues::Problem(const char* name, const char* value, const std::string& expected,
                        const std::string& fallback) {
  Problem(std::string(name) + "='" + value + "' is not " + expected + "; using " + fallback);
}

void EnvValues::Bool(const char* name, bool* out) {
  const char* v = Get(name);
  if (v == nullptr) return;
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) {
    *out = true;
  } else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
             !strcasecmp(v, "off")) {
    *out = false;
  } else {
    Problem(name, v, "one of 1|0|true|false", *out ? "1" : "0");
  }
}

namespace {

// Parses "123" or "123.456" (at most `max_decimals` decimals) into value *
// 10^max_decimals. Plain digits only: no sign, no exponent, no locale.
bool ParseFixed(const char* s, int max_decimals, uint64_t limit, uint64_t* out) {
  uint64_t whole = 0;
  const char* p = s;
  if (*p < '0' || *p > '9') return false;
  for (; *p >= '0' && *p <= '9'; ++p) {
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (whole > (UINT64_MAX - digit) / 10) return false;
    whole = whole * 10 + digit;
    if (whole > limit) return false;
  }
  uint64_t frac = 0;
  int decimals = 0;
  if (*p == '.') {
    ++p;
    if (*p < '0' || *p > '9') return false;
    for (; *p >= '0' && *p <= '9'; ++p) {
      if (++decimals > max_decimals) return false;
      frac = frac * 10 + static_cast<uint64_t>(*p - '0');
    }
  }
  if (*p != '\0') return false;
  for (int i = decimals; i < max_decimals; ++i) frac *= 10;
  uint64_t scale = 1;
  for (int i = 0; i < max_decimals; ++i) scale *= 10;
  *out = whole * scale + frac;
  return true;
}

}  // namespace

bool ParseWholeNumber(const char* text, uint64_t lo, uint64_t hi, uint64_t* out) {
  uint64_t n = 0;
  if (text == nullptr || !ParseFixed(text, 0, hi, &n) || n < lo || n > hi) return false;
  *out = n;
  return true;
}

void EnvValues::WholeNumber(const char* name, uint64_t lo, uint64_t hi, uint64_t* out) {
  const char* v = Get(name);
  if (v == nullptr) return;
  if (!ParseWholeNumber(v, lo, hi, out)) {
    Problem(name, v, "a whole number in " + std::to_string(lo) + ".." + std::to_string(hi),
            std::to_string(*out));
  }
}

void EnvValues::WholeNumber(const char* name, uint32_t lo, uint32_t hi, uint32_t* out) {
  uint64_t n = *out;
  WholeNumber(name, uint64_t{lo}, uint64_t{hi}, &n);
  *out = static_cast<uint32_t>(n);
}

int EnvValues::ChoiceOf(const char* name, const char* const* choices, size_t n, int current) {
  const char* v = Get(name);
  if (v == nullptr) return current;
  for (size_t i = 0; i < n; ++i) {
    if (!strcasecmp(v, choices[i])) return static_cast<int>(i);
  }
  std::string expected = "one of ";
  for (size_t i = 0; i < n; ++i) expected += (i ? "|" : "") + std::string(choices[i]);
  Problem(name, v, expected, choices[current]);
  return current;
}

void EnvValues::SecondsAsMs(const char* name, uint64_t max_s, uint64_t* out_ms) {
  const char* v = Get(name);
  if (v == nullptr) return;
  uint64_t ms = 0;
  if (!ParseFixed(v, 3, max_s, &ms) || ms > max_s * 1000) {
    Problem(name, v,
            "a number of seconds in 0.." + std::to_string(max_s) + " (like 30 or 2.5)",
            MsAsSeconds(*out_ms));
    return;
  }
  *out_ms = ms;
}

void EnvValues::String(const char* name, std::string* out) {
  const char* v = Get(name);
  if (v != nullptr) *out = v;
}

std::string MsAsSeconds(uint64_t ms) {
  std::string s = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    std::string frac = std::to_string(1000 + ms % 1000).substr(1);
    while (frac.back() == '0') frac.pop_back();
    s += "." + frac;
  }
  return s;
}

}  // namespace gpscope::common
