// tests/inject/stacks/stack_settings_test.cc: GPSCOPE_STACKS and
// GPSCOPE_STACK_SAMPLE_MS parsing.
#include "inject/stacks/stack_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gpscope::inject::stacks {
namespace {

std::map<std::string, std::string> g_env;
const char* FakeEnv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

StackSettings Parse(std::map<std::string, std::string> env, std::vector<std::string>* problems) {
  g_env = std::move(env);
  return ParseStackSettings(FakeEnv, problems);
}

TEST(StackSettingsTest, DefaultsArePythonOrNativeSampledEveryMillisecond) {
  std::vector<std::string> problems;
  const StackSettings s = Parse({}, &problems);
  EXPECT_EQ(s.mode, StackMode::kAuto);
  EXPECT_TRUE(s.enabled());
  EXPECT_TRUE(s.python());
  EXPECT_TRUE(s.native());
  EXPECT_TRUE(s.native_when_no_python());
  EXPECT_EQ(s.sample_interval_ms, 1u);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(Parse({{"GPSCOPE_STACKS", ""}, {"GPSCOPE_STACK_SAMPLE_MS", ""}}, &problems).mode,
            StackMode::kAuto);
  EXPECT_TRUE(problems.empty());
}

TEST(StackSettingsTest, EachModeAndItsSpellings) {
  const std::pair<const char*, StackMode> cases[] = {
      {"1", StackMode::kAuto},        {"true", StackMode::kAuto},   {"ON", StackMode::kAuto},
      {"yes", StackMode::kAuto},      {"0", StackMode::kOff},       {"false", StackMode::kOff},
      {"Off", StackMode::kOff},       {"no", StackMode::kOff},      {"python", StackMode::kPython},
      {"PYTHON", StackMode::kPython}, {"native", StackMode::kNative}, {"Native", StackMode::kNative},
  };
  for (const auto& [value, mode] : cases) {
    std::vector<std::string> problems;
    EXPECT_EQ(Parse({{"GPSCOPE_STACKS", value}}, &problems).mode, mode) << value;
    EXPECT_TRUE(problems.empty()) << value;
  }
  std::vector<std::string> p;
  const StackSettings py = Parse({{"GPSCOPE_STACKS", "python"}}, &p);
  EXPECT_TRUE(py.python());
  EXPECT_FALSE(py.native());
  EXPECT_FALSE(py.native_when_no_python());
  const StackSettings nat = Parse({{"GPSCOPE_STACKS", "native"}}, &p);
  EXPECT_FALSE(nat.python());
  EXPECT_TRUE(nat.native());
  EXPECT_FALSE(Parse({{"GPSCOPE_STACKS", "0"}}, &p).enabled());
}

TEST(StackSettingsTest, ABadModeIsNamedAndTheDefaultKept) {
  std::vector<std::string> problems;
  const StackSettings s = Parse({{"GPSCOPE_STACKS", "both"}}, &problems);
  EXPECT_EQ(s.mode, StackMode::kAuto);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "GPSCOPE_STACKS='both' is not one of 1|0|python|native; using 1");
}

TEST(StackSettingsTest, SampleIntervalIsAWholeNumberOfMilliseconds) {
  std::vector<std::string> problems;
  EXPECT_EQ(Parse({{"GPSCOPE_STACK_SAMPLE_MS", "0"}}, &problems).sample_interval_ms, 0u);
  EXPECT_EQ(Parse({{"GPSCOPE_STACK_SAMPLE_MS", "250"}}, &problems).sample_interval_ms, 250u);
  EXPECT_EQ(Parse({{"GPSCOPE_STACK_SAMPLE_MS", "60000"}}, &problems).sample_interval_ms, 60000u);
  EXPECT_TRUE(problems.empty());
  for (const char* bad : {"-1", "1.5", "abc", "60001", "99999999999999999999", " 5", "5ms"}) {
    problems.clear();
    const StackSettings s = Parse({{"GPSCOPE_STACK_SAMPLE_MS", bad}}, &problems);
    EXPECT_EQ(s.sample_interval_ms, 1u) << bad;
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_EQ(problems[0], std::string("GPSCOPE_STACK_SAMPLE_MS='") + bad +
                               "' is not a whole number in 0..60000; using 1");
  }
}

TEST(StackSettingsTest, NullProblemListIsAllowed) {
  EXPECT_EQ(Parse({{"GPSCOPE_STACKS", "bad"}}, nullptr).mode, StackMode::kAuto);
}

TEST(StackSettingsTest, KeyValuesNameTheEffectiveSettings) {
  std::vector<std::string> problems;
  const auto kv = StackSettingsAsKeyValues(
      Parse({{"GPSCOPE_STACKS", "native"}, {"GPSCOPE_STACK_SAMPLE_MS", "5"}}, &problems));
  ASSERT_EQ(kv.size(), 2u);
  EXPECT_EQ(kv[0], (std::pair<std::string, std::string>{"GPSCOPE_STACKS", "native"}));
  EXPECT_EQ(kv[1], (std::pair<std::string, std::string>{"GPSCOPE_STACK_SAMPLE_MS", "5"}));
}

}  // namespace
}  // namespace gpscope::inject::stacks
