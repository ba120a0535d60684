// The capture gate on its own: transitions applied through fake actions,
// the lost intervals it writes (read back from a real ChunkWriter's file),
// and the control thread queueing while the writer ticks (TSan).
#include "inject/capture_gate.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/control/capture_window.h"
#include "proto/chunk_writer.h"
#include "proto/enums.h"
#include "proto/framing.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::inject {
namespace {

using format::ChunkWriter;

constexpr uint64_t kT0 = 1'700'000'000'000'000'000ull;
constexpr uint64_t kSecond = 1'000'000'000ull;

struct FakeActions : CaptureGate::Actions {
  std::atomic<uint64_t> now_ns{kT0};  // the control thread reads it too
  uint64_t mono_ns = 0;               // 0: the real CLOCK_MONOTONIC
  std::vector<bool> tracing;          // writer thread only
  int forced_flushes = 0;
  int windows_written = 0;
  bool refuse_tracing = false;
  uint64_t NowNs() override { return now_ns.load(std::memory_order_relaxed); }
  bool SetTracing(bool on, std::string* error) override {
    tracing.push_back(on);
    if (on && refuse_tracing) {
      if (error != nullptr) *error = "refused";
      return false;
    }
    return true;
  }
  void FlushForced() override { ++forced_flushes; }
  void WindowWritten() override { ++windows_written; }
  uint64_t MonotonicNs() override {
    return mono_ns != 0 ? mono_ns : CaptureGate::Actions::MonotonicNs();
  }
};

struct LostIntervals : reader::ChunkVisitor {
  std::vector<proto::LostInterval> lost;
  std::vector<proto::CapabilityNotice> capabilities;
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
    if (!c.has_batch()) return absl::OkStatus();
    lost.insert(lost.end(), c.batch().lost_intervals().begin(), c.batch().lost_intervals().end());
    capabilities.insert(capabilities.end(), c.batch().capabilities().begin(),
                        c.batch().capabilities().end());
    return absl::OkStatus();
  }
};

class CaptureGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/capture_gate_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".gpscope";
    unlink(path_.c_str());
    char err[256];
    fd_ = format::OpenForAppend(path_.c_str(), err, sizeof(err));
    ASSERT_GE(fd_, 0) << err;
    writer_ = std::make_unique<ChunkWriter>(fd_, 0xfeed, 4321, ChunkWriter::Options{});
    format::ProcessHeaderRecord h{};
    h.format_version = format::kFormatVersion;
    h.identity.rank = h.identity.local_rank = h.identity.node_rank = -1;
    ASSERT_TRUE(writer_->WriteHeader(h));
  }
  void TearDown() override { unlink(path_.c_str()); }

  void Finish(LostIntervals* out) {
    ASSERT_TRUE(writer_->WriteEnd(format::ProcessEndRecord{}));
    close(fd_);
    auto index = reader::ReadTraces({path_}, *out);
    ASSERT_TRUE(index.ok()) << index.status();
  }

  std::string path_;
  int fd_ = -1;
  std::unique_ptr<ChunkWriter> writer_;
  FakeActions actions_;
};

TEST_F(CaptureGateTest, WithoutAWindowEveryRecordIsInside) {
  CaptureGate gate(nullptr, writer_.get(), &actions_);
  EXPECT_TRUE(gate.InWindow(0));
  EXPECT_TRUE(gate.InWindow(~0ull - 1));
  EXPECT_FALSE(gate.uses_nvtx());
  gate.Tick();  // no window: nothing to apply
  EXPECT_TRUE(actions_.tracing.empty());
}

// GPSCOPE_CAPTURE_DELAY_S=1, _DURATION_S=1: the gate opens and shuts at the
// deadlines (not at the late ticks), the kinds go off only after the grace,
// following a forced flush, and the time outside is written as lost.
TEST_F(CaptureGateTest, ATimeWindowOpensAndShutsAtItsDeadlinesAndClosesAfterTheGrace) {
  control::CaptureConfig capture;
  capture.delay_ms = 1000;
  capture.duration_ms = 1000;
  CaptureGate gate(&capture, writer_.get(), &actions_);
  std::string error;
  ASSERT_EQ(gate.Start(&error), CaptureGate::StartOutcome::kWaiting);
  EXPECT_FALSE(gate.InWindow(kT0));

  actions_.now_ns = kT0 + kSecond + kSecond / 2;  // a late tick
  gate.Tick();
  ASSERT_EQ(actions_.tracing, std::vector<bool>{true});
  EXPECT_FALSE(gate.InWindow(kT0 + kSecond - 1));
  EXPECT_TRUE(gate.InWindow(kT0 + kSecond));

  actions_.now_ns = kT0 + 3 * kSecond;
  gate.Tick();
  EXPECT_TRUE(gate.InWindow(kT0 + 2 * kSecond - 1));
  EXPECT_FALSE(gate.InWindow(kT0 + 2 * kSecond));
  EXPECT_EQ(actions_.forced_flushes, 0) << "within the close grace";
  EXPECT_EQ(gate.windows_written(), 0u);

  timespec grace{0, static_cast<long>(CaptureGate::kWindowCloseGraceNs + 20'000'000)};
  nanosleep(&grace, nullptr);
  gate.Tick();
  EXPECT_EQ(actions_.forced_flushes, 1);
  EXPECT_EQ(actions_.tracing, (std::vector<bool>{true, false}));
  EXPECT_EQ(actions_.windows_written, 1);
  EXPECT_EQ(gate.windows_written(), 1u);
  gate.Tick();
  EXPECT_EQ(actions_.forced_flushes, 1) << "once";

  gate.CloseOutsideWindow(kT0 + 4 * kSecond);
  LostIntervals r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.lost.size(), 2u);
  EXPECT_EQ(r.lost[0].reason(), proto::LOST_TRACING_DISABLED);
  EXPECT_EQ(r.lost[0].start_ns(), kT0);
  EXPECT_EQ(r.lost[0].end_ns(), kT0 + kSecond);
  EXPECT_EQ(r.lost[1].start_ns(), kT0 + 2 * kSecond);
  EXPECT_EQ(r.lost[1].end_ns(), kT0 + 4 * kSecond);
}

