// inject/cupti_session.h: gpscope's use of CUPTI, in one place: the
// subscriber and its callbacks, the activity buffer callbacks, the activity
// kinds and API records switched on and off, flushes, timestamps, callback
// names, and leaving CUPTI as it was found.
//
//   CuptiSession session(&api, &finisher, writer);   // api: LoadCupti()'s
//   session.Open(options, callbacks, &error);        // in InitializeInjection
//   session.SetTracing(true);                        // a window opens
//   dropped += session.FlushAll(0);                  // writer, periodically
//
// Enabling per call id only works before CUDA starts (measured on the H200,
// CUDA 13.0: a window switched on later got every kernel and not one API
// record); SetCudaStarted() switches SetTracing to the whole API kinds with
// every other id off.
//
// Coexistence: Open() holds the (single) subscriber, so another client
// cannot take the activity callbacks from us (inject/collector.h).
//
// Detaching between windows (GPSCOPE_DETACH, default on): kinds switched
// off keep most of their cost (H100, session 15: empty kernels after a 2 s
// window of the kernel kind alone launched 17-32% slower than before it,
// -6% to -1% once CUPTI was detached; runs without CUPTI -3% to +8%;
// bench/RESULTS.md). So at a window's close, once
// the kinds are off, RequestDetach() enables the API callbacks of both
// domains; the next CUDA call's exit (any application thread:
// DetachAtApiExit) flushes and calls cuptiFinalize, as NVIDIA's
// cupti_finalize sample does; the next SetTracing(true) subscribes again
// (or cancels a detach still pending). Any other CUPTI call would attach
// CUPTI again lazily, so while detached the session makes none: every
// call outside CUPTI's own callbacks goes through a Use, which fails then
// (NowNs falls back to CLOCK_REALTIME, CUPTI's timebase on Linux; FlushAll
// and NextRecord do nothing), and the detaching thread leaves it to a
// later call while a Use is in flight (it never waits).
// Only with our own subscriber, API records from the activity kinds (the
// callback source's rows need the callbacks between windows), windows
// not driven by NVTX (markers are needed throughout) and the kernel kind
// not kept on (the diagnosis build's GPSCOPE_DIAG_GATE_KERNELS).
//
// Thread model: Open() and Release() on the start-up thread (inside
// InitializeInjection); SetTracing on the start-up thread before the writer
// runs, then on the writer thread only; FlushAll and ApiName on the writer
// thread, each call that may block inside a
// BlockingSection (inject/exit_finisher.h) so the finisher can take over;
// NowNs from any thread. No lock is held across a CUPTI call: CUPTI calls
// the buffer callbacks from inside cuptiActivityFlushAll.
#ifndef GPSCOPE_INJECT_CUPTI_SESSION_H_
#define GPSCOPE_INJECT_CUPTI_SESSION_H_

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "inject/cupti_loader.h"
#include "inject/exit_finisher.h"
#include "inject/record_converter.h"
#include "proto/chunk_writer.h"

namespace gpscope::inject {

class CuptiSession : public RecordConverter::ApiNames {
 public:
  struct Options {
    bool nvtx = true;         // GPSCOPE_NVTX: MARKER records
    // NVTX drives the capture window: markers on throughout (else they
    // follow SetTracing).
    bool markers_throughout = false;
    bool api_records = true;  // GPSCOPE_API: runtime/driver call records
    // GPSCOPE_API_SOURCE=callback: those records come from our API
    // callbacks (inject/stack_capture.h), not the RUNTIME/DRIVER activity
    // kinds; only when the subscriber is ours (api_from_callbacks()).
    bool api_from_callbacks = false;
    // Optional kinds left off (diag::OffKind bits: the diagnosis build's
    // GPSCOPE_DIAG_OFF, and GPSCOPE_SYNC=0's kOffSync in every build), and
    // gettid() thread ids (off: CUPTI's default).
    uint32_t kinds_off = 0;
    bool system_thread_ids = true;
    // GPSCOPE_DETACH: detach from CUPTI between capture windows (above).
    bool detach_between_windows = false;
  };
  // CUPTI's entry points into the collector (its trampolines).
  struct Callbacks {
    CUpti_BuffersCallbackRequestFunc buffer_requested = nullptr;
    CUpti_BuffersCallbackCompleteFunc buffer_completed = nullptr;
    CUpti_CallbackFunc subscriber = nullptr;
  };

  // api: loaded (or empty: yield mode; then only NowNs and Snapshot are
  // used). writer: capability notices (what CUPTI refused).
  CuptiSession(const CuptiApi* api, ExitFinisher* finisher, format::ChunkWriter* writer)
      : api_(*api), finisher_(finisher), writer_(writer) {}
  CuptiSession(const CuptiSession&) = delete;
  CuptiSession& operator=(const CuptiSession&) = delete;

