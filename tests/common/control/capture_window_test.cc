#include "common/control/capture_window.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpscope::control {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000 * kMs;
constexpr uint64_t kT0 = 5 * kS;  // the collector's start time in these tests

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

CaptureConfig Parse(std::map<std::string, std::string> env, std::vector<std::string>* problems) {
  g_env = &env;
  CaptureConfig c = ParseCaptureConfig(FakeEnv, problems);
  g_env = nullptr;
  return c;
}

void ExpectStart(const Transitions& t, TransitionReason reason, uint64_t at_ns) {
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, TransitionKind::kStartTracing);
  EXPECT_EQ(t[0].reason, reason) << TransitionReasonName(t[0].reason);
  EXPECT_EQ(t[0].at_ns, at_ns);
}

void ExpectStop(const Transitions& t, TransitionReason reason, uint64_t at_ns) {
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, TransitionKind::kStopTracing);
  EXPECT_EQ(t[0].reason, reason) << TransitionReasonName(t[0].reason);
  EXPECT_EQ(t[0].at_ns, at_ns);
}

// ------------------------------------------------------------------ config --

TEST(CaptureConfigTest, DefaultsTraceEverythingFromStart) {
  std::vector<std::string> problems;
  const CaptureConfig c = Parse({}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_FALSE(c.standby);
  EXPECT_EQ(c.delay_ms, 0u);
  EXPECT_EQ(c.duration_ms, 0u);
  EXPECT_TRUE(c.range_name.empty());
  EXPECT_EQ(c.range_count, 1u);
  EXPECT_EQ(c.steps, 0u);
  EXPECT_FALSE(c.windowed());
}

TEST(CaptureConfigTest, ReadsEveryVariable) {
  std::vector<std::string> problems;
  const CaptureConfig c = Parse({{"GPSCOPE_CAPTURE_DELAY_S", "2.5"},
                                 {"GPSCOPE_CAPTURE_DURATION_S", "30"},
                                 {"GPSCOPE_CAPTURE_RANGE", "nvtx:train loop"},
                                 {"GPSCOPE_CAPTURE_RANGE_COUNT", "3"},
                                 {"GPSCOPE_CAPTURE_STEPS", "100"}},
                                &problems);
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ(c.delay_ms, 2500u);
  EXPECT_EQ(c.duration_ms, 30000u);
  EXPECT_EQ(c.range_name, "train loop");
  EXPECT_EQ(c.range_count, 3u);
  EXPECT_EQ(c.steps, 100u);
  EXPECT_TRUE(c.windowed());
  const auto kv = c.AsKeyValues();
  EXPECT_EQ(kv[1], (std::pair<std::string, std::string>{"GPSCOPE_CAPTURE_DELAY_S", "2.5"}));
  EXPECT_EQ(kv[3],
            (std::pair<std::string, std::string>{"GPSCOPE_CAPTURE_RANGE", "nvtx:train loop"}));
}

TEST(CaptureConfigTest, BadValuesGetOneLineNamingTheVariableAndTheDefault) {
  std::vector<std::string> problems;
  const CaptureConfig c = Parse({{"GPSCOPE_CAPTURE_DELAY_S", "-1"},
                                 {"GPSCOPE_CAPTURE_DURATION_S", "1.2345"},
                                 {"GPSCOPE_CAPTURE_RANGE", "train"},
                                 {"GPSCOPE_CAPTURE_STEPS", "ten"},
                                 {"GPSCOPE_STANDBY", "maybe"}},
                                &problems);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_EQ(problems[0], "GPSCOPE_STANDBY='maybe' is not one of 1|0|true|false; using 0");
  EXPECT_EQ(problems[1],
            "GPSCOPE_CAPTURE_DELAY_S='-1' is not a number of seconds in 0..604800 (like 30 or "
            "2.5); using 0");
  EXPECT_NE(problems[2].find("GPSCOPE_CAPTURE_DURATION_S='1.2345'"), std::string::npos);
  EXPECT_EQ(problems[3],
            "GPSCOPE_CAPTURE_RANGE='train' is not nvtx:NAME (an NVTX range name of 1..255 bytes, "
            "NAME* for a prefix); using no range");
  EXPECT_EQ(problems[4],
            "GPSCOPE_CAPTURE_STEPS='ten' is not a whole number in 0..1000000000; using 0");
  EXPECT_EQ(c.delay_ms, 0u);
  EXPECT_EQ(c.duration_ms, 0u);
  EXPECT_TRUE(c.range_name.empty());
  EXPECT_EQ(c.steps, 0u);
}

TEST(CaptureConfigTest, RejectsOutOfRangeAndMalformedNumbers) {
  for (const char* bad : {"604801", "1e3", "1.", ".5", "1,5", " 1", "99999999999999999999999"}) {
    std::vector<std::string> problems;
    const CaptureConfig c = Parse({{"GPSCOPE_CAPTURE_DURATION_S", bad}}, &problems);
    EXPECT_EQ(problems.size(), 1u) << bad;
    EXPECT_EQ(c.duration_ms, 0u) << bad;
  }
  std::vector<std::string> problems;
  Parse({{"GPSCOPE_CAPTURE_RANGE", "nvtx:"}, {"GPSCOPE_CAPTURE_RANGE_COUNT", "0"}}, &problems);
  ASSERT_EQ(problems.size(), 3u);  // empty name; count 0; count without a range
  EXPECT_NE(problems[1].find("GPSCOPE_CAPTURE_RANGE_COUNT='0'"), std::string::npos);
  EXPECT_EQ(problems[2],
            "GPSCOPE_CAPTURE_RANGE_COUNT is ignored without GPSCOPE_CAPTURE_RANGE=nvtx:NAME");
}

TEST(CaptureConfigTest, StandbyIgnoresWindowSettingsAndSaysSo) {
  std::vector<std::string> problems;
  const CaptureConfig c =
      Parse({{"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CAPTURE_DELAY_S", "5"}}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "GPSCOPE_CAPTURE_DELAY_S is ignored with GPSCOPE_STANDBY=1 (tracing starts only on "
            "`gpscope attach`)");
  EXPECT_TRUE(c.standby);
  EXPECT_EQ(c.delay_ms, 0u);
}

// GPSCOPE_DUTY: units ms|s|m|h, decimals to a whole ms, the header's text.
TEST(CaptureConfigTest, DutyReadsOnAndPeriodWithUnits) {
  struct Case {
    const char* value;
    uint64_t on_ms, period_ms;
    const char* text;
  };
  const Case cases[] = {{"2s/60s", 2000, 60000, "2s/60s"},
                        {"500ms/30s", 500, 30000, "500ms/30s"},
                        {"1.5s/1m", 1500, 60000, "1.5s/60s"},
                        {"100ms/200ms", 100, 200, "100ms/200ms"},
                        {"1m/1h", 60000, 3600000, "60s/3600s"}};
  for (const Case& k : cases) {
    std::vector<std::string> problems;
    const CaptureConfig c = Parse({{"GPSCOPE_DUTY", k.value}}, &problems);
    EXPECT_TRUE(problems.empty()) << k.value << ": " << problems[0];
    EXPECT_TRUE(c.duty()) << k.value;
    EXPECT_TRUE(c.windowed()) << k.value;
    EXPECT_FALSE(c.standby) << k.value;
    EXPECT_EQ(c.duty_on_ms, k.on_ms) << k.value;
    EXPECT_EQ(c.duty_period_ms, k.period_ms) << k.value;
    EXPECT_EQ(DutyText(c.duty_on_ms, c.duty_period_ms), k.text) << k.value;
    bool found = false;
    for (const auto& [key, value] : c.AsKeyValues()) {
      if (key == "GPSCOPE_DUTY") found = value == k.text;
    }
    EXPECT_TRUE(found) << k.value;
  }
}

// Bad values: one line, the duty cycle off, nothing else changed.
TEST(CaptureConfigTest, BadDutyValuesAreOneLineAndLeaveDutyOff) {
  const char* bad[] = {"2s",        "2/60",      "2s/60",     "99ms/60s", "2s/2.05s",
                       "2s/2s",     "-1s/60s",   "2s/169h",   "0.0001s/1s", "1.2345s/10s",
                       "2s/60s/1s", "s/60s",     "2 s/60s",   "2.s/60s",  "2x/60s"};
  for (const char* v : bad) {
    std::vector<std::string> problems;
    const CaptureConfig c =
        Parse({{"GPSCOPE_DUTY", v}, {"GPSCOPE_CAPTURE_DURATION_S", "3"}}, &problems);
    ASSERT_EQ(problems.size(), 1u) << v;
    EXPECT_EQ(problems[0], std::string("GPSCOPE_DUTY='") + v +
                               "' is not ON/PERIOD with units ms|s|m|h (like 2s/60s), ON >= "
                               "100ms, PERIOD >= ON + 100ms and <= 168h; using no duty cycle")
        << v;
    EXPECT_FALSE(c.duty()) << v;
    EXPECT_EQ(c.duration_ms, 3000u) << v << ": the other settings apply as without it";
  }
}

TEST(CaptureConfigTest, DutyIgnoresWindowSettingsAndTakesStandbysPlace) {
  std::vector<std::string> problems;
  const CaptureConfig c = Parse({{"GPSCOPE_DUTY", "2s/60s"},
                                 {"GPSCOPE_STANDBY", "1"},
                                 {"GPSCOPE_CAPTURE_RANGE", "nvtx:train"}},
                                &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "GPSCOPE_CAPTURE_RANGE is ignored with GPSCOPE_DUTY (windows come on its schedule "
            "and on `gpscope attach`)");
  EXPECT_TRUE(c.duty());
  EXPECT_FALSE(c.standby) << "duty's own standby";
  EXPECT_TRUE(c.range_name.empty());
}

// ------------------------------------------------------------------ window --

TEST(CaptureWindowTest, NoWindowTracesFromStartUntilExit) {
  CaptureWindow w(CaptureConfig{});
  ExpectStart(w.Start(kT0), TransitionReason::kImmediate, kT0);
  EXPECT_TRUE(w.tracing());
  EXPECT_TRUE(w.OnTick(kT0 + 3600 * kS).empty());
  EXPECT_TRUE(w.tracing());
  EXPECT_EQ(w.deadline_ns(), 0u);
}

TEST(CaptureWindowTest, DelayThenDurationStartAndStopAtTheExactBoundaries) {
  CaptureConfig c;
  c.delay_ms = 2000;
  c.duration_ms = 3000;
  CaptureWindow w(c);
  EXPECT_TRUE(w.Start(kT0).empty());
  EXPECT_EQ(w.state(), CaptureState::kWaitingDelay);
  EXPECT_EQ(w.remaining_ms(kT0 + 500 * kMs), 1500u);
  EXPECT_TRUE(w.OnTick(kT0 + 1999 * kMs).empty());
  // The tick comes late: the window still starts at the delay's end.
  ExpectStart(w.OnTick(kT0 + 2020 * kMs), TransitionReason::kDelayElapsed, kT0 + 2 * kS);
  EXPECT_EQ(w.window_start_ns(), kT0 + 2 * kS);
  EXPECT_EQ(w.deadline_ns(), kT0 + 5 * kS);
  EXPECT_TRUE(w.OnTick(kT0 + 4999 * kMs).empty());
  ExpectStop(w.OnTick(kT0 + 5010 * kMs), TransitionReason::kDurationElapsed, kT0 + 5 * kS);
  EXPECT_EQ(w.state(), CaptureState::kDone);
  EXPECT_TRUE(w.OnTick(kT0 + 100 * kS).empty());
}

TEST(CaptureWindowTest, OneLateTickPassingDelayAndDurationYieldsStartThenStop) {
  CaptureConfig c;
  c.delay_ms = 1000;
  c.duration_ms = 500;
  CaptureWindow w(c);
  w.Start(kT0);
  const Transitions t = w.OnTick(kT0 + 10 * kS);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].kind, TransitionKind::kStartTracing);
  EXPECT_EQ(t[0].at_ns, kT0 + 1 * kS);
  EXPECT_EQ(t[1].kind, TransitionKind::kStopTracing);
  EXPECT_EQ(t[1].at_ns, kT0 + 1500 * kMs);
  EXPECT_EQ(w.state(), CaptureState::kDone);
}

