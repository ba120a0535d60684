#include "inject/collector.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/control/capture_window.h"
#include "common/control/control_channel.h"
#include "common/identity.h"
#include "common/posix.h"
#include "common/process_header.h"
#include "common/raw_log.h"
#include "inject/api_classes.h"
#include "inject/buffer_pool.h"
#include "inject/call_site_stacks.h"
#include "inject/capture_gate.h"
#include "inject/config.h"
#include "inject/cupti_hooks.h"
#include "inject/cupti_loader.h"
#include "inject/cupti_session.h"
#include "inject/diag_switches.h"
#include "inject/exit_finisher.h"
#include "inject/output_file.h"
#include "inject/record_converter.h"
#include "inject/stack_capture.h"
#include "inject/wake_word.h"
#include "inject/writer_loop.h"
#include "metrics/nvml_backend.h"
#include "metrics/sample_ring.h"
#include "metrics/sampler_thread.h"
#include "proto/chunk_writer.h"
#include "proto/enums.h"
#include "proto/framing.h"
#include "proto/metric_names.h"

namespace gpscope::inject {
namespace {

using format::ChunkWriter;
// Shared with the node monitor and the launcher (common/).
using common::ClockNs;
using common::ProcessIdentity;
using common::RandomUid;
using common::ReadProcessIdentity;
using common::SetLogLevel;

constexpr uint32_t kLostYielded = wire::LOST_YIELDED_TO_OTHER_PROFILER;
constexpr uint32_t kEndExit = wire::END_EXIT;

class Collector;
// Constant-initialized: CUPTI callbacks may run before Start() finished or
// after static destructors; they only ever see null or a leaked Collector.
std::atomic<Collector*> g_collector{nullptr};
std::atomic<bool> g_started{false};

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records);
void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                              size_t valid_size);
void CUPTIAPI SubscriberCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data);
void AtExit();
void OnFatalSignal(int sig, siginfo_t* info, void* uctx);
uint64_t MetricClockNs();

// Samples per metrics interval are a few dozen; 8192 entries hold several
// seconds of them if the writer falls behind (~1 MiB).
constexpr size_t kMetricRingEntries = 8192;
// Stopping the sampler at exit waits at most this long for an NVML call.
constexpr uint32_t kSamplerStopTimeoutMs = 500;

// Bit d: this process has created a CUDA context on device d (the CUDA
// ordinal; all bits when the device could not be told). Set by the resource
// callback on the application thread that creates the context (one atomic
// OR: no lock, allocation or system call) and by the writer from CONTEXT
// records; read by the writer (the trace file opens at the first context)
// and by the sampler thread (it samples only these GPUs).
std::atomic<uint64_t> g_context_devices{0};
std::atomic<decltype(&::cuptiGetDeviceId)> g_get_device_id{nullptr};

// Call-site stacks and API call rows (inject/stack_capture.h): CUPTI's API
// callbacks capture into per-thread rings, the writer drains them.
// Constant-initialized.
StackCapturer g_stacks;

// The session, for the subscriber callback's detach between windows
// (CuptiSession::DetachAtApiExit). Set before CUPTI can call us.
std::atomic<CuptiSession*> g_session{nullptr};

// Application threads: a CUDA call's entry and exit (runtime and driver
// API domains, for call-site stacks and API call rows), a context's
// creation (resource domain).
void CUPTIAPI SubscriberCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* d = static_cast<const CUpti_CallbackData*>(data);
    if (d == nullptr) return;
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (d->callbackSite == CUPTI_API_ENTER) {
      g_stacks.OnEnter(runtime, ClassifyApi(domain, cbid), static_cast<uint8_t>(domain), cbid,
                       d->correlationId);
    } else {
      // Valid at exit only: a cudaError_t for the runtime, a CUresult for
      // the driver (CUpti_CallbackData::functionReturnValue).
      uint32_t result = 0;
      if (const void* v = d->functionReturnValue) {
        result = runtime ? static_cast<uint32_t>(*static_cast<const cudaError_t*>(v))
                         : static_cast<uint32_t>(*static_cast<const CUresult*>(v));
      }
      g_stacks.OnExit(d->correlationId, result);
      // A window closed: the first call to return detaches CUPTI.
      CuptiSession* s = g_session.load(std::memory_order_relaxed);
      if (s != nullptr && s->detach_pending()) s->DetachAtApiExit();
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED ||
      data == nullptr) {
    return;
  }
  const auto* rd = static_cast<const CUpti_ResourceData*>(data);
  uint32_t device_id = 0;
  auto get = g_get_device_id.load(std::memory_order_acquire);
  NoteContextDevice(&g_context_devices, device_id,
                    get != nullptr && get(rd->context, &device_id) == CUPTI_SUCCESS);
}

