#include "inject/collector.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "inject/buffer_pool.h"
#include "inject/capture_gate.h"
#include "inject/chunk_writer.h"
#include "inject/api_cbids.h"
#include "inject/api_classes.h"
#include "inject/config.h"
#include "inject/control/capture_window.h"
#include "inject/control/control_channel.h"
#include "inject/clock_ns.h"
#include "inject/cupti_hooks.h"
#include "inject/cupti_loader.h"
#include "inject/exit_finisher.h"
#include "inject/identity.h"
#include "inject/metrics/nvml_backend.h"
#include "inject/metrics/sample_ring.h"
#include "inject/metrics/sampler_thread.h"
#include "inject/raw_log.h"
#include "inject/record_converter.h"
#include "inject/safe_path.h"
#include "inject/stack_capture.h"
#include "inject/stacks/fast_unwind.h"
#include "inject/stacks/memory_reader.h"
#include "inject/stacks/native_stacks.h"
#include "inject/stacks/python_resolver.h"
#include "inject/stacks/python_stacks.h"
#include "inject/stacks/stack_table.h"
#include "inject/wake_word.h"
#include "proto/enums.h"
#include "proto/framing.h"

#include "gpscope_version.h"  // GPSCOPE_VERSION, from git describe (cmake/Version.cmake)

namespace gpscope::inject {
namespace {

using format::StringRef;

// proto enum values (proto/enums.h mirrors proto/gpscope/trace.proto).
constexpr uint32_t kApiRuntime = wire::API_RUNTIME;
constexpr uint32_t kDropCuptiReported = wire::DROP_CUPTI_REPORTED,
                   kDropIncomplete = wire::DROP_CUPTI_INCOMPLETE_RECORD,
                   kDropPoolEmpty = wire::DROP_CUPTI_BUFFER_POOL_EMPTY,
                   kDropBufferStolen = wire::DROP_BUFFER_STOLEN,
                   kDropRingFull = wire::DROP_RING_FULL,
                   kDropExitFlushTimeout = wire::DROP_EXIT_FLUSH_TIMEOUT,
                   kDropStacks = wire::DROP_STACKS;
constexpr uint32_t kLostYielded = wire::LOST_YIELDED_TO_OTHER_PROFILER;
constexpr uint32_t kEndExit = wire::END_EXIT, kEndSignal = wire::END_SIGNAL;

uint64_t RandomUid() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v) || v == 0) {
    v = ClockNs(CLOCK_REALTIME) ^ (static_cast<uint64_t>(getpid()) << 32) ^ 0x9e3779b97f4a7c15ull;
  }
  return v;
}

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

// Call-site stacks (inject/stack_capture.h): CUPTI's API callbacks capture
// into per-thread rings, the writer drains them. Constant-initialized.
StackCapturer g_stacks;

// Application threads: a CUDA call's entry and exit (runtime and driver
// API domains, for call-site stacks), a context's creation (resource domain).
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
      g_stacks.OnExit(runtime);
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
  CUpti_SubscriberHandle subscriber = nullptr;  // ours, when we hold it
  bool set_nvtx_env = false;                    // we set NVTX_INJECTION64_PATH
  int fd = -1;
  std::unique_ptr<ChunkWriter> writer;
  OutputDir output_dir;    // GPSCOPE_OUTPUT, opened and checked (safe_path.h)
  std::string trace_name;  // in output_dir
  // Absolute; changes once if the name is taken (OpenOutput), so the
  // control thread reads it under path_mu.
  std::string trace_path;
  std::mutex path_mu;
  // The trace file opens when the process creates its first CUDA context
  // (the writer holds the frames until then), so a process that only
  // initializes CUDA leaves no file: torchrun's agent calls cuInit and would
  // otherwise add a file per node beside the ranks'. Only when CUPTI tells
  // us about contexts (we hold the subscriber); otherwise at start.
  bool open_at_context = false;

  // Metrics (inject/metrics): the sampler thread pushes into metric_ring;
  // the writer thread drains it. Absent with GPSCOPE_METRICS=0.
  metrics::MetricRing metric_ring;
  std::unique_ptr<metrics::RingSink> metric_sink;
  std::unique_ptr<metrics::SamplerThread> sampler;
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES at start

  // Capture windows and attach (inject/capture_gate.h), and the records
  // they keep (inject/record_converter.h).
  control::CaptureConfig capture;
  std::unique_ptr<CaptureGate> gate;
  std::unique_ptr<RecordConverter> converter;
  std::atomic<bool> tracing{false};  // GPU activity kinds enabled
  // Outside capture windows the kernel kind is off and switched on at the
  // window (standby costs the application nothing per kernel). Measured on
  // the H200 (CUDA 13.0, bench/RESULTS.md session 3): switched on 9 s into
  // a running PyTorch loop, the first kernel record came 20 ms after the
  // window opened and the window held as many kernels as with the kind on
  // throughout (7,727 vs 7,650), no stall. Older CUPTI stalled for seconds
  // (kineto#542): GPSCOPE_DIAG_GATE_KERNELS=1 keeps the kind on from the
  // start and gates the records instead (CaptureGate::set_kernels_always_on).
  // Set at start, then read-only.
  bool kernels_always_on_ = false;
  // False while Start() runs inside cuInit (InitializeInjection), before
  // CUDA has started; true from the writer thread's creation on (which
  // orders it for that thread). SetApiRecords picks its way by it.
  bool cuda_started_ = false;
  bool context_callback_ = false;  // CUPTI calls us when a context is created
  std::string subscribe_error_;    // cuptiSubscribe failed, not for another client
  std::unique_ptr<control::ControlChannel> channel;
  std::atomic<uint64_t> events_written{0};  // for `status`, updated by the writer

  // ControlHandler: the control thread.
  void GetStatus(control::ControlStatus* status) override;
  control::ControlReply Start(const control::StartRequest& request) override;
  control::ControlReply Stop() override;

  // Written by CUPTI callbacks, read by the writer.
  std::atomic<uint64_t> cupti_dropped{0};

  // Exit handshake between the exiting thread (or the finisher, after a
  // signal) and the writer thread (inject/exit_finisher.h).
  ExitFinisher finisher;
  std::atomic<bool> stopping{false};  // only without a finisher thread
  std::atomic<bool> final_requested{false};
  std::atomic<bool> final_done{false};
  std::atomic<uint32_t> end_reason{kEndExit};
  std::atomic<int32_t> end_signal{0};
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
  void StopWithoutFinisher(uint32_t reason, int sig, bool from_signal);

  // ExitFinisher::Hooks.
  void RequestFinal(int sig) override;
  bool WriterFinished() override { return final_done.load(std::memory_order_acquire); }
  void WriteEndInstead() override;

  // CaptureGate::Actions.
  uint64_t NowNs() override;
  bool SetTracing(bool on, std::string* error) override { return SetTracingImpl(on, error); }
  void FlushForced() override { FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
  void WindowWritten() override {
    writer->Flush();
    events_written.store(writer->events_written(), std::memory_order_relaxed);
  }

 private:
  void WriterLoop();
  void Drain();
  void FlushCupti(uint32_t flag);
  void ConvertBuffer(uint8_t* buffer, size_t valid_bytes);
  void ReportLosses(bool final);
  // Writer thread: objects loaded since (rescan), and the refused calls of
  // another CUPTI client into the trace (cumulative per api and caller).
  void NoteCuptiRefusals(bool rescan);
  // The end record with its counts (writer, or the finisher after a takeover).
  format::ProcessEndRecord EndRecord(const format::ClockRecord& clock);
  void WriteEndRecord(format::ProcessEndRecord end);
  void AddClockSnapshot();
  format::ClockRecord Snapshot() const;
  bool PrepareOutput(std::string* error);
  bool OpenOutput(std::string* error);
  bool MaybeOpenOutput();
  bool WriteHeader();
  bool EnableCupti(std::string* error);
  bool SetTracingImpl(bool on, std::string* error = nullptr);
  bool SetTracingCalls(bool on, std::string* error);
  void SetApiRecords(bool on);
  void ReleaseCupti();
  void ReadGlobalDrops();
  void StartControl();
  void StartSampler();
  void DrainMetrics();
  // Call-site stacks: start-up (before CUDA runs), and the writer's drain.
  void StartStacks();
  void DrainStacks();

  // The converter's API names: CUPTI's callback names (writer thread).
  struct CuptiApiNames : RecordConverter::ApiNames {
    Collector* c;
    const char* ApiName(uint32_t domain, uint32_t cbid) override;
  } api_names{};

  // Writer-thread state of the call-site stacks (null when they are off).
  stacks::PythonInfo py_info_;
  std::unique_ptr<stacks::SelfMemoryReader> stack_memory_;
  std::unique_ptr<stacks::PythonResolver> python_resolver_;
  std::unique_ptr<stacks::NativeSymbolizer> native_symbolizer_;
  std::unique_ptr<stacks::ProcessFrameResolver> frame_resolver_;
  std::unique_ptr<stacks::StackTable> stack_table_;
  std::vector<format::StackSampleEvent> stack_samples_;
  std::vector<stacks::StackFrameEntry> new_frames_;
  std::vector<stacks::StackEntry> new_stacks_;
  uint64_t frames_failed_seen_ = 0;   // writer->frames_failed() at the last drain
  uint64_t reported_ring_drops_ = 0;
  uint64_t reported_table_drops_ = 0;
  // stack_table_->dropped() as of the last drain: ReportLosses may run on
  // the finisher while the writer is inside the table (a blocking section).
  uint64_t table_drops_ = 0;
  uint64_t reported_thread_drops_ = 0;
  bool python_fault_reported_ = false;

  // Writer-thread state.
  uint64_t reported_cupti_dropped_ = 0;
  uint64_t reported_pool_failures_ = 0;
  uint64_t reported_incomplete_ = 0;
  uint64_t reported_metric_drops_ = 0;
  bool flush_timed_out_ = false;
  uint64_t cut_at_deadline_ = 0;  // completed buffers not converted: the exit deadline came
  // CUPTI ns minus CLOCK_REALTIME at the last snapshot: the end record's
  // clock when CUPTI cannot be asked (the finisher, after a takeover).
  std::atomic<int64_t> cupti_minus_realtime_ns_{0};
  struct RefusalTotal {
    std::map<uintptr_t, uint64_t> by_call_site;  // cumulative counts
    uint64_t first_ns = 0, last_ns = 0;          // CLOCK_REALTIME
    uint32_t result = 0;
    bool logged = false;
  };
  std::map<std::pair<std::string, std::string>, RefusalTotal> refusals_;  // (api, caller)
  std::string api_refusal_;      // SetApiRecords: the API kinds refused (written once)
  bool api_refusal_written_ = false;
  uint64_t buffers_drained_ = 0;   // activity buffers converted
  uint64_t drained_at_flush_ = 0;  // buffers_drained_ at the last periodic flush
  int flushes_without_buffer_ = 0;
  uint64_t failures_at_pressure_ = 0;    // pool.acquire_failures() at the last pressure flush
  uint64_t next_pressure_flush_ns_ = 0;  // CLOCK_MONOTONIC
  uint64_t pressure_flushes_ = 0;
};