TEST(CaptureWindowTest, NvtxRangeStartsAndItsEndStopsTheWindow) {
  CaptureConfig c;
  c.range_name = "train";
  CaptureWindow w(c);
  EXPECT_TRUE(w.Start(kT0).empty());
  EXPECT_EQ(w.state(), CaptureState::kWaitingRange);
  EXPECT_TRUE(w.OnNvtxRangeStart("warmup", kT0 + 1 * kS).empty());
  EXPECT_TRUE(w.OnNvtxRangeEnd("train", kT0 + 2 * kS).empty());  // never started: not counted
  ExpectStart(w.OnNvtxRangeStart("train", kT0 + 3 * kS), TransitionReason::kRangeStarted,
              kT0 + 3 * kS);
  // A nested occurrence of the same name does not end the window early.
  EXPECT_TRUE(w.OnNvtxRangeStart("train", kT0 + 4 * kS).empty());
  EXPECT_TRUE(w.OnNvtxRangeEnd("train", kT0 + 5 * kS).empty());
  EXPECT_TRUE(w.OnNvtxRangeEnd("other", kT0 + 6 * kS).empty());
  ExpectStop(w.OnNvtxRangeEnd("train", kT0 + 7 * kS), TransitionReason::kRangeEnded, kT0 + 7 * kS);
  EXPECT_EQ(w.ranges_ended(), 1u);
  // Later occurrences do not reopen it.
  EXPECT_TRUE(w.OnNvtxRangeStart("train", kT0 + 8 * kS).empty());
  EXPECT_FALSE(w.tracing());
}

