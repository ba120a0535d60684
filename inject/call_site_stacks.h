// inject/call_site_stacks.h: CUPTI's API callbacks in the collector:
// call-site stacks (issue 20, docs/stacks.md) and, with
// GPSCOPE_API_SOURCE=callback, the API call rows (issue 24): switched on at
// start-up, drained by the writer.
//
// The application threads capture into per-thread rings from CUPTI's API
// callbacks (inject/stack_capture.h: the StackCapturer, a constant-
// initialized global the callbacks reach); this unit sets that up, then, on
// the writer thread, interns the published captures into stacks of frames
// (inject/stacks: Python and native resolution) and writes their rows, and
// hands the API call rows to the writer loop, which writes them as API
// records (RecordConverter::ConvertApiCall).
//
//   CallSiteStacks stacks(&g_stacks, writer, &finisher);
//   stacks.Start(options, &session, &wake);   // start-up, before CUDA runs
//   stacks.MarkApiRows();                     // writer, at every drain: the rows so far,
//   stacks.Drain(gate);                       // the stacks (each row's sample was
//   stacks.DrainApiRows(fn);                  // published before the row), the rows
//
// Every outcome of Start() is one line at info level and a capability
// notice in the trace. When the rows cannot start (no subscriber, the
// callbacks refused, no memory) the session takes the API records from the
// activity kinds instead (CuptiSession::ApiCallbacksUnavailable).
//
// Thread model: Start() on the start-up thread (inside InitializeInjection);
// everything else on the writer thread, except the drop counts, which the
// finisher may read after a takeover (table_drops() is a copy taken outside
// the table's blocking section for that reason).
#ifndef GPSCOPE_INJECT_CALL_SITE_STACKS_H_
#define GPSCOPE_INJECT_CALL_SITE_STACKS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inject/capture_gate.h"
#include "inject/cupti_session.h"
#include "inject/exit_finisher.h"
#include "inject/stack_capture.h"
#include "inject/stacks/memory_reader.h"
#include "inject/stacks/native_stacks.h"
#include "inject/stacks/python_resolver.h"
#include "inject/stacks/python_stacks.h"
#include "inject/stacks/stack_settings.h"
#include "inject/stacks/stack_table.h"
#include "inject/wake_word.h"
#include "proto/chunk_writer.h"

namespace gpscope::inject {

class CallSiteStacks {
 public:
  struct Options {
    stacks::StackSettings settings;  // GPSCOPE_STACKS, GPSCOPE_STACK_SAMPLE_MS
    bool api_records = true;         // GPSCOPE_API: stacks are joined to the API records
    std::string cupti_path;          // its frames are dropped from the top of native stacks
    // The injected library's file (dladdr of one of its functions): its
    // frames are dropped from the top of native stacks too. Empty: unknown.
    std::string self_path;
    // Diagnosis (inject/diag_switches.h): capture ring slots per thread
    // (0: the default), and the launches' callbacks left off.
    uint32_t ring_slots = 0;
    bool launches = true;
    // Diagnosis: the driver's launch callbacks on from the start (what
    // every process paid before they waited for a direct driver call).
    bool driver_launches_at_start = false;
    // GPSCOPE_API_SOURCE=callback and the session takes the API records
    // from the callbacks (CuptiSession::api_from_callbacks()): API call
    // rows, with or without stacks, and the launches' callbacks always on.
    bool api_rows = false;
    uint32_t api_row_slots = 0;  // diagnosis: API row ring slots (0: the default)
  };

  CallSiteStacks(StackCapturer* capturer, format::ChunkWriter* writer, ExitFinisher* finisher)
      : capturer_(capturer), writer_(writer), finisher_(finisher) {}
  CallSiteStacks(const CallSiteStacks&) = delete;
  CallSiteStacks& operator=(const CallSiteStacks&) = delete;

  // Start-up thread, when CUPTI is set up (session->subscriber() ours, or
  // the stacks stay off and say why).
  void Start(const Options& options, CuptiSession* session, WakeWord* wake);
  // On: capturing, and the writer drains.
  bool active() const { return table_ != nullptr; }
  // API call rows on (the session takes the API records from them).
  bool api_rows() const { return api_rows_; }

  // Writer thread, at every drain: MarkApiRows() before Drain(), then
  // DrainApiRows(fn) hands the rows published by the mark to
  // fn(uint32_t thread_id, const ApiCallRow&) in each thread's order. So a
  // row's stack sample, published at its call's entry, is written first.
  void MarkApiRows() {
    if (api_rows_) capturer_->MarkApiRows(&row_marks_);
  }
  template <typename Fn>
  void DrainApiRows(Fn fn) {
    if (api_rows_) capturer_->DrainApiRows(fn, &row_marks_);
  }

