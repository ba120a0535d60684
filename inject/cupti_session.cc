#include "inject/cupti_session.h"

#include <time.h>

#include <algorithm>
#include <cstdlib>

#include "common/posix.h"
#include "common/raw_log.h"
#include "inject/api_cbids.h"
#include "inject/api_classes.h"
#include "inject/cupti_hooks.h"
#include "inject/diag_switches.h"
#include "proto/enums.h"

namespace gpscope::inject {
namespace {

// Activity kinds gpscope enables when the CUDA build offers them, with the
// diagnosis bit (Options::kinds_off) that leaves each off.
constexpr CUpti_ActivityKind kOptional[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD};
constexpr uint32_t kOptionalOffBit[] = {diag::kOffMemcpy, diag::kOffMemcpy, diag::kOffMemset,
                                        diag::kOffSync, diag::kOffOverhead};
constexpr size_t kOptionalCount = sizeof(kOptional) / sizeof(kOptional[0]);

}  // namespace

CUptiResult CuptiSession::SubscribeCall(char* holder, size_t holder_size) {
  CUptiResult sub = CUPTI_ERROR_UNKNOWN;
  if (api_.cuptiSubscribe_v2 != nullptr) {
    // Named, so a tool that fails to subscribe after us is told "gpscope".
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "gpscope";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = holder_size - 1;
    sub = api_.cuptiSubscribe_v2(&subscriber_, callbacks_.subscriber, nullptr, &params);
  }
  if (sub != CUPTI_SUCCESS && sub != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    sub = api_.cuptiSubscribe(&subscriber_, callbacks_.subscriber, nullptr);
  }
  return sub;
}

bool CuptiSession::SubscriptionSettings(std::string* error) {
  if (subscriber_ != nullptr) {
    // Context creation, for the deferred file and the sampler's GPUs.
    context_callback_ = api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                                 CUPTI_CBID_RESOURCE_CONTEXT_CREATED) ==
                        CUPTI_SUCCESS;
  }
  if (options_.system_thread_ids) {
    api_.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  }
  // The writer re-zeroes each buffer before reuse, off the application's
  // threads, so CUPTI need not zero it on the launching thread.
  uint8_t zeroed = 1;
  size_t attr_bytes = sizeof(zeroed);
  api_.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &attr_bytes,
                                 &zeroed);
  const CUptiResult r =
      api_.cuptiActivityRegisterCallbacks(callbacks_.buffer_requested, callbacks_.buffer_completed);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("cuptiActivityRegisterCallbacks failed: ") + api_.ErrorString(r);
    return false;
  }
  // Device and context records are one-time and cheap: always on.
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT}) {
    api_.cuptiActivityEnable(k);
  }
  return true;
}