TEST(CaptureWindowTest, RangeCountKeepsTracingUntilTheLastOccurrenceEnds) {
  CaptureConfig c;
  c.range_name = "epoch*";
  c.range_count = 3;
  CaptureWindow w(c);
  w.Start(kT0);
  ExpectStart(w.OnNvtxRangeStart("epoch 1", kT0 + 1 * kS), TransitionReason::kRangeStarted,
              kT0 + 1 * kS);
  EXPECT_TRUE(w.OnNvtxRangeEnd("epoch 1", kT0 + 2 * kS).empty());
  EXPECT_TRUE(w.OnNvtxRangeStart("epoch 2", kT0 + 3 * kS).empty());
  EXPECT_TRUE(w.OnNvtxRangeEnd("epoch 2", kT0 + 4 * kS).empty());
  EXPECT_TRUE(w.tracing());
  EXPECT_TRUE(w.OnNvtxRangeStart("epoch 3", kT0 + 5 * kS).empty());
  ExpectStop(w.OnNvtxRangeEnd("epoch 3", kT0 + 6 * kS), TransitionReason::kRangeEnded,
             kT0 + 6 * kS);
  EXPECT_EQ(w.ranges_ended(), 3u);
}

TEST(CaptureWindowTest, DelayThenRangeWaitsForBoth) {
  CaptureConfig c;
  c.delay_ms = 10'000;
  c.range_name = "train";
  c.duration_ms = 1'000;
  CaptureWindow w(c);
  w.Start(kT0);
  // Before the delay the range does not count.
  EXPECT_TRUE(w.OnNvtxRangeStart("train", kT0 + 1 * kS).empty());
  EXPECT_TRUE(w.OnTick(kT0 + 11 * kS).empty());
  EXPECT_EQ(w.state(), CaptureState::kWaitingRange);
  ExpectStart(w.OnNvtxRangeStart("train", kT0 + 12 * kS), TransitionReason::kRangeStarted,
              kT0 + 12 * kS);
  // The duration bounds the window although the range has not ended.
  ExpectStop(w.OnTick(kT0 + 14 * kS), TransitionReason::kDurationElapsed, kT0 + 13 * kS);
}

