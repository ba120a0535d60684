#include "inject/call_site_stacks.h"

#include "common/raw_log.h"
#include "inject/stacks/fast_unwind.h"

namespace gpscope::inject {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void CallSiteStacks::Off(const std::string& why) {
  GPSCOPE_LOG_INFO("call-site stacks off: %s", why.c_str());
  writer_->AddCapability({format::MakeStringRef("stacks"), false, {why.data(), why.size()}});
}

bool CallSiteStacks::RequestSwitch(bool on) {
  if (!active()) return false;
  switch_request_.store(on ? kSwitchOn : kSwitchOff, std::memory_order_release);
  return true;
}

void CallSiteStacks::ApplySwitch() {
  const int request = switch_request_.exchange(kNoSwitch, std::memory_order_acq_rel);
  if (request == kNoSwitch || !active() || (request == kSwitchOff) == switched_off_) return;
  switched_off_ = request == kSwitchOff;
  if (api_rows_) {
    // The callbacks give the API records too: they stay on.
    capturer_->SetStacks(!switched_off_);
    GPSCOPE_LOG_INFO("call-site stacks switched %s on request (the API callbacks stay on: they "
                     "give the API records)",
                     switched_off_ ? "off" : "on");
    return;
  }
  const size_t changed = ApplyCallbacks();
  GPSCOPE_LOG_INFO(
      "call-site stacks switched %s on request (%zu API callbacks switched now%s)",
      switched_off_ ? "off" : "on", changed,
      session_->tracing() ? "" : "; tracing is off: they come on with the next window");
}

size_t CallSiteStacks::ApplyCallbacks() {
  const bool want = !switched_off_ && session_->tracing();
  if (want == callbacks_on_) return 0;
  size_t asked = 0;
  const size_t changed =
      session_->SetApiCallbacks(want, {launches_, launches_ && driver_launches_}, &asked);
  callbacks_on_ = want;
  if (want) {
    capturer_->Enable();  // a new epoch: calls entered before are forgotten
  } else {
    capturer_->Disable();
  }
  return changed;
}

void CallSiteStacks::FollowTracing() {
  if (active() && !api_rows_) ApplyCallbacks();
}

void CallSiteStacks::Start(const Options& options, CuptiSession* session, WakeWord* wake) {
  const stacks::StackSettings& s = options.settings;
  api_rows_ = options.api_rows;
  // Why the stacks cannot start ("" when they may). With API rows the
  // subscriber is ours and GPSCOPE_API=1 (the session decided so).
  std::string stacks_off;
  if (!s.enabled()) {
    stacks_off = "GPSCOPE_STACKS=0";
  } else if (session->subscriber() == nullptr) {
    stacks_off = "no CUPTI subscriber of our own: CUPTI's API callbacks are unavailable";
  } else if (!options.api_records) {
    stacks_off = "GPSCOPE_API=0: stacks are joined to the API records";
  }
  if (!stacks_off.empty() && !api_rows_) return Off(stacks_off);
  bool python = false;
  if (stacks_off.empty() && s.python()) {
    py_info_ = stacks::InitPythonStacks();
    python = py_info_.enabled;
    GPSCOPE_LOG_INFO("python stacks: %s", py_info_.reason.c_str());
    writer_->AddCapability({format::MakeStringRef("stacks.python"), python,
                            {py_info_.reason.data(), py_info_.reason.size()}});
  }
  if (stacks_off.empty() && s.native()) {
    std::string why;
    if (!stacks::InitFastUnwind(&why)) {
      why = "fast unwinder unavailable (" + why + "): native stacks through libgcc, slower";
      GPSCOPE_LOG_INFO("%s", why.c_str());
      writer_->AddCapability(
          {format::MakeStringRef("stacks.native"), true, {why.data(), why.size()}});
    }
  }
  StackCapturer::Options o;
  o.settings = s;
  if (!stacks_off.empty()) o.settings.mode = stacks::StackMode::kOff;
  o.python = python;
  o.api_rows = api_rows_;
  o.gate = session->tracing_flag();
  o.wake = wake;
  o.ring_slots = options.ring_slots;
  o.api_row_slots = options.api_row_slots;
  std::string why;
  if (!capturer_->Init(o, &why)) {
    if (api_rows_) {
      api_rows_ = false;
      session->ApiCallbacksUnavailable(why);
    }
    return Off(stacks_off.empty() ? why : stacks_off);
  }
  const bool stacks = capturer_->stacks_on();
  if (!stacks) Off(why);  // API rows only
  size_t asked = 0;
  session_ = session;
  // The rows need every listed call's callbacks, launches included; the
  // stacks, the driver's launches once the driver API is seen called
  // directly (NoteDirectDriverCalls).
  launches_ = options.launches || api_rows_;
  driver_launches_ = api_rows_ || options.driver_launches_at_start;
  const size_t enabled =
      session->EnableApiCallbacks({launches_, launches_ && driver_launches_}, &asked);
  if (enabled == 0) {
    capturer_->Disable();
    if (api_rows_) {
      api_rows_ = false;
      session->ApiCallbacksUnavailable("CUPTI refused the API callbacks");
    }
    if (stacks) Off("CUPTI refused the API callbacks");
    return;
  }
  if (api_rows_) {
    GPSCOPE_LOG_INFO("API records from CUPTI's API callbacks (GPSCOPE_API_SOURCE=callback): %zu "
                     "of %zu callbacks enabled",
                     enabled, asked);
  }
  if (!stacks) return;
  callbacks_on_ = true;
  memory_ = std::make_unique<stacks::SelfMemoryReader>();
  if (python) {
    python_resolver_ = std::make_unique<stacks::PythonResolver>(*py_info_.layout, py_info_.types,
                                                                memory_.get());
  }
  native_symbolizer_ = std::make_unique<stacks::NativeSymbolizer>();
  frame_resolver_ = std::make_unique<stacks::ProcessFrameResolver>(python_resolver_.get(),
                                                                   native_symbolizer_.get());
  // Native stacks start in our own callback and CUPTI's dispatch: dropped.
  // Raw stacks remembered: at most 32768 (their frames: <= 32 MiB at 64
  // deep); past that a new raw stack is resolved each time (cached per code
  // object and address) instead of remembered.
  stacks::StackTable::Limits limits;
  limits.max_raw = 1 << 15;
  if (!options.self_path.empty()) {
    limits.drop_leading_native_modules.push_back(BaseName(options.self_path));
  }
  limits.drop_leading_native_modules.push_back(BaseName(options.cupti_path));
  table_ = std::make_unique<stacks::StackTable>(frame_resolver_.get(), limits);
  GPSCOPE_LOG_INFO("call-site stacks on (GPSCOPE_STACKS=%s, GPSCOPE_STACK_SAMPLE_MS=%u): %zu of "
                   "%zu API callbacks enabled%s",
                   stacks::StackModeName(s.mode), s.sample_interval_ms, enabled, asked,
                   session->tracing() || api_rows_ ? "" : " (off until a capture window opens)");
  // Standby: no callbacks until a window opens (FollowTracing). With API
  // rows they stay on (a call that starts in a window keeps its row).
  if (!api_rows_) ApplyCallbacks();
}

void CallSiteStacks::NoteDirectDriverCalls(uint64_t driver_api_records) {
  if (driver_launches_ || table_ == nullptr || !launches_) return;
  const bool direct_call = capturer_->direct_driver_calls();
  if (!direct_call && driver_api_records == 0) return;
  driver_launches_ = true;
  const char* seen = direct_call ? "a driver-API call made outside the runtime"
                                 : "a driver-API record (a call made outside the runtime)";
  std::string why;
  bool available = true;  // off: they come on with the next window
  if (callbacks_on_) {
    size_t asked = 0;
    const size_t enabled = session_->EnableDriverLaunchCallbacks(&asked);
    available = enabled > 0;
    why = std::string(seen) + ": the driver's launch callbacks switched on (" +
          std::to_string(enabled) + " of " + std::to_string(asked) +
          "); driver launches before this have no stacks";
  } else {  // standby (or switched off): ApplyCallbacks asks for them too
    why = std::string(seen) +
          ": the driver's launch callbacks come on with the API callbacks (the next window); "
          "driver launches before that have no stacks";
  }
  GPSCOPE_LOG_INFO("call-site stacks: %s", why.c_str());
  writer_->AddCapability(
      {format::MakeStringRef("stacks.driver_launches"), available, {why.data(), why.size()}});
}

void CallSiteStacks::Drain(const CaptureGate& gate) {
  if (table_ == nullptr) return;
  ApplySwitch();
  if (writer_->frames_failed() != frames_failed_seen_) {
    // A lost chunk may have held definitions: send them all again.
    frames_failed_seen_ = writer_->frames_failed();
    table_->ResendAll();
  }
  {
    // Resolution reads memory with process_vm_readv and takes the loader
    // lock (dladdr): the finisher may take over meanwhile (no ChunkWriter here).
    BlockingSection section(finisher_);
    capturer_->Drain([&](const stacks::StackCapture& c) {
      format::StackSampleEvent e{};
      e.timestamp_ns = c.timestamp_ns;
      e.thread_id = c.thread_id;
      e.correlation_id = static_cast<uint32_t>(c.correlation_id);
      e.stack_id = table_->Intern(c);
      e.trigger = static_cast<uint32_t>(c.trigger);
      samples_.push_back(e);
    });
    table_->TakeNew(&new_frames_, &new_stacks_);
  }
  table_drops_ = table_->dropped();
  for (const stacks::StackFrameEntry& f : new_frames_) {
    format::StackFrameRecord r{};
    r.id = f.id;
    r.kind = static_cast<uint32_t>(f.frame.kind);
    r.file_id = writer_->InternString(f.frame.file);
    r.function_id = writer_->InternString(f.frame.function);
    r.line = f.frame.line > 0 ? static_cast<uint32_t>(f.frame.line) : 0;
    r.qualname_id = writer_->InternString(f.frame.qualname);
    r.build_id_id = writer_->InternString(f.frame.build_id);
    r.module_offset = f.frame.module_offset;
    writer_->AddStackFrame(r);
  }
  for (const stacks::StackEntry& st : new_stacks_) {
    writer_->AddStack({st.id, st.frame_ids.data(), st.frame_ids.size(), st.truncated});
  }
  for (const format::StackSampleEvent& e : samples_) {
    if (!gate.InWindow(e.timestamp_ns)) continue;  // like the API records outside a window
    writer_->AddStackSample(e);
  }
  new_frames_.clear();
  new_stacks_.clear();
  samples_.clear();
  if (!python_fault_reported_ && stacks::PythonStacksFault() != stacks::WalkFault::kNone) {
    python_fault_reported_ = true;
    const std::string why = std::string("turned off at run time: ") +
                            stacks::WalkFaultName(stacks::PythonStacksFault());
    GPSCOPE_LOG_WARNING("python stacks %s (an unexpected frame layout; the application is not "
                        "affected)", why.c_str());
    writer_->AddCapability(
        {format::MakeStringRef("stacks.python"), false, {why.data(), why.size()}});
  }
}

void CallSiteStacks::LogSummary() const {
  if (api_rows_) {
    GPSCOPE_LOG_INFO("API call rows from the callbacks: %llu on %u threads, %llu lost to full "
                     "rings or nesting, %llu of threads past the limit, %llu calls in flight at "
                     "the end",
                     static_cast<unsigned long long>(capturer_->api_rows()),
                     capturer_->threads_seen(),
                     static_cast<unsigned long long>(capturer_->api_row_drops()),
                     static_cast<unsigned long long>(capturer_->api_thread_drops()),
                     static_cast<unsigned long long>(capturer_->api_calls_in_flight()));
  }
  if (!active()) return;
  GPSCOPE_LOG_INFO("call-site stacks: %llu captured on %u threads (%llu the main Python "
                   "thread's, at syncs of threads without Python, %llu of them a walk's again; "
                   "%llu native ones through "
                   "libgcc, the slow path), %llu lost to full rings, %zu stacks of %zu frames "
                   "(%llu frames unresolved)",
                   static_cast<unsigned long long>(capturer_->captures()),
                   capturer_->threads_seen(),
                   static_cast<unsigned long long>(capturer_->main_thread_captures()),
                   static_cast<unsigned long long>(capturer_->main_thread_reused()),
                   static_cast<unsigned long long>(capturer_->native_slow_path()),
                   static_cast<unsigned long long>(capturer_->ring_drops()), table_->stacks(),
                   table_->frames(), static_cast<unsigned long long>(table_->unresolved_frames()));
}

}  // namespace gpscope::inject
