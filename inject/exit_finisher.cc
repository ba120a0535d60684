// inject/exit_finisher.cc: see exit_finisher.h.
#include "inject/exit_finisher.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/posix.h"

namespace gpscope::inject {
namespace {

void SleepNs(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

// The exit waits this much past the deadline for the finisher's last write.
constexpr uint64_t kExitSlackNs = 200000000;  // 200 ms

}  // namespace

bool ExitFinisher::Start(Hooks* hooks, uint32_t exit_timeout_ms) {
  hooks_ = hooks;
  timeout_ms_ = exit_timeout_ms;
  if (sem_init(&wake_, 0, 0) != 0) return false;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  // Like gpscope's other threads, it never runs the fatal-signal handler.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  started_ = pthread_create(&thread_, &attr, &ExitFinisher::ThreadMain, this) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (started_) pthread_detach(thread_);
  return started_;
}

void* ExitFinisher::ThreadMain(void* self) {
  pthread_setname_np(pthread_self(), "gpscope-finish");
  try {
    static_cast<ExitFinisher*>(self)->Run();
  } catch (...) {
  }
  return nullptr;
}

uint64_t ExitFinisher::soft_deadline_ns() const {
  const uint64_t stop = stop_ns_.load();
  if (stop == 0) return 0;
  const uint64_t timeout_ns = uint64_t{timeout_ms_} * 1000000;
  // The last part of the timeout is kept for writing the end record.
  uint64_t margin = timeout_ns / 5;
  if (margin > 500000000) margin = 500000000;
  return stop + timeout_ns - margin;
}

uint64_t ExitFinisher::writer_deadline_ns() const { return soft_deadline_ns(); }

void ExitFinisher::Run() {
  while (sem_wait(&wake_) != 0) {
    if (errno != EINTR) return;
  }
  const uint64_t soft = soft_deadline_ns();
  const uint64_t hard = stop_ns_.load() + uint64_t{timeout_ms_} * 1000000;
  while (!hooks_->WriterFinished() && common::ClockNs(CLOCK_MONOTONIC) < soft) SleepNs(1000000);
  if (!hooks_->WriterFinished()) {
    // Late: take the writer's state while it sits in a blocking call. Busy
    // (converting, writing) it is given until the hard deadline.
    for (;;) {
      int expected = kBlocked;
      if (state_.compare_exchange_strong(expected, kTakenOver)) {
        hooks_->WriteEndInstead();
        break;
      }
      if (hooks_->WriterFinished() || common::ClockNs(CLOCK_MONOTONIC) >= hard) break;
      SleepNs(1000000);
    }
  }
  finished_.store(true);
  DeliverPendingSignal();
}

void ExitFinisher::DeliverPendingSignal() {
  const int sig = pending_signal_.exchange(0);
  if (sig == 0) return;
  // Its default action now: the process dies of it, as it would have.
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  const pid_t pid = getpid();
  const pid_t tid = signal_tid_.load();
  // To the thread that received it (it does not block it); to the process
  // if that thread is gone, or still alive after a while (it blocked it).
  if (tid == 0 || syscall(SYS_tgkill, pid, tid, sig) != 0) kill(pid, sig);
  for (int i = 0; i < 20; ++i) SleepNs(10000000);
  kill(pid, sig);
}

void ExitFinisher::EnterBlocking() {
  if (depth_++ == 0) state_.store(kBlocked, std::memory_order_release);
}

void ExitFinisher::LeaveBlocking() {
  if (--depth_ > 0) return;
  int expected = kBlocked;
  if (state_.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) return;
  // Taken over: the finisher owns the writer's state and has written (or
  // is writing) the end. Never touch it again; the process is exiting.
  for (;;) SleepNs(100000000);
}

bool ExitFinisher::OnSignal(int sig) {
  if (!started_) return false;
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (stopping_.exchange(true)) {
    // A stop is under way (an exit, or an earlier signal): this signal is
    // delivered when the trace is finished.
    int none = 0;
    if (pending_signal_.compare_exchange_strong(none, sig)) signal_tid_.store(tid);
    // The finisher may be done already and have looked: then take it back
    // and let the caller deliver it now (only one of the two gets it).
    if (finished_.load()) return pending_signal_.exchange(0) == 0;
    return true;
  }
  signal_tid_.store(tid);
  pending_signal_.store(sig);
  stop_ns_.store(common::ClockNs(CLOCK_MONOTONIC));
  hooks_->RequestFinal(sig);
  sem_post(&wake_);
  return true;
}

bool ExitFinisher::OnExit() {
  if (!started_) return false;
  if (!stopping_.exchange(true)) {
    stop_ns_.store(common::ClockNs(CLOCK_MONOTONIC));
    hooks_->RequestFinal(0);
    sem_post(&wake_);
  }
  // A signal's stop may have just begun (stopping_ set, the time not yet).
  uint64_t stop = stop_ns_.load();
  for (int i = 0; stop == 0 && i < 100; ++i) {
    SleepNs(100000);
    stop = stop_ns_.load();
  }
  if (stop == 0) stop = common::ClockNs(CLOCK_MONOTONIC);
  const uint64_t give_up = stop + uint64_t{timeout_ms_} * 1000000 + kExitSlackNs;
  while (!finished_.load() && common::ClockNs(CLOCK_MONOTONIC) < give_up) SleepNs(1000000);
  return finished_.load() && state_.load() != kTakenOver && hooks_->WriterFinished();
}

}  // namespace gpscope::inject