TEST(CaptureWindowTest, StepsStopTheWindowAtTheNthStepEnd) {
  CaptureConfig c;
  c.steps = 3;
  CaptureWindow w(c);
  ExpectStart(w.Start(kT0), TransitionReason::kImmediate, kT0);
  EXPECT_TRUE(w.OnNvtxRangeEnd("ProfilerStep#0", kT0 + 1 * kS).empty());
  EXPECT_TRUE(w.OnNvtxRangeEnd("forward", kT0 + 2 * kS).empty());  // not a step
  EXPECT_TRUE(w.OnNvtxRangeEnd("ProfilerStep#1", kT0 + 3 * kS).empty());
  EXPECT_EQ(w.steps_seen(), 2u);
  ExpectStop(w.OnNvtxRangeEnd("ProfilerStep#2", kT0 + 4 * kS), TransitionReason::kStepsReached,
             kT0 + 4 * kS);
}

TEST(CaptureWindowTest, StepNamesFollowTheAnalyzersRule) {
  for (const char* yes : {"step", "Step 12", "ProfilerStep#7", "train_step-3", "Iteration",
                          "TRAINING ITERATION 9", "global_step=100", "optimizer-step"}) {
    EXPECT_TRUE(IsStepRangeName(yes)) << yes;
  }
  for (const char* no : {"", "forward", "steps", "stepper", "my step", "ncclAllReduce",
                         "a very long range name that is certainly not a step"}) {
    EXPECT_FALSE(IsStepRangeName(no)) << no;
  }
}