  // Start-up thread, before CUDA runs: subscribes (holding the subscriber
  // when we can), the context-created callback, thread ids, zeroed buffers,
  // the buffer callbacks, DEVICE and CONTEXT records, and NVTX markers
  // (pointing NVTX_INJECTION64_PATH at CUPTI when unset). False (with
  // *error) when the buffer callbacks cannot be registered.
  bool Open(const Options& options, const Callbacks& callbacks, std::string* error);
  // The subscriber is ours (null: another client holds it, or CUPTI's
  // callback API failed: subscribe_error()).
  CUpti_SubscriberHandle subscriber() const { return subscriber_; }
  // CUPTI calls us when a context is created.
  bool context_callback() const { return context_callback_; }
  // cuptiSubscribe failed, not because of another client; empty otherwise.
  const std::string& subscribe_error() const { return subscribe_error_; }

  // Diagnosis (GPSCOPE_DIAG_GATE_KERNELS): the kernel kind on from now on,
  // whatever SetTracing does.
  bool KeepKernelsOn(std::string* error);
  // CUDA has started (from the writer thread's creation on).
  void SetCudaStarted() { cuda_started_ = true; }
  // GPU activity collection on or off: kernels (CONCURRENT_KERNEL: KERNEL
  // serializes them), the optional kinds, markers that follow the window,
  // API records. False when kernels could not be switched on; *error says
  // why when given, else it is logged.
  // Switching on first attaches CUPTI again after a detach (false, with
  // *error, when CUPTI cannot be had: another client took it meanwhile).
  bool SetTracing(bool on, std::string* error = nullptr);

  // Writer thread, after SetTracing(false) at a window's close: detach at
  // the next CUDA call's exit (when detaching is on; otherwise nothing).
  void RequestDetach();
  // The subscriber callback, at every API exit while detach_pending().
  bool detach_pending() const {
    return attach_.load(std::memory_order_relaxed) == kDetachRequested;
  }
  // Application thread, in the subscriber callback at an API exit: the
  // forced flush and cuptiFinalize, unless another thread is in a CUPTI
  // call of ours (then a later exit does it).
  void DetachAtApiExit();
  // Detached now (or detaching): no CUPTI call of ours until the next window.
  bool detached() const { return attach_.load(std::memory_order_acquire) >= kDetaching; }
  // Times detached so far (the trace's notice and tests).
  uint64_t detaches() const { return detaches_.load(std::memory_order_relaxed); }
  // The longest detach (forced flush + cuptiFinalize, on an application
  // thread) and the longest SetTracing(true) (re-attach + the kinds, on the
  // writer), in ns: what a window's edges cost, for the end-of-run log.
  uint64_t longest_detach_ns() const { return longest_detach_ns_.load(std::memory_order_relaxed); }
  uint64_t longest_switch_on_ns() const { return longest_switch_on_ns_; }

  // A CUPTI call made outside CUPTI's callbacks: only while attached.
  //   CuptiSession::Use use(session); if (use) api.cuptiX(...);
  class Use {
   public:
    explicit Use(const CuptiSession& s) : s_(s), ok_(s.Enter()) {}
    ~Use() {
      if (ok_) s_.users_.fetch_sub(1, std::memory_order_release);
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    explicit operator bool() const { return ok_; }

   private:
    const CuptiSession& s_;
    const bool ok_;
  };
  bool tracing() const { return tracing_.load(std::memory_order_relaxed); }
  // The word SetTracing keeps (call-site stacks capture only while it is set).
  const std::atomic<bool>* tracing_flag() const { return &tracing_; }

  // Call-site stacks and API call rows: CUPTI's API callbacks for the
  // recorded calls (all, or all but the launches). Returns how many CUPTI
  // accepted; *asked how many were asked for.
  // Launches: which launch calls get callbacks too (the runtime's; the
  // driver's, which a runtime launch also dispatches from inside it).
  struct LaunchCallbacks {
    bool runtime = true;
    bool driver = true;
  };
  size_t EnableApiCallbacks(LaunchCallbacks launches, size_t* asked) {
    return SetApiCallbacks(true, launches, asked);
  }
  // Switches them on or off (`stacks on|off` on the control socket, when
  // they serve the stacks only).
  size_t SetApiCallbacks(bool on, LaunchCallbacks launches, size_t* asked);
  // Writer thread: switches the driver's launch callbacks on (the
  // application calls the driver API directly: CallSiteStacks).
  size_t EnableDriverLaunchCallbacks(size_t* asked);

  // The API records come from our API callbacks (GPSCOPE_API_SOURCE=
  // callback with GPSCOPE_API=1 and the subscriber ours): SetTracing leaves
  // the RUNTIME/DRIVER activity kinds off. Decided in Open().
  bool api_from_callbacks() const { return api_from_callbacks_; }
  // Start-up thread, inside InitializeInjection (before CUDA runs): the
  // callbacks cannot give the API records (why: one line, also a notice
  // in the trace); they come from the activity kinds after all, switched
  // on now if tracing.
  void ApiCallbacksUnavailable(const std::string& why);

