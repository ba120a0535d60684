// common/control/capture_window.h: when the collector traces. The
// equivalents of nsys's --delay / --duration / --capture-range, a step
// limit, and standby + attach for production.
//
// A pure state machine: it never reads a clock, never allocates after
// construction and knows nothing of CUDA. The collector feeds it time and
// NVTX range boundaries and applies what it returns: kStartTracing /
// kStopTracing (turn GPU activity collection on/off, or gate the output;
// see COLLECTOR-NOTES.md on why enabling kinds late can stall).
//
//   std::vector<std::string> problems;
//   CaptureConfig config = ParseCaptureConfig(getenv, &problems);  // log each line
//   CaptureWindow window(config);
//   for (const Transition& t : window.Start(now_ns)) Apply(t);       // once
//   ... writer/control thread, every tick:
//   for (const Transition& t : window.OnTick(now_ns)) Apply(t);
//   ... as NVTX ranges are seen (the collector resolves end records' names):
//   for (const Transition& t : window.OnNvtxRangeStart(name, start_ns)) Apply(t);
//   for (const Transition& t : window.OnNvtxRangeEnd(name, end_ns)) Apply(t);
//   ... from the control channel (`start 600000`):
//   AttachResult r = window.OnAttachRequest(600000, now_ns);
//
// States (CaptureState):
//   kWaitingDelay  tracing off; GPSCOPE_CAPTURE_DELAY_S after Start()
//                  the window starts (or kWaitingRange when a range is set)
//   kWaitingRange  tracing off until the first NVTX range named
//                  GPSCOPE_CAPTURE_RANGE=nvtx:NAME starts
//   kTracing       the configured window: tracing on until its duration
//                  (GPSCOPE_CAPTURE_DURATION_S, from the window's start), the
//                  end of the COUNT-th occurrence of the range, or the N-th
//                  step (GPSCOPE_CAPTURE_STEPS), whichever comes first; with
//                  none of these it lasts until exit
//   kAttached      an attach window (`gpscope attach`): tracing on for the
//                  requested duration or until `stop`
//   kStandby       GPSCOPE_STANDBY=1 or GPSCOPE_DUTY: tracing off (metrics
//                  only) until an attach or the next duty window; after
//                  each attach or duty window it returns here
//   kDuty          a duty window (GPSCOPE_DUTY=ON/PERIOD): tracing on for ON
//   kDone          the configured window is over; tracing off. An attach is
//                  still accepted (and returns here when it ends)
// An attach while tracing is refused (kAlreadyTracing). An attach before a
// configured window has started replaces that window.
//
// Duty cycle (GPSCOPE_DUTY=ON/PERIOD): windows of ON start at Start() +
// k * PERIOD for k = 1, 2, ... (the first one PERIOD after the start, so
// start-up is not what a window shows), with standby in between. A window
// the caller's ticks missed entirely (the writer blocked for longer than
// ON) is skipped, not opened late; one opened late still ends on its grid
// deadline. An attach during standby opens an attach window as without
// duty; the schedule resumes at the first grid start at least
// kMinDutyOffMs after the attach window's end. `stop` ends a duty window early; the next one comes
// on the grid. An attach during a duty window is refused (kAlreadyTracing).
//
// Steps: the end of an NVTX range whose name the analyzer also treats as a
// step ("step", "ProfilerStep#12", "train_step 3", "iteration", ...; see
// IsStepRangeName) counts one step while kTracing.
//
// Times: `now_ns` and range timestamps are ns on one clock of the caller's
// choice (CUPTI's, so that NVTX record timestamps can be passed as they
// are). A timestamp older than one already seen is accepted; deadlines are
// only checked against the newest. Transition::at_ns is when the boundary
// really was (a deadline passes between ticks: at_ns is the deadline), so a
// collector that gates records by timestamp can cut exactly.
//
// Thread model: not thread-safe. One thread calls it (the collector's
// writer or control thread), or calls are serialised by the caller's mutex;
// never an application thread's callback (it is cheap, but the collector
// must not lock there). Nothing here allocates, blocks or logs.
#ifndef GPSCOPE_COMMON_CONTROL_CAPTURE_WINDOW_H_
#define GPSCOPE_COMMON_CONTROL_CAPTURE_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/env_values.h"