format::ClockRecord Collector::Snapshot() const {
  format::ClockRecord c{};
  uint64_t cupti_ns = 0;
  if (api.cuptiGetTimestamp != nullptr) {
    BlockingSection section(const_cast<ExitFinisher*>(&finisher));
    api.cuptiGetTimestamp(&cupti_ns);
  }
  c.realtime_ns = ClockNs(CLOCK_REALTIME);
  c.monotonic_ns = ClockNs(CLOCK_MONOTONIC);
  c.cupti_ns = cupti_ns;
  return c;
}

void Collector::AddClockSnapshot() {
  const format::ClockRecord c = Snapshot();
  if (c.cupti_ns != 0) {
    cupti_minus_realtime_ns_.store(static_cast<int64_t>(c.cupti_ns - c.realtime_ns),
                                   std::memory_order_relaxed);
  }
  writer->AddClock(c);
}

// Application thread, at start: the folder, opened and checked against
// other users (inject/safe_path.h), and the file's name. The file itself
// opens in OpenOutput (then or at the first context), inside that folder.
bool Collector::PrepareOutput(std::string* error) {
  const std::string& dir = config.output_dir;
  std::string why;
  if (!OpenOutputDir(dir, DirModeFor(config.file_permissions), geteuid(), &output_dir, &why)) {
    *error = "GPSCOPE_OUTPUT=" + dir + ": " + why;
    return false;
  }
  if (faccessat(output_dir.fd(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    *error = "cannot write to output directory GPSCOPE_OUTPUT=" + dir + ": " + strerror(errno);
    return false;
  }
  FileMode mode = config.file_mode;
  if (mode == FileMode::kNode && format::IsNetworkFilesystemFd(output_dir.fd())) {
    GPSCOPE_LOG_WARNING("%s is on a network filesystem where appends from several processes are "
                        "not atomic; writing one file per process",
                        output_dir.path().c_str());
    mode = FileMode::kProcess;
  }
  trace_name = TraceFileName(identity.job_id, identity.hostname, identity.pid, mode);
  // Absolute: `gpscope attach` reads it from another working directory.
  trace_path = output_dir.path() + "/" + trace_name;
  return true;
}

// Application thread at start, or the writer at the first context. A name
// taken by something gpscope must not append to (another user's file, a
// link, a FIFO) gets one line and a private name beside it.
bool Collector::OpenOutput(std::string* error) {
  bool foreign = false;
  std::string why;
  fd = OpenTraceFileIn(output_dir, trace_name, config.file_permissions, geteuid(), &foreign, &why);
  if (fd < 0 && foreign) {
    const std::string private_name = PrivateTraceName(trace_name, geteuid(), identity.pid);
    GPSCOPE_LOG_WARNING("%s; tracing to %s/%s instead", why.c_str(), output_dir.path().c_str(),
                        private_name.c_str());
    fd = OpenTraceFileIn(output_dir, private_name, config.file_permissions, geteuid(), &foreign,
                         &why);
    if (fd >= 0) {
      trace_name = private_name;
      std::lock_guard<std::mutex> lock(path_mu);
      trace_path = output_dir.path() + "/" + trace_name;
    }
  }
  if (fd < 0) {
    *error = "cannot open trace file: " + why;
    return false;
  }
  return writer == nullptr || writer->Open(fd);
}

// Writer thread: opens the file at the process's first CUDA context. True
// when the file is open. A file that cannot be opened then is one error
// line (never tried again); the records are dropped from there on (CUPTI
// stays on: turning it off from this thread could race the application's
// CUDA calls).
bool Collector::MaybeOpenOutput() {
  if (writer->is_open()) return true;
  if (!open_at_context || g_context_devices.load(std::memory_order_acquire) == 0) return false;
  std::string error;
  if (!OpenOutput(&error) && fd < 0) {
    GPSCOPE_LOG_ERROR("%s; the application runs on untraced", error.c_str());
    writer->StopHolding();  // from here on frames are dropped (and counted)
    open_at_context = false;
    return false;
  }
  GPSCOPE_LOG_INFO("first CUDA context: tracing to %s", trace_path.c_str());
  return true;
}

bool Collector::WriteHeader() {
  std::vector<StringRef> argv;
  for (const std::string& a : identity.cmdline) argv.push_back({a.data(), a.size()});
  std::vector<format::KeyValueRecord> env, cfg;
  for (const auto& [k, v] : identity.env) env.push_back({{k.data(), k.size()}, {v.data(), v.size()}});
  std::vector<std::pair<std::string, std::string>> cfg_kv = config.AsKeyValues();
  for (auto& kv : capture.AsKeyValues()) cfg_kv.push_back(std::move(kv));
  for (const auto& [k, v] : cfg_kv) cfg.push_back({{k.data(), k.size()}, {v.data(), v.size()}});
  format::ClockRecord clock = Snapshot();
  if (clock.cupti_ns != 0) {
    cupti_minus_realtime_ns_.store(static_cast<int64_t>(clock.cupti_ns - clock.realtime_ns),
                                   std::memory_order_relaxed);
  }

  format::ProcessHeaderRecord h{};
  h.format_version = format::kFormatVersion;
  h.gpscope_version = format::MakeStringRef(GPSCOPE_VERSION);
  h.hostname = {identity.hostname.data(), identity.hostname.size()};
  h.pid = identity.pid;
  h.ppid = identity.ppid;
  h.cmdline = argv.data();
  h.cmdline_count = argv.size();
  h.exe_path = {identity.exe_path.data(), identity.exe_path.size()};
  h.driver_version = {identity.driver_version.data(), identity.driver_version.size()};
  h.start_realtime_ns = clock.realtime_ns;
  h.identity.job_id = {identity.job_id.data(), identity.job_id.size()};
  h.identity.rank = identity.rank;
  h.identity.local_rank = identity.local_rank;
  h.identity.world_size = identity.world_size;
  h.identity.node_rank = identity.node_rank;
  h.identity.launcher = {identity.launcher.data(), identity.launcher.size()};
  h.env = env.data();
  h.env_count = env.size();
  h.config = cfg.data();
  h.config_count = cfg.size();
  h.clocks = &clock;
  h.clock_count = 1;
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

bool Collector::EnableCupti(std::string* error) {
  auto check = [&](CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return true;
    *error = std::string(what) + " failed: " + api.ErrorString(r);
    return false;
  };
  // Hold the (single) subscriber so another client cannot take the activity
  // callbacks from us (see collector.h). MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
  // means someone else holds it: we still trace, and say so; any other
  // error is CUPTI failing, and said as such.
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUptiResult sub = CUPTI_ERROR_UNKNOWN;
  if (api.cuptiSubscribe_v2 != nullptr) {
    // Named, so a tool that fails to subscribe after us is told "gpscope".
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "gpscope";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder) - 1;
    sub = api.cuptiSubscribe_v2(&subscriber, SubscriberCallback, nullptr, &params);
  }
  if (sub != CUPTI_SUCCESS && sub != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    sub = api.cuptiSubscribe(&subscriber, SubscriberCallback, nullptr);
  }
  if (sub != CUPTI_SUCCESS && sub != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    // Not another client: CUPTI's callback API failed (measured without a
    // driver: CUPTI_ERROR_UNKNOWN; CUPTI newer than the driver:
    // CUPTI_ERROR_NOT_INITIALIZED). Activity tracing may still work; Start()
    // says which in one line (subscribe_error_).
    subscribe_error_ = std::string("cuptiSubscribe failed: ") + api.ErrorString(sub) +
                       " (CUptiResult " + std::to_string(static_cast<int>(sub)) + ")";
    writer->AddCapability({format::MakeStringRef("cupti_subscriber"), false,
                           {subscribe_error_.data(), subscribe_error_.size()}});
    subscriber = nullptr;
  } else if (sub != CUPTI_SUCCESS) {
    std::string why = std::string("CUPTI subscriber held by ") +
                      (holder[0] != '\0' ? holder : "another client") + " (" +
                      api.ErrorString(sub) + "); tracing anyway, that tool may take our buffers";
    GPSCOPE_LOG_WARNING("%s", why.c_str());
    writer->AddCapability({format::MakeStringRef("cupti_subscriber"), false, {why.data(), why.size()}});
    subscriber = nullptr;
  } else {
    // Context creation, for the deferred file and the sampler's GPUs.
    g_get_device_id.store(api.cuptiGetDeviceId, std::memory_order_release);
    context_callback_ = api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                                CUPTI_CBID_RESOURCE_CONTEXT_CREATED) ==
                        CUPTI_SUCCESS;
  }
#ifndef GPSCOPE_DIAG_PROCESS_TID  // bench/: overhead-diagnosis build variants
  api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
#endif
  // The writer re-zeroes each buffer before reuse, off the application's
  // threads, so CUPTI need not zero it on the launching thread.
  uint8_t zeroed = 1;
  size_t attr_bytes = sizeof(zeroed);
  api.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &attr_bytes,
                                &zeroed);
  if (!check(api.cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted),
             "cuptiActivityRegisterCallbacks")) {
    return false;
  }
  // Device and context records are one-time and cheap: always on.
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT}) {
    api.cuptiActivityEnable(k);
  }
