// metrics/sampler_thread.h: runs a Sampler on its own thread.
//
// Start() spawns the thread with SIGTERM and SIGINT blocked (the
// collector's fatal-signal handler waits for other threads and must never
// run on this one), and no other signal: blocking all of them made CUDA
// hang when another tool enabled CUPTI tracing mid-run (sampler_thread.cc). The thread calls Sampler::Init()
// first (loading NVML can take hundreds of ms, so it never runs on the
// thread that called Start()), then SampleOnce() every interval_ms until
// Stop(). Output goes to the MetricSink given to the constructor, on the
// sampler thread; RingSink (sample_ring.h) hands it to another thread.
//
//   MetricRing ring;  ring.Init(4096);
//   RingSink sink(&ring);
//   SamplerThread::Options opt;
//   opt.interval_ms = 100;
//   SamplerThread t(std::move(sampler), &sink, opt);
//   t.Start();
//   ... writer thread drains `ring` ...
//   t.Stop(2000);   // bounded: a hung NVML call cannot hang exit
//
// Stop() wakes the thread and waits up to timeout_ms for it to leave its
// loop, then joins it. If it does not leave in time (a driver call that
// hangs), Stop() cuts the thread off from the sink, detaches it,
// deliberately leaks the Sampler and the thread state so the stuck thread
// never touches freed memory, and returns false. Either way the sink is not
// called after Stop() returns, so its owner may free it. (Each sink call
// takes one uncontended lock for this; the sink itself must not block.)
//
// Thread model: Start() and Stop() from one controlling thread, never from
// a signal handler (they lock and join). running(), initialized() and
// sampler()->stats() from any thread.
#ifndef GPSCOPE_METRICS_SAMPLER_THREAD_H_
#define GPSCOPE_METRICS_SAMPLER_THREAD_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "metrics/sampler.h"

namespace gpscope::metrics {

class SamplerThread {
 public:
  struct Options {
    uint32_t interval_ms = 100;  // clamped to [10, 1000]
    // The samples' timebase; default CLOCK_REALTIME ns (CUPTI's default).
    uint64_t (*clock_ns)() = nullptr;
    const char* thread_name = "gpscope-sampler";  // <= 15 chars
  };
  static constexpr uint32_t kMinIntervalMs = 10;
  static constexpr uint32_t kMaxIntervalMs = 1000;

  SamplerThread(std::unique_ptr<Sampler> sampler, MetricSink* sink, const Options& options);
  ~SamplerThread();  // Stop(2000) if still running
  SamplerThread(const SamplerThread&) = delete;
  SamplerThread& operator=(const SamplerThread&) = delete;

  bool Start();
  bool Stop(uint32_t timeout_ms);

  bool running() const;
  uint32_t interval_ms() const { return interval_ms_; }
  // True once Init() has finished on the thread (whatever it found).
  bool initialized() const;
  // Null after a Stop() that timed out (the Sampler is leaked, still in use).
  const Sampler* sampler() const;

 private:
  struct State;
  // States left to threads that did not stop in time: kept reachable so leak
  // checkers do not flag the deliberate leak. Constant-initialized.
  static std::atomic<State*> leaked_;
  State* state_;  // shared with the thread; leaked if the thread hangs
  uint32_t interval_ms_;
};

}  // namespace gpscope::metrics

#endif  // GPSCOPE_METRICS_SAMPLER_THREAD_H_
