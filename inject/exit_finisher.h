// inject/exit_finisher.h: the end of a trace, at exit or on a fatal signal,
// whatever the application's threads and the writer are doing.
//
// Measured on the H200 (issue 17): a PyTorch child in a loop that never
// sleeps, sent SIGTERM, lost its end record in 3 runs of 3. The handler ran
// on the application thread, inside a CUDA call, and waited there for the
// writer; the writer's final cuptiActivityFlushAll waited for a lock that
// thread held; the deadline passed and the process died with no end record.
// So now:
//   * The signal handler only records the signal and wakes the finisher
//     thread (atomics, clock_gettime, sem_post: async-signal-safe) and
//     returns: the interrupted CUDA call completes and releases its locks,
//     the writer's final flush goes through, the end record is written,
//     then the finisher delivers the signal again with its default action,
//     so the process dies of it as it would have.
//   * Whatever blocks the writer (a CUPTI flush that never returns, the
//     loader lock), the finisher writes the end record itself before the
//     deadline: every call of the writer that may block is a "blocking
//     section", during which the writer's state and its ChunkWriter are
//     consistent and may be taken over. Past the soft deadline the finisher
//     takes them (one CAS); when the writer's call returns it sees that and
//     parks for good, never touching them again. The end record then says
//     flush_timed_out, and what was not flushed is counted in it.
//   * The exit path (atexit) waits for the same finish, bounded.
//
// States of the writer: kBusy (using its state), kBlocked (in a blocking
// section), kTakenOver (the finisher owns its state).
//
// Thread model: RequestStop/OnSignal from any thread, OnSignal from a
// signal handler (async-signal-safe); Enter/LeaveBlocking from the writer
// thread only; the hooks run on the finisher thread.
#ifndef GPSCOPE_INJECT_EXIT_FINISHER_H_
#define GPSCOPE_INJECT_EXIT_FINISHER_H_

#include <pthread.h>
#include <semaphore.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace gpscope::inject {

class ExitFinisher {
 public:
  class Hooks {
   public:
    virtual ~Hooks() = default;
    // Any thread, async-signal-safe: ask the writer for its final flush and
    // end record; sig 0: the process exits, else the signal.
    virtual void RequestFinal(int sig) = 0;
    // Finisher thread: the writer wrote the end record.
    virtual bool WriterFinished() = 0;
    // Finisher thread, owning the writer's state (taken over): write the
    // end record now, counting what could not be flushed.
    virtual void WriteEndInstead() = 0;
  };

  ExitFinisher() = default;
  ExitFinisher(const ExitFinisher&) = delete;
  ExitFinisher& operator=(const ExitFinisher&) = delete;

  // Starts the finisher thread (SIGTERM/SIGINT blocked, small stack).
  // False when it cannot: the caller then keeps the old in-handler wait.
  bool Start(Hooks* hooks, uint32_t exit_timeout_ms);
  bool started() const { return started_; }

  // Writer thread, around a call that may block. Nestable. LeaveBlocking
  // never returns when the state was taken over meanwhile (the thread
  // parks: the process is exiting).
  void EnterBlocking();
  void LeaveBlocking();
  void SetWriterThread(pthread_t t) {
    writer_ = t;
    writer_set_.store(true, std::memory_order_release);
  }
  bool OnWriterThread() const {
    return writer_set_.load(std::memory_order_acquire) && pthread_equal(pthread_self(), writer_);
  }

  // A fatal signal whose default action would end the process. Async-
  // signal-safe. Returns true when the finisher will end the trace and
  // deliver the signal (the handler just returns); false when the caller
  // must deliver it now itself (SIG_DFL + raise): no finisher, or the trace
  // is already finished.
  bool OnSignal(int sig);
  // The exit path (atexit): requests the final flush (unless a signal did),
  // then waits until the trace is finished, at most the exit timeout (plus
  // a little). True when the writer finished on its own (it may be joined).
  bool OnExit();
  // A stop was requested (exit or signal).
  bool stopping() const { return stopping_.load(); }
  // The writer, in its final flush: the time by which it must stop
  // converting and write the end (CLOCK_MONOTONIC ns); 0 before a stop.
  uint64_t writer_deadline_ns() const;
  // Whether the finisher took the writer's state over.
  bool taken_over() const { return state_.load() == kTakenOver; }

 private:
  enum : int { kBusy = 0, kBlocked = 1, kTakenOver = 2 };
  static void* ThreadMain(void* self);
  void Run();
  void DeliverPendingSignal();
  uint64_t soft_deadline_ns() const;

  Hooks* hooks_ = nullptr;
  uint32_t timeout_ms_ = 4000;
  bool started_ = false;
  sem_t wake_{};
  pthread_t thread_{};
  pthread_t writer_{};
  std::atomic<bool> writer_set_{false};
  int depth_ = 0;  // writer thread only
  std::atomic<int> state_{kBusy};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};
  std::atomic<uint64_t> stop_ns_{0};   // CLOCK_MONOTONIC of the request
  std::atomic<int> pending_signal_{0};  // delivered once finished
  std::atomic<pid_t> signal_tid_{0};   // the thread that received it
};

// RAII blocking section for the writer thread (no-op on other threads).
class BlockingSection {
 public:
  explicit BlockingSection(ExitFinisher* f) : f_(f->OnWriterThread() ? f : nullptr) {
    if (f_ != nullptr) f_->EnterBlocking();
  }
  ~BlockingSection() {
    if (f_ != nullptr) f_->LeaveBlocking();
  }
  BlockingSection(const BlockingSection&) = delete;
  BlockingSection& operator=(const BlockingSection&) = delete;

 private:
  ExitFinisher* f_;
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_EXIT_FINISHER_H_