// A window that starts while the previous one is still in its grace
// finishes that one first (one window at a time).
TEST_F(CaptureGateTest, ANewWindowFinishesTheClosingOneFirst) {
  control::CaptureConfig capture;
  capture.standby = true;
  CaptureGate gate(&capture, writer_.get(), &actions_);
  std::string error;
  ASSERT_EQ(gate.Start(&error), CaptureGate::StartOutcome::kWaiting);
  ASSERT_EQ(gate.Attach(60000).outcome, control::AttachOutcome::kOk);
  gate.Tick();
  actions_.now_ns = kT0 + kSecond;
  ASSERT_EQ(gate.Stop().outcome, control::AttachOutcome::kOk);
  gate.Tick();
  EXPECT_EQ(actions_.forced_flushes, 0);
  actions_.now_ns = kT0 + kSecond + 1000;
  ASSERT_EQ(gate.Attach(60000).outcome, control::AttachOutcome::kOk);
  gate.Tick();
  EXPECT_EQ(actions_.forced_flushes, 1);
  EXPECT_EQ(actions_.tracing, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(gate.windows_written(), 1u);
  EXPECT_TRUE(gate.InWindow(kT0 + kSecond + 1000));
  EXPECT_FALSE(gate.InWindow(kT0 + kSecond + 999));
}

// GPSCOPE_DUTY=1s/10s on a fake clock: window after window, each opened
// when the kinds are on (the late tick), shut exactly at its grid end,
// closed after the grace with a forced flush; standby between them as
// TRACING_DISABLED, for as long as the process runs.
TEST_F(CaptureGateTest, ADutyCycleRepeatsWindowsWithStandbyBetween) {
  control::CaptureConfig capture;
  capture.duty_on_ms = 1000;
  capture.duty_period_ms = 10000;
  actions_.mono_ns = 1;
  CaptureGate gate(&capture, writer_.get(), &actions_);
  EXPECT_FALSE(gate.uses_nvtx());
  std::string error;
  ASSERT_EQ(gate.Start(&error), CaptureGate::StartOutcome::kWaiting);
  constexpr int kWindows = 50;
  for (int k = 1; k <= kWindows; ++k) {
    const uint64_t start = kT0 + k * 10 * kSecond;
    actions_.now_ns = start - 1;
    gate.Tick();
    ASSERT_FALSE(gate.InWindow(start - 1)) << k;
    actions_.now_ns = start + 20'000'000;  // the tick 20 ms late
    gate.Tick();
    ASSERT_EQ(actions_.tracing.size(), 2u * k - 1) << k;
    EXPECT_TRUE(actions_.tracing.back());
    EXPECT_FALSE(gate.InWindow(start + 19'999'999)) << "before the kinds were on";
    EXPECT_TRUE(gate.InWindow(start + 20'000'000));
    control::ControlStatus status;
    gate.FillStatus(&status);
    EXPECT_STREQ(status.state, "duty");
    EXPECT_TRUE(status.tracing);
    actions_.now_ns = start + kSecond + 15'000'000;
    gate.Tick();
    EXPECT_TRUE(gate.InWindow(start + kSecond - 1));
    EXPECT_FALSE(gate.InWindow(start + kSecond)) << "shut at the grid end";
    EXPECT_EQ(actions_.forced_flushes, k - 1) << "within the grace";
    actions_.mono_ns += CaptureGate::kWindowCloseGraceNs + 1;
    gate.Tick();
    EXPECT_EQ(actions_.forced_flushes, k);
    EXPECT_FALSE(actions_.tracing.back());
    EXPECT_EQ(gate.windows_written(), static_cast<uint64_t>(k));
    gate.FillStatus(&status);
    EXPECT_STREQ(status.state, "standby");
    EXPECT_EQ(status.remaining_ms, 9000u - 15u);
  }
  const uint64_t end = kT0 + (kWindows * 10 + 5) * kSecond;
  gate.CloseOutsideWindow(end);
  LostIntervals r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.lost.size(), static_cast<size_t>(kWindows + 1));
  for (int k = 0; k <= kWindows; ++k) {
    const uint64_t from = k == 0 ? kT0 : kT0 + k * 10 * kSecond + kSecond;
    const uint64_t to = k == kWindows ? end : kT0 + (k + 1) * 10 * kSecond + 20'000'000;
    EXPECT_EQ(r.lost[k].reason(), proto::LOST_TRACING_DISABLED) << k;
    EXPECT_EQ(r.lost[k].start_ns(), from) << k;
    EXPECT_EQ(r.lost[k].end_ns(), to) << k;
  }
}

