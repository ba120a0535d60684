// inject/exit_finisher.h on its own (CUDA-free; also under TSan): the exit
// waits for a writer that finishes, takes over one stuck in a blocking call
// at the soft deadline and writes the end itself, never while the writer
// uses its state; a signal is re-delivered (the process dies of it) after
// the end is written; a writer whose state was taken over never returns to
// it.
#include "inject/exit_finisher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace gpscope::inject {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t ElapsedMs(Clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

// A writer thread: polls for the final request, then finishes (or sits in
// a blocking call that never returns, as a CUPTI flush waiting on a lock).
struct FakeWriter : ExitFinisher::Hooks {
  ExitFinisher finisher;
  std::atomic<bool> requested{false};
  std::atomic<int> requested_signal{-1};
  std::atomic<bool> writer_done{false};
  std::atomic<int> ends_by_finisher{0};
  std::atomic<bool> stuck{false};
  std::atomic<bool> returned_from_block{false};
  std::atomic<bool> in_block{false};
  std::thread thread;

  void RequestFinal(int sig) override {
    requested_signal.store(sig);
    requested.store(true);
  }
  bool WriterFinished() override { return writer_done.load(); }
  void WriteEndInstead() override {
    EXPECT_TRUE(in_block.load()) << "taken over while the writer was not in a blocking call";
    ends_by_finisher.fetch_add(1);
  }

  void StartWriter(bool stuck_in_final_flush) {
    stuck = stuck_in_final_flush;
    thread = std::thread([this] {
      finisher.SetWriterThread(pthread_self());
      while (!requested.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      {
        BlockingSection section(&finisher);  // the final flush
        in_block = true;
        while (stuck.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        in_block = false;
      }
      returned_from_block = true;
      writer_done = true;
    });
  }
};

// Each test's writer outlives it (the finisher thread may still be on its
// way out), as the collector, which is never destroyed.
FakeWriter& NewWriter() {
  static std::vector<FakeWriter*> kept;
  kept.push_back(new FakeWriter());
  return *kept.back();
}

TEST(ExitFinisherTest, AnExitWaitsForAWriterThatFinishes) {
  FakeWriter& w = NewWriter();
  ASSERT_TRUE(w.finisher.Start(&w, 1000));
  w.StartWriter(/*stuck=*/false);
  const auto t0 = Clock::now();
  EXPECT_TRUE(w.finisher.OnExit()) << "finished on its own: joinable";
  EXPECT_LT(ElapsedMs(t0), 500u);
  EXPECT_EQ(w.requested_signal.load(), 0);
  EXPECT_EQ(w.ends_by_finisher.load(), 0);
  w.thread.join();
}

TEST(ExitFinisherTest, AWriterStuckInABlockingCallIsTakenOverBeforeTheDeadline) {
  FakeWriter& w = NewWriter();
  ASSERT_TRUE(w.finisher.Start(&w, 1000));
  w.StartWriter(/*stuck=*/true);
  const auto t0 = Clock::now();
  EXPECT_FALSE(w.finisher.OnExit()) << "not joinable: the writer is parked";
  const uint64_t took = ElapsedMs(t0);
  EXPECT_GE(took, 700u) << "the soft deadline is 1000 ms - 200 ms";
  EXPECT_LT(took, 1300u) << "within the deadline and its slack";
  EXPECT_EQ(w.ends_by_finisher.load(), 1);
  EXPECT_TRUE(w.finisher.taken_over());
  // The blocking call returns later: the writer must not come back to its state.
  w.stuck = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(w.returned_from_block.load());
  w.thread.detach();  // parked for good, as in the process
}

// Sections nest (SetTracing's holds NowNs's): the end of an inner one
// leaves the writer blocked, so the finisher may still take it over.
TEST(ExitFinisherTest, AnInnerSectionEndingLeavesTheOuterOneBlocked) {
  FakeWriter& w = NewWriter();
  ASSERT_TRUE(w.finisher.Start(&w, 300));
  FakeWriter* wp = &w;
  std::thread([wp] {
    wp->finisher.SetWriterThread(pthread_self());
    BlockingSection outer(&wp->finisher);
    { BlockingSection inner(&wp->finisher); }
    wp->in_block = true;  // still inside the outer call, which never returns
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }).detach();
  while (!w.in_block.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(w.finisher.OnExit());
  EXPECT_EQ(w.ends_by_finisher.load(), 1);
}

// A fatal signal: the handler only records it; the finisher waits for the
// end, then the process dies of that very signal. The process is this test
// binary started again (a fork of a process with threads cannot start new
// ones under TSan): SignalChildMain runs before main() when
// EXIT_FINISHER_SIGNAL_CHILD is set.
TEST(ExitFinisherTest, ASignalIsDeliveredAgainOnceTheEndIsWritten) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("EXIT_FINISHER_SIGNAL_CHILD", "1", 1);
    execl("/proc/self/exe", "exit_finisher_test", static_cast<char*>(nullptr));
    _exit(13);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "exit code " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

FakeWriter* g_signal_writer = nullptr;

__attribute__((constructor)) void SignalChildMain() {
  if (getenv("EXIT_FINISHER_SIGNAL_CHILD") == nullptr) return;
  g_signal_writer = new FakeWriter();  // leaked, as the collector
  FakeWriter* w = g_signal_writer;
  if (!w->finisher.Start(w, 2000)) _exit(10);
  w->StartWriter(/*stuck=*/false);
  struct sigaction sa{};
  sa.sa_handler = [](int sig) {
    if (!g_signal_writer->finisher.OnSignal(sig)) _exit(11);
  };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  raise(SIGTERM);
  // The handler returned; the process goes on until the finisher kills it.
  for (int i = 0; i < 300; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  _exit(12);  // not killed
}

}  // namespace
}  // namespace gpscope::inject