TEST(CaptureWindowTest, StandbyTracesOnlyDuringAnAttach) {
  CaptureConfig c;
  c.standby = true;
  CaptureWindow w(c);
  EXPECT_TRUE(w.Start(kT0).empty());
  EXPECT_EQ(w.state(), CaptureState::kStandby);
  EXPECT_TRUE(w.OnTick(kT0 + 100 * kS).empty());
  EXPECT_FALSE(w.tracing());

  AttachResult r = w.OnAttachRequest(600'000, kT0 + 200 * kS);
  EXPECT_EQ(r.outcome, AttachOutcome::kOk);
  ExpectStart(r.transitions, TransitionReason::kAttachRequest, kT0 + 200 * kS);
  EXPECT_EQ(w.state(), CaptureState::kAttached);
  EXPECT_EQ(w.remaining_ms(kT0 + 300 * kS), 500'000u);

  // A second attach while the first is open is refused and changes nothing.
  r = w.OnAttachRequest(1'000, kT0 + 300 * kS);
  EXPECT_EQ(r.outcome, AttachOutcome::kAlreadyTracing);
  EXPECT_TRUE(r.transitions.empty());
  EXPECT_EQ(w.deadline_ns(), kT0 + 800 * kS);

  ExpectStop(w.OnTick(kT0 + 801 * kS), TransitionReason::kAttachElapsed, kT0 + 800 * kS);
  EXPECT_EQ(w.state(), CaptureState::kStandby);

  // Attachable again; `stop` ends it early.
  EXPECT_EQ(w.OnAttachRequest(60'000, kT0 + 900 * kS).outcome, AttachOutcome::kOk);
  r = w.OnStopRequest(kT0 + 910 * kS);
  EXPECT_EQ(r.outcome, AttachOutcome::kOk);
  ExpectStop(r.transitions, TransitionReason::kStopRequest, kT0 + 910 * kS);
  EXPECT_EQ(w.state(), CaptureState::kStandby);
  EXPECT_EQ(w.OnStopRequest(kT0 + 920 * kS).outcome, AttachOutcome::kNotTracing);
  EXPECT_EQ(w.windows_started(), 2u);
}

TEST(CaptureWindowTest, AttachRejectsBadDurationsAndCallsBeforeStart) {
  CaptureConfig c;
  c.standby = true;
  CaptureWindow w(c);
  EXPECT_EQ(w.OnAttachRequest(1000, kT0).outcome, AttachOutcome::kNotStarted);
  w.Start(kT0);
  EXPECT_EQ(w.OnAttachRequest(0, kT0).outcome, AttachOutcome::kBadDuration);
  EXPECT_EQ(w.OnAttachRequest(CaptureWindow::kMaxAttachMs + 1, kT0).outcome,
            AttachOutcome::kBadDuration);
  EXPECT_FALSE(w.tracing());
}

TEST(CaptureWindowTest, AttachWhileTracingEverythingIsRefused) {
  CaptureWindow w(CaptureConfig{});
  w.Start(kT0);
  EXPECT_EQ(w.OnAttachRequest(1000, kT0 + kS).outcome, AttachOutcome::kAlreadyTracing);
  EXPECT_TRUE(w.tracing());
}

TEST(CaptureWindowTest, AttachAfterAConfiguredWindowReturnsToDone) {
  CaptureConfig c;
  c.duration_ms = 1000;
  CaptureWindow w(c);
  w.Start(kT0);
  // The window elapsed between ticks: the attach first closes it, then opens its own.
  const AttachResult r = w.OnAttachRequest(2000, kT0 + 5 * kS);
  EXPECT_EQ(r.outcome, AttachOutcome::kOk);
  ASSERT_EQ(r.transitions.size(), 2u);
  EXPECT_EQ(r.transitions[0].reason, TransitionReason::kDurationElapsed);
  EXPECT_EQ(r.transitions[0].at_ns, kT0 + 1 * kS);
  EXPECT_EQ(r.transitions[1].reason, TransitionReason::kAttachRequest);
  ExpectStop(w.OnTick(kT0 + 8 * kS), TransitionReason::kAttachElapsed, kT0 + 7 * kS);
  EXPECT_EQ(w.state(), CaptureState::kDone);
}

TEST(CaptureWindowTest, OlderTimestampsDoNotMoveTimeBackwards) {
  CaptureConfig c;
  c.duration_ms = 1000;
  CaptureWindow w(c);
  w.Start(kT0);
  EXPECT_TRUE(w.OnTick(kT0 + 900 * kMs).empty());
  // An NVTX record processed late carries an older time: no effect on deadlines.
  EXPECT_TRUE(w.OnNvtxRangeEnd("x", kT0 + 100 * kMs).empty());
  EXPECT_TRUE(w.tracing());
  ExpectStop(w.OnTick(kT0 + 1000 * kMs), TransitionReason::kDurationElapsed, kT0 + 1 * kS);
}

TEST(CaptureWindowTest, CallsBeforeStartDoNothing) {
  CaptureWindow w(CaptureConfig{});
  EXPECT_TRUE(w.OnTick(kT0).empty());
  EXPECT_TRUE(w.OnNvtxRangeStart("train", kT0).empty());
  EXPECT_EQ(w.state(), CaptureState::kIdle);
  EXPECT_STREQ(CaptureStateName(w.state()), "idle");
}

// ------------------------------------------------------------------- duty --

CaptureConfig Duty(uint64_t on_ms, uint64_t period_ms) {
  CaptureConfig c;
  c.duty_on_ms = on_ms;
  c.duty_period_ms = period_ms;
  return c;
}

// 2s/60s: windows at start + 60 s, + 120 s, ... on the grid, however late
// the ticks come, standby in between, for as long as the process runs.
TEST(CaptureWindowTest, DutyRepeatsWindowsOnTheGridForever) {
  CaptureWindow w(Duty(2000, 60000));
  EXPECT_TRUE(w.Start(kT0).empty());
  EXPECT_EQ(w.state(), CaptureState::kStandby);
  EXPECT_EQ(w.deadline_ns(), kT0 + 60 * kS);
  EXPECT_FALSE(w.tracing());
  for (uint64_t k = 1; k <= 1000; ++k) {
    const uint64_t start = kT0 + k * 60 * kS;
    EXPECT_TRUE(w.OnTick(start - 1).empty()) << k;
    ExpectStart(w.OnTick(start + 17 * kMs), TransitionReason::kDutyStarted, start);
    EXPECT_EQ(w.state(), CaptureState::kDuty);
    EXPECT_TRUE(w.tracing());
    EXPECT_EQ(w.deadline_ns(), start + 2 * kS);
    EXPECT_TRUE(w.OnTick(start + 2 * kS - 1).empty()) << k;
    ExpectStop(w.OnTick(start + 2 * kS + 19 * kMs), TransitionReason::kDutyElapsed,
               start + 2 * kS);
    ASSERT_EQ(w.state(), CaptureState::kStandby) << k;
    EXPECT_EQ(w.deadline_ns(), start + 60 * kS);
  }
  EXPECT_EQ(w.windows_started(), 1000u);
}

// A writer blocked past a whole window skips it (the kinds were never on);
// one blocked past the start only opens it late, ending on the grid.
TEST(CaptureWindowTest, DutyWindowsMissedWhollyAreSkippedLateOnesKeepTheirEnd) {
  CaptureWindow w(Duty(2000, 10000));
  w.Start(kT0);
  EXPECT_TRUE(w.OnTick(kT0 + 35 * kS).empty()) << "10 s, 20 s and 30 s windows all passed";
  EXPECT_EQ(w.deadline_ns(), kT0 + 40 * kS);
  ExpectStart(w.OnTick(kT0 + 41 * kS), TransitionReason::kDutyStarted, kT0 + 40 * kS);
  EXPECT_EQ(w.deadline_ns(), kT0 + 42 * kS);
  const Transitions t = w.OnTick(kT0 + 51 * kS);  // its end and the next start in one tick
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].kind, TransitionKind::kStopTracing);
  EXPECT_EQ(t[0].at_ns, kT0 + 42 * kS);
  EXPECT_EQ(t[1].kind, TransitionKind::kStartTracing);
  EXPECT_EQ(t[1].at_ns, kT0 + 50 * kS);
}

// An attach in standby opens as without duty; the schedule resumes at the
// first grid start a close grace after the attach window; `stop` ends a
// duty window early.
TEST(CaptureWindowTest, DutyAttachOpensInStandbyAndTheGridResumesAfter) {
  CaptureWindow w(Duty(1000, 10000));
  w.Start(kT0);
  const AttachResult a = w.OnAttachRequest(13000, kT0 + 5 * kS);  // covers the 10 s start
  ASSERT_EQ(a.outcome, AttachOutcome::kOk);
  ExpectStart(a.transitions, TransitionReason::kAttachRequest, kT0 + 5 * kS);
  EXPECT_TRUE(w.OnTick(kT0 + 11 * kS).empty()) << "no duty window inside an attach";
  ExpectStop(w.OnTick(kT0 + 18 * kS + 5 * kMs), TransitionReason::kAttachElapsed, kT0 + 18 * kS);
  EXPECT_EQ(w.state(), CaptureState::kStandby);
  EXPECT_EQ(w.deadline_ns(), kT0 + 20 * kS) << "the next grid start after the attach";
  ExpectStart(w.OnTick(kT0 + 20 * kS + 20 * kMs), TransitionReason::kDutyStarted,
              kT0 + 20 * kS);
  EXPECT_EQ(w.OnAttachRequest(1000, kT0 + 20 * kS + 30 * kMs).outcome,
            AttachOutcome::kAlreadyTracing);
  const AttachResult s = w.OnStopRequest(kT0 + 20 * kS + 40 * kMs);
  ASSERT_EQ(s.outcome, AttachOutcome::kOk);
  ExpectStop(s.transitions, TransitionReason::kStopRequest, kT0 + 20 * kS + 40 * kMs);
  EXPECT_EQ(w.state(), CaptureState::kStandby);
  EXPECT_EQ(w.deadline_ns(), kT0 + 30 * kS);
  ExpectStart(w.OnTick(kT0 + 30 * kS), TransitionReason::kDutyStarted, kT0 + 30 * kS);
  ExpectStop(w.OnTick(kT0 + 31 * kS), TransitionReason::kDutyElapsed, kT0 + 31 * kS);
  // An attach ending just before a grid start: that window waits a period.
  ASSERT_EQ(w.OnAttachRequest(8950, kT0 + 31 * kS).outcome, AttachOutcome::kOk);
  ExpectStop(w.OnTick(kT0 + 39950 * kMs), TransitionReason::kAttachElapsed, kT0 + 39950 * kMs);
  EXPECT_EQ(w.deadline_ns(), kT0 + 50 * kS);
  EXPECT_TRUE(w.OnTick(kT0 + 40 * kS).empty());
}

}  // namespace
}  // namespace gpscope::control
