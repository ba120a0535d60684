// common/control/capture_window.cc: see capture_window.h.
#include "common/control/capture_window.h"

#include <cstring>

namespace gpscope::control {

using common::EnvValues;
using common::MsAsSeconds;

// ------------------------------------------------------------------ config --

bool CaptureConfig::windowed() const {
  return standby || duty() || delay_ms > 0 || duration_ms > 0 || !range_name.empty() || steps > 0;
}

namespace {

// "2s", "500ms", "1.5m", "1h" -> ms; false when malformed or not whole ms.
bool ParseDurationMs(std::string_view text, uint64_t* out_ms) {
  size_t digits = 0;
  while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
    ++digits;
  }
  const std::string_view number = text.substr(0, digits);
  const std::string_view unit = text.substr(digits);
  uint64_t scale = 0;  // ms per unit
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    return false;
  }
  const size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : number.substr(dot + 1);
  if (whole.empty() || whole.size() > 9 || frac.size() > 3 ||
      (dot != std::string_view::npos && frac.empty()) ||
      frac.find('.') != std::string_view::npos) {
    return false;
  }
  uint64_t w = 0, f = 0, f_scale = 1;
  for (char c : whole) w = w * 10 + static_cast<uint64_t>(c - '0');
  for (char c : frac) {
    f = f * 10 + static_cast<uint64_t>(c - '0');
    f_scale *= 10;
  }
  if ((f * scale) % f_scale != 0) return false;  // finer than a ms
  *out_ms = w * scale + f * scale / f_scale;
  return true;
}

// "2000" -> "2s", "500" -> "500ms", "1500" -> "1.5s".
std::string DurationText(uint64_t ms) {
  return ms < 1000 ? std::to_string(ms) + "ms" : MsAsSeconds(ms) + "s";
}

}  // namespace

bool ParseDuty(std::string_view text, uint64_t* on_ms, uint64_t* period_ms) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  uint64_t on = 0, period = 0;
  if (!ParseDurationMs(text.substr(0, slash), &on) ||
      !ParseDurationMs(text.substr(slash + 1), &period)) {
    return false;
  }
  if (on < CaptureConfig::kMinDutyOnMs || period > CaptureConfig::kMaxSeconds * 1000 ||
      period < on + CaptureConfig::kMinDutyOffMs) {
    return false;
  }
  *on_ms = on;
  *period_ms = period;
  return true;
}

std::string DutyText(uint64_t on_ms, uint64_t period_ms) {
  if (on_ms == 0) return "";
  return DurationText(on_ms) + "/" + DurationText(period_ms);
}

std::vector<std::pair<std::string, std::string>> CaptureConfig::AsKeyValues() const {
  return {
      {"GPSCOPE_STANDBY", standby ? "1" : "0"},
      {"GPSCOPE_CAPTURE_DELAY_S", MsAsSeconds(delay_ms)},
      {"GPSCOPE_CAPTURE_DURATION_S", MsAsSeconds(duration_ms)},
      {"GPSCOPE_CAPTURE_RANGE", range_name.empty() ? "" : "nvtx:" + range_name},
      {"GPSCOPE_CAPTURE_RANGE_COUNT", std::to_string(range_count)},
      {"GPSCOPE_CAPTURE_STEPS", std::to_string(steps)},
      {"GPSCOPE_DUTY", DutyText(duty_on_ms, duty_period_ms)},
  };
}

