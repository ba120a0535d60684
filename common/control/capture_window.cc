// common/control/capture_window.cc: see capture_window.h.
#include "common/control/capture_window.h"

#include <cstring>

namespace gpscope::control {

using common::EnvValues;
using common::MsAsSeconds;

// ------------------------------------------------------------------ config --

bool CaptureConfig::windowed() const {
  return standby || delay_ms > 0 || duration_ms > 0 || !range_name.empty() || steps > 0;
}

std::vector<std::pair<std::string, std::string>> CaptureConfig::AsKeyValues() const {
  return {
      {"GPSCOPE_STANDBY", standby ? "1" : "0"},
      {"GPSCOPE_CAPTURE_DELAY_S", MsAsSeconds(delay_ms)},
      {"GPSCOPE_CAPTURE_DURATION_S", MsAsSeconds(duration_ms)},
      {"GPSCOPE_CAPTURE_RANGE", range_name.empty() ? "" : "nvtx:" + range_name},
      {"GPSCOPE_CAPTURE_RANGE_COUNT", std::to_string(range_count)},
      {"GPSCOPE_CAPTURE_STEPS", std::to_string(steps)},
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
  if (c.standby) {
    const char* ignored[] = {"GPSCOPE_CAPTURE_DELAY_S", "GPSCOPE_CAPTURE_DURATION_S",
                             "GPSCOPE_CAPTURE_RANGE", "GPSCOPE_CAPTURE_RANGE_COUNT",
                             "GPSCOPE_CAPTURE_STEPS"};
    for (const char* name : ignored) {
      if (env.IsSet(name)) {
        env.Problem(std::string(name) +
                    " is ignored with GPSCOPE_STANDBY=1 (tracing starts only on `gpscope attach`)");
      }
    }
    CaptureConfig standby;
    standby.standby = true;
    return standby;
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
  }
  return "unknown";
}

const char* TransitionReasonName(TransitionReason reason) {
  switch (reason) {
    case TransitionReason::kImmediate: return "immediate";
    case TransitionReason::kDelayElapsed: return "delay_elapsed";
    case TransitionReason::kRangeStarted: return "range_started";
    case TransitionReason::kAttachRequest: return "attach_request";
    case TransitionReason::kDurationElapsed: return "duration_elapsed";
    case TransitionReason::kRangeEnded: return "range_ended";
    case TransitionReason::kStepsReached: return "steps_reached";
    case TransitionReason::kAttachElapsed: return "attach_elapsed";
    case TransitionReason::kStopRequest: return "stop_request";
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
    case CaptureState::kTracing:
    case CaptureState::kAttached: return window_end_ns_;
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
  return config_.standby ? CaptureState::kStandby : CaptureState::kDone;
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
  state_ = state_ == CaptureState::kAttached ? RestingState() : CaptureState::kDone;
  window_end_ns_ = 0;
  out->Add({TransitionKind::kStopTracing, reason, at_ns});
}

// Applies every deadline up to now_ns. At most one start and one stop: a
// delay that ends and the window after it that also ends.
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
  if ((state_ == CaptureState::kTracing || state_ == CaptureState::kAttached) &&
      window_end_ns_ != 0 && now >= window_end_ns_) {
    StopWindow(state_ == CaptureState::kAttached ? TransitionReason::kAttachElapsed
                                                 : TransitionReason::kDurationElapsed,
               window_end_ns_, out);
  }
}

Transitions CaptureWindow::Start(uint64_t now_ns) {
  Transitions out;
  if (state_ != CaptureState::kIdle) return out;
  newest_ns_ = now_ns;
  if (config_.standby) {
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
