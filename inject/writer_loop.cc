#include "inject/writer_loop.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cstring>

#include "common/posix.h"
#include "common/raw_log.h"
#include "inject/cupti_hooks.h"
#include "inject/diag_switches.h"

namespace gpscope::inject {

void WriterLoop::Run() {
  // Fatal-signal handlers wait for this thread; it must never run them.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  pthread_setname_np(pthread_self(), "gpscope-writer");
  p_.finisher->SetWriterThread(pthread_self());  // its blocking calls may be taken over

  format::ChunkWriter& w = *p_.writer;
  BufferPool& pool = *p_.pool;
  const uint64_t interval_ns = static_cast<uint64_t>(p_.config->flush_interval_ms) * 1000000ull;
  uint64_t next_flush_ns = common::ClockNs(CLOCK_MONOTONIC) + interval_ns;
  for (;;) {
    p_.output->MaybeOpen(&w, *p_.context_devices);
    p_.gate->Tick();
    Drain();
    if (final_requested_.load(std::memory_order_acquire)) break;
    // Out of buffers (each of many threads holds a partly filled one, which
    // CUPTI hands back only when forced): force them back, at most every
    // 200 ms. Records still in flight then come back incomplete (counted);
    // refused requests would lose far more.
    if (p_.cupti_active && p_.session->tracing() &&
        (pool.acquire_failures() != failures_at_pressure_ || pool.Exhausted()) &&
        common::ClockNs(CLOCK_MONOTONIC) >= next_pressure_flush_ns_) {
      FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      failures_at_pressure_ = pool.acquire_failures();
      next_pressure_flush_ns_ = common::ClockNs(CLOCK_MONOTONIC) + 200000000ull;
      ++pressure_flushes_;
    }
    if (common::ClockNs(CLOCK_MONOTONIC) >= next_flush_ns) {
      FlushCupti(0);  // completed buffers only; no device sync
      // Flag 0 hands back no partly filled buffer on the H200 (CUDA 13): a
      // slow application's records sat in one for seconds, and a SIGKILL
      // lost them. After two intervals without a buffer back, force one
      // out (records still in flight then come back incomplete, counted).
      if (p_.cupti_active && p_.session->tracing() && pool.outstanding() > 0 &&
          buffers_drained_ == drained_at_flush_) {
        if (++flushes_without_buffer_ >= 2) {
          FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
          flushes_without_buffer_ = 0;
        }
      } else {
        flushes_without_buffer_ = 0;
      }
      drained_at_flush_ = buffers_drained_;
      ReportLosses(false);
      AddClockSnapshot();
      NoteCuptiRefusals(/*rescan=*/true);
      // Before the file exists the open batch just grows (a full one is
      // held as one frame): zstd packs a 1 MiB batch of host metrics far
      // better than 2 s worth, so the 4 MiB hold lasts hours, not ~1 h.
      if (w.is_open()) w.Flush();
      p_.events_written->store(w.events_written(), std::memory_order_relaxed);
      next_flush_ns = common::ClockNs(CLOCK_MONOTONIC) + interval_ns;
    }
    p_.wake->Wait(20);
  }

  // Final: a window still closing ends now (its records come with the
  // forced flush; no kinds are switched off at exit), partially filled
  // buffers are forced out, then the end chunk.
  p_.gate->EndAtExit();
  FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  ReportLosses(true);
  NoteCuptiRefusals(/*rescan=*/false);
  WriteEndRecord(EndRecord(p_.session->Snapshot()));
  LogSummary();
  final_done_.store(true, std::memory_order_release);
}

void WriterLoop::LogSummary() {
  const RecordConverter& conv = *p_.converter;
  const BufferPool& pool = *p_.pool;
  GPSCOPE_LOG_INFO("%llu activity buffers, %llu kernel records from CUPTI (starts %llu..%llu), "
                   "%llu records outside capture windows (not written), CUPTI detached %llu "
                   "times between windows (longest detach %.3f ms on an application thread; "
                   "longest window opening %.3f ms on the writer)",
                   static_cast<unsigned long long>(buffers_drained_),
                   static_cast<unsigned long long>(conv.kernel_records()),
                   static_cast<unsigned long long>(conv.first_kernel_ns()),
                   static_cast<unsigned long long>(conv.last_kernel_ns()),
                   static_cast<unsigned long long>(conv.outside_window()),
                   static_cast<unsigned long long>(p_.session->detaches()),
                   static_cast<double>(p_.session->longest_detach_ns()) / 1e6,
                   static_cast<double>(p_.session->longest_switch_on_ns()) / 1e6);
  GPSCOPE_LOG_INFO("buffer pool: %llu x %zu KiB and %llu x %zu KiB cut of %zu MiB, at most %lld "
                   "held by CUPTI at once, %llu requests refused, %llu flushes forced by pressure",
                   static_cast<unsigned long long>(pool.large_buffers()),
                   pool.buffer_bytes() >> 10, static_cast<unsigned long long>(pool.small_buffers()),
                   pool.small_bytes() >> 10, pool.cap_bytes() >> 20,
                   static_cast<long long>(pool.peak_outstanding()),
                   static_cast<unsigned long long>(pool.acquire_failures()),
                   static_cast<unsigned long long>(pressure_flushes_));
  p_.stacks->LogSummary();
}

void WriterLoop::FlushCupti(uint32_t flag) {
  p_.converter->BeginFlush((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 &&
                           !p_.gate->InWindow(p_.session->NowNs()));
  if (p_.cupti_active) {
    // May wait for the application's CUDA calls (and never return if one
    // never does): the finisher can take over meanwhile.
    const size_t dropped = p_.session->FlushAll(flag);
    if (dropped > 0) p_.cupti_dropped->fetch_add(dropped, std::memory_order_relaxed);
  }
  Drain();
  p_.converter->EndFlush();
}

void WriterLoop::ConvertBuffer(uint8_t* buffer, size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  if (CuptiSession::Use use(*p_.session); use) {
    while (p_.session->NextRecord(buffer, valid_bytes, &record)) p_.converter->Convert(record);
  }
  // Buffers are handed out again with ZEROED_OUT_ACTIVITY_BUFFER set.
  if constexpr (!diag::kNoBufferMemset) memset(buffer, 0, valid_bytes);
}

void WriterLoop::Drain() {
  DrainMetrics();
  // The API call rows published by now, after the stacks: a row's stack
  // sample was published at its call's entry, so it is drained no later.
  p_.stacks->MarkApiRows();
  p_.stacks->Drain(*p_.gate);
  p_.stacks->DrainApiRows([this](uint32_t thread_id, const ApiCallRow& r) {
    p_.converter->ConvertApiCall(r.domain, r.cbid, r.start_ns, r.end_ns, thread_id,
                                 r.correlation_id, r.return_value);
  });
  BufferPool& pool = *p_.pool;
  uint8_t* buffer;
  size_t valid;
  // In the final flush the end record must make the exit deadline: past it,
  // what is left is counted (cut_at_deadline_), not converted.
  const uint64_t deadline = p_.finisher->writer_deadline_ns();
  while (pool.PopCompleted(&buffer, &valid)) {
    if (deadline != 0 && final_requested_.load(std::memory_order_relaxed) &&
        common::ClockNs(CLOCK_MONOTONIC) >= deadline) {
      ++cut_at_deadline_;
      memset(buffer, 0, valid);
      pool.Release(buffer);
      continue;
    }
    if constexpr (!diag::kDiscardBuffers) ConvertBuffer(buffer, valid);
    ++buffers_drained_;
    pool.Release(buffer);
  }
  // Not in the final flush: no new callbacks while the process exits.
  if (!final_requested_.load(std::memory_order_relaxed)) {
    p_.stacks->NoteDirectDriverCalls(p_.converter->driver_api_records());
  }
}

// Descriptors and notices point into the Sampler, which lives until the
// sampler thread is stopped after the final drain (or is leaked if it
// hangs), so they are valid here.
void WriterLoop::DrainMetrics() {
  if (p_.metric_sink == nullptr) return;
  metrics::MetricEvent e;
  while (p_.metric_ring->TryPop(&e)) {
    switch (e.kind) {
      case metrics::MetricEvent::kSample:
        p_.writer->AddMetricSample(e.sample);
        break;
      case metrics::MetricEvent::kDescriptor:
        p_.writer->AddMetricDescriptor(metrics::ToRecord(*e.descriptor));
        break;
      case metrics::MetricEvent::kCapability:
        p_.writer->AddCapability(metrics::ToRecord(*e.capability));
        break;
    }
  }
}

void WriterLoop::ReportLosses(bool final) {
  format::ChunkWriter& w = *p_.writer;
  const BufferPool& pool = *p_.pool;
  const uint64_t last_ns = p_.converter->last_event_ns();
  auto report = [&](uint32_t reason, uint64_t total, uint64_t* reported, const char* detail) {
    if (total == *reported) return;
    format::DropRecord d{};
    d.reason = reason;
    d.count = total - *reported;
    d.last_ns = last_ns;
    d.detail = format::MakeStringRef(detail);
    w.AddDrop(d);
    *reported = total;
  };
  report(wire::DROP_CUPTI_REPORTED, p_.cupti_dropped->load(std::memory_order_relaxed),
         &reported_cupti_dropped_, "records CUPTI dropped (cuptiActivityGetNumDroppedRecords)");
  report(wire::DROP_CUPTI_BUFFER_POOL_EMPTY, pool.acquire_failures(), &reported_pool_failures_,
         "buffer requests refused: GPSCOPE_MAX_BUFFER_MB reached (CUPTI drops those records)");
  report(wire::DROP_CUPTI_INCOMPLETE_RECORD, p_.converter->incomplete_records(),
         &reported_incomplete_,
         "records without timestamps (still queued or running when a flush forced them out, "
         "or CUPTI's device buffer full)");
  if (p_.metric_sink != nullptr) {
    report(wire::DROP_RING_FULL, p_.metric_sink->samples_dropped(), &reported_metric_drops_,
           "metric samples dropped: the writer fell behind the sampler");
  }
  if (p_.stacks->active()) {
    report(wire::DROP_STACKS, p_.stacks->ring_drops(), &reported_ring_drops_,
           "call stacks not taken: a thread's capture ring was full (the writer fell behind); "
           "the API records are kept");
    report(wire::DROP_STACKS, p_.stacks->table_drops(), &reported_table_drops_,
           "call stacks not kept (stack id 0): the stack table reached its limit");
    report(wire::DROP_STACKS, p_.stacks->thread_drops(), &reported_thread_drops_,
           "call stacks not taken at synchronizing calls of threads beyond the collector's "
           "thread limit (256)");
  }
  if (p_.stacks->api_rows()) {
    report(wire::DROP_RING_FULL, p_.stacks->api_row_drops(), &reported_api_row_drops_,
           "API call records lost: a thread's API call ring was full (the writer fell behind), "
           "or the calls nested deeper than the collector follows");
    report(wire::DROP_RING_FULL, p_.stacks->api_thread_drops(), &reported_api_thread_drops_,
           "API call records lost: calls of threads beyond the collector's thread limit (256)");
    const uint64_t in_flight = final ? p_.stacks->api_calls_in_flight() : 0;
    if (in_flight > 0) {
      format::DropRecord d{};
      d.reason = wire::DROP_CUPTI_INCOMPLETE_RECORD;
      d.count = in_flight;
      d.last_ns = last_ns;
      d.detail = format::MakeStringRef(
          "API calls still in progress at the end of the trace: no end time, no record");
      w.AddDrop(d);
    }
  }
  if (final && pool.outstanding() > 0) {
    format::DropRecord d{};
    d.count = static_cast<uint64_t>(pool.outstanding());
    d.last_ns = last_ns;
    if (end_reason_.load() == wire::END_SIGNAL) {
      // Seen on the H200: a signal that lands inside a CUDA call leaves
      // CUPTI holding that thread's buffer through the forced flush. No
      // other client is involved; saying "stolen" would send the user
      // looking for one.
      d.reason = wire::DROP_EXIT_FLUSH_TIMEOUT;
      d.detail = format::MakeStringRef(
          "activity buffers CUPTI still held when the process was ended by a signal (count = "
          "buffers, not records): a CUDA call was in progress; their records are lost");
    } else {
      d.reason = wire::DROP_BUFFER_STOLEN;
      d.detail = format::MakeStringRef(
          "activity buffers never returned to gpscope (count = buffers, not records): another "
          "CUPTI client registered its own buffer callbacks");
    }
    w.AddDrop(d);
  }
}

void WriterLoop::NoteCuptiRefusals(bool rescan) {
  if (p_.session->subscriber() == nullptr) return;  // hooks only while we hold CUPTI
  if (rescan) {
    BlockingSection section(p_.finisher);  // the loader lock
    RescanCuptiHooks();
  }
  CuptiRefusal seen[32];
  const size_t n = CollectCuptiRefusals(seen, sizeof(seen) / sizeof(seen[0]));
  for (size_t i = 0; i < n; ++i) {
    const CuptiRefusal& r = seen[i];
    std::string caller;
    if (r.caller_pc != 0) {
      BlockingSection section(p_.finisher);  // dladdr takes the loader lock
      Dl_info info;
      if (dladdr(reinterpret_cast<void*>(r.caller_pc), &info) != 0 && info.dli_fname != nullptr) {
        caller = info.dli_fname;
      }
    }
    RefusalTotal& t = refusals_[{r.api, caller}];
    t.by_call_site[r.caller_pc] = r.count;
    if (t.first_ns == 0 || r.first_realtime_ns < t.first_ns) t.first_ns = r.first_realtime_ns;
    if (r.last_realtime_ns > t.last_ns) t.last_ns = r.last_realtime_ns;
    t.result = r.result;
    uint64_t total = 0;
    for (const auto& [pc, count] : t.by_call_site) total += count;
    const int64_t offset = p_.session->CuptiMinusRealtimeNs();
    format::CuptiRefusalRecord rec{};
    rec.first_ns = static_cast<uint64_t>(static_cast<int64_t>(t.first_ns) + offset);
    rec.last_ns = static_cast<uint64_t>(static_cast<int64_t>(t.last_ns) + offset);
    rec.count = total;
    rec.api = format::MakeStringRef(r.api);
    rec.caller = {caller.data(), caller.size()};
    rec.result = r.result;
    p_.writer->AddCuptiRefusal(rec);
    if (!t.logged) {
      t.logged = true;
      const size_t slash = caller.rfind('/');
      const std::string who = caller.empty()                 ? std::string("unknown library")
                              : slash == std::string::npos ? caller
                                                           : caller.substr(slash + 1);
      GPSCOPE_LOG_WARNING("another CUPTI client (%s) called %s while gpscope holds CUPTI: refused "
                          "(%s), so its profiler gets no GPU activity; GPSCOPE_CUPTI_MODE=yield "
                          "leaves CUPTI to it (recorded in the trace)",
                          who.c_str(), r.api,
                          p_.session->ErrorString(static_cast<CUptiResult>(r.result)));
    }
  }
}

void WriterLoop::AddClockSnapshot() {
  p_.writer->AddClock(p_.session->Snapshot());
}

format::ProcessEndRecord WriterLoop::EndRecord(const format::ClockRecord& clock) {
  format::ProcessEndRecord end{};
  end.clock = clock;
  p_.gate->CloseOutsideWindow(end.clock.cupti_ns);  // the trace may end outside a window
  end.end_ns = end.clock.cupti_ns;
  end.reason = end_reason_.load();
  end.signal = end_signal_.load();
  end.events_dropped = p_.cupti_dropped->load() + p_.converter->incomplete_records();
  end.flush_timed_out = flush_timed_out_;
  if (cut_at_deadline_ > 0) {
    end.flush_timed_out = true;
    format::DropRecord d{};
    d.reason = wire::DROP_EXIT_FLUSH_TIMEOUT;
    d.count = cut_at_deadline_;
    d.last_ns = p_.converter->last_event_ns();
    d.detail = format::MakeStringRef(
        "activity buffers not converted before the exit deadline (count = buffers, not "
        "records): GPSCOPE_EXIT_TIMEOUT_MS");
    p_.writer->AddDrop(d);
  }
  return end;
}

void WriterLoop::WriteEndRecord(format::ProcessEndRecord end) {
  if (p_.writer->is_open() || p_.output->MaybeOpen(p_.writer, *p_.context_devices)) {
    p_.writer->WriteEnd(end);
  } else if (p_.output->open_at_context()) {
    // No CUDA context in the process's whole life: nothing to trace.
    p_.writer->DiscardHeld();
    GPSCOPE_LOG_INFO("no CUDA context was created: no trace written to %s",
                     p_.output->path().c_str());
  }
}

void WriterLoop::RequestFinal(int sig) {
  end_reason_.store(sig != 0 ? wire::END_SIGNAL : wire::END_EXIT);
  end_signal_.store(sig);
  final_requested_.store(true, std::memory_order_release);
  p_.wake->Wake();
}

// No CUPTI call here. What CUPTI still holds, and what was handed back but
// not converted, is counted as lost in the end record.
void WriterLoop::WriteEndInstead() {
  const BufferPool& pool = *p_.pool;
  const int64_t held = pool.outstanding();
  const uint64_t unflushed = static_cast<uint64_t>(held > 0 ? held : 0) + pool.completed_pending();
  ReportLosses(false);
  format::DropRecord d{};
  d.reason = wire::DROP_EXIT_FLUSH_TIMEOUT;
  d.count = unflushed + cut_at_deadline_;
  d.last_ns = p_.converter->last_event_ns();
  d.detail = format::MakeStringRef(
      "activity buffers not flushed before the exit deadline (count = buffers, not records): "
      "the final CUPTI flush did not return within GPSCOPE_EXIT_TIMEOUT_MS");
  p_.writer->AddDrop(d);
  cut_at_deadline_ = 0;  // counted just above
  if (p_.stacks->api_rows() && p_.stacks->api_rows_pending() > 0) {
    d.reason = wire::DROP_EXIT_FLUSH_TIMEOUT;
    d.count = p_.stacks->api_rows_pending();
    d.detail = format::MakeStringRef(
        "API call records not written before the exit deadline: the writer was held up in a "
        "CUDA call (GPSCOPE_EXIT_TIMEOUT_MS)");
    p_.writer->AddDrop(d);
  }
  flush_timed_out_ = true;
  format::ClockRecord clock{};
  clock.realtime_ns = common::ClockNs(CLOCK_REALTIME);
  clock.monotonic_ns = common::ClockNs(CLOCK_MONOTONIC);
  // CUPTI cannot be asked here (the finisher, after a takeover): its clock
  // from the last snapshot's offset.
  clock.cupti_ns = static_cast<uint64_t>(static_cast<int64_t>(clock.realtime_ns) +
                                         p_.session->CuptiMinusRealtimeNs());
  WriteEndRecord(EndRecord(clock));
  GPSCOPE_LOG_WARNING("the final CUPTI flush did not return within GPSCOPE_EXIT_TIMEOUT_MS=%u "
                      "(a CUDA call held it up); the trace ends here, %llu activity buffers not "
                      "flushed (counted in it)",
                      p_.config->exit_timeout_ms, static_cast<unsigned long long>(unflushed));
}

}  // namespace gpscope::inject