bool CuptiSession::Open(const Options& options, const Callbacks& callbacks, std::string* error) {
  options_ = options;
  callbacks_ = callbacks;
  // Hold the (single) subscriber so another client cannot take the activity
  // callbacks from us (see collector.h). MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
  // means someone else holds it: we still trace, and say so; any other
  // error is CUPTI failing, and said as such.
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  const CUptiResult sub = SubscribeCall(holder, sizeof(holder));
  if (sub != CUPTI_SUCCESS && sub != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    // Not another client: CUPTI's callback API failed (measured without a
    // driver: CUPTI_ERROR_UNKNOWN; CUPTI newer than the driver:
    // CUPTI_ERROR_NOT_INITIALIZED). Activity tracing may still work; the
    // collector says which in one line (subscribe_error()).
    subscribe_error_ = std::string("cuptiSubscribe failed: ") + api_.ErrorString(sub) +
                       " (CUptiResult " + std::to_string(static_cast<int>(sub)) + ")";
    writer_->AddCapability({format::MakeStringRef("cupti_subscriber"), false,
                            {subscribe_error_.data(), subscribe_error_.size()}});
    subscriber_ = nullptr;
  } else if (sub != CUPTI_SUCCESS) {
    std::string why = std::string("CUPTI subscriber held by ") +
                      (holder[0] != '\0' ? holder : "another client") + " (" +
                      api_.ErrorString(sub) + "); tracing anyway, that tool may take our buffers";
    GPSCOPE_LOG_WARNING("%s", why.c_str());
    writer_->AddCapability(
        {format::MakeStringRef("cupti_subscriber"), false, {why.data(), why.size()}});
    subscriber_ = nullptr;
  }
  if (options_.api_records && options_.api_from_callbacks) {
    api_from_callbacks_ = subscriber_ != nullptr;
    if (!api_from_callbacks_) {
      ApiCallbacksUnavailable("no CUPTI subscriber of our own, so no API callbacks");
    }
  }
  detach_ = options_.detach_between_windows && !options_.markers_throughout;
  if (!SubscriptionSettings(error)) return false;
  if (options_.nvtx) {
    CUptiResult r = api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    // NVTX reads NVTX_INJECTION64_PATH at each library's first NVTX call;
    // CUPTI's own NVTX handler then turns ranges into MARKER records. A
    // window that waits for an NVTX range keeps markers on throughout;
    // otherwise they follow the window (SetTracing).
    if (r == CUPTI_SUCCESS && getenv("NVTX_INJECTION64_PATH") == nullptr) {
      setenv("NVTX_INJECTION64_PATH", api_.path.c_str(), 0);
      set_nvtx_env_ = true;
    }
    if (r == CUPTI_SUCCESS && !options_.markers_throughout) {
      api_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER);
    }
  }
  return true;
}

bool CuptiSession::KeepKernelsOn(std::string* error) {
  const CUptiResult r = api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("cuptiActivityEnable(CONCURRENT_KERNEL) failed: ") + api_.ErrorString(r);
    return false;
  }
  kernels_always_on_ = true;
  return true;
}

void CuptiSession::Release() {
  SetHoldingCupti(false);
  SetTracing(false);
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT,
                               CUPTI_ACTIVITY_KIND_MARKER}) {
    api_.cuptiActivityDisable(k);
  }
  if (subscriber_ != nullptr) {
    api_.cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  if (set_nvtx_env_) unsetenv("NVTX_INJECTION64_PATH");
}