#ifdef GPSCOPE_DIAG_NO_MARKER
  config.nvtx = false;
#endif
  if (config.nvtx) {
    CUptiResult r = api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    // NVTX reads NVTX_INJECTION64_PATH at each library's first NVTX call;
    // CUPTI's own NVTX handler then turns ranges into MARKER records. A
    // window that waits for an NVTX range keeps markers on throughout;
    // otherwise they follow the window (SetTracing).
    if (r == CUPTI_SUCCESS && getenv("NVTX_INJECTION64_PATH") == nullptr) {
      setenv("NVTX_INJECTION64_PATH", api.path.c_str(), 0);
      set_nvtx_env = true;
    }
    if (r == CUPTI_SUCCESS && !gate->uses_nvtx()) {
      api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER);
    }
  }
  switch (gate->Start(error)) {
    case CaptureGate::StartOutcome::kFailed:
      return false;
    case CaptureGate::StartOutcome::kTracing:
      return true;
    case CaptureGate::StartOutcome::kWaiting:
      break;
  }
  const char* gate_kernels = getenv("GPSCOPE_DIAG_GATE_KERNELS");
  if (gate_kernels != nullptr && strcmp(gate_kernels, "1") == 0) {
    CUptiResult r = api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (!check(r, "cuptiActivityEnable(CONCURRENT_KERNEL)")) return false;
    kernels_always_on_ = true;
    gate->set_kernels_always_on(true);
  }
  return true;
}