CaptureConfig ParseCaptureConfig(GetEnvFn get_env, std::vector<std::string>* problems) {
  CaptureConfig c;
  EnvValues env(get_env, problems);
  env.Bool("GPSCOPE_STANDBY", &c.standby);
  env.SecondsAsMs("GPSCOPE_CAPTURE_DELAY_S", CaptureConfig::kMaxSeconds, &c.delay_ms);
  env.SecondsAsMs("GPSCOPE_CAPTURE_DURATION_S", CaptureConfig::kMaxSeconds, &c.duration_ms);
  if (const char* v = env.Get("GPSCOPE_CAPTURE_RANGE")) {
    const size_t name_bytes = strlen(v) >= 5 ? strlen(v) - 5 : 0;
    if (strncmp(v, "nvtx:", 5) != 0 || name_bytes == 0 ||
        name_bytes > CaptureConfig::kMaxRangeNameBytes || strcmp(v + 5, "*") == 0) {
      env.Problem("GPSCOPE_CAPTURE_RANGE", v,
                  "nvtx:NAME (an NVTX range name of 1..255 bytes, NAME* for a prefix)",
                  "no range");
    } else {
      c.range_name = v + 5;
    }
  }
  env.WholeNumber("GPSCOPE_CAPTURE_RANGE_COUNT", 1, 1000000, &c.range_count);
  if (c.range_name.empty() && env.IsSet("GPSCOPE_CAPTURE_RANGE_COUNT")) {
    env.Problem("GPSCOPE_CAPTURE_RANGE_COUNT is ignored without GPSCOPE_CAPTURE_RANGE=nvtx:NAME");
    c.range_count = 1;
  }
  env.WholeNumber("GPSCOPE_CAPTURE_STEPS", 0, 1000000000, &c.steps);
  if (const char* v = env.Get("GPSCOPE_DUTY")) {
    if (!ParseDuty(v, &c.duty_on_ms, &c.duty_period_ms)) {
      env.Problem("GPSCOPE_DUTY", v,
                  "ON/PERIOD with units ms|s|m|h (like 2s/60s), ON >= 100ms, PERIOD >= ON + "
                  "100ms and <= 168h",
                  "no duty cycle");
    }
  }
  if (c.standby || c.duty()) {
    const char* ignored[] = {"GPSCOPE_CAPTURE_DELAY_S", "GPSCOPE_CAPTURE_DURATION_S",
                             "GPSCOPE_CAPTURE_RANGE", "GPSCOPE_CAPTURE_RANGE_COUNT",
                             "GPSCOPE_CAPTURE_STEPS"};
    for (const char* name : ignored) {
      if (env.IsSet(name)) {
        env.Problem(std::string(name) +
                    (c.duty() ? " is ignored with GPSCOPE_DUTY (windows come on its schedule "
                                "and on `gpscope attach`)"
                              : " is ignored with GPSCOPE_STANDBY=1 (tracing starts only on "
                                "`gpscope attach`)"));
      }
    }
    CaptureConfig resting;
    resting.standby = c.standby && !c.duty();
    resting.duty_on_ms = c.duty_on_ms;
    resting.duty_period_ms = c.duty_period_ms;
    return resting;
  }
  return c;
}

// ------------------------------------------------------------------- names --

const char* CaptureStateName(CaptureState state) {
  switch (state) {
    case CaptureState::kIdle: return "idle";
    case CaptureState::kWaitingDelay: return "waiting_delay";
    case CaptureState::kWaitingRange: return "waiting_range";
    case CaptureState::kTracing: return "tracing";
    case CaptureState::kAttached: return "attached";
    case CaptureState::kStandby: return "standby";
    case CaptureState::kDone: return "done";
    case CaptureState::kDuty: return "duty";
  }
  return "unknown";
}

const char* TransitionReasonName(TransitionReason reason) {
  switch (reason) {
    case TransitionReason::kImmediate: return "immediate";
    case TransitionReason::kDelayElapsed: return "delay_elapsed";
    case TransitionReason::kRangeStarted: return "range_started";
    case TransitionReason::kAttachRequest: return "attach_request";
    case TransitionReason::kDutyStarted: return "duty_started";
    case TransitionReason::kDurationElapsed: return "duration_elapsed";
    case TransitionReason::kRangeEnded: return "range_ended";
    case TransitionReason::kStepsReached: return "steps_reached";
    case TransitionReason::kAttachElapsed: return "attach_elapsed";
    case TransitionReason::kStopRequest: return "stop_request";
    case TransitionReason::kDutyElapsed: return "duty_elapsed";
  }
  return "unknown";
}

const char* AttachOutcomeName(AttachOutcome outcome) {
  switch (outcome) {
    case AttachOutcome::kOk: return "ok";
    case AttachOutcome::kAlreadyTracing: return "already_tracing";
    case AttachOutcome::kNotTracing: return "not_tracing";
    case AttachOutcome::kBadDuration: return "bad_duration";
    case AttachOutcome::kNotStarted: return "not_started";
  }
  return "unknown";
}

bool IsStepRangeName(std::string_view name) {
  // Lower-case into a small stack buffer, '_' and '-' as ' '. Step names are
  // short: anything longer than the buffer is not one.
  char s[40];
  if (name.size() >= sizeof(s)) return false;
  size_t n = 0;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    s[n++] = c;
  }
  while (n > 0 && s[n - 1] >= '0' && s[n - 1] <= '9') --n;
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '#' || s[n - 1] == '_' || s[n - 1] == '-' ||
                   s[n - 1] == ':' || s[n - 1] == '=')) {
    --n;
  }
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == '_' || s[i] == '-') s[i] = ' ';
  }
  static constexpr std::string_view kSteps[] = {
      "step",       "profilerstep",   "profiler step", "iteration",       "iter",
      "train step", "training step",  "train iter",    "train iteration", "training iteration",
      "trainstep",  "optimizer step", "global step",
  };
  const std::string_view trimmed(s, n);
  for (std::string_view k : kSteps) {
    if (trimmed == k) return true;
  }
  return false;
}