size_t CuptiSession::FlushAll(uint32_t flag) {
  Use use(*this);
  if (!use) return 0;  // detached: CUPTI holds nothing of ours
  BlockingSection section(finisher_);
  api_.cuptiActivityFlushAll(flag);
  size_t dropped = 0;
  if (api_.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  return dropped;
}

bool CuptiSession::SetTracing(bool on, std::string* error) {
  if (tracing_.load(std::memory_order_relaxed) == on) return true;
  const uint64_t start_ns = common::ClockNs(CLOCK_MONOTONIC);
  bool ok;
  {
    // Hundreds of CUPTI calls: one blocking section (no ChunkWriter use
    // inside: SetApiRecords leaves its notice in api_refusal_).
    BlockingSection section(finisher_);
    std::string why;
    ok = !on || Reattach(&why);
    if (!ok) {
      // One line, as SetTracingCalls: the caller's when it wants it.
      if (error != nullptr) {
        *error = why;
      } else {
        GPSCOPE_LOG_WARNING("%s; this window is not traced", why.c_str());
      }
    }
    ok = ok && SetTracingCalls(on, error);
  }
  if (on) {
    const uint64_t took_ns = common::ClockNs(CLOCK_MONOTONIC) - start_ns;
    longest_switch_on_ns_ = std::max(longest_switch_on_ns_, took_ns);
    GPSCOPE_LOG_DEBUG("tracing switched on in %.3f ms", static_cast<double>(took_ns) / 1e6);
  }
  if (!api_refusal_.empty() && !api_refusal_written_ && writer_ != nullptr) {
    api_refusal_written_ = true;
    writer_->AddCapability({format::MakeStringRef("cupti.api_records"), false,
                            {api_refusal_.data(), api_refusal_.size()}});
  }
  return ok;
}

void CuptiSession::RequestDetach() {
  // Kernels kept on all along (GPSCOPE_DIAG_GATE_KERNELS) need CUPTI attached.
  if (!detach_ || subscriber_ == nullptr || api_from_callbacks_ || kernels_always_on_ ||
      tracing_.load(std::memory_order_relaxed)) {
    return;
  }
  if (attach_.load(std::memory_order_relaxed) != kAttached) return;
  // Every call's exit now reaches the subscriber callback (the stacks'
  // callbacks are off between windows: FollowTracing); the request comes
  // after, so no detach can start while we are in these calls.
  {
    BlockingSection section(finisher_);
    api_.cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
    api_.cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  attach_.store(kDetachRequested, std::memory_order_seq_cst);
}

void CuptiSession::DetachAtApiExit() {
  uint32_t expected = kDetachRequested;
  if (!attach_.compare_exchange_strong(expected, kDetaching, std::memory_order_seq_cst)) return;
  // Another thread in a CUPTI call of ours (the writer converting a
  // buffer or flushing, which may wait for this very call): a later exit
  // tries again. No wait on the application's thread.
  if (users_.load(std::memory_order_seq_cst) != 0) {
    attach_.store(kDetachRequested, std::memory_order_release);
    return;
  }
  const uint64_t start_ns = common::ClockNs(CLOCK_MONOTONIC);
  // Records made since the window's close: outside it, counted and dropped.
  api_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  api_.cuptiFinalize();
  subscriber_ = nullptr;  // published by the store below; read by the writer after it
  const uint64_t took_ns = common::ClockNs(CLOCK_MONOTONIC) - start_ns;
  if (took_ns > longest_detach_ns_.load(std::memory_order_relaxed)) {
    longest_detach_ns_.store(took_ns, std::memory_order_relaxed);
  }
  detaches_.fetch_add(1, std::memory_order_relaxed);
  attach_.store(kDetached, std::memory_order_release);
}

bool CuptiSession::Reattach(std::string* error) {
  for (int waited_ms = 0;; ++waited_ms) {
    uint32_t state = attach_.load(std::memory_order_acquire);
    if (state == kAttached) return true;
    if (state == kDetached) break;
    if (state == kDetachRequested) {
      if (!attach_.compare_exchange_strong(state, kAttached)) continue;
      // No call returned since the close: cancel. The stacks' callbacks
      // come back with the window (FollowTracing).
      api_.cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      api_.cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
      return true;
    }
    // Detaching: its forced flush hands back a few buffers.
    if (waited_ms == kDetachWaitMs) {
      *error = "CUPTI still detaching after the last window";
      return false;
    }
    timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
  const uint64_t start_ns = common::ClockNs(CLOCK_MONOTONIC);
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  const CUptiResult sub = SubscribeCall(holder, sizeof(holder));
  const uint64_t subscribed_ns = common::ClockNs(CLOCK_MONOTONIC);
  if (sub != CUPTI_SUCCESS) {
    // Another client took CUPTI between windows: no window until it lets go.
    subscriber_ = nullptr;
    *error = std::string("attaching CUPTI again failed: ") + api_.ErrorString(sub) +
             (holder[0] != '\0' ? std::string(" (held by ") + holder + ")" : std::string());
    return false;
  }
  if (!SubscriptionSettings(error)) {
    api_.cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
    return false;
  }
  const uint64_t end_ns = common::ClockNs(CLOCK_MONOTONIC);
  GPSCOPE_LOG_DEBUG("CUPTI attached again in %.3f ms (subscribe %.3f ms)",
                    static_cast<double>(end_ns - start_ns) / 1e6,
                    static_cast<double>(subscribed_ns - start_ns) / 1e6);
  attach_.store(kAttached, std::memory_order_release);
  return true;
}

bool CuptiSession::SetTracingCalls(bool on, std::string* error) {
  static bool warned[kOptionalCount] = {};
  if (on) {
    CUptiResult r = kernels_always_on_
                        ? CUPTI_SUCCESS
                        : api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
      // One line: the caller logs *error when it wants it, else we do.
      std::string why = std::string("enabling kernel activity failed: ") + api_.ErrorString(r);
      if (error != nullptr) {
        *error = why;
      } else {
        GPSCOPE_LOG_ERROR("%s", why.c_str());
      }
      return false;
    }
    for (size_t i = 0; i < kOptionalCount; ++i) {
      if (options_.kinds_off & kOptionalOffBit[i]) continue;
      r = api_.cuptiActivityEnable(kOptional[i]);
      if (r != CUPTI_SUCCESS && !warned[i]) {
        warned[i] = true;
        GPSCOPE_LOG_WARNING("activity kind %d unavailable: %s", static_cast<int>(kOptional[i]),
                            api_.ErrorString(r));
      }
    }
  } else {
    if (!kernels_always_on_) api_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    for (CUpti_ActivityKind k : kOptional) api_.cuptiActivityDisable(k);
  }
  if (options_.nvtx && !options_.markers_throughout) {
    if (on) {
      api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    } else {
      api_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER);
    }
  }
  if (options_.api_records && !api_from_callbacks_) SetApiRecords(on);
  tracing_.store(on, std::memory_order_relaxed);
  return true;
}

// The CUDA calls whose records gpscope keeps (api_cbids.h). Enabled one id
// at a time they produce records only if that happened before CUDA started:
// measured on the H200 (CUDA 13.0, session 5), a window switched on later
// got every kernel and not one API record. Later, the documented other way
// works: the whole RUNTIME and DRIVER kinds on, then every other id off
// (same records per kernel as from the start). ~1,300 calls, once per window.
void CuptiSession::SetApiRecords(bool on) {
  if (!on) {
    api_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    api_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
    for (CUpti_CallbackId id : kRuntimeCbids) api_.cuptiActivityEnableRuntimeApi(id, 0);
    for (CUpti_CallbackId id : kDriverCbids) api_.cuptiActivityEnableDriverApi(id, 0);
    return;
  }
  if (!cuda_started_) {
    for (CUpti_CallbackId id : kRuntimeCbids) api_.cuptiActivityEnableRuntimeApi(id, 1);
    for (CUpti_CallbackId id : kDriverCbids) api_.cuptiActivityEnableDriverApi(id, 1);
    return;
  }
  // The kind first: enabling it overrides the per-id settings made before.
  // (For the microseconds until the loops below end, CUPTI may record a few
  // calls gpscope leaves out; the record converter drops them.)
  const CUptiResult rr = api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  const CUptiResult rd = api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  static bool warned = false;
  if ((rr != CUPTI_SUCCESS || rd != CUPTI_SUCCESS) && !warned) {
    warned = true;
    const char* why = api_.ErrorString(rr != CUPTI_SUCCESS ? rr : rd);
    GPSCOPE_LOG_WARNING("CUDA API records unavailable in this window (%s); kernels, copies and "
                        "syncs are still traced", why);
    // In the trace too, so the analysis says why launch calls are missing
    // (SetTracing writes it, outside its blocking section).
    api_refusal_ = std::string("CUPTI refused the API kinds for a window opened mid-run: ") + why;
  }
  for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) {
    if (!kListedApiIds.runtime[id]) api_.cuptiActivityEnableRuntimeApi(id, 0);
  }
  for (CUpti_CallbackId id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
    if (!kListedApiIds.driver[id]) api_.cuptiActivityEnableDriverApi(id, 0);
  }
}