namespace gpscope::control {

using common::GetEnvFn;

// GPSCOPE_* capture settings (all optional):
//   GPSCOPE_STANDBY              1|0             default 0: tracing off until `gpscope attach`
//   GPSCOPE_CAPTURE_DELAY_S      0..604800 (s)   default 0: start tracing this long after start
//   GPSCOPE_CAPTURE_DURATION_S   0..604800 (s)   default 0 (until exit): window length
//   GPSCOPE_CAPTURE_RANGE        nvtx:NAME       start at the first NVTX range NAME
//                                                (NAME* matches by prefix)
//   GPSCOPE_CAPTURE_RANGE_COUNT  1..1000000      default 1: stop when the COUNT-th
//                                                occurrence of the range ends
//   GPSCOPE_CAPTURE_STEPS        0..1000000000   default 0 (no limit): stop after N steps
//   GPSCOPE_DUTY                 ON/PERIOD       default off: a window of ON every PERIOD
//                                                for the process's life, standby between
//                                                ("2s/60s", "500ms/30s", "1m/1h"; units
//                                                ms|s|m|h; ON >= 100ms, PERIOD >= ON +
//                                                100ms, PERIOD <= a week)
// Seconds accept up to three decimals ("2.5"). Standby and duty ignore the
// window settings (one problem line each says so); GPSCOPE_STANDBY=1 with
// GPSCOPE_DUTY is duty (its standby is the time between windows).
struct CaptureConfig {
  bool standby = false;
  uint64_t duty_on_ms = 0;      // 0: no duty cycle
  uint64_t duty_period_ms = 0;  // > duty_on_ms when duty_on_ms > 0
  uint64_t delay_ms = 0;
  uint64_t duration_ms = 0;  // 0: until exit
  std::string range_name;    // empty: no range trigger
  uint64_t range_count = 1;
  uint64_t steps = 0;  // 0: no step limit

  static constexpr uint64_t kMaxSeconds = 604800;  // a week
  static constexpr size_t kMaxRangeNameBytes = 255;
  // GPSCOPE_DUTY bounds. The time off must cover a window's close grace
  // (inject/capture_gate.h kWindowCloseGraceNs, static_assert there), so
  // a window is written before the next opens.
  static constexpr uint64_t kMinDutyOnMs = 100;
  static constexpr uint64_t kMinDutyOffMs = 100;

  bool duty() const { return duty_on_ms > 0; }
  // True when tracing does not simply run from start to exit.
  bool windowed() const;
  // Every effective setting as (GPSCOPE_NAME, value), for the trace header.
  std::vector<std::pair<std::string, std::string>> AsKeyValues() const;
};

// GPSCOPE_DUTY's value: "ON/PERIOD" -> ms, within the bounds above; false
// (outputs untouched) otherwise. DutyText is the inverse ("2s/60s"; "" for
// on_ms 0), as the trace header shows it.
bool ParseDuty(std::string_view text, uint64_t* on_ms, uint64_t* period_ms);
std::string DutyText(uint64_t on_ms, uint64_t period_ms);

// Parses the environment; each problem is appended to *problems as one line
// naming the variable (same style as inject/config.h).
CaptureConfig ParseCaptureConfig(GetEnvFn get_env, std::vector<std::string>* problems);

enum class CaptureState : uint8_t {
  kIdle,  // before Start()
  kWaitingDelay,
  kWaitingRange,
  kTracing,
  kAttached,
  kStandby,
  kDone,
  kDuty,
};
const char* CaptureStateName(CaptureState state);  // "waiting_delay", "tracing", ...

enum class TransitionKind : uint8_t { kStartTracing, kStopTracing };
enum class TransitionReason : uint8_t {
  // starts
  kImmediate,      // no window configured: trace from Start()
  kDelayElapsed,   // GPSCOPE_CAPTURE_DELAY_S
  kRangeStarted,   // GPSCOPE_CAPTURE_RANGE
  kAttachRequest,  // `start` on the control channel
  kDutyStarted,    // GPSCOPE_DUTY: a duty window's grid start
  // stops
  kDurationElapsed,  // GPSCOPE_CAPTURE_DURATION_S
  kRangeEnded,       // the COUNT-th occurrence of the range ended
  kStepsReached,     // GPSCOPE_CAPTURE_STEPS
  kAttachElapsed,    // the attach window's duration
  kStopRequest,      // `stop` on the control channel
  kDutyElapsed,      // GPSCOPE_DUTY: the duty window's ON time
};
const char* TransitionReasonName(TransitionReason reason);  // "delay_elapsed", ...

struct Transition {
  TransitionKind kind;
  TransitionReason reason;
  uint64_t at_ns;  // when the boundary is (<= the call's now_ns)
};

// What one call changed, in order: at most a start and a stop (a tick that
// passes both a delay and a short duration). Fixed size, no allocation.
class Transitions {
 public:
  static constexpr size_t kCapacity = 2;
  const Transition* begin() const { return items_; }
  const Transition* end() const { return items_ + count_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  const Transition& operator[](size_t i) const { return items_[i]; }
  void Add(const Transition& t) {
    if (count_ < kCapacity) items_[count_++] = t;
  }

 private:
  Transition items_[kCapacity] = {};
  size_t count_ = 0;
};

enum class AttachOutcome : uint8_t {
  kOk,              // tracing now (a kStartTracing transition is returned)
  kAlreadyTracing,  // a window or an earlier attach is tracing: nothing changed
  kNotTracing,      // `stop` while tracing is off: nothing changed
  kBadDuration,     // duration_ms outside 1..kMaxAttachMs
  kNotStarted,      // Start() has not been called
};
const char* AttachOutcomeName(AttachOutcome outcome);

struct AttachResult {
  AttachOutcome outcome;
  Transitions transitions;  // a stop of an elapsed window may precede the start
};

class CaptureWindow {
 public:
  static constexpr uint64_t kMaxAttachMs = 24ull * 3600 * 1000;

