// inject/writer_loop.h: the collector's writer thread: it drains CUPTI's
// completed buffers into the trace, accounts for every loss, and writes the
// end of the trace.
//
// Every ~20 ms (sooner when woken: a buffer completed, a window queued, the
// exit) it opens the file if the first CUDA context has come, applies the
// capture gate's transitions, and drains: metric samples, call-site stacks,
// the API call rows of the callbacks (GPSCOPE_API_SOURCE=callback: those
// published before the stacks' drain, so each row's stack sample, published
// at its call's entry, comes first), then the completed activity buffers
// through the record converter. So an API call is written no later than the buffer that brings
// its kernel (CUPTI's own API records arrive in buffers too). Every
// flush interval it calls cuptiActivityFlushAll(0), reports new losses,
// adds a clock snapshot and the refusals of another CUPTI client, and ships
// a chunk, so a killed job loses at most one interval. Out of buffers, it
// forces them back (at most every 200 ms).
//
// Losses, each counted by reason into the trace (DropNotice): records CUPTI
// dropped, buffer requests refused (pool cap), records without timestamps,
// metric samples, API call rows and call stacks the writer fell behind on
// (or of threads past the collector's limit), API calls still in flight at
// the end, buffers never handed back (another CUPTI client, or a signal
// mid-call), and what the exit deadline cut off.
//
// The end: RequestFinal() (the exit path, or the finisher after a signal)
// breaks the loop; the final forced flush, the last losses and the end
// record follow, bounded by the exit deadline (ExitFinisher). If the writer
// is stuck in a blocking call, the finisher takes its state over and calls
// WriteEndInstead().
//
// Thread model: Run() is the writer thread's body; RequestFinal() from any
// thread (async-signal-safe); finished() from any thread; WriteEndInstead()
// on the finisher thread, owning the writer's state (taken over).
#ifndef GPSCOPE_INJECT_WRITER_LOOP_H_
#define GPSCOPE_INJECT_WRITER_LOOP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "inject/buffer_pool.h"
#include "inject/call_site_stacks.h"
#include "inject/capture_gate.h"
#include "inject/config.h"
#include "inject/cupti_session.h"
#include "inject/exit_finisher.h"
#include "inject/output_file.h"
#include "inject/record_converter.h"
#include "inject/wake_word.h"
#include "metrics/sample_ring.h"
#include "metrics/sampler_thread.h"
#include "proto/chunk_writer.h"
#include "proto/enums.h"

namespace gpscope::inject {

class WriterLoop {
 public:
  // What the loop works on, owned by the collector (all outlive the loop).
  struct Parts {
    const Config* config = nullptr;
    bool cupti_active = false;  // CUPTI loaded and collecting (not yield mode)
    BufferPool* pool = nullptr;
    CuptiSession* session = nullptr;
    CaptureGate* gate = nullptr;
    RecordConverter* converter = nullptr;
    OutputFile* output = nullptr;
    format::ChunkWriter* writer = nullptr;
    ExitFinisher* finisher = nullptr;
    WakeWord* wake = nullptr;
    CallSiteStacks* stacks = nullptr;
    metrics::MetricRing* metric_ring = nullptr;
    metrics::RingSink* metric_sink = nullptr;  // null: no metrics
    std::atomic<uint64_t>* context_devices = nullptr;  // see NoteContextDevice
    std::atomic<uint64_t>* cupti_dropped = nullptr;    // added to by BufferCompleted
    std::atomic<uint64_t>* events_written = nullptr;   // for `status`
  };

  explicit WriterLoop(const Parts& parts) : p_(parts) {}
  WriterLoop(const WriterLoop&) = delete;
  WriterLoop& operator=(const WriterLoop&) = delete;

  // The writer thread's body; returns once the end record is written.
  void Run();
  // Writer thread (or start-up): CUPTI's buffers handed back (flag 0:
  // completed ones; CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: partly filled too),
  // the drops it counted since, then everything converted.
  void FlushCupti(uint32_t flag);

  // Any thread, async-signal-safe (atomics only): the final flush and end
  // record; sig 0: the process exits, else that signal ends it.
  void RequestFinal(int sig);
  // The end record is written.
  bool finished() const { return final_done_.load(std::memory_order_acquire); }
  // The finisher thread, the writer's state taken over while the writer
  // sits in a call that did not return: the end record without CUPTI.
  void WriteEndInstead();

 private:
  void Drain();
  void ConvertBuffer(uint8_t* buffer, size_t valid_bytes);
  void DrainMetrics();
  void ReportLosses(bool final);
  // Objects loaded since (rescan), and the refused calls of another CUPTI
  // client into the trace (cumulative per api and caller).
  void NoteCuptiRefusals(bool rescan);
  void AddClockSnapshot();
  // The end record with its counts (writer, or the finisher after a takeover).
  format::ProcessEndRecord EndRecord(const format::ClockRecord& clock);
  void WriteEndRecord(format::ProcessEndRecord end);
  void LogSummary();

  const Parts p_;

  // Exit handshake (inject/exit_finisher.h).
  std::atomic<bool> final_requested_{false};
  std::atomic<bool> final_done_{false};
  std::atomic<uint32_t> end_reason_{wire::END_EXIT};
  std::atomic<int32_t> end_signal_{0};

  // Writer-thread state. reported_*: what the trace already has.
  uint64_t reported_cupti_dropped_ = 0;
  uint64_t reported_pool_failures_ = 0;
  uint64_t reported_incomplete_ = 0;
  uint64_t reported_metric_drops_ = 0;
  uint64_t reported_ring_drops_ = 0;
  uint64_t reported_table_drops_ = 0;
  uint64_t reported_thread_drops_ = 0;
  uint64_t reported_api_row_drops_ = 0;
  uint64_t reported_api_thread_drops_ = 0;
  bool flush_timed_out_ = false;
  uint64_t cut_at_deadline_ = 0;  // completed buffers not converted: the exit deadline came
  uint64_t buffers_drained_ = 0;   // activity buffers converted
  uint64_t drained_at_flush_ = 0;  // buffers_drained_ at the last periodic flush
  int flushes_without_buffer_ = 0;
  uint64_t failures_at_pressure_ = 0;    // pool->acquire_failures() at the last pressure flush
  uint64_t next_pressure_flush_ns_ = 0;  // CLOCK_MONOTONIC
  uint64_t pressure_flushes_ = 0;
  struct RefusalTotal {
    std::map<uintptr_t, uint64_t> by_call_site;  // cumulative counts
    uint64_t first_ns = 0, last_ns = 0;          // CLOCK_REALTIME
    uint32_t result = 0;
    bool logged = false;
  };
  std::map<std::pair<std::string, std::string>, RefusalTotal> refusals_;  // (api, caller)
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_WRITER_LOOP_H_