void CuptiSession::ApiCallbacksUnavailable(const std::string& why) {
  api_from_callbacks_ = false;
  const std::string text =
      "GPSCOPE_API_SOURCE=callback: " + why + "; API records from CUPTI's activity kinds instead";
  GPSCOPE_LOG_INFO("%s", text.c_str());
  writer_->AddCapability(
      {format::MakeStringRef("api_callbacks"), false, {text.data(), text.size()}});
  if (tracing_.load(std::memory_order_relaxed)) {
    BlockingSection section(finisher_);
    SetApiRecords(true);
  }
}

template <size_t N, typename Select>
size_t CuptiSession::SetCallbacks(uint32_t enable, CUpti_CallbackDomain domain,
                                  const CUpti_CallbackId (&ids)[N], Select select,
                                  size_t* asked) {
  size_t enabled = 0;
  for (CUpti_CallbackId id : ids) {
    if (!select(ClassifyApi(domain, id) == ApiClass::kLaunch)) continue;
    ++*asked;
    enabled += api_.cuptiEnableCallback(enable, subscriber_, domain, id) == CUPTI_SUCCESS;
  }
  return enabled;
}

size_t CuptiSession::SetApiCallbacks(bool on, LaunchCallbacks launches, size_t* asked) {
  const uint32_t enable = on ? 1 : 0;
  BlockingSection section(finisher_);  // CUPTI's lock, on the writer thread at run time
  *asked = 0;
  const size_t runtime = SetCallbacks(enable, CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeCbids,
                                      [&](bool launch) { return launches.runtime || !launch; },
                                      asked);
  return runtime + SetCallbacks(enable, CUPTI_CB_DOMAIN_DRIVER_API, kDriverCbids,
                                [&](bool launch) { return launches.driver || !launch; }, asked);
}