// The one long-lived object behind CUPTI's callbacks, the control socket,
// the exit path and the signal handlers. Its parts: the CUPTI session, the
// capture gate, the record converter, the call-site stacks, the output file
// and the writer loop (each in its own module); this class starts them in
// order, owns the threads and ends the trace at exit or on a signal.
class Collector : public control::ControlHandler,
                  public ExitFinisher::Hooks,
                  public CaptureGate::Actions {
 public:
  Config config;
  ProcessIdentity identity;
  CuptiApi api;
  BufferPool pool;
  uint64_t process_uid = RandomUid();
  pid_t owner_pid = getpid();
  bool cupti_active = false;  // CUPTI loaded and collecting (not yield mode)
  std::unique_ptr<ChunkWriter> writer;
  OutputFile output;
  control::CaptureConfig capture;  // hold mode: the capture window's settings
  std::unique_ptr<CuptiSession> session;
  std::unique_ptr<CaptureGate> gate;
  std::unique_ptr<RecordConverter> converter;
  std::unique_ptr<CallSiteStacks> stacks;
  std::unique_ptr<WriterLoop> loop;  // from just before the writer thread starts
  // Overhead diagnosis (inject/diag_switches.h): read only by the bench/test
  // build; in the shipped library every use is folded away.
  diag::Switches diag_;

  // Metrics (metrics/): the sampler thread pushes into metric_ring;
  // the writer thread drains it. Absent with GPSCOPE_METRICS=0.
  metrics::MetricRing metric_ring;
  std::unique_ptr<metrics::RingSink> metric_sink;
  std::unique_ptr<metrics::SamplerThread> sampler;
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES at start

  std::unique_ptr<control::ControlChannel> channel;
  std::atomic<uint64_t> events_written{0};  // for `status`, updated by the writer
  // Written by CUPTI callbacks, read by the writer.
  std::atomic<uint64_t> cupti_dropped{0};

  // Exit handshake between the exiting thread (or the finisher, after a
  // signal) and the writer thread (inject/exit_finisher.h).
  ExitFinisher finisher;
  std::atomic<bool> stopping{false};  // only without a finisher thread
  WakeWord wake;  // the writer's 20 ms sleep, cut short (any thread, signal-safe)
  std::thread writer_thread;

  struct sigaction old_term {};
  struct sigaction old_int {};

  bool Start();
  // The exit path (atexit): the final flush and end record, bounded.
  void StopAtExit();
  // A fatal signal's handler (async-signal-safe). True when the trace is
  // finished for it and the signal delivered later (the handler returns).
  bool OnSignal(int sig);
  // Without the finisher thread: the old bounded wait (exit or handler).
  void StopWithoutFinisher(int sig, bool from_signal);

  // ControlHandler: the control thread.
  void GetStatus(control::ControlStatus* status) override;
  control::ControlReply Start(const control::StartRequest& request) override;
  control::ControlReply Stop() override;
  control::ControlReply SetStacks(bool on) override;

  // ExitFinisher::Hooks.
  void RequestFinal(int sig) override { loop->RequestFinal(sig); }
  bool WriterFinished() override { return loop->finished(); }
  void WriteEndInstead() override { loop->WriteEndInstead(); }

  // CaptureGate::Actions.
  uint64_t NowNs() override { return session->NowNs(); }
  bool SetTracing(bool on, std::string* error) override {
    const bool ok = session->SetTracing(on, error);
    // The stacks' API callbacks follow (none in standby).
    if (stacks != nullptr) stacks->FollowTracing();
    // Standby until the next window: CUPTI detached (GPSCOPE_DETACH).
    if (!on) session->RequestDetach();
    return ok;
  }
  void FlushForced() override {
    if (loop != nullptr) loop->FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  void WindowWritten() override {
    writer->Flush();
    events_written.store(writer->events_written(), std::memory_order_relaxed);
  }

 private:
  format::ClockRecord Snapshot() const { return session->Snapshot(); }
  bool WriteHeader();
  bool EnableCupti(std::string* error);
  void StartStacks();
  void StartControl();
  // Before the writer thread: the sampler's ring, notices and thread
  // object; StartSampler() then starts the thread.
  void PrepareSampler();
  void StartSampler();
};

bool Collector::WriteHeader() {
  common::ProcessHeaderBuilder header(identity);  // common/process_header.h, as the monitor's
  header.AddConfig(config.AsKeyValues());
  header.AddConfig(capture.AsKeyValues());
  header.SetClock(Snapshot());
  format::ProcessHeaderRecord h = header.Build();
  uint32_t cupti_version = 0;
  if (api.cuptiGetVersion != nullptr) api.cuptiGetVersion(&cupti_version);
  h.cupti_api_version = cupti_version;
  using DriverGetVersionFn = int (*)(int*);
  // The driver is loaded (it is calling us), but possibly RTLD_LOCAL.
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    if (auto fn = reinterpret_cast<DriverGetVersionFn>(dlsym(cuda, "cuDriverGetVersion"))) {
      int v = 0;
      if (fn(&v) == 0) h.cuda_driver_version = static_cast<uint32_t>(v);
    }
    dlclose(cuda);
  }
  return writer->WriteHeader(h);
}