  // Writer thread, at every drain, before the CUPTI buffers: the captures
  // the application threads published, interned, then their rows (frames,
  // stacks, samples: in that order, so a reader meets every id after its
  // definition). Samples outside the capture window are left out, like the
  // API records.
  void Drain(const CaptureGate& gate);

  // Start-up or writer thread, whenever the session's tracing may have
  // switched (CaptureGate::Actions::SetTracing): the API callbacks are on
  // only while the session traces (and not switched off), so a process in standby between
  // windows (GPSCOPE_STANDBY, GPSCOPE_DUTY, a window's end) pays no CUPTI
  // callback per CUDA call; captures happen only inside windows anyway.
  // Switched back on, the capturer starts a new epoch (calls entered while
  // they were off are forgotten). With API rows (GPSCOPE_API_SOURCE=
  // callback) the callbacks stay on: a call entered in a window gives its
  // row at its exit, after the window.
  void FollowTracing();

  // Control thread (`stacks on|off`, a switch for A/B measurements of the
  // stacks' cost): asks the writer to switch the API callbacks and the
  // captures on or off (with API rows: the captures only, the callbacks
  // stay on for the rows); false when the stacks are not active.
  bool RequestSwitch(bool on);
  // Writer thread, at every drain: applies a requested switch.
  void ApplySwitch();

  // Writer thread, at every drain (`driver_api_records`: the driver-API
  // activity records converted so far): the launch callbacks start with
  // the runtime's only. A runtime launch dispatches its inner driver
  // launch's callbacks as well, which cost every launch and give nothing
  // (a runtime call's driver calls are part of it). The driver's launch
  // callbacks come on once the process is seen calling the driver API
  // directly: a listed driver call entered outside any runtime call (a
  // sync, copy or allocation: StackCapturer::direct_driver_calls), or a
  // driver-API activity record (CUPTI records none from inside a runtime
  // call: e.g. Triton's cuLaunchKernel). Until then such a process's
  // driver launches have no stacks (one info line and a notice in the
  // trace say when they came on).
  void NoteDirectDriverCalls(uint64_t driver_api_records);

  // Cumulative drop counts (active() only): captures lost to a full ring,
  // stacks the table could not keep, captures of threads beyond the limit.
  uint64_t ring_drops() const { return capturer_->ring_drops(); }
  uint64_t table_drops() const { return table_drops_; }
  uint64_t thread_drops() const { return capturer_->thread_drops(); }
  // The same for API call rows (api_rows() only): lost to full rings,
  // nesting or missed exits; of threads beyond the limit; calls still in
  // flight (the end of the trace); published and not drained (a takeover).
  uint64_t api_row_drops() const { return capturer_->api_row_drops(); }
  uint64_t api_thread_drops() const { return capturer_->api_thread_drops(); }
  uint64_t api_calls_in_flight() const { return capturer_->api_calls_in_flight(); }
  uint64_t api_rows_pending() const { return capturer_->api_rows_pending(); }
  // Writer thread, at the end: one info line of counts per part that is on.
  void LogSummary() const;

 private:
  void Off(const std::string& why);
  // Writer or start-up thread: the API callbacks on exactly while
  // capturing (!switched_off_ && session_->tracing()); the number CUPTI
  // accepted.
  size_t ApplyCallbacks();

  StackCapturer* capturer_;
  CuptiSession* session_ = nullptr;
  bool launches_ = true;
  bool driver_launches_ = true;  // the driver's launch callbacks asked for
  bool api_rows_ = false;
  StackCapturer::ApiRowMarks row_marks_;  // writer thread
  bool switched_off_ = false;                  // writer thread
  bool callbacks_on_ = false;  // the API callbacks are enabled
  std::atomic<int> switch_request_{kNoSwitch};  // control -> writer
  static constexpr int kNoSwitch = 0, kSwitchOn = 1, kSwitchOff = 2;
  format::ChunkWriter* writer_;
  ExitFinisher* finisher_;
  // Writer-thread state (null when the stacks are off).
  stacks::PythonInfo py_info_;
  std::unique_ptr<stacks::SelfMemoryReader> memory_;
  std::unique_ptr<stacks::PythonResolver> python_resolver_;
  std::unique_ptr<stacks::NativeSymbolizer> native_symbolizer_;
  std::unique_ptr<stacks::ProcessFrameResolver> frame_resolver_;
  std::unique_ptr<stacks::StackTable> table_;
  std::vector<format::StackSampleEvent> samples_;
  std::vector<stacks::StackFrameEntry> new_frames_;
  std::vector<stacks::StackEntry> new_stacks_;
  uint64_t frames_failed_seen_ = 0;  // writer_->frames_failed() at the last drain
  // table_->dropped() as of the last drain: the losses may be reported on
  // the finisher while the writer is inside the table (a blocking section).
  uint64_t table_drops_ = 0;
  bool python_fault_reported_ = false;
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CALL_SITE_STACKS_H_