size_t CuptiSession::EnableDriverLaunchCallbacks(size_t* asked) {
  BlockingSection section(finisher_);
  *asked = 0;
  return SetCallbacks(1, CUPTI_CB_DOMAIN_DRIVER_API, kDriverCbids,
                      [](bool launch) { return launch; }, asked);
}

const char* CuptiSession::ApiName(uint32_t domain, uint32_t cbid) {
  const char* name = nullptr;
  const CUpti_CallbackDomain d =
      domain == wire::API_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  CUptiResult r = CUPTI_ERROR_NOT_INITIALIZED;
  Use use(*this);
  if (use) {
    BlockingSection section(finisher_);
    r = api_.cuptiGetCallbackName(d, cbid, &name);
  }
  return r == CUPTI_SUCCESS ? name : nullptr;
}

uint64_t CuptiSession::NowNs() const {
  uint64_t ns = 0;
  Use use(*this);
  if (use && api_.cuptiGetTimestamp != nullptr) {
    BlockingSection section(finisher_);  // a no-op off the writer thread
    if (api_.cuptiGetTimestamp(&ns) == CUPTI_SUCCESS && ns != 0) return ns;
  }
  return DetachedNowNs();
}

uint64_t CuptiSession::DetachedNowNs() const {
  return common::ClockNs(CLOCK_REALTIME) + cupti_minus_realtime_ns_.load(std::memory_order_relaxed);
}

format::ClockRecord CuptiSession::Snapshot() const {
  format::ClockRecord c{};
  uint64_t cupti_ns = 0;
  Use use(*this);
  if (use && api_.cuptiGetTimestamp != nullptr) {
    BlockingSection section(finisher_);
    api_.cuptiGetTimestamp(&cupti_ns);
  }
  c.realtime_ns = common::ClockNs(CLOCK_REALTIME);
  c.monotonic_ns = common::ClockNs(CLOCK_MONOTONIC);
  if (cupti_ns != 0) {
    cupti_minus_realtime_ns_.store(static_cast<int64_t>(cupti_ns - c.realtime_ns),
                                   std::memory_order_relaxed);
  } else if (!use && api_.cuptiGetTimestamp != nullptr) {
    // Detached: CUPTI's clock continued from the last snapshot's offset.
    cupti_ns = c.realtime_ns + cupti_minus_realtime_ns_.load(std::memory_order_relaxed);
  }
  c.cupti_ns = cupti_ns;
  return c;
}

}  // namespace gpscope::inject