namespace {
// Activity kinds gpscope enables when the CUDA build offers them, with the
// GPSCOPE_DIAG_OFF bit that leaves each off.
constexpr CUpti_ActivityKind kOptional[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD};
constexpr uint32_t kOptionalDiagOff[] = {kDiagOffMemcpy, kDiagOffMemcpy, kDiagOffMemset,
                                         kDiagOffSync, kDiagOffOverhead};
}  // namespace

bool Collector::Start() {
  std::vector<std::string> problems;
  config = ParseConfig(+[](const char* n) -> const char* { return getenv(n); }, &problems);
  SetLogLevel(config.log_level);
  for (const std::string& p : problems) GPSCOPE_LOG_WARNING("%s", p.c_str());
  if (!config.enabled) {
    GPSCOPE_LOG_INFO("disabled by GPSCOPE_ENABLE=0");
    return false;
  }
  identity = ReadProcessIdentity(config);
  if (config.cupti_mode == CuptiMode::kHold) {
    problems.clear();
    capture = control::ParseCaptureConfig(+[](const char* n) -> const char* { return getenv(n); },
                                          &problems);
    for (const std::string& p : problems) GPSCOPE_LOG_WARNING("%s", p.c_str());
  }
  if (config.diag_off != 0) {
    GPSCOPE_LOG_INFO("diagnosis: activity kinds left off: %s", DiagOffText(config).c_str());
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
  if (!PrepareOutput(&error)) {
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
  writer = std::make_unique<ChunkWriter>(-1, process_uid, identity.pid, opts);  // holds frames
  gate = std::make_unique<CaptureGate>(config.cupti_mode == CuptiMode::kHold ? &capture : nullptr,
                                       writer.get(), this);
  api_names.c = this;
  converter = std::make_unique<RecordConverter>(writer.get(), gate.get(), &api_names,
                                                &g_context_devices);
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
    if (!subscribe_error_.empty()) error = subscribe_error_ + ", then " + error;
    GPSCOPE_LOG_ERROR("%s; the application runs untraced", error.c_str());
    format::CapabilityRecord cap{format::MakeStringRef("cupti"), false,
                                 {error.data(), error.size()}};
    writer->AddCapability(cap);
    g_collector.store(nullptr, std::memory_order_release);
    ReleaseCupti();  // the application's own profiler may have it
    format::ProcessEndRecord end{};
    end.clock = Snapshot();
    end.end_ns = end.clock.cupti_ns;
    end.reason = kEndExit;
    std::string open_error;
    if (OpenOutput(&open_error)) writer->WriteEnd(end);  // a complete (empty) trace
    return false;
  } else {
    cupti_active = true;
    if (subscriber != nullptr) {
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
    if (!subscribe_error_.empty()) {
      GPSCOPE_LOG_WARNING("%s; tracing without CUPTI's callbacks (the trace file opens now, every "
                          "GPU is sampled)",
                          subscribe_error_.c_str());
    }
  }
  // Without CUPTI's word on contexts (yield mode, someone else's
  // subscriber) the file opens now.
  open_at_context = cupti_active && context_callback_ && config.open_at_context;
  if (!open_at_context && !OpenOutput(&error)) {
    GPSCOPE_LOG_ERROR("%s; the application runs untraced", error.c_str());
    g_stacks.Disable();
    g_collector.store(nullptr, std::memory_order_release);
    if (cupti_active) ReleaseCupti();
    return false;
  }

  cuda_started_ = true;
  writer_thread = std::thread([this] { WriterLoop(); });
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
  if (open_at_context) {
    GPSCOPE_LOG_INFO("tracing; %s opens at the first CUDA context", trace_path.c_str());
  } else {
    GPSCOPE_LOG_INFO("tracing to %s", trace_path.c_str());
  }
  return true;
}

// Start-up thread, when gpscope gives up on CUPTI after subscribing: leave
// it as we found it, so the application (or its profiler) can use it.
void Collector::ReleaseCupti() {
  SetHoldingCupti(false);
  SetTracingImpl(false);
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT,
                               CUPTI_ACTIVITY_KIND_MARKER}) {
    api.cuptiActivityDisable(k);
  }
  if (subscriber != nullptr) {
    api.cuptiUnsubscribe(subscriber);
    subscriber = nullptr;
  }
  if (set_nvtx_env) unsetenv("NVTX_INJECTION64_PATH");
}

// Writer thread, after each flush. CUPTI counts records it dropped per
// buffer queue; BufferCompleted reads the per-context count with every
// buffer, but drops after the last buffer handed back (no free buffer at the
// end of a burst) are only seen by asking here (null context: all queues).
void Collector::ReadGlobalDrops() {
  size_t dropped = 0;
  if (api.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    cupti_dropped.fetch_add(dropped, std::memory_order_relaxed);
  }
}

// Turns GPU activity collection on or off. The start-up thread before the
// writer runs, then only the writer thread. CONCURRENT_KERNEL, not KERNEL:
// the latter serializes all kernels.
bool Collector::SetTracingImpl(bool on, std::string* error) {
  if (tracing.load(std::memory_order_relaxed) == on) return true;
  bool ok;
  {
    // Hundreds of CUPTI calls: one blocking section (no ChunkWriter use
    // inside: SetApiRecords leaves its notice in api_refusal_).
    BlockingSection section(&finisher);
    ok = SetTracingCalls(on, error);
  }
  if (!api_refusal_.empty() && !api_refusal_written_ && writer != nullptr) {
    api_refusal_written_ = true;
    writer->AddCapability({format::MakeStringRef("cupti.api_records"), false,
                           {api_refusal_.data(), api_refusal_.size()}});
  }
  return ok;
}

bool Collector::SetTracingCalls(bool on, std::string* error) {
  static bool warned[sizeof(kOptional) / sizeof(kOptional[0])] = {};
  if (on) {
    CUptiResult r = kernels_always_on_
                         ? CUPTI_SUCCESS
                         : api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
      // One line: the caller logs *error when it wants it, else we do.
      std::string why = std::string("enabling kernel activity failed: ") + api.ErrorString(r);
      if (error != nullptr) {
        *error = why;
      } else {
        GPSCOPE_LOG_ERROR("%s", why.c_str());
      }
      return false;
    }
    for (size_t i = 0; i < sizeof(kOptional) / sizeof(kOptional[0]); ++i) {
      if (config.diag_off & kOptionalDiagOff[i]) continue;
      r = api.cuptiActivityEnable(kOptional[i]);
      if (r != CUPTI_SUCCESS && !warned[i]) {
        warned[i] = true;
        GPSCOPE_LOG_WARNING("activity kind %d unavailable: %s", static_cast<int>(kOptional[i]),
                            api.ErrorString(r));
      }
    }
  } else {
    if (!kernels_always_on_) api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    for (CUpti_ActivityKind k : kOptional) api.cuptiActivityDisable(k);
  }
  if (config.nvtx && !gate->uses_nvtx()) {
    if (on) {
      api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    } else {
      api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER);
    }
  }
  if (config.api_records) SetApiRecords(on);
  tracing.store(on, std::memory_order_relaxed);
  return true;
}