// An attach in duty standby opens at once; the schedule resumes after it.
TEST_F(CaptureGateTest, AnAttachInDutyStandbyOpensAndTheScheduleResumes) {
  control::CaptureConfig capture;
  capture.duty_on_ms = 1000;
  capture.duty_period_ms = 10000;
  actions_.mono_ns = 1;
  CaptureGate gate(&capture, writer_.get(), &actions_);
  std::string error;
  ASSERT_EQ(gate.Start(&error), CaptureGate::StartOutcome::kWaiting);
  actions_.now_ns = kT0 + 3 * kSecond;
  ASSERT_EQ(gate.Attach(12000).outcome, control::AttachOutcome::kOk);
  gate.Tick();
  EXPECT_TRUE(gate.InWindow(kT0 + 3 * kSecond)) << "an attach starts where it was asked";
  actions_.now_ns = kT0 + 15 * kSecond + 1;
  gate.Tick();
  EXPECT_FALSE(gate.InWindow(kT0 + 15 * kSecond));
  actions_.mono_ns += CaptureGate::kWindowCloseGraceNs + 1;
  gate.Tick();
  EXPECT_EQ(gate.windows_written(), 1u);
  actions_.now_ns = kT0 + 20 * kSecond;
  gate.Tick();
  EXPECT_TRUE(gate.InWindow(kT0 + 20 * kSecond)) << "the next grid window";
  EXPECT_EQ(actions_.tracing, (std::vector<bool>{true, false, true}));
}

TEST_F(CaptureGateTest, KindsThatCannotBeSwitchedOnAreANoticeAndTheGateStaysShut) {
  control::CaptureConfig capture;
  capture.standby = true;
  CaptureGate gate(&capture, writer_.get(), &actions_);
  std::string error;
  ASSERT_EQ(gate.Start(&error), CaptureGate::StartOutcome::kWaiting);
  actions_.refuse_tracing = true;
  ASSERT_EQ(gate.Attach(60000).outcome, control::AttachOutcome::kOk);
  gate.Tick();
  EXPECT_FALSE(gate.InWindow(kT0 + 1));
  LostIntervals r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.capabilities.size(), 1u);
  EXPECT_EQ(r.capabilities[0].component(), "capture");
  EXPECT_EQ(r.capabilities[0].reason(), "enabling kernel activity failed");
  EXPECT_FALSE(r.capabilities[0].available());
}

TEST_F(CaptureGateTest, TracingThatCannotStartFailsTheStart) {
  control::CaptureConfig capture;  // no window settings: trace from the start
  CaptureGate windowed(&capture, writer_.get(), &actions_);
  actions_.refuse_tracing = true;
  std::string error;
  EXPECT_EQ(windowed.Start(&error), CaptureGate::StartOutcome::kFailed);
  EXPECT_EQ(error, "refused");
}

// The control thread attaches, stops and asks for the status while the
// writer ticks: the queue and the window are shared under the gate's mutex
// (run under ThreadSanitizer).
TEST_F(CaptureGateTest, TheControlThreadQueuesWhileTheWriterTicks) {
  control::CaptureConfig capture;
  capture.standby = true;
  CaptureGate gate(&capture, writer_.get(), &actions_);
  std::string error;
  ASSERT_EQ(gate.Start(&error), CaptureGate::StartOutcome::kWaiting);
  std::atomic<bool> done{false};
  int accepted = 0;
  std::thread control([&] {
    for (int i = 0; i < 2000; ++i) {
      accepted += gate.Attach(60000).outcome == control::AttachOutcome::kOk;
      control::ControlStatus status;
      gate.FillStatus(&status);
      gate.Stop();
      actions_.now_ns.fetch_add(1000, std::memory_order_relaxed);
    }
    done.store(true);
  });
  while (!done.load()) gate.Tick();
  control.join();
  gate.Tick();
  EXPECT_GT(accepted, 0);
  ASSERT_FALSE(actions_.tracing.empty());
  EXPECT_TRUE(actions_.tracing[0]);
  control::ControlStatus status;
  gate.FillStatus(&status);
  EXPECT_STREQ(status.state, "standby");
  EXPECT_FALSE(status.tracing);
}

}  // namespace
}  // namespace gpscope::inject