  explicit CaptureWindow(CaptureConfig config);

  // Once, when the collector starts (the delay counts from here).
  Transitions Start(uint64_t now_ns);
  // Periodically (the writer's tick, ~20 ms): checks the deadlines.
  Transitions OnTick(uint64_t now_ns);
  Transitions OnNvtxRangeStart(std::string_view name, uint64_t now_ns);
  Transitions OnNvtxRangeEnd(std::string_view name, uint64_t now_ns);
  // `start DURATION_MS` / `stop` from the control channel.
  AttachResult OnAttachRequest(uint64_t duration_ms, uint64_t now_ns);
  AttachResult OnStopRequest(uint64_t now_ns);

  CaptureState state() const { return state_; }
  bool tracing() const {
    return state_ == CaptureState::kTracing || state_ == CaptureState::kAttached ||
           state_ == CaptureState::kDuty;
  }
  // When the current tracing window started; 0 when not tracing.
  uint64_t window_start_ns() const { return tracing() ? window_start_ns_ : 0; }
  // The current deadline (delay end, window end, attach end, the next duty
  // window's start in duty standby); 0: none.
  uint64_t deadline_ns() const;
  // ms until deadline_ns() as of now_ns; 0 when there is none or it passed.
  uint64_t remaining_ms(uint64_t now_ns) const;
  uint64_t steps_seen() const { return steps_seen_; }  // in the current window
  uint64_t ranges_ended() const { return ranges_ended_; }
  uint64_t windows_started() const { return windows_started_; }
  const CaptureConfig& config() const { return config_; }

 private:
  bool RangeMatches(std::string_view name) const;
  void Advance(uint64_t now_ns, Transitions* out);
  void StartWindow(CaptureState state, TransitionReason reason, uint64_t at_ns,
                   uint64_t deadline_ns, Transitions* out);
  void StopWindow(TransitionReason reason, uint64_t at_ns, Transitions* out);
  CaptureState RestingState() const;
  // Duty: the first grid start (Start() + k * PERIOD, k >= 1) at or after t.
  uint64_t DutyStartAtOrAfter(uint64_t t) const;

  CaptureConfig config_;
  CaptureState state_ = CaptureState::kIdle;
  uint64_t newest_ns_ = 0;
  uint64_t delay_end_ns_ = 0;
  uint64_t window_start_ns_ = 0;
  uint64_t window_end_ns_ = 0;  // 0: no deadline
  uint64_t range_depth_ = 0;    // open occurrences of the range in the window
  uint64_t ranges_ended_ = 0;
  uint64_t steps_seen_ = 0;
  uint64_t windows_started_ = 0;
  uint64_t duty_anchor_ns_ = 0;      // Start()'s time: the grid's origin
  uint64_t next_duty_start_ns_ = 0;  // in duty standby: the next window's start
};

// The analyzer's step-name rule (tools/model/model_builder.cc IsStepName),
// without allocation: case-insensitive, a trailing number and the
// separators before it dropped, '_' and '-' read as spaces.
bool IsStepRangeName(std::string_view name);

}  // namespace gpscope::control

#endif  // GPSCOPE_COMMON_CONTROL_CAPTURE_WINDOW_H_