// Start-up thread, inside InitializeInjection: CUPTI's callbacks and
// kinds, then the capture window's first decision.
bool Collector::EnableCupti(std::string* error) {
  // Read by the resource callback, once CUPTI calls it (Open() enables it).
  g_get_device_id.store(api.cuptiGetDeviceId, std::memory_order_release);
  CuptiSession::Options options;
  options.nvtx = config.nvtx && !diag::kNoMarkers;
  options.markers_throughout = gate->uses_nvtx();
  options.api_records = config.api_records;
  options.api_from_callbacks = config.api_source == ApiSource::kCallback;
  options.kinds_off = diag::kEnvSwitches ? diag_.off_kinds : 0;
  if (!config.sync_records) options.kinds_off |= diag::kOffSync;
  options.system_thread_ids = !diag::kProcessThreadIds;
  options.detach_between_windows = config.detach;
  const CuptiSession::Callbacks callbacks{BufferRequested, BufferCompleted, SubscriberCallback};
  if (!session->Open(options, callbacks, error)) return false;
  switch (gate->Start(error)) {
    case CaptureGate::StartOutcome::kFailed:
      return false;
    case CaptureGate::StartOutcome::kTracing:
      return true;
    case CaptureGate::StartOutcome::kWaiting:
      break;
  }
  if (diag::kEnvSwitches && diag_.gate_kernels) {
    if (!session->KeepKernelsOn(error)) return false;
    gate->set_kernels_always_on(true);
  }
  return true;
}