// Start-up thread (before CUDA runs) or the writer thread: the CUDA calls
// whose records gpscope keeps (api_cbids.h). Enabled one id at a time they
// produce records only if that happened before CUDA started: measured on
// the H200 (CUDA 13.0, session 5), a window switched on later got every
// kernel and not one API record. Later, the documented other way works:
// the whole RUNTIME and DRIVER kinds on, then every other id off (same
// records per kernel as from the start). ~1,300 calls, once per window.
void Collector::SetApiRecords(bool on) {
  if (!on) {
    api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
    for (CUpti_CallbackId id : kRuntimeCbids) api.cuptiActivityEnableRuntimeApi(id, 0);
    for (CUpti_CallbackId id : kDriverCbids) api.cuptiActivityEnableDriverApi(id, 0);
    return;
  }
  if (!cuda_started_) {
    for (CUpti_CallbackId id : kRuntimeCbids) api.cuptiActivityEnableRuntimeApi(id, 1);
    for (CUpti_CallbackId id : kDriverCbids) api.cuptiActivityEnableDriverApi(id, 1);
    return;
  }
  // The kind first: enabling it overrides the per-id settings made before.
  // (For the microseconds until the loops below end, CUPTI may record a few
  // calls gpscope leaves out; the record converter drops them.)
  const CUptiResult rr = api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  const CUptiResult rd = api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  static bool warned = false;
  if ((rr != CUPTI_SUCCESS || rd != CUPTI_SUCCESS) && !warned) {
    warned = true;
    const char* why = api.ErrorString(rr != CUPTI_SUCCESS ? rr : rd);
    GPSCOPE_LOG_WARNING("CUDA API records unavailable in this window (%s); kernels, copies and "
                        "syncs are still traced", why);
    // In the trace too, so the analysis says why launch calls are missing
    // (SetTracing writes it, outside its blocking section).
    api_refusal_ = std::string("CUPTI refused the API kinds for a window opened mid-run: ") + why;
  }
  for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) {
    if (!kListedApiIds.runtime[id]) api.cuptiActivityEnableRuntimeApi(id, 0);
  }
  for (CUpti_CallbackId id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
    if (!kListedApiIds.driver[id]) api.cuptiActivityEnableDriverApi(id, 0);
  }
}

uint64_t Collector::NowNs() {
  uint64_t ns = 0;
  if (api.cuptiGetTimestamp != nullptr) {
    BlockingSection section(&finisher);  // a no-op off the writer thread
    if (api.cuptiGetTimestamp(&ns) == CUPTI_SUCCESS && ns != 0) return ns;
  }
  return ClockNs(CLOCK_REALTIME);
}

void Collector::GetStatus(control::ControlStatus* status) {
  gate->FillStatus(status);
  status->events = events_written.load(std::memory_order_relaxed);
  // Records (refused buffer requests show up as CUPTI-reported drops).
  status->drops = cupti_dropped.load(std::memory_order_relaxed);
  status->pid = static_cast<uint64_t>(identity.pid);
  std::lock_guard<std::mutex> lock(path_mu);
  status->trace_path = trace_path;
}

namespace {
control::ControlReply Reply(const control::AttachResult& r, const char* what) {
  control::ControlReply reply;
  reply.ok = r.outcome == control::AttachOutcome::kOk;
  reply.message = reply.ok ? what : control::AttachOutcomeName(r.outcome);
  return reply;
}
}  // namespace

