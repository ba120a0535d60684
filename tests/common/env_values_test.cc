// common/env_values.h: the one parser of GPSCOPE_* values (the collector's
// settings, capture windows, the control socket, stacks) and its messages.
#include "common/env_values.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpscope::common {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

class EnvValuesTest : public ::testing::Test {
 protected:
  void SetUp() override { g_env = &env_; }
  void TearDown() override { g_env = nullptr; }
  EnvValues Values() { return EnvValues(FakeEnv, &problems_); }
  std::map<std::string, std::string> env_;
  std::vector<std::string> problems_;
};

TEST_F(EnvValuesTest, UnsetAndEmptyKeepTheDefaultSilently) {
  env_["EMPTY"] = "";
  EnvValues v = Values();
  bool b = true;
  uint32_t n = 7;
  std::string s = "keep";
  v.Bool("UNSET", &b);
  v.Bool("EMPTY", &b);
  v.WholeNumber("EMPTY", 1u, 10u, &n);
  v.String("EMPTY", &s);
  EXPECT_TRUE(b);
  EXPECT_EQ(n, 7u);
  EXPECT_EQ(s, "keep");
  EXPECT_FALSE(v.IsSet("EMPTY"));
  EXPECT_EQ(v.Get("UNSET"), nullptr);
  EXPECT_TRUE(problems_.empty());
}

TEST_F(EnvValuesTest, BoolsTakeEveryUsualSpellingInAnyCase) {
  for (const char* yes : {"1", "true", "YES", "On"}) {
    env_["B"] = yes;
    bool b = false;
    Values().Bool("B", &b);
    EXPECT_TRUE(b) << yes;
  }
  for (const char* no : {"0", "FALSE", "no", "off"}) {
    env_["B"] = no;
    bool b = true;
    Values().Bool("B", &b);
    EXPECT_FALSE(b) << no;
  }
  env_["B"] = "maybe";
  bool b = true;
  Values().Bool("B", &b);
  EXPECT_TRUE(b);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0], "B='maybe' is not one of 1|0|true|false; using 1");
}

TEST_F(EnvValuesTest, WholeNumbersArePlainDigitsInRange) {
  env_["N"] = "0500";
  uint32_t n = 2000;
  Values().WholeNumber("N", 100u, 60000u, &n);
  EXPECT_EQ(n, 500u);
  EXPECT_TRUE(problems_.empty());
  // Signs, spaces, exponents, fractions and values out of range (also past
  // 64 bits) are refused, each with one line naming the range and default.
  for (const char* bad : {"+500", " 500", "500 ", "-5", "5e2", "50.0", "99", "60001", "abc",
                          "99999999999999999999999"}) {
    problems_.clear();
    env_["N"] = bad;
    n = 2000;
    Values().WholeNumber("N", 100u, 60000u, &n);
    EXPECT_EQ(n, 2000u) << bad;
    ASSERT_EQ(problems_.size(), 1u) << bad;
    EXPECT_EQ(problems_[0],
              std::string("N='") + bad + "' is not a whole number in 100..60000; using 2000");
  }
  uint64_t big = 1;
  env_["N"] = "18446744073709551615";
  Values().WholeNumber("N", uint64_t{0}, UINT64_MAX, &big);
  EXPECT_EQ(big, UINT64_MAX);
}

TEST_F(EnvValuesTest, ParseWholeNumberIsTheSameRuleForFlags) {
  uint64_t v = 42;
  EXPECT_TRUE(ParseWholeNumber("250", 10, 1000, &v));
  EXPECT_EQ(v, 250u);
  EXPECT_FALSE(ParseWholeNumber("+250", 10, 1000, &v));
  EXPECT_FALSE(ParseWholeNumber("9", 10, 1000, &v));
  EXPECT_FALSE(ParseWholeNumber("", 10, 1000, &v));
  EXPECT_FALSE(ParseWholeNumber(nullptr, 10, 1000, &v));
  EXPECT_EQ(v, 250u);  // untouched by a refusal
}

TEST_F(EnvValuesTest, SecondsTakeUpToThreeDecimals) {
  env_["S"] = "2.5";
  uint64_t ms = 0;
  Values().SecondsAsMs("S", 100, &ms);
  EXPECT_EQ(ms, 2500u);
  env_["S"] = "1.2345";
  Values().SecondsAsMs("S", 100, &ms);
  EXPECT_EQ(ms, 2500u);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0], "S='1.2345' is not a number of seconds in 0..100 (like 30 or 2.5); using 2.5");
  EXPECT_EQ(MsAsSeconds(30000), "30");
  EXPECT_EQ(MsAsSeconds(1500), "1.5");
  EXPECT_EQ(MsAsSeconds(1), "0.001");
}

TEST_F(EnvValuesTest, ChoicesMatchInAnyCaseAndNameTheAlternatives) {
  static constexpr const char* kModes[] = {"node", "process"};
  env_["M"] = "PROCESS";
  EXPECT_EQ(Values().Choice("M", kModes, 0), 1);
  env_["M"] = "cluster";
  EXPECT_EQ(Values().Choice("M", kModes, 0), 0);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0], "M='cluster' is not one of node|process; using node");
  EXPECT_EQ(Values().Choice("UNSET", kModes, 1), 1);
}

TEST(ForEachListItemTest, GivesEveryItemEmptyOnesIncluded) {
  std::vector<std::string> items;
  ForEachListItem("a,,b", [&](const std::string& s) { items.push_back(s); });
  EXPECT_EQ(items, (std::vector<std::string>{"a", "", "b"}));
  items.clear();
  ForEachListItem("", [&](const std::string& s) { items.push_back(s); });
  EXPECT_EQ(items, (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace gpscope::common
