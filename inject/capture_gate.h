// inject/capture_gate.h: which records the collector keeps, and when it
// switches CUPTI's activity kinds for a capture window.
//
// The CaptureWindow (common/control/capture_window.h) decides when a window
// starts and ends; the gate applies its transitions: at a start it has the
// kinds switched on and opens the gate at the transition's time, at an end
// it shuts the gate at once and has the kinds switched off 100 ms later
// (kWindowCloseGraceNs), after a forced flush, so that work launched inside
// the window and still queued on the device completes with its timestamps.
// A record is kept when it starts in [start, end) (InWindow): a window cut
// by an NVTX range or a deadline is exact. Time outside every window is
// written as a LostInterval(TRACING_DISABLED).
//
//   CaptureGate gate(&capture, writer, &actions);   // hold mode (null: no window)
//   gate.Start(&error);              // start-up thread, once CUPTI is set up
//   ... writer thread, every loop:   gate.Tick();
//   ... converting a record:         if (!gate.InWindow(start_ns)) drop it;
//   ... control thread:              gate.Attach(ms) / gate.Stop(), then wake the writer
//
// Without a window (GPSCOPE_CUPTI_MODE=yield) every time is inside.
// A duty cycle (GPSCOPE_DUTY) is windows and standby for the process's
// life, driven by Tick() like a delayed window; a duty window starts when
// the kinds are on (no earlier than the tick), ends at its grid deadline.
//
// Thread model: the control thread only queues transitions (Attach, Stop)
// and reads the window's state (FillStatus), under mu_; everything else runs
// on the start-up thread before the writer starts, then on the writer thread
// only, which alone applies transitions (through Actions: CUPTI calls, forced
// flushes). CUDA-free.
#ifndef GPSCOPE_INJECT_CAPTURE_GATE_H_
#define GPSCOPE_INJECT_CAPTURE_GATE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/control/capture_window.h"
#include "common/control/control_channel.h"
#include "proto/chunk_writer.h"

namespace gpscope::inject {

class CaptureGate {
 public:
  // What applying a transition does beyond the gate (the collector's side).
  class Actions {
   public:
    virtual ~Actions() = default;
    // Now on the records' clock (CUPTI's). Any thread.
    virtual uint64_t NowNs() = 0;
    // Start-up or writer thread: the GPU activity kinds on or off. False
    // when they could not be switched on (*error, when given, says why).
    virtual bool SetTracing(bool on, std::string* error) = 0;
    // Writer thread: CUPTI's buffers handed back (partly filled ones too)
    // and converted, before the kinds go off at a window's close.
    virtual void FlushForced() = 0;
    // Writer thread: a closed window's records are all converted; put them
    // in the file (`gpscope attach` waits for windows_written()).
    virtual void WindowWritten() = 0;
    // The clock of the close grace (CLOCK_MONOTONIC; a test's fake one).
    virtual uint64_t MonotonicNs();
  };

  // A window closes this long after its end (see above).
  static constexpr uint64_t kWindowCloseGraceNs = 100000000;  // 100 ms
  static_assert(kWindowCloseGraceNs <= control::CaptureConfig::kMinDutyOffMs * 1000000,
                "GPSCOPE_DUTY's time off must cover a window's close");

  // capture: the window's settings (null: no window, every record kept).
  CaptureGate(const control::CaptureConfig* capture, format::ChunkWriter* writer, Actions* actions);
  CaptureGate(const CaptureGate&) = delete;
  CaptureGate& operator=(const CaptureGate&) = delete;

  enum class StartOutcome {
    kFailed,   // the kinds could not be switched on (*error)
    kTracing,  // tracing from the start (possibly gated until an NVTX range)
    kWaiting,  // standby or a delayed window: kinds off, the gate shut
  };
  // Start-up thread, once (with a window): the window's first decision.
  StartOutcome Start(std::string* error);

  // True when a record starting at ts_ns is inside the current window.
  bool InWindow(uint64_t ts_ns) const {
    return ts_ns >= start_ns_ && (end_ns_ == 0 || ts_ns < end_ns_);
  }
  // A range or step limit: NVTX records drive the window (the MARKER kind
  // stays on throughout, OnNvtxRange* are called).
  bool uses_nvtx() const { return uses_nvtx_; }
  // GPSCOPE_DIAG_GATE_KERNELS (inject/diag_switches.h): the kernel kind is
  // on all along, so a window opens no earlier than the other kinds do.
  void set_kernels_always_on(bool on) { kernels_always_on_ = on; }

  // Writer thread, converting a MARKER record (uses_nvtx() only): a range
  // started or ended. May flush and convert other buffers meanwhile.
  void OnNvtxRangeStart(const char* name, uint64_t ts_ns);
  void OnNvtxRangeEnd(const std::string& name, uint64_t ts_ns);
  // Writer thread, every loop: deadlines, what the control thread queued,
  // and the end of a window's close grace.
  void Tick();
  // Writer thread, in the final flush: a window still closing ends now (its
  // records come with that forced flush; no kinds are switched off at exit).
  void EndAtExit();
  // Writer thread (or the finisher after a takeover): ends the time outside
  // a window at end_ns, as a LostInterval(TRACING_DISABLED).
  void CloseOutsideWindow(uint64_t end_ns);

  // Control thread: `start DURATION_MS` / `stop`. The writer applies the
  // transitions at its next Tick() (wake it).
  control::AttachResult Attach(uint64_t duration_ms);
  control::AttachResult Stop();
  // Control thread: state, tracing, remaining_ms and windows_written.
  void FillStatus(control::ControlStatus* status);
  // Windows ended and written to the file. Any thread.
  uint64_t windows_written() const { return windows_written_.load(std::memory_order_acquire); }

 private:
  void Apply(const control::Transition* t, size_t n);
  void FinishClose();
  void QueueLocked(const control::Transitions& transitions);

  format::ChunkWriter* writer_;
  Actions* actions_;
  std::unique_ptr<control::CaptureWindow> window_;
  bool uses_nvtx_ = false;
  bool standby_ = false;
  bool kernels_always_on_ = false;

  std::mutex mu_;  // guards window_ and the queue
  control::Transition queued_[4];  // guarded by mu_
  size_t queued_count_ = 0;        // guarded by mu_

  // Writer thread. Records are kept when they start in [start_ns_, end_ns_)
  // (end_ns_ 0: open); lost_start_ns_ opens the LostInterval for time
  // outside windows (0: none open).
  uint64_t start_ns_ = 0;
  uint64_t end_ns_ = 0;
  uint64_t lost_start_ns_ = 0;
  // A closing window: the gate is shut, the kinds go off at this
  // CLOCK_MONOTONIC time (FinishClose); 0: none closing.
  uint64_t close_due_mono_ns_ = 0;
  std::atomic<uint64_t> windows_written_{0};
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CAPTURE_GATE_H_