bool Collector::Start() {
  std::vector<std::string> problems;
  config = ParseConfig(+[](const char* n) -> const char* { return getenv(n); }, &problems);
  SetLogLevel(config.log_level);
  for (const std::string& p : problems) GPSCOPE_LOG_WARNING("%s", p.c_str());
  if (!config.enabled) {
    GPSCOPE_LOG_INFO("disabled by GPSCOPE_ENABLE=0");
    return false;
  }
  identity = ReadProcessIdentity();
  if (config.cupti_mode == CuptiMode::kHold) {
    problems.clear();
    capture = control::ParseCaptureConfig(+[](const char* n) -> const char* { return getenv(n); },
                                          &problems);
    for (const std::string& p : problems) GPSCOPE_LOG_WARNING("%s", p.c_str());
  }
  if (diag::kEnvSwitches) {
    problems.clear();
    diag_ = diag::ReadSwitches(+[](const char* n) -> const char* { return getenv(n); }, &problems);
    for (const std::string& p : problems) GPSCOPE_LOG_WARNING("%s", p.c_str());
    if (diag_.off_kinds != 0) {
      GPSCOPE_LOG_INFO("diagnosis: activity kinds left off: %s",
                       diag::OffKindsText(diag_.off_kinds).c_str());
    }
  }

  std::string error;
  if (config.cupti_mode == CuptiMode::kHold && !LoadCupti(config.cupti_path, &api, &error)) {
    GPSCOPE_LOG_ERROR("%s; the application runs untraced", error.c_str());
    return false;
  }
  if (api.cuptiGetVersion != nullptr) {
    uint32_t v = 0;
    api.cuptiGetVersion(&v);
    // Record layouts (CUpti_ActivityKernel10, ...) are those of the headers
    // we were built with; an older libcupti would be misread.
    if (v < CUPTI_API_VERSION) {
      GPSCOPE_LOG_ERROR("%s has CUPTI API version %u, older than the %u gpscope was built for; "
                        "the application runs untraced (set GPSCOPE_CUPTI_PATH to a newer one)",
                        api.path.c_str(), v, static_cast<unsigned>(CUPTI_API_VERSION));
      return false;
    }
  }
  if (!output.Prepare(config, identity, &error)) {
    GPSCOPE_LOG_ERROR("%s; the application runs untraced", error.c_str());
    return false;
  }
  // Large buffers for the first threads, small ones for many (buffer_pool.h).
  const size_t buffer_bytes = static_cast<size_t>(config.buffer_kb) * 1024;
  const size_t cap_bytes = static_cast<size_t>(config.max_buffer_mb) << 20;
  if (!pool.Init(buffer_bytes, std::min(buffer_bytes, BufferPool::kSmallBufferBytes), cap_bytes)) {
    GPSCOPE_LOG_ERROR("cannot reserve %u MiB for activity buffers; the application runs untraced",
                      config.max_buffer_mb);
    return false;
  }
  ChunkWriter::Options opts;
  opts.zstd_level = config.zstd_level;
  opts.log_error = common::RawLogError;
  writer = std::make_unique<ChunkWriter>(-1, process_uid, identity.pid, opts);  // holds frames
  session = std::make_unique<CuptiSession>(&api, &finisher, writer.get());
  g_session.store(session.get(), std::memory_order_release);
  gate = std::make_unique<CaptureGate>(config.cupti_mode == CuptiMode::kHold ? &capture : nullptr,
                                       writer.get(), this);
  converter = std::make_unique<RecordConverter>(writer.get(), gate.get(), session.get(),
                                                &g_context_devices);
  stacks = std::make_unique<CallSiteStacks>(&g_stacks, writer.get(), &finisher);
  if (!writer->ok() || !WriteHeader()) {
    GPSCOPE_LOG_ERROR("cannot encode the trace header; the application runs untraced");
    return false;
  }
  g_collector.store(this, std::memory_order_release);

  if (config.cupti_mode == CuptiMode::kYield) {
    static constexpr char kWhy[] = "GPSCOPE_CUPTI_MODE=yield: CUPTI left to the application";
    format::LostIntervalRecord lost{};
    lost.start_ns = ClockNs(CLOCK_REALTIME);
    lost.reason = kLostYielded;
    lost.detail = {kWhy, sizeof(kWhy) - 1};
    writer->AddLostInterval(lost);
    format::CapabilityRecord cap{format::MakeStringRef("cupti"), false, lost.detail};
    writer->AddCapability(cap);
  } else if (!EnableCupti(&error)) {
    // One line: what failed first (a subscribe that failed on its own), then this.
    if (!session->subscribe_error().empty()) error = session->subscribe_error() + ", then " + error;
    GPSCOPE_LOG_ERROR("%s; the application runs untraced", error.c_str());
    format::CapabilityRecord cap{format::MakeStringRef("cupti"), false,
                                 {error.data(), error.size()}};
    writer->AddCapability(cap);
    g_collector.store(nullptr, std::memory_order_release);
    session->Release();  // the application's own profiler may have it
    format::ProcessEndRecord end{};
    end.clock = Snapshot();
    end.end_ns = end.clock.cupti_ns;
    end.reason = kEndExit;
    std::string open_error;
    if (output.Open(writer.get(), &open_error)) writer->WriteEnd(end);  // a complete (empty) trace
    return false;
  } else {
    cupti_active = true;
    if (session->subscriber() != nullptr) {
      // We hold CUPTI: see (and refuse) another client's calls, which CUPTI
      // does not tell us about (inject/cupti_hooks.h).
      CuptiHookTargets targets;
      targets.subscribe = api.cuptiSubscribe;
      targets.subscribe_v2 = api.cuptiSubscribe_v2;
      targets.register_callbacks = api.cuptiActivityRegisterCallbacks;
      targets.cupti_path = api.path;
      InstallCuptiHooks(targets);
      SetHoldingCupti(true);
      GPSCOPE_LOG_DEBUG("CUPTI entry points hooked in %zu GOT slots", PatchedCuptiSlots());
    }
    StartStacks();
    if (!session->subscribe_error().empty()) {
      GPSCOPE_LOG_WARNING("%s; tracing without CUPTI's callbacks (the trace file opens now, every "
                          "GPU is sampled)",
                          session->subscribe_error().c_str());
    }
  }
  // Without CUPTI's word on contexts (yield mode, someone else's
  // subscriber) the file opens now.
  output.set_open_at_context(cupti_active && session->context_callback() &&
                             config.open_at_context);
  if (!output.open_at_context() && !output.Open(writer.get(), &error)) {
    GPSCOPE_LOG_ERROR("%s; the application runs untraced", error.c_str());
    g_stacks.Disable();
    g_collector.store(nullptr, std::memory_order_release);
    if (cupti_active) session->Release();
    return false;
  }

  PrepareSampler();
  WriterLoop::Parts parts;
  parts.config = &config;
  parts.cupti_active = cupti_active;
  parts.pool = &pool;
  parts.session = session.get();
  parts.gate = gate.get();
  parts.converter = converter.get();
  parts.output = &output;
  parts.writer = writer.get();
  parts.finisher = &finisher;
  parts.wake = &wake;
  parts.stacks = stacks.get();
  parts.metric_ring = &metric_ring;
  parts.metric_sink = metric_sink.get();
  parts.context_devices = &g_context_devices;
  parts.cupti_dropped = &cupti_dropped;
  parts.events_written = &events_written;
  loop = std::make_unique<WriterLoop>(parts);
  session->SetCudaStarted();
  writer_thread = std::thread([this] { loop->Run(); });
  // Before the handlers: a signal from here on is finished by this thread.
  if (!finisher.Start(this, config.exit_timeout_ms)) {
    GPSCOPE_LOG_INFO("no finisher thread: a fatal signal waits for the final flush in its handler");
  }
  StartSampler();
  if (cupti_active) StartControl();
  atexit(AtExit);
  struct sigaction sa {};
  sa.sa_sigaction = OnFatalSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGINT, &sa, &old_int);
  if (output.open_at_context()) {
    GPSCOPE_LOG_INFO("tracing; %s opens at the first CUDA context", output.path().c_str());
  } else {
    GPSCOPE_LOG_INFO("tracing to %s", output.path().c_str());
  }
  return true;
}

