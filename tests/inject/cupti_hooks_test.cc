// inject/cupti_hooks.h on its own: the GOT slots of a library that links
// libcupti (the stand-in profiler, linked into this test and so loaded at
// start) are rewritten to the wrappers, the pages keep exactly the
// protection they had, refusals are noted with the caller, and a library
// loaded later is covered by a rescan. This binary holds the hook module
// itself, so its own calls to CUPTI are never rewritten (as in the
// collector, whose library is skipped).
#include "inject/cupti_hooks.h"

#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int other_profiler_subscribe(void);
extern "C" int other_profiler_register(void);

namespace gpscope::inject {
namespace {

// The mappings of files whose name holds `part`: "start-end perms" each.
std::vector<std::string> MappingsOf(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    if (line.find(part) == std::string::npos) continue;
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    out.push_back(range + " " + perms);
  }
  return out;
}

void CUPTIAPI NoCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

class CuptiHooksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Hold the (stand-in's single) subscriber, as the collector does.
    static CUpti_SubscriberHandle ours = nullptr;
    ASSERT_EQ(cuptiSubscribe(&ours, NoCallback, nullptr), CUPTI_SUCCESS);
    before_ = MappingsOf("fake_other_profiler_now");
    ASSERT_FALSE(before_.empty()) << "the stand-in profiler is not mapped";
    Dl_info info;
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info), 0);
    CuptiHookTargets t;
    t.subscribe = &cuptiSubscribe;
    t.subscribe_v2 = &cuptiSubscribe_v2;
    t.register_callbacks = &cuptiActivityRegisterCallbacks;
    t.cupti_path = info.dli_fname;
    InstallCuptiHooks(t);
  }
  static std::vector<std::string> before_;
};
std::vector<std::string> CuptiHooksTest::before_;

TEST_F(CuptiHooksTest, SlotsAreRewrittenAndPagesKeepTheirProtection) {
  EXPECT_GE(PatchedCuptiSlots(), 2u) << "cuptiSubscribe and cuptiActivityRegisterCallbacks";
  EXPECT_EQ(MappingsOf("fake_other_profiler_now"), before_);
}

TEST_F(CuptiHooksTest, WhileWeHoldCuptiTheOtherClientIsRefusedAndNoted) {
  SetHoldingCupti(true);
  EXPECT_EQ(other_profiler_subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_EQ(other_profiler_subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_EQ(other_profiler_register(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CuptiRefusal seen[8];
  const size_t n = CollectCuptiRefusals(seen, 8);
  ASSERT_EQ(n, 2u);
  for (size_t i = 0; i < n; ++i) {
    Dl_info info;
    ASSERT_NE(dladdr(reinterpret_cast<void*>(seen[i].caller_pc), &info), 0);
    EXPECT_NE(std::string(info.dli_fname).find("fake_other_profiler_now"), std::string::npos)
        << info.dli_fname;
    EXPECT_EQ(seen[i].result,
              static_cast<uint32_t>(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED));
    EXPECT_GT(seen[i].first_realtime_ns, 0u);
    EXPECT_GE(seen[i].last_realtime_ns, seen[i].first_realtime_ns);
    EXPECT_EQ(seen[i].count, std::string(seen[i].api) == "cuptiSubscribe" ? 2u : 1u)
        << seen[i].api;
  }
  EXPECT_EQ(CollectCuptiRefusals(seen, 8), 0u) << "nothing new";
  EXPECT_EQ(other_profiler_subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  ASSERT_EQ(CollectCuptiRefusals(seen, 8), 1u);
  EXPECT_EQ(seen[0].count, 3u) << "cumulative";
}

TEST_F(CuptiHooksTest, WhenWeDoNotHoldCuptiCallsPassThrough) {
  SetHoldingCupti(false);
  EXPECT_EQ(other_profiler_register(), CUPTI_SUCCESS);
  CuptiRefusal seen[8];
  CollectCuptiRefusals(seen, 8);
  EXPECT_EQ(other_profiler_subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      << "CUPTI's own answer (we still hold the subscriber)";
  EXPECT_EQ(CollectCuptiRefusals(seen, 8), 0u) << "not a refusal of ours";
  SetHoldingCupti(true);
}

TEST_F(CuptiHooksTest, ALibraryLoadedLaterIsCoveredByARescan) {
  const size_t before = PatchedCuptiSlots();
  RescanCuptiHooks();
  EXPECT_EQ(PatchedCuptiSlots(), before) << "nothing new loaded: nothing patched";
  void* lazy = dlopen(GPSCOPE_FAKE_OTHER_PROFILER_LAZY, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(lazy, nullptr) << dlerror();
  const std::vector<std::string> maps = MappingsOf("fake_other_profiler_lazy");
  RescanCuptiHooks();
  EXPECT_GE(PatchedCuptiSlots(), before + 2) << "its lazy PLT slots";
  EXPECT_EQ(MappingsOf("fake_other_profiler_lazy"), maps);
  SetHoldingCupti(true);
  CuptiRefusal seen[8];
  CollectCuptiRefusals(seen, 8);
  auto subscribe = reinterpret_cast<int (*)()>(dlsym(lazy, "other_profiler_subscribe"));
  ASSERT_NE(subscribe, nullptr);
  EXPECT_EQ(subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  ASSERT_EQ(CollectCuptiRefusals(seen, 8), 1u);
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(seen[0].caller_pc), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("fake_other_profiler_lazy"), std::string::npos);
}

}  // namespace
}  // namespace gpscope::inject
