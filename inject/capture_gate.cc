#include "inject/capture_gate.h"

#include <time.h>

#include <algorithm>

#include "common/posix.h"
#include "common/raw_log.h"
#include "proto/enums.h"

namespace gpscope::inject {

uint64_t CaptureGate::Actions::MonotonicNs() { return common::ClockNs(CLOCK_MONOTONIC); }

CaptureGate::CaptureGate(const control::CaptureConfig* capture, format::ChunkWriter* writer,
                         Actions* actions)
    : writer_(writer), actions_(actions) {
  if (capture == nullptr) return;
  standby_ = capture->standby;
  uses_nvtx_ = !capture->standby && (!capture->range_name.empty() || capture->steps > 0);
  window_ = std::make_unique<control::CaptureWindow>(*capture);
}

CaptureGate::StartOutcome CaptureGate::Start(std::string* error) {
  control::Transitions initial;
  {
    std::lock_guard<std::mutex> lock(mu_);
    initial = window_->Start(actions_->NowNs());
  }
  // NVTX-driven windows trace from the start and keep only the window's
  // records (the range's start is known only when its record arrives);
  // time windows, standby and attach switch the activity kinds.
  if (uses_nvtx_ && !standby_) {
    if (!actions_->SetTracing(true, error)) return StartOutcome::kFailed;
    start_ns_ = ~0ull;  // nothing kept before the range starts
    for (const control::Transition& t : initial) Apply(&t, 1);
    return StartOutcome::kTracing;
  }
  if (initial.empty()) {  // standby or a delayed window
    start_ns_ = ~0ull;
    lost_start_ns_ = actions_->NowNs();
    return StartOutcome::kWaiting;
  }
  if (!actions_->SetTracing(true, error)) return StartOutcome::kFailed;
  for (const control::Transition& t : initial) Apply(&t, 1);
  return StartOutcome::kTracing;
}

// Writer thread (or start-up before it runs).
void CaptureGate::CloseOutsideWindow(uint64_t end_ns) {
  if (lost_start_ns_ == 0) return;
  static constexpr char kDetail[] = "outside the capture window";
  format::LostIntervalRecord lost{};
  lost.start_ns = lost_start_ns_;
  lost.end_ns = end_ns > lost_start_ns_ ? end_ns : lost_start_ns_;
  lost.reason = wire::LOST_TRACING_DISABLED;
  lost.detail = {kDetail, sizeof(kDetail) - 1};
  writer_->AddLostInterval(lost);
  lost_start_ns_ = 0;
}

// Control thread, with mu_ held: hands transitions to the writer.
void CaptureGate::QueueLocked(const control::Transitions& transitions) {
  for (const control::Transition& t : transitions) {
    if (queued_count_ < sizeof(queued_) / sizeof(queued_[0])) queued_[queued_count_++] = t;
  }
}

// Start-up thread before the writer runs, then the writer thread only.
void CaptureGate::Apply(const control::Transition* t, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char* why = control::TransitionReasonName(t[i].reason);
    if (t[i].kind == control::TransitionKind::kStartTracing) {
      FinishClose();  // the previous window's, if still in its grace
      if (!actions_->SetTracing(true, nullptr)) {
        writer_->AddCapability({format::MakeStringRef("capture"), false,
                                format::MakeStringRef("enabling kernel activity failed")});
        continue;
      }
      // Kernels on all along (GPSCOPE_DIAG_GATE_KERNELS) are recorded from
      // before, the other kinds only from now: the window starts when they
      // are on, so each kept kernel has its launch call (a busy writer can
      // be ms late).
      // A duty window too: its summary's busy share is of the time the
      // kinds were on (the writer's tick comes up to ~20 ms after the grid
      // start).
      const bool from_now =
          kernels_always_on_ || t[i].reason == control::TransitionReason::kDutyStarted;
      const uint64_t start_ns = from_now ? std::max(t[i].at_ns, actions_->NowNs()) : t[i].at_ns;
      CloseOutsideWindow(start_ns);
      start_ns_ = start_ns;
      end_ns_ = 0;
      GPSCOPE_LOG_INFO("capture window starts (%s) at %llu", why,
                       static_cast<unsigned long long>(t[i].at_ns));
    } else {
      // The gate closes now; the kinds stay on for kWindowCloseGraceNs so
      // the work launched inside the window and still queued on the device
      // completes with its timestamps (FinishClose).
      end_ns_ = t[i].at_ns;
      close_due_mono_ns_ = actions_->MonotonicNs() + kWindowCloseGraceNs;
      GPSCOPE_LOG_INFO("capture window ends (%s) at %llu", why,
                       static_cast<unsigned long long>(t[i].at_ns));
    }
  }
}

// Writer thread: the end of a window's close. The window's records now,
// before the kinds go off and before a later window moves the gate (which
// keeps one window at a time). Forced: partly filled buffers too; records
// still without timestamps then are sorted by the flush (the converter's
// deferred records).
void CaptureGate::FinishClose() {
  if (close_due_mono_ns_ == 0) return;
  close_due_mono_ns_ = 0;
  actions_->FlushForced();
  actions_->SetTracing(false, nullptr);
  lost_start_ns_ = end_ns_;
  actions_->WindowWritten();
  windows_written_.fetch_add(1, std::memory_order_release);
}

void CaptureGate::EndAtExit() {
  if (close_due_mono_ns_ == 0) return;
  close_due_mono_ns_ = 0;
  lost_start_ns_ = end_ns_;
  windows_written_.fetch_add(1, std::memory_order_release);
}

void CaptureGate::Tick() {
  if (window_ == nullptr) return;
  control::Transition local[sizeof(queued_) / sizeof(queued_[0]) + control::Transitions::kCapacity];
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < queued_count_; ++i) local[n++] = queued_[i];
    queued_count_ = 0;
    for (const control::Transition& t : window_->OnTick(actions_->NowNs())) local[n++] = t;
  }
  Apply(local, n);
  if (close_due_mono_ns_ != 0 && actions_->MonotonicNs() >= close_due_mono_ns_) {
    FinishClose();
  }
}

void CaptureGate::OnNvtxRangeStart(const char* name, uint64_t ts_ns) {
  control::Transitions t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = window_->OnNvtxRangeStart(name, ts_ns);
  }
  Apply(t.begin(), t.size());
}

void CaptureGate::OnNvtxRangeEnd(const std::string& name, uint64_t ts_ns) {
  control::Transitions t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = window_->OnNvtxRangeEnd(name, ts_ns);
  }
  Apply(t.begin(), t.size());
}

// Control thread: the window decides; the writer applies (within ~20 ms).
control::AttachResult CaptureGate::Attach(uint64_t duration_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  control::AttachResult r = window_->OnAttachRequest(duration_ms, actions_->NowNs());
  QueueLocked(r.transitions);
  return r;
}

control::AttachResult CaptureGate::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  control::AttachResult r = window_->OnStopRequest(actions_->NowNs());
  QueueLocked(r.transitions);
  return r;
}

void CaptureGate::FillStatus(control::ControlStatus* status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status->state = control::CaptureStateName(window_->state());
    status->tracing = window_->tracing();
    status->remaining_ms = window_->remaining_ms(actions_->NowNs());
  }
  status->windows_written = static_cast<int64_t>(windows_written());
}

}  // namespace gpscope::inject