// Start-up thread, inside InitializeInjection (before CUDA runs), when we
// hold the subscriber: call-site stacks (docs/stacks.md).
void Collector::StartStacks() {
  CallSiteStacks::Options o;
  o.settings = config.stacks;
  o.api_records = config.api_records;
  o.api_rows = session->api_from_callbacks();
  o.cupti_path = api.path;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&SubscriberCallback), &self) != 0 && self.dli_fname) {
    o.self_path = self.dli_fname;
  }
  if (diag::kEnvSwitches) {
    o.ring_slots = diag_.stack_ring_slots;  // tests: a smaller ring, to see it fill
    o.launches = !diag_.stack_no_launch;    // bench: the launch callbacks' cost apart
    o.driver_launches_at_start = diag_.stack_driver_launches;  // bench: their inner ones'
    o.api_row_slots = diag_.api_row_slots;  // tests: a smaller API row ring
  }
  stacks->Start(o, session.get(), &wake);
  // A forked child has no writer: its callbacks stop filling rings nobody
  // drains (it never writes to our file either).
  if (g_stacks.enabled()) pthread_atfork(nullptr, nullptr, [] { g_stacks.Disable(); });
}

void Collector::GetStatus(control::ControlStatus* status) {
  gate->FillStatus(status);
  status->events = events_written.load(std::memory_order_relaxed);
  // Records (refused buffer requests show up as CUPTI-reported drops).
  status->drops = cupti_dropped.load(std::memory_order_relaxed);
  status->pid = static_cast<uint64_t>(identity.pid);
  status->trace_path = output.path();
}

