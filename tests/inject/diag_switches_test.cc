// The overhead-diagnosis switches' parser (only the diagnosis build of the
// collector calls it; inject/diag_switches.h).
#include "inject/diag_switches.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpscope::inject::diag {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

Switches Parse(std::map<std::string, std::string> env, std::vector<std::string>* problems) {
  g_env = &env;
  Switches s = ParseSwitches(FakeEnv, problems);
  g_env = nullptr;
  return s;
}

TEST(DiagSwitchesTest, AllOffWithoutTheVariables) {
  std::vector<std::string> problems;
  const Switches s = Parse({}, &problems);
  EXPECT_EQ(s.off_kinds, 0u);
  EXPECT_FALSE(s.gate_kernels);
  EXPECT_EQ(s.stack_ring_slots, 0u);
  EXPECT_FALSE(s.stack_no_launch);
  EXPECT_FALSE(s.stack_driver_launches);
  EXPECT_EQ(s.api_row_slots, 0u);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(OffKindsText(0), "");
}

TEST(DiagSwitchesTest, DiagOffNamesKindsAndNamesTheUnknownOnes) {
  std::vector<std::string> problems;
  const Switches s = Parse({{"GPSCOPE_DIAG_OFF", "sync,bogus,,memcpy,what"}}, &problems);
  EXPECT_EQ(s.off_kinds, kOffSync | kOffMemcpy);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "GPSCOPE_DIAG_OFF: unknown kind(s) bogus,what (known: memcpy, memset, sync, overhead); "
            "ignored");
  EXPECT_EQ(OffKindsText(s.off_kinds), "memcpy,sync");
  EXPECT_EQ(OffKindsText(kOffMemset | kOffOverhead), "memset,overhead");
}

TEST(DiagSwitchesTest, SwitchesAreOnOnlyForOne) {
  const Switches on = Parse({{"GPSCOPE_DIAG_GATE_KERNELS", "1"},
                             {"GPSCOPE_DIAG_STACK_NO_LAUNCH", "1"},
                             {"GPSCOPE_DIAG_STACK_DRIVER_LAUNCHES", "1"},
                             {"GPSCOPE_DIAG_STACK_RING", "2"},
                             {"GPSCOPE_DIAG_API_ROW_RING", "8"}},
                            nullptr);
  EXPECT_TRUE(on.gate_kernels);
  EXPECT_TRUE(on.stack_no_launch);
  EXPECT_TRUE(on.stack_driver_launches);
  EXPECT_EQ(on.stack_ring_slots, 2u);
  EXPECT_EQ(on.api_row_slots, 8u);
  const Switches off = Parse(
      {{"GPSCOPE_DIAG_GATE_KERNELS", "yes"}, {"GPSCOPE_DIAG_STACK_NO_LAUNCH", "0"}}, nullptr);
  EXPECT_FALSE(off.gate_kernels);
  EXPECT_FALSE(off.stack_no_launch);
}

}  // namespace
}  // namespace gpscope::inject::diag
