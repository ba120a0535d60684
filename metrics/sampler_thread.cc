#include "metrics/sampler_thread.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "common/posix.h"

namespace gpscope::metrics {

// Forwards to the real sink until Stop() abandons a stuck thread; after
// that the thread, should it ever come back, no longer touches the sink.
// One uncontended lock per call: Stop() takes it only to abandon.
class GuardSink : public MetricSink {
 public:
  MetricSink* target = nullptr;
  bool OnDescriptor(const MetricDef& def) override {
    std::lock_guard<std::mutex> lock(mu_);
    return !abandoned_ && target->OnDescriptor(def);
  }
  bool OnCapability(const CapabilityDef& cap) override {
    std::lock_guard<std::mutex> lock(mu_);
    return !abandoned_ && target->OnCapability(cap);
  }
  void OnSample(const format::MetricSample& sample) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!abandoned_) target->OnSample(sample);
  }
  // False when the thread is stuck inside the target sink itself.
  bool Abandon(std::chrono::milliseconds wait) {
    // Polls try_lock rather than timed_mutex::try_lock_for, whose
    // pthread_mutex_clocklock ThreadSanitizer (GCC 12) does not intercept.
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (!mu_.try_lock()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    abandoned_ = true;
    mu_.unlock();
    return true;
  }

 private:
  std::mutex mu_;
  bool abandoned_ = false;  // guarded by mu_
};

struct SamplerThread::State {
  std::unique_ptr<Sampler> sampler;
  GuardSink sink;
  uint64_t (*clock_ns)() = nullptr;
  uint32_t interval_ms = 100;
  const char* name = nullptr;

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;    // guarded by mu
  bool exited = false;  // guarded by mu
  std::atomic<bool> initialized{false};
  std::thread thread;
  bool started = false;  // controlling thread only
  State* next_leaked = nullptr;

  void Run() {
    if (name != nullptr) pthread_setname_np(pthread_self(), name);
    sampler->Init(&sink);
    initialized.store(true, std::memory_order_release);
    const auto interval = std::chrono::milliseconds(interval_ms);
    auto next = std::chrono::steady_clock::now() + interval;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (cv.wait_until(lock, next, [this] { return stop; })) break;
      }
      sampler->SampleOnce(clock_ns(), &sink);
      next += interval;
      // Fell behind (a slow driver call, a suspended process): skip the
      // missed ticks instead of sampling in a burst.
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + interval;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      exited = true;
    }
    cv.notify_all();
  }
};

std::atomic<SamplerThread::State*> SamplerThread::leaked_{nullptr};

SamplerThread::SamplerThread(std::unique_ptr<Sampler> sampler, MetricSink* sink,
                             const Options& options)
    : state_(new State), interval_ms_(options.interval_ms) {
  if (interval_ms_ < kMinIntervalMs) interval_ms_ = kMinIntervalMs;
  if (interval_ms_ > kMaxIntervalMs) interval_ms_ = kMaxIntervalMs;
  state_->sampler = std::move(sampler);
  state_->sink.target = sink;
  state_->clock_ns = options.clock_ns != nullptr ? options.clock_ns
                                                        : +[] { return common::ClockNs(CLOCK_REALTIME); };
  state_->interval_ms = interval_ms_;
  state_->name = options.thread_name;
}

SamplerThread::~SamplerThread() {
  if (state_ != nullptr && state_->started) Stop(2000);
  delete state_;  // null when a hung thread still holds it
}

bool SamplerThread::Start() {
  if (state_ == nullptr || state_->started || state_->sampler == nullptr) return false;
  // Block SIGTERM and SIGINT around the spawn, so the new thread starts
  // with them blocked and the collector's exit handler (which waits for
  // the writer) never runs on it. Only those two: on the H200, a thread
  // that blocked every signal made the application hang in a cuBLAS launch
  // once torch.profiler enabled CUPTI kernel tracing mid-run (the driver
  // appears to signal every thread and wait for each; issue 4 notes).
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  bool ok = true;
  try {
    State* s = state_;
    state_->thread = std::thread([s] { s->Run(); });
  } catch (const std::system_error&) {
    ok = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  state_->started = ok;
  return ok;
}

bool SamplerThread::Stop(uint32_t timeout_ms) {
  if (state_ == nullptr) return false;
  if (!state_->started) return true;
  bool exited;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->stop = true;
    state_->cv.notify_all();
    exited = state_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                 [this] { return state_->exited; });
  }
  if (exited) {
    state_->thread.join();
    state_->started = false;
    return true;
  }
  // Stuck inside the driver: cut it off from the sink, let it go, and keep
  // everything else it may touch.
  state_->sink.Abandon(std::chrono::milliseconds(100));
  state_->thread.detach();
  state_->started = false;
  state_->next_leaked = leaked_.load(std::memory_order_relaxed);
  while (!leaked_.compare_exchange_weak(state_->next_leaked, state_, std::memory_order_release,
                                        std::memory_order_relaxed)) {
  }
  state_ = nullptr;  // leaked with the Sampler it owns
  return false;
}

bool SamplerThread::running() const { return state_ != nullptr && state_->started; }

bool SamplerThread::initialized() const {
  return state_ != nullptr && state_->initialized.load(std::memory_order_acquire);
}

const Sampler* SamplerThread::sampler() const {
  return state_ != nullptr ? state_->sampler.get() : nullptr;
}

}  // namespace gpscope::metrics