control::ControlReply Reply(const control::AttachResult& r, const char* what) {
  control::ControlReply reply;
  reply.ok = r.outcome == control::AttachOutcome::kOk;
  reply.message = reply.ok ? what : control::AttachOutcomeName(r.outcome);
  return reply;
}

// Control thread: the window decides; the writer applies (within ~20 ms).
control::ControlReply Collector::Start(const control::StartRequest& request) {
  const control::AttachResult r = gate->Attach(request.duration_ms);
  wake.Wake();
  return Reply(r, request.metrics_interval_ms != 0
                      ? "tracing (the metrics interval is fixed at start; ignored)"
                      : "tracing");
}

control::ControlReply Collector::SetStacks(bool on) {
  if (stacks == nullptr || !stacks->RequestSwitch(on)) {
    return {false, "call-site stacks are off in this process (GPSCOPE_STACKS or start-up)"};
  }
  wake.Wake();
  return {true, std::string("call-site stacks ") + (on ? "on" : "off") + " requested"};
}

control::ControlReply Collector::Stop() {
  const control::AttachResult r = gate->Stop();
  wake.Wake();
  return Reply(r, "stopped");
}

void ForgetControlAfterFork() {
  Collector* c = g_collector.load(std::memory_order_acquire);
  if (c != nullptr && c->channel != nullptr) c->channel->ForgetAfterFork();
}

// Application thread, once, after the writer runs: the control socket that
// `gpscope attach` talks to (GPSCOPE_CONTROL, default on).
void Collector::StartControl() {
  std::vector<std::string> problems;
  control::ControlConfig ctl =
      control::ParseControlConfig(+[](const char* n) -> const char* { return getenv(n); }, &problems);
  for (const std::string& p : problems) GPSCOPE_LOG_WARNING("%s", p.c_str());
  if (!ctl.enabled) return;
  // A GPSCOPE_CONTROL_DIR that ParseControlConfig refused (it said so) must
  // not come back through ControlDirCandidates, which reads it again.
  std::vector<std::string> dirs =
      ctl.dir.empty()
          ? control::ControlDirCandidates(
                +[](const char* n) -> const char* {
                  return strcmp(n, "GPSCOPE_CONTROL_DIR") == 0 ? nullptr : getenv(n);
                },
                geteuid())
          : std::vector<std::string>{ctl.dir};
  std::string error;
  std::vector<std::string> refused;
  channel = control::StartControlChannel(this, dirs, &refused, &error);
  if (channel == nullptr) {
    GPSCOPE_LOG_WARNING("no control socket (gpscope attach will not reach this process): %s",
                        error.c_str());
    return;
  }
  // Every candidate refused: another user may be squatting the default
  // directory. Say so (attach still finds the fallback through /proc).
  // One refused while the next served is routine ($XDG_RUNTIME_DIR unset up).
  for (const std::string& r : refused) {
    if (refused.size() == dirs.size()) {
      GPSCOPE_LOG_WARNING("%s; serving it from %s instead", r.c_str(),
                          channel->socket_path().c_str());
    } else {
      GPSCOPE_LOG_INFO("%s", r.c_str());
    }
  }
  pthread_atfork(nullptr, nullptr, ForgetControlAfterFork);
  GPSCOPE_LOG_INFO("control socket %s", channel->socket_path().c_str());
}