  // Writer thread: CUPTI hands back its buffers (flag 0: completed ones;
  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: partly filled too), through the
  // buffer-completed callback. Returns the records CUPTI dropped in any
  // buffer queue since the last call (the count resets on read):
  // BufferCompleted reads the per-context count with every buffer, but drops
  // after the last buffer handed back (no free buffer at the end of a burst)
  // are only seen by asking here. May wait for the application's CUDA calls
  // (and never return if one never does): inside a blocking section.
  size_t FlushAll(uint32_t flag);
  // The next record of a completed buffer (cuptiActivityGetNextRecord),
  // inside a Use (detached: none; the records then are from after a
  // window's close, outside it).
  bool NextRecord(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) const {
    return api_.cuptiActivityGetNextRecord(buffer, valid_bytes, record) == CUPTI_SUCCESS;
  }
  // RecordConverter::ApiNames: CUPTI's name for a call (writer thread).
  const char* ApiName(uint32_t domain, uint32_t cbid) override;
  // Readable name of a CUptiResult.
  const char* ErrorString(CUptiResult r) const { return api_.ErrorString(r); }
  // Now on CUPTI's clock (CLOCK_REALTIME without CUPTI). Any thread.
  uint64_t NowNs() const;
  // (CUPTI, realtime, monotonic) now, for the trace's clock alignment;
  // cupti_ns 0 without CUPTI. Any thread.
  format::ClockRecord Snapshot() const;
  // CUPTI's clock minus CLOCK_REALTIME at the last Snapshot() that read
  // CUPTI's clock (0 before one, and in yield mode). Any thread.
  int64_t CuptiMinusRealtimeNs() const {
    return cupti_minus_realtime_ns_.load(std::memory_order_relaxed);
  }

  // Start-up thread, when gpscope gives up on CUPTI after Open(): leaves
  // it as we found it, so the application (or its profiler) can use it.
  void Release();

 private:
  // Attachment states (attach_): only a detacher that moved kDetachRequested
  // to kDetaching finalizes; only the writer leaves kDetached.
  static constexpr uint32_t kAttached = 0, kDetachRequested = 1, kDetaching = 2, kDetached = 3;
  // The writer's wait for a detach under way at the next window (ms).
  static constexpr int kDetachWaitMs = 2000;
  bool Enter() const {
    users_.fetch_add(1, std::memory_order_seq_cst);
    if (attach_.load(std::memory_order_seq_cst) < kDetaching) return true;
    users_.fetch_sub(1, std::memory_order_release);
    return false;
  }
  // cuptiSubscribe_v2 (named "gpscope"; *holder: who holds CUPTI when it
  // is taken), else cuptiSubscribe. Open() and Reattach().
  CUptiResult SubscribeCall(char* holder, size_t holder_size);
  // What belongs to a subscription: the context callback, thread ids,
  // zeroed buffers, the buffer callbacks, DEVICE and CONTEXT records.
  bool SubscriptionSettings(std::string* error);
  // NowNs() while detached.
  uint64_t DetachedNowNs() const;
  // Writer thread, before a window's kinds: cancels a pending detach or
  // subscribes again after one.
  bool Reattach(std::string* error);
  bool SetTracingCalls(bool on, std::string* error);
  void SetApiRecords(bool on);
  // cuptiEnableCallback(enable) for the ids of `domain` that select(is a
  // launch) keeps; counts them in *asked, returns how many CUPTI accepted.
  template <size_t N, typename Select>
  size_t SetCallbacks(uint32_t enable, CUpti_CallbackDomain domain,
                      const CUpti_CallbackId (&ids)[N], Select select, size_t* asked);

  const CuptiApi& api_;
  ExitFinisher* finisher_;
  format::ChunkWriter* writer_;
  Options options_;
  Callbacks callbacks_;
  CUpti_SubscriberHandle subscriber_ = nullptr;  // ours, when we hold it
  bool set_nvtx_env_ = false;                    // we set NVTX_INJECTION64_PATH
  bool context_callback_ = false;
  std::string subscribe_error_;
  // GPSCOPE_DIAG_GATE_KERNELS: the kernel kind stays on. Set at start, then
  // read-only.
  bool kernels_always_on_ = false;
  // False while Open() runs inside cuInit (InitializeInjection), before
  // CUDA has started; true from the writer thread's creation on (which
  // orders it for that thread). SetApiRecords picks its way by it.
  bool cuda_started_ = false;
  std::atomic<bool> tracing_{false};  // GPU activity kinds enabled
  std::string api_refusal_;  // SetApiRecords: the API kinds refused (written once)
  bool api_refusal_written_ = false;
  bool api_from_callbacks_ = false;  // set in Open(), cleared by ApiCallbacksUnavailable()
  bool detach_ = false;              // detaching between windows (decided in Open())
  std::atomic<uint32_t> attach_{kAttached};
  mutable std::atomic<uint32_t> users_{0};  // Uses in flight
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> longest_detach_ns_{0};  // written by the one detacher at a time
  uint64_t longest_switch_on_ns_ = 0;            // start-up thread, then the writer (SetTracing)
  // CUPTI's clock minus CLOCK_REALTIME at the last Snapshot(): CUPTI's
  // clock while detached (0 on Linux, where it is CLOCK_REALTIME).
  mutable std::atomic<int64_t> cupti_minus_realtime_ns_{0};
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CUPTI_SESSION_H_
