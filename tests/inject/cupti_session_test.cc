// tests/inject/cupti_session_test.cc: CuptiSession's detach between windows
// (GPSCOPE_DETACH, inject/cupti_session.h) under threads, for TSan: the
// writer opening and closing windows, a sampler taking timestamps and
// application threads returning from CUDA calls (DetachAtApiExit), against
// a CUPTI made of counters here. Real CUPTI attaches again lazily at any
// call made after cuptiFinalize, and Kineto crashed when cuptiFinalize raced
// another thread's CUPTI call (kineto#686): so no call of ours may reach
// CUPTI while it is detached or detaching.
#include "inject/cupti_session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "inject/cupti_loader.h"
#include "inject/exit_finisher.h"
#include "proto/chunk_writer.h"

namespace gpscope::inject {
namespace {

// The stand-in CUPTI's state: detached after cuptiFinalize until the next
// subscribe; calls made then, and calls overlapping a finalize, counted.
std::atomic<bool> g_detached{false};
std::atomic<int> g_in_call{0};         // our calls in flight (finalize excluded)
std::atomic<bool> g_finalizing{false};
std::atomic<uint64_t> g_calls_while_detached{0};
std::atomic<uint64_t> g_overlaps{0};  // a call in flight while finalize ran
std::atomic<uint64_t> g_finalizes{0};
std::atomic<uint64_t> g_subscribes{0};
int g_subscriber_token = 0;

// Every stand-in entry point but subscribe and finalize.
struct Call {
  Call() {
    g_in_call.fetch_add(1);
    if (g_detached.load()) g_calls_while_detached.fetch_add(1);
    if (g_finalizing.load()) g_overlaps.fetch_add(1);
  }
  ~Call() { g_in_call.fetch_sub(1); }
};

CUptiResult CUPTIAPI Subscribe(CUpti_SubscriberHandle* s, CUpti_CallbackFunc, void*) {
  g_subscribes.fetch_add(1);
  g_detached.store(false);
  *s = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_token);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Finalize() {
  g_finalizing.store(true);
  if (g_in_call.load() != 0) g_overlaps.fetch_add(1);
  std::this_thread::yield();  // a window for a racing call to show
  g_finalizes.fetch_add(1);
  g_detached.store(true);
  g_finalizing.store(false);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Timestamp(uint64_t* ns) {
  Call c;
  *ns = 1;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FlushAll(uint32_t) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Dropped(CUcontext, uint32_t, size_t* n) {
  Call c;
  *n = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableKind(CUpti_ActivityKind) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableId(CUpti_CallbackId, uint8_t) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableCallback(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                    CUpti_CallbackId) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableDomain(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI ThreadIdType(CUpti_ActivityThreadIdType) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI SetAttribute(CUpti_ActivityAttribute, size_t*, void*) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Register(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) {
  Call c;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI CallbackName(CUpti_CallbackDomain, uint32_t, const char** name) {
  Call c;
  *name = "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}

void CUPTIAPI Requested(uint8_t**, size_t*, size_t*) {}
void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t*, size_t, size_t) {}
void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

CuptiApi StandIn() {
  CuptiApi api;
  api.cuptiSubscribe = Subscribe;
  api.cuptiFinalize = Finalize;
  api.cuptiGetTimestamp = Timestamp;
  api.cuptiActivityFlushAll = FlushAll;
  api.cuptiActivityGetNumDroppedRecords = Dropped;
  api.cuptiActivityEnable = EnableKind;
  api.cuptiActivityDisable = EnableKind;
  api.cuptiActivityEnableRuntimeApi = EnableId;
  api.cuptiActivityEnableDriverApi = EnableId;
  api.cuptiEnableCallback = EnableCallback;
  api.cuptiEnableDomain = EnableDomain;
  api.cuptiSetThreadIdType = ThreadIdType;
  api.cuptiActivitySetAttribute = SetAttribute;
  api.cuptiActivityRegisterCallbacks = Register;
  api.cuptiGetCallbackName = CallbackName;
  api.path = "stand-in";
  return api;
}

TEST(CuptiSessionDetachTest, NoCallReachesCuptiWhileDetachedUnderWindowsTimestampsAndCalls) {
  const CuptiApi api = StandIn();
  ExitFinisher finisher;
  format::ChunkWriter writer(-1, 1, 1, format::ChunkWriter::Options{});
  CuptiSession session(&api, &finisher, &writer);
  CuptiSession::Options options;
  options.nvtx = false;
  options.detach_between_windows = true;
  std::string error;
  ASSERT_TRUE(session.Open(options, {Requested, Completed, OnCallback}, &error)) << error;
  session.SetCudaStarted();

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  // Application threads: CUDA calls returning all the time.
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        if (session.detach_pending()) session.DetachAtApiExit();
        std::this_thread::yield();
      }
    });
  }
  // The sampler: timestamps (MetricClockNs).
  threads.emplace_back([&] {
    while (!stop.load()) {
      if (session.NowNs() == 0) ADD_FAILURE() << "no time";
    }
  });
  // The writer: windows, periodic flushes, clock snapshots, API names.
  int windows_ok = 0;
  for (int w = 0; w < 300; ++w) {
    std::string why;
    windows_ok += session.SetTracing(true, &why);
    session.FlushAll(0);
    session.ApiName(1, 211);
    session.SetTracing(false);
    session.RequestDetach();
    // Every tenth window waits (up to 1 s) for an application thread to
    // detach, so a loaded machine still sees detaches; the others race it.
    if (w % 10 == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (session.detach_pending() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    }
    for (int i = 0; i < 20; ++i) {
      session.FlushAll(0);
      session.Snapshot();
      std::this_thread::yield();
    }
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(windows_ok, 300);
  EXPECT_GE(session.detaches(), 30u) << "the calls detached CUPTI";
  printf("%llu detaches, %llu subscribes\n", static_cast<unsigned long long>(session.detaches()),
         static_cast<unsigned long long>(g_subscribes.load()));
  EXPECT_EQ(g_finalizes.load(), session.detaches());
  // One subscription at Open, one more per window after a detach.
  EXPECT_EQ(g_subscribes.load(), 1 + session.detaches() - (session.detached() ? 1 : 0));
  EXPECT_EQ(g_calls_while_detached.load(), 0u);
  EXPECT_EQ(g_overlaps.load(), 0u);
}

}  // namespace
}  // namespace gpscope::inject