// Application thread, once, before the writer runs (it drains the ring and
// owns the ChunkWriter from then on).
void Collector::PrepareSampler() {
  if (!config.metrics) {
    format::CapabilityRecord cap{format::MakeStringRef("metrics"), false,
                                 format::MakeStringRef("GPSCOPE_METRICS=0")};
    writer->AddCapability(cap);
    return;
  }
  if (config.cupti_mode == CuptiMode::kYield) {
    // Yield mode exists for an application that traces with CUPTI itself.
    // On the H200 (driver 580, CUPTI 13.0 from PyTorch's wheel), torch.
    // profiler's CUPTI plus any running sampler thread (host-only too) hung
    // the application in cublasCreate -> cuInit (a libcuda mutex, while a
    // CUPTI worker thread waited on a lock): 14 runs of 14; without the
    // sampler it ran (bench/RESULTS.md, sessions 2 and 3). Never the
    // application's hang: metrics stay off in yield mode, whatever
    // GPSCOPE_METRICS says (one line when it asked for them).
    static constexpr char kWhy[] =
        "off with GPSCOPE_CUPTI_MODE=yield: with the application's own CUPTI tracing, a "
        "running sampler thread hung CUDA start-up on the H200 (gpscope-monitor samples this "
        "GPU without injection)";
    writer->AddCapability({format::MakeStringRef("metrics"), false, format::MakeStringRef(kWhy)});
    if (config.metrics_set && config.metrics) {
      GPSCOPE_LOG_WARNING("GPSCOPE_METRICS ignored: metrics are %s", kWhy);
    } else {
      GPSCOPE_LOG_INFO("metrics are %s", kWhy);
    }
    return;
  }
  if (!metric_ring.Init(kMetricRingEntries)) return;
  metric_sink = std::make_unique<metrics::RingSink>(&metric_ring);
  metrics::SamplerOptions sopts;
  sopts.self_pid = static_cast<uint32_t>(identity.pid);
  // Only the GPUs this process uses, when CUPTI reports its contexts.
  if (session->context_callback()) sopts.active_devices = &g_context_devices;
  if (identity.in_pid_namespace) {
    // NVML's per-process pids are the host's: the analyzer must not take
    // this process for a stranger on its own GPU.
    static constexpr char kWhy[] =
        "in a PID namespace (a container): NVML reports host pids, which cannot be matched to "
        "this process's";
    writer->AddCapability({format::MakeStringRef(metric_names::kCapNvmlProcessPids), false,
                           format::MakeStringRef(kWhy)});
  }
  metrics::NvmlBackend::Options nopts;
  if (!config.nvml_path.empty()) nopts.library = config.nvml_path.c_str();
  // Number GPUs as CUDA does in this process, so metrics join the events.
  // (Copied: the application may change its environment later.)
  if (const char* v = getenv("CUDA_VISIBLE_DEVICES")) {
    visible_devices = v;
    nopts.visible_devices = visible_devices.c_str();
  }
  auto s = std::make_unique<metrics::Sampler>(std::make_unique<metrics::NvmlBackend>(nopts),
                                              std::make_unique<metrics::ProcHostSource>(), sopts);
  metrics::SamplerThread::Options topts;
  topts.interval_ms = config.metrics_interval_ms;
  topts.clock_ns = MetricClockNs;  // samples share the events' timebase
  sampler = std::make_unique<metrics::SamplerThread>(std::move(s), metric_sink.get(), topts);
}

// Application thread, once, after the writer runs. The sampler loads NVML on
// its own thread (that can take hundreds of ms), so this returns at once.
void Collector::StartSampler() {
  if (sampler != nullptr && !sampler->Start()) {
    GPSCOPE_LOG_WARNING("cannot start the metrics sampler thread; tracing without metrics");
    sampler.reset();
  }
}

// The exiting thread (atexit). Not from a signal handler.
void Collector::StopAtExit() {
  if (!finisher.started()) {
    StopWithoutFinisher(0, /*from_signal=*/false);
    return;
  }
  if (!finisher.stopping()) {
    // Stop the sampler first so its last samples make the final drain (it
    // locks and joins, so not after a signal; there its thread simply dies
    // with the process, and the writer never frees what it reads).
    if (channel != nullptr) channel->Stop();
    if (sampler != nullptr) sampler->Stop(kSamplerStopTimeoutMs);
  }
  if (finisher.OnExit()) {
    if (writer_thread.joinable()) writer_thread.join();
  }
}

bool Collector::OnSignal(int sig) { return finisher.OnSignal(sig); }