// ------------------------------------------------------------------ window --

CaptureWindow::CaptureWindow(CaptureConfig config) : config_(std::move(config)) {}

uint64_t CaptureWindow::deadline_ns() const {
  switch (state_) {
    case CaptureState::kWaitingDelay: return delay_end_ns_;
    case CaptureState::kStandby: return config_.duty() ? next_duty_start_ns_ : 0;
    case CaptureState::kTracing:
    case CaptureState::kAttached:
    case CaptureState::kDuty: return window_end_ns_;
    default: return 0;
  }
}

uint64_t CaptureWindow::remaining_ms(uint64_t now_ns) const {
  const uint64_t deadline = deadline_ns();
  if (deadline == 0 || deadline <= now_ns) return 0;
  return (deadline - now_ns + 999'999) / 1'000'000;
}

bool CaptureWindow::RangeMatches(std::string_view name) const {
  const std::string& want = config_.range_name;
  if (want.empty()) return false;
  if (want.back() == '*') {
    const std::string_view prefix(want.data(), want.size() - 1);
    return name.substr(0, prefix.size()) == prefix;
  }
  return name == want;
}

CaptureState CaptureWindow::RestingState() const {
  return config_.standby || config_.duty() ? CaptureState::kStandby : CaptureState::kDone;
}

uint64_t CaptureWindow::DutyStartAtOrAfter(uint64_t t) const {
  const uint64_t period_ns = config_.duty_period_ms * 1'000'000;
  const uint64_t first = duty_anchor_ns_ + period_ns;
  if (t <= first) return first;
  return first + (t - first + period_ns - 1) / period_ns * period_ns;
}

void CaptureWindow::StartWindow(CaptureState state, TransitionReason reason, uint64_t at_ns,
                                uint64_t deadline_ns, Transitions* out) {
  state_ = state;
  window_start_ns_ = at_ns;
  window_end_ns_ = deadline_ns;
  range_depth_ = 0;
  ranges_ended_ = 0;
  steps_seen_ = 0;
  ++windows_started_;
  out->Add({TransitionKind::kStartTracing, reason, at_ns});
}

void CaptureWindow::StopWindow(TransitionReason reason, uint64_t at_ns, Transitions* out) {
  if (state_ == CaptureState::kDuty) {
    // The next grid start: one period after this window's (a window ended
    // early by `stop` keeps the grid too).
    next_duty_start_ns_ = DutyStartAtOrAfter(window_start_ns_ + 1);
  } else if (config_.duty()) {
    // After an attach: resume on the grid, a close grace after its end.
    next_duty_start_ns_ = DutyStartAtOrAfter(at_ns + CaptureConfig::kMinDutyOffMs * 1'000'000);
  }
  state_ = state_ == CaptureState::kAttached || state_ == CaptureState::kDuty ? RestingState()
                                                                               : CaptureState::kDone;
  window_end_ns_ = 0;
  out->Add({TransitionKind::kStopTracing, reason, at_ns});
}

// Applies every deadline up to now_ns. At most one start and one stop: a
// delay that passes and the window after it that also ends, or a duty
// window that ends and the next that starts.
void CaptureWindow::Advance(uint64_t now_ns, Transitions* out) {
  if (now_ns > newest_ns_) newest_ns_ = now_ns;
  const uint64_t now = newest_ns_;
  if (state_ == CaptureState::kWaitingDelay && now >= delay_end_ns_) {
    if (!config_.range_name.empty()) {
      state_ = CaptureState::kWaitingRange;
    } else {
      const uint64_t end = config_.duration_ms ? delay_end_ns_ + config_.duration_ms * 1'000'000 : 0;
      StartWindow(CaptureState::kTracing, TransitionReason::kDelayElapsed, delay_end_ns_, end, out);
    }
  }
  if (tracing() && window_end_ns_ != 0 && now >= window_end_ns_) {
    StopWindow(state_ == CaptureState::kAttached ? TransitionReason::kAttachElapsed
               : state_ == CaptureState::kDuty   ? TransitionReason::kDutyElapsed
                                                 : TransitionReason::kDurationElapsed,
               window_end_ns_, out);
  }
  // After the stop: a duty window's end and the next one's start can pass
  // in one late tick.
  if (state_ == CaptureState::kStandby && config_.duty() && now >= next_duty_start_ns_) {
    // The latest grid start at or before now; a window whose ON time has
    // passed too is skipped (its kinds were never on).
    const uint64_t period_ns = config_.duty_period_ms * 1'000'000;
    const uint64_t on_ns = config_.duty_on_ms * 1'000'000;
    const uint64_t start = next_duty_start_ns_ + (now - next_duty_start_ns_) / period_ns * period_ns;
    if (now < start + on_ns) {
      StartWindow(CaptureState::kDuty, TransitionReason::kDutyStarted, start, start + on_ns, out);
    } else {
      next_duty_start_ns_ = start + period_ns;
    }
  }
}

Transitions CaptureWindow::Start(uint64_t now_ns) {
  Transitions out;
  if (state_ != CaptureState::kIdle) return out;
  newest_ns_ = now_ns;
  duty_anchor_ns_ = now_ns;
  if (config_.duty()) {
    state_ = CaptureState::kStandby;
    next_duty_start_ns_ = DutyStartAtOrAfter(now_ns);
  } else if (config_.standby) {
    state_ = CaptureState::kStandby;
  } else if (config_.delay_ms > 0) {
    state_ = CaptureState::kWaitingDelay;
    delay_end_ns_ = now_ns + config_.delay_ms * 1'000'000;
  } else if (!config_.range_name.empty()) {
    state_ = CaptureState::kWaitingRange;
  } else {
    const uint64_t end = config_.duration_ms ? now_ns + config_.duration_ms * 1'000'000 : 0;
    StartWindow(CaptureState::kTracing, TransitionReason::kImmediate, now_ns, end, &out);
  }
  return out;
}

Transitions CaptureWindow::OnTick(uint64_t now_ns) {
  Transitions out;
  if (state_ != CaptureState::kIdle) Advance(now_ns, &out);
  return out;
}

Transitions CaptureWindow::OnNvtxRangeStart(std::string_view name, uint64_t now_ns) {
  Transitions out;
  if (state_ == CaptureState::kIdle) return out;
  Advance(now_ns, &out);
  if (!RangeMatches(name)) return out;
  if (state_ == CaptureState::kWaitingRange) {
    const uint64_t end = config_.duration_ms ? now_ns + config_.duration_ms * 1'000'000 : 0;
    StartWindow(CaptureState::kTracing, TransitionReason::kRangeStarted, now_ns, end, &out);
    range_depth_ = 1;
  } else if (state_ == CaptureState::kTracing) {
    ++range_depth_;
  }
  return out;
}

Transitions CaptureWindow::OnNvtxRangeEnd(std::string_view name, uint64_t now_ns) {
  Transitions out;
  if (state_ == CaptureState::kIdle) return out;
  Advance(now_ns, &out);
  if (state_ != CaptureState::kTracing) return out;
  if (config_.steps > 0 && IsStepRangeName(name) && ++steps_seen_ >= config_.steps) {
    StopWindow(TransitionReason::kStepsReached, now_ns, &out);
    return out;
  }
  // Ends of occurrences that started before the window are not counted
  // (depth 0): a window covers whole occurrences only.
  if (RangeMatches(name) && range_depth_ > 0 && --range_depth_ == 0 &&
      ++ranges_ended_ >= config_.range_count) {
    StopWindow(TransitionReason::kRangeEnded, now_ns, &out);
  }
  return out;
}

AttachResult CaptureWindow::OnAttachRequest(uint64_t duration_ms, uint64_t now_ns) {
  AttachResult r{AttachOutcome::kOk, {}};
  if (state_ == CaptureState::kIdle) {
    r.outcome = AttachOutcome::kNotStarted;
    return r;
  }
  if (duration_ms == 0 || duration_ms > kMaxAttachMs) {
    r.outcome = AttachOutcome::kBadDuration;
    return r;
  }
  Advance(now_ns, &r.transitions);
  if (tracing()) {
    r.outcome = AttachOutcome::kAlreadyTracing;
    return r;
  }
  const uint64_t at = newest_ns_;
  StartWindow(CaptureState::kAttached, TransitionReason::kAttachRequest, at,
              at + duration_ms * 1'000'000, &r.transitions);
  return r;
}

AttachResult CaptureWindow::OnStopRequest(uint64_t now_ns) {
  AttachResult r{AttachOutcome::kOk, {}};
  if (state_ == CaptureState::kIdle) {
    r.outcome = AttachOutcome::kNotStarted;
    return r;
  }
  Advance(now_ns, &r.transitions);
  if (!tracing()) {
    r.outcome = AttachOutcome::kNotTracing;
    return r;
  }
  StopWindow(TransitionReason::kStopRequest, newest_ns_, &r.transitions);
  return r;
}

}  // namespace gpscope::control