// Control thread: the window decides; the writer applies (within ~20 ms).
control::ControlReply Collector::Start(const control::StartRequest& request) {
  const control::AttachResult r = gate->Attach(request.duration_ms);
  wake.Wake();
  return Reply(r, request.metrics_interval_ms != 0
                      ? "tracing (the metrics interval is fixed at start; ignored)"
                      : "tracing");
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

// Application thread, once, after the writer runs. The sampler loads NVML on
// its own thread (that can take hundreds of ms), so this returns at once.
void Collector::StartSampler() {
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
  if (context_callback_) sopts.active_devices = &g_context_devices;
  if (identity.in_pid_namespace) {
    // NVML's per-process pids are the host's: the analyzer must not take
    // this process for a stranger on its own GPU.
    static constexpr char kWhy[] =
        "in a PID namespace (a container): NVML reports host pids, which cannot be matched to "
        "this process's";
    writer->AddCapability({format::MakeStringRef("nvml.process_pids"), false,
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
  if (!sampler->Start()) {
    GPSCOPE_LOG_WARNING("cannot start the metrics sampler thread; tracing without metrics");
    sampler.reset();
  }
}

// Writer thread. Descriptors and notices point into the Sampler, which
// lives until the sampler thread is stopped after the final drain (or is
// leaked if it hangs), so they are valid here.
void Collector::DrainMetrics() {
  if (metric_sink == nullptr) return;
  metrics::MetricEvent e;
  while (metric_ring.TryPop(&e)) {
    switch (e.kind) {
      case metrics::MetricEvent::kSample:
        writer->AddMetricSample(e.sample);
        break;
      case metrics::MetricEvent::kDescriptor:
        writer->AddMetricDescriptor(metrics::ToRecord(*e.descriptor));
        break;
      case metrics::MetricEvent::kCapability:
        writer->AddCapability(metrics::ToRecord(*e.capability));
        break;
    }
  }
}

namespace {
std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

// Start-up thread, inside InitializeInjection (before CUDA runs), when we
// hold the subscriber: call-site stacks (docs/stacks.md). Every outcome is
// one line at info level and a capability notice in the trace.
void Collector::StartStacks() {
  const stacks::StackSettings& s = config.stacks;
  auto off = [&](const std::string& why) {
    GPSCOPE_LOG_INFO("call-site stacks off: %s", why.c_str());
    writer->AddCapability({format::MakeStringRef("stacks"), false, {why.data(), why.size()}});
  };
  if (!s.enabled()) return off("GPSCOPE_STACKS=0");
  if (subscriber == nullptr) {
    return off("no CUPTI subscriber of our own: CUPTI's API callbacks are unavailable");
  }
  if (!config.api_records) return off("GPSCOPE_API=0: stacks are joined to the API records");
  bool python = false;
  if (s.python()) {
    py_info_ = stacks::InitPythonStacks();
    python = py_info_.enabled;
    GPSCOPE_LOG_INFO("python stacks: %s", py_info_.reason.c_str());
    writer->AddCapability({format::MakeStringRef("stacks.python"), python,
                           {py_info_.reason.data(), py_info_.reason.size()}});
  }
  if (s.native()) {
    std::string why;
    if (!stacks::InitFastUnwind(&why)) {
      why = "fast unwinder unavailable (" + why + "): native stacks through libgcc, slower";
      GPSCOPE_LOG_INFO("%s", why.c_str());
      writer->AddCapability({format::MakeStringRef("stacks.native"), true, {why.data(), why.size()}});
    }
  }
  StackCapturer::Options o;
  o.settings = s;
  o.python = python;
  o.gate = &tracing;
  o.wake = &wake;
  // Tests: a smaller capture ring, to see it fill (GPSCOPE_DIAG_STACK_RING).
  if (const char* ring = getenv("GPSCOPE_DIAG_STACK_RING")) {
    o.ring_slots = static_cast<uint32_t>(strtoul(ring, nullptr, 10));
  }
  std::string why;
  if (!g_stacks.Init(o, &why)) return off(why);
  size_t enabled = 0, asked = 0;
  // Diagnosis (bench: overhead_stacks): the synchronizing calls' callbacks
  // only, so the launch callbacks' cost shows apart.
  const char* no_launch = getenv("GPSCOPE_DIAG_STACK_NO_LAUNCH");
  const bool launches = no_launch == nullptr || strcmp(no_launch, "1") != 0;
  for (CUpti_CallbackId id : kRuntimeCbids) {
    if (!launches && ClassifyApi(CUPTI_CB_DOMAIN_RUNTIME_API, id) == ApiClass::kLaunch) continue;
    ++asked;
    enabled += api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id) ==
               CUPTI_SUCCESS;
  }
  for (CUpti_CallbackId id : kDriverCbids) {
    if (!launches && ClassifyApi(CUPTI_CB_DOMAIN_DRIVER_API, id) == ApiClass::kLaunch) continue;
    ++asked;
    enabled += api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id) ==
               CUPTI_SUCCESS;
  }
  if (enabled == 0) {
    g_stacks.Disable();
    return off("CUPTI refused the API callbacks");
  }
  stack_memory_ = std::make_unique<stacks::SelfMemoryReader>();
  if (python) {
    python_resolver_ = std::make_unique<stacks::PythonResolver>(*py_info_.layout, py_info_.types,
                                                                stack_memory_.get());
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
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&SubscriberCallback), &self) != 0 && self.dli_fname) {
    limits.drop_leading_native_modules.push_back(BaseName(self.dli_fname));
  }
  limits.drop_leading_native_modules.push_back(BaseName(api.path));
  stack_table_ = std::make_unique<stacks::StackTable>(frame_resolver_.get(), limits);
  GPSCOPE_LOG_INFO("call-site stacks on (GPSCOPE_STACKS=%s, GPSCOPE_STACK_SAMPLE_MS=%u): %zu of "
                   "%zu API callbacks enabled",
                   stacks::StackModeName(s.mode), s.sample_interval_ms, enabled, asked);
}

// Writer thread, at every drain, before the CUPTI buffers: the captures the
// application threads published, interned, then their rows (frames, stacks,
// samples: in that order, so a reader meets every id after its definition).
void Collector::DrainStacks() {
  if (stack_table_ == nullptr) return;
  if (writer->frames_failed() != frames_failed_seen_) {
    // A lost chunk may have held definitions: send them all again.
    frames_failed_seen_ = writer->frames_failed();
    stack_table_->ResendAll();
  }
  {
    // Resolution reads memory with process_vm_readv and takes the loader
    // lock (dladdr): the finisher may take over meanwhile (no ChunkWriter here).
    BlockingSection section(&finisher);
    g_stacks.Drain([&](const stacks::StackCapture& c) {
      format::StackSampleEvent e{};
      e.timestamp_ns = c.timestamp_ns;
      e.thread_id = c.thread_id;
      e.correlation_id = static_cast<uint32_t>(c.correlation_id);
      e.stack_id = stack_table_->Intern(c);
      e.trigger = static_cast<uint32_t>(c.trigger);
      stack_samples_.push_back(e);
    });
    stack_table_->TakeNew(&new_frames_, &new_stacks_);
  }
  table_drops_ = stack_table_->dropped();
  for (const stacks::StackFrameEntry& f : new_frames_) {
    format::StackFrameRecord r{};
    r.id = f.id;
    r.kind = static_cast<uint32_t>(f.frame.kind);
    r.file_id = writer->InternString(f.frame.file);
    r.function_id = writer->InternString(f.frame.function);
    r.line = f.frame.line > 0 ? static_cast<uint32_t>(f.frame.line) : 0;
    r.qualname_id = writer->InternString(f.frame.qualname);
    r.build_id_id = writer->InternString(f.frame.build_id);
    r.module_offset = f.frame.module_offset;
    writer->AddStackFrame(r);
  }
  for (const stacks::StackEntry& st : new_stacks_) {
    writer->AddStack({st.id, st.frame_ids.data(), st.frame_ids.size(), st.truncated});
  }
  for (const format::StackSampleEvent& e : stack_samples_) {
    if (!gate->InWindow(e.timestamp_ns)) continue;  // like the API records outside a window
    writer->AddStackSample(e);
  }
  new_frames_.clear();
  new_stacks_.clear();
  stack_samples_.clear();
  if (!python_fault_reported_ && stacks::PythonStacksFault() != stacks::WalkFault::kNone) {
    python_fault_reported_ = true;
    const std::string why = std::string("turned off at run time: ") +
                            stacks::WalkFaultName(stacks::PythonStacksFault());
    GPSCOPE_LOG_WARNING("python stacks %s (an unexpected frame layout; the application is not "
                        "affected)", why.c_str());
    writer->AddCapability({format::MakeStringRef("stacks.python"), false, {why.data(), why.size()}});
  }
}

const char* Collector::CuptiApiNames::ApiName(uint32_t domain, uint32_t cbid) {
  const char* name = nullptr;
  CUpti_CallbackDomain d =
      domain == kApiRuntime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  CUptiResult r;
  {
    BlockingSection section(&c->finisher);
    r = c->api.cuptiGetCallbackName(d, cbid, &name);
  }
  return r == CUPTI_SUCCESS ? name : nullptr;
}

void Collector::ConvertBuffer(uint8_t* buffer, size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  while (api.cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    converter->Convert(record);
  }
  // Buffers are handed out again with ZEROED_OUT_ACTIVITY_BUFFER set.
#ifndef GPSCOPE_DIAG_NO_MEMSET
  memset(buffer, 0, valid_bytes);
#endif
}

// Writer thread (or start-up): CUPTI hands back its buffers (flag 0:
// completed ones; CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: partly filled too), the
// drops it counted since, then everything is converted.
void Collector::FlushCupti(uint32_t flag) {
  converter->BeginFlush((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 &&
                        !gate->InWindow(NowNs()));
  if (cupti_active) {
    // May wait for the application's CUDA calls (and never return if one
    // never does): the finisher can take over meanwhile.
    BlockingSection section(&finisher);
    api.cuptiActivityFlushAll(flag);
    ReadGlobalDrops();
  }
  Drain();
  converter->EndFlush();
}

void Collector::Drain() {
  DrainMetrics();
  DrainStacks();
  uint8_t* buffer;
  size_t valid;
  // In the final flush the end record must make the exit deadline: past it,
  // what is left is counted (cut_at_deadline_), not converted.
  const uint64_t deadline = finisher.writer_deadline_ns();
  while (pool.PopCompleted(&buffer, &valid)) {
    if (deadline != 0 && final_requested.load(std::memory_order_relaxed) &&
        ClockNs(CLOCK_MONOTONIC) >= deadline) {
      ++cut_at_deadline_;
      memset(buffer, 0, valid);
      pool.Release(buffer);
      continue;
    }
#ifdef GPSCOPE_DIAG_DISCARD
    (void)&Collector::ConvertBuffer;
#else
    ConvertBuffer(buffer, valid);
#endif
    ++buffers_drained_;
    pool.Release(buffer);
  }
}

void Collector::ReportLosses(bool final) {
  auto report = [&](uint32_t reason, uint64_t total, uint64_t* reported, const char* detail) {
    if (total == *reported) return;
    format::DropRecord d{};
    d.reason = reason;
    d.count = total - *reported;
    d.last_ns = converter->last_event_ns();
    d.detail = format::MakeStringRef(detail);
    writer->AddDrop(d);
    *reported = total;
  };
  report(kDropCuptiReported, cupti_dropped.load(std::memory_order_relaxed), &reported_cupti_dropped_,
         "records CUPTI dropped (cuptiActivityGetNumDroppedRecords)");
  report(kDropPoolEmpty, pool.acquire_failures(), &reported_pool_failures_,
         "buffer requests refused: GPSCOPE_MAX_BUFFER_MB reached (CUPTI drops those records)");
  report(kDropIncomplete, converter->incomplete_records(), &reported_incomplete_,
         "records without timestamps (still queued or running when a flush forced them out, "
         "or CUPTI's device buffer full)");
  if (metric_sink != nullptr) {
    report(kDropRingFull, metric_sink->samples_dropped(), &reported_metric_drops_,
           "metric samples dropped: the writer fell behind the sampler");
  }
  if (stack_table_ != nullptr) {
    report(kDropStacks, g_stacks.ring_drops(), &reported_ring_drops_,
           "call stacks not taken: a thread's capture ring was full (the writer fell behind); "
           "the API records are kept");
    report(kDropStacks, table_drops_, &reported_table_drops_,
           "call stacks not kept (stack id 0): the stack table reached its limit");
    report(kDropStacks, g_stacks.thread_drops(), &reported_thread_drops_,
           "call stacks not taken at synchronizing calls of threads beyond the collector's "
           "thread limit (256)");
  }
  if (final && pool.outstanding() > 0) {
    format::DropRecord d{};
    d.count = static_cast<uint64_t>(pool.outstanding());
    d.last_ns = converter->last_event_ns();
    if (end_reason.load() == kEndSignal) {
      // Seen on the H200: a signal that lands inside a CUDA call leaves
      // CUPTI holding that thread's buffer through the forced flush. No
      // other client is involved; saying "stolen" would send the user
      // looking for one.
      d.reason = kDropExitFlushTimeout;
      d.detail = format::MakeStringRef(
          "activity buffers CUPTI still held when the process was ended by a signal (count = "
          "buffers, not records): a CUDA call was in progress; their records are lost");
    } else {
      d.reason = kDropBufferStolen;
      d.detail = format::MakeStringRef(
          "activity buffers never returned to gpscope (count = buffers, not records): another "
          "CUPTI client registered its own buffer callbacks");
    }
    writer->AddDrop(d);
  }
}

void Collector::NoteCuptiRefusals(bool rescan) {
  if (subscriber == nullptr) return;  // hooks only while we hold CUPTI
  if (rescan) {
    BlockingSection section(&finisher);  // the loader lock
    RescanCuptiHooks();
  }
  CuptiRefusal seen[32];
  const size_t n = CollectCuptiRefusals(seen, sizeof(seen) / sizeof(seen[0]));
  for (size_t i = 0; i < n; ++i) {
    const CuptiRefusal& r = seen[i];
    std::string caller;
    if (r.caller_pc != 0) {
      BlockingSection section(&finisher);  // dladdr takes the loader lock
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
    const int64_t offset = cupti_minus_realtime_ns_.load(std::memory_order_relaxed);
    format::CuptiRefusalRecord rec{};
    rec.first_ns = static_cast<uint64_t>(static_cast<int64_t>(t.first_ns) + offset);
    rec.last_ns = static_cast<uint64_t>(static_cast<int64_t>(t.last_ns) + offset);
    rec.count = total;
    rec.api = format::MakeStringRef(r.api);
    rec.caller = {caller.data(), caller.size()};
    rec.result = r.result;
    writer->AddCuptiRefusal(rec);
    if (!t.logged) {
      t.logged = true;
      const size_t slash = caller.rfind('/');
      const std::string who = caller.empty()                 ? std::string("unknown library")
                              : slash == std::string::npos ? caller
                                                           : caller.substr(slash + 1);
      GPSCOPE_LOG_WARNING("another CUPTI client (%s) called %s while gpscope holds CUPTI: refused "
                          "(%s), so its profiler gets no GPU activity; GPSCOPE_CUPTI_MODE=yield "
                          "leaves CUPTI to it (recorded in the trace)",
                          who.c_str(), r.api, api.ErrorString(static_cast<CUptiResult>(r.result)));
    }
  }
}

void Collector::WriterLoop() {
  // Fatal-signal handlers wait for this thread; it must never run them.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  pthread_setname_np(pthread_self(), "gpscope-writer");
  finisher.SetWriterThread(pthread_self());  // its blocking calls may be taken over

  const uint64_t interval_ns = static_cast<uint64_t>(config.flush_interval_ms) * 1000000ull;
  uint64_t next_flush_ns = ClockNs(CLOCK_MONOTONIC) + interval_ns;
  for (;;) {
    MaybeOpenOutput();
    gate->Tick();
    Drain();
    if (final_requested.load(std::memory_order_acquire)) break;
    // Out of buffers (each of many threads holds a partly filled one, which
    // CUPTI hands back only when forced): force them back, at most every
    // 200 ms. Records still in flight then come back incomplete (counted);
    // refused requests would lose far more.
    if (cupti_active && tracing.load(std::memory_order_relaxed) &&
        (pool.acquire_failures() != failures_at_pressure_ || pool.Exhausted()) &&
        ClockNs(CLOCK_MONOTONIC) >= next_pressure_flush_ns_) {
      FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      failures_at_pressure_ = pool.acquire_failures();
      next_pressure_flush_ns_ = ClockNs(CLOCK_MONOTONIC) + 200000000ull;
      ++pressure_flushes_;
    }
    if (ClockNs(CLOCK_MONOTONIC) >= next_flush_ns) {
      FlushCupti(0);  // completed buffers only; no device sync
      // Flag 0 hands back no partly filled buffer on the H200 (CUDA 13): a
      // slow application's records sat in one for seconds, and a SIGKILL
      // lost them. After two intervals without a buffer back, force one
      // out (records still in flight then come back incomplete, counted).
      if (cupti_active && tracing.load(std::memory_order_relaxed) && pool.outstanding() > 0 &&
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
      if (writer->is_open()) writer->Flush();
      events_written.store(writer->events_written(), std::memory_order_relaxed);
      next_flush_ns = ClockNs(CLOCK_MONOTONIC) + interval_ns;
    }
    wake.Wait(20);
  }

  // Final: a window still closing ends now (its records come with the
  // forced flush; no kinds are switched off at exit), partially filled
  // buffers are forced out, then the end chunk.
  gate->EndAtExit();
  FlushCupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  ReportLosses(true);
  NoteCuptiRefusals(/*rescan=*/false);
  WriteEndRecord(EndRecord(Snapshot()));
  GPSCOPE_LOG_INFO("%llu activity buffers, %llu kernel records from CUPTI (starts %llu..%llu), "
                   "%llu records outside capture windows (not written)",
                   static_cast<unsigned long long>(buffers_drained_),
                   static_cast<unsigned long long>(converter->kernel_records()),
                   static_cast<unsigned long long>(converter->first_kernel_ns()),
                   static_cast<unsigned long long>(converter->last_kernel_ns()),
                   static_cast<unsigned long long>(converter->outside_window()));
  GPSCOPE_LOG_INFO("buffer pool: %llu x %zu KiB and %llu x %zu KiB cut of %zu MiB, at most %lld "
                   "held by CUPTI at once, %llu requests refused, %llu flushes forced by pressure",
                   static_cast<unsigned long long>(pool.large_buffers()),
                   pool.buffer_bytes() >> 10, static_cast<unsigned long long>(pool.small_buffers()),
                   pool.small_bytes() >> 10, pool.cap_bytes() >> 20,
                   static_cast<long long>(pool.peak_outstanding()),
                   static_cast<unsigned long long>(pool.acquire_failures()),
                   static_cast<unsigned long long>(pressure_flushes_));
  if (stack_table_ != nullptr) {
    GPSCOPE_LOG_INFO("call-site stacks: %llu captured on %u threads (%llu native ones through "
                     "libgcc, the slow path), %llu lost to full rings, %zu stacks of %zu frames "
                     "(%llu frames unresolved)",
                     static_cast<unsigned long long>(g_stacks.captures()), g_stacks.threads_seen(),
                     static_cast<unsigned long long>(g_stacks.native_slow_path()),
                     static_cast<unsigned long long>(g_stacks.ring_drops()), stack_table_->stacks(),
                     stack_table_->frames(),
                     static_cast<unsigned long long>(stack_table_->unresolved_frames()));
  }
  final_done.store(true, std::memory_order_release);
}

format::ProcessEndRecord Collector::EndRecord(const format::ClockRecord& clock) {
  format::ProcessEndRecord end{};
  end.clock = clock;
  gate->CloseOutsideWindow(end.clock.cupti_ns);  // the trace may end outside a window
  end.end_ns = end.clock.cupti_ns;
  end.reason = end_reason.load();
  end.signal = end_signal.load();
  end.events_dropped = cupti_dropped.load() + converter->incomplete_records();
  end.flush_timed_out = flush_timed_out_;
  if (cut_at_deadline_ > 0) {
    end.flush_timed_out = true;
    format::DropRecord d{};
    d.reason = kDropExitFlushTimeout;
    d.count = cut_at_deadline_;
    d.last_ns = converter->last_event_ns();
    d.detail = format::MakeStringRef(
        "activity buffers not converted before the exit deadline (count = buffers, not "
        "records): GPSCOPE_EXIT_TIMEOUT_MS");
    writer->AddDrop(d);
  }
  return end;
}

void Collector::WriteEndRecord(format::ProcessEndRecord end) {
  if (writer->is_open() || MaybeOpenOutput()) {
    writer->WriteEnd(end);
  } else if (open_at_context) {
    // No CUDA context in the process's whole life: nothing to trace.
    writer->DiscardHeld();
    GPSCOPE_LOG_INFO("no CUDA context was created: no trace written to %s", trace_path.c_str());
  }
}

// Any thread, async-signal-safe (atomics only): the writer polls for it.
void Collector::RequestFinal(int sig) {
  end_reason.store(sig != 0 ? kEndSignal : kEndExit);
  end_signal.store(sig);
  final_requested.store(true, std::memory_order_release);
  wake.Wake();
}

// The finisher thread, the writer's state taken over while the writer sits
// in a call that did not return (a CUPTI flush waiting on a lock, the
// loader lock): no CUPTI call here. What CUPTI still holds, and what was
// handed back but not converted, is counted as lost in the end record.
void Collector::WriteEndInstead() {
  const int64_t held = pool.outstanding();
  const uint64_t unflushed = static_cast<uint64_t>(held > 0 ? held : 0) + pool.completed_pending();
  ReportLosses(false);
  format::DropRecord d{};
  d.reason = kDropExitFlushTimeout;
  d.count = unflushed + cut_at_deadline_;
  d.last_ns = converter->last_event_ns();
  d.detail = format::MakeStringRef(
      "activity buffers not flushed before the exit deadline (count = buffers, not records): "
      "the final CUPTI flush did not return within GPSCOPE_EXIT_TIMEOUT_MS");
  writer->AddDrop(d);
  cut_at_deadline_ = 0;  // counted just above
  flush_timed_out_ = true;
  format::ClockRecord clock{};
  clock.realtime_ns = ClockNs(CLOCK_REALTIME);
  clock.monotonic_ns = ClockNs(CLOCK_MONOTONIC);
  clock.cupti_ns = static_cast<uint64_t>(static_cast<int64_t>(clock.realtime_ns) +
                                         cupti_minus_realtime_ns_.load(std::memory_order_relaxed));
  WriteEndRecord(EndRecord(clock));
  GPSCOPE_LOG_WARNING("the final CUPTI flush did not return within GPSCOPE_EXIT_TIMEOUT_MS=%u "
                      "(a CUDA call held it up); the trace ends here, %llu activity buffers not "
                      "flushed (counted in it)",
                      config.exit_timeout_ms, static_cast<unsigned long long>(unflushed));
}

// The exiting thread (atexit). Not from a signal handler.
void Collector::StopAtExit() {
  if (!finisher.started()) {
    StopWithoutFinisher(kEndExit, 0, /*from_signal=*/false);
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

void Collector::StopWithoutFinisher(uint32_t reason, int sig, bool from_signal) {
  if (stopping.exchange(true)) return;
  end_reason.store(reason);
  end_signal.store(sig);
  if (!from_signal && channel != nullptr) channel->Stop();
  if (!from_signal && sampler != nullptr) sampler->Stop(kSamplerStopTimeoutMs);
  final_requested.store(true, std::memory_order_release);
  wake.Wake();
  // Wait for the writer, never longer than the exit timeout.
  const uint64_t deadline = ClockNs(CLOCK_MONOTONIC) + config.exit_timeout_ms * 1000000ull;
  while (!final_done.load(std::memory_order_acquire)) {
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
  uint64_t ns = 0;
  if (c != nullptr && c->api.cuptiGetTimestamp != nullptr &&
      c->api.cuptiGetTimestamp(&ns) == CUPTI_SUCCESS && ns != 0) {
    return ns;
  }
  return ClockNs(CLOCK_REALTIME);
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
    if (owner && !c->finisher.started()) c->StopWithoutFinisher(kEndSignal, sig, true);
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