void Collector::StopWithoutFinisher(int sig, bool from_signal) {
  if (stopping.exchange(true)) return;
  if (!from_signal && channel != nullptr) channel->Stop();
  if (!from_signal && sampler != nullptr) sampler->Stop(kSamplerStopTimeoutMs);
  loop->RequestFinal(sig);
  // Wait for the writer, never longer than the exit timeout.
  const uint64_t deadline = ClockNs(CLOCK_MONOTONIC) + config.exit_timeout_ms * 1000000ull;
  while (!loop->finished()) {
    if (ClockNs(CLOCK_MONOTONIC) >= deadline) {
      if (!from_signal) {
        GPSCOPE_LOG_WARNING("final flush did not finish within GPSCOPE_EXIT_TIMEOUT_MS=%u; the "
                            "trace ends at the last periodic flush",
                            config.exit_timeout_ms);
      }
      return;
    }
    timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
  if (!from_signal && writer_thread.joinable()) writer_thread.join();
}

// Sampler thread: the metrics' timestamps, in the events' timebase (CUPTI's
// clock when CUPTI is loaded, else CLOCK_REALTIME, which CUPTI follows).
uint64_t MetricClockNs() {
  Collector* c = g_collector.load(std::memory_order_acquire);
  // The session's clock: none of CUPTI's while it is detached.
  return c != nullptr ? c->session->NowNs() : ClockNs(CLOCK_REALTIME);
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  Collector* c = g_collector.load(std::memory_order_acquire);
  size_t bytes = 0;
  uint8_t* b = c != nullptr ? c->pool.Acquire(&bytes) : nullptr;
  *buffer = b;
  *size = b != nullptr ? bytes : 0;
  *max_num_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                              size_t valid_size) {
  Collector* c = g_collector.load(std::memory_order_acquire);
  if (c == nullptr) return;
  // The dropped count resets on read: read it with every buffer.
  size_t dropped = 0;
  if (c->api.cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    c->cupti_dropped.fetch_add(dropped, std::memory_order_relaxed);
  }
  if (buffer != nullptr) c->pool.Complete(buffer, valid_size);
  // The writer converts and recycles it now rather than at its next tick:
  // with many threads each holding a buffer, the pool's slack is small.
  c->wake.Wake();
}

void AtExit() {
  Collector* c = g_collector.load(std::memory_order_acquire);
  if (c == nullptr || getpid() != c->owner_pid) return;  // fork children stay silent
  c->StopAtExit();
}

// SIGTERM/SIGINT. When the signal would end the process (default action),
// the trace is finished first and the process then dies of the same signal,
// so the exit status is unchanged. The handler itself only records the
// signal (inject/exit_finisher.h) and returns: whatever CUDA call it
// interrupted completes and releases its locks, which the final flush may
// need. When the application handles the signal itself it may well go on,
// so we only chain to its handler; its exit reaches AtExit.
void OnFatalSignal(int sig, siginfo_t* info, void* uctx) {
  const int saved_errno = errno;
  Collector* c = g_collector.load(std::memory_order_acquire);
  struct sigaction* old = nullptr;
  if (c != nullptr) old = sig == SIGTERM ? &c->old_term : &c->old_int;
  bool owner = c != nullptr && getpid() == c->owner_pid;
  if (old == nullptr || ((old->sa_flags & SA_SIGINFO) == 0 && old->sa_handler == SIG_DFL)) {
    if (owner && c->OnSignal(sig)) {
      errno = saved_errno;
      return;  // the finisher delivers it once the trace is finished
    }
    // No finisher thread: the old bounded wait, here.
    if (owner && !c->finisher.started()) c->StopWithoutFinisher(sig, true);
    signal(sig, SIG_DFL);
    errno = saved_errno;
    raise(sig);  // delivered when this handler returns
    return;
  }
  errno = saved_errno;
  if (old->sa_flags & SA_SIGINFO) {
    old->sa_sigaction(sig, info, uctx);
  } else if (old->sa_handler != SIG_IGN) {
    old->sa_handler(sig);
  }
}

}  // namespace

int StartCollector() {
  if (g_started.exchange(true)) return 1;  // CUDA may call us once per process only
  Collector* c = new (std::nothrow) Collector();  // leaked: callbacks may outlive exit
  if (c == nullptr) return 1;
  if (!c->Start()) {
    // Keep the object if CUPTI may still call back into it; otherwise it is
    // merely unused. Either way the application runs on.
    return 1;
  }
  return 1;
}

}  // namespace gpscope::inject
