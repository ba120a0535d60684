// tests/launcher/fake_traced_app.cc: a stand-in for a CUDA process with the
// collector injected, for the launcher's tests on machines without a GPU.
//
// Like the collector it reads GPSCOPE_OUTPUT, GPSCOPE_STANDBY and the
// capture-window variables, appends frames to <output>/fakejob_<host>.gpscope
// and serves the real control channel driven by the real
// CaptureWindow (common/control/), so `gpscope attach` can be tested end to
// end. Kernels are written only while the window says "tracing"; every
// window's kernel count goes to <output>/windows.txt ("kernels N" per
// closed window) so a test can check the attach captured exactly it.
//
//   fake_traced_app RUN_MS BATCH_EVERY_MS KERNELS_PER_BATCH EXIT_CODE
//
// With FAKE_APP_REPORTS_WINDOWS=1 its status tells windows_written (the
// windows closed so far: their frames are already in the file), as the
// collector does; without, it answers like an older collector.
// Like the collector it opens GPSCOPE_OUTPUT with common/safe_path.h's
// checks and reports the trace's absolute path, and serves its socket from
// the first control directory it can make private, else from a private
// fallback (common/control: StartControlChannel).
// To play a hostile server (tests of attach's checks):
//   FAKE_APP_SOCKET_PID=P   serve <GPSCOPE_CONTROL_DIR>/P.sock (another
//                           process's name) from the first candidate directory
//   FAKE_APP_STATUS_PID=P   the status claims pid P
//   FAKE_APP_TRACE_PATH=F   the status names trace F
// Exits 90 when CUDA_INJECTION64_PATH is not set (the launcher must set it).
// Threads: main (ticks the window, writes frames) and the control thread;
// the window is shared under one mutex, as the collector would do.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/control/capture_window.h"
#include "common/control/control_channel.h"
#include "common/safe_path.h"
#include "proto/framing.h"
#include "tests/testing/trace_builder.h"

namespace ic = gpscope::control;

namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

const char* Env(const char* name) { return getenv(name); }

struct App : public ic::ControlHandler {
  std::mutex mu;  // guards window and the counters (main and control thread)
  ic::CaptureWindow window{ic::CaptureConfig{}};
  uint64_t events = 0;
  uint64_t window_kernels = 0;
  std::vector<uint64_t> closed_windows;
  std::string trace_path;
  bool reports_windows = false;  // FAKE_APP_REPORTS_WINDOWS=1
  uint64_t status_pid = 0;        // FAKE_APP_STATUS_PID
  std::string status_trace_path;  // FAKE_APP_TRACE_PATH

  void Apply(const ic::Transitions& transitions) {  // under mu
    for (const ic::Transition& t : transitions) {
      if (t.kind == ic::TransitionKind::kStartTracing) {
        window_kernels = 0;
      } else {
        closed_windows.push_back(window_kernels);
      }
    }
  }
  void GetStatus(ic::ControlStatus* s) override {
    std::lock_guard<std::mutex> lock(mu);
    s->state = ic::CaptureStateName(window.state());
    s->tracing = window.tracing();
    s->remaining_ms = window.remaining_ms(NowNs());
    s->events = events;
    if (reports_windows) s->windows_written = static_cast<int64_t>(closed_windows.size());
    s->pid = status_pid != 0 ? status_pid : static_cast<uint64_t>(getpid());
    s->trace_path = status_trace_path.empty() ? trace_path : status_trace_path;
  }
  ic::ControlReply Start(const ic::StartRequest& r) override {
    std::lock_guard<std::mutex> lock(mu);
    const ic::AttachResult result = window.OnAttachRequest(r.duration_ms, NowNs());
    Apply(result.transitions);
    if (result.outcome != ic::AttachOutcome::kOk) return {false, ic::AttachOutcomeName(result.outcome)};
    return {true, "tracing for " + std::to_string(r.duration_ms) + " ms"};
  }
  ic::ControlReply Stop() override {
    std::lock_guard<std::mutex> lock(mu);
    const ic::AttachResult result = window.OnStopRequest(NowNs());
    Apply(result.transitions);
    if (result.outcome != ic::AttachOutcome::kOk) return {false, ic::AttachOutcomeName(result.outcome)};
    return {true, "stopped"};
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: fake_traced_app RUN_MS BATCH_EVERY_MS KERNELS_PER_BATCH EXIT_CODE\n");
    return 2;
  }
  const uint64_t run_ms = strtoull(argv[1], nullptr, 10);
  const uint64_t every_ms = strtoull(argv[2], nullptr, 10);
  const int per_batch = atoi(argv[3]);
  const int exit_code = atoi(argv[4]);
  if (Env("CUDA_INJECTION64_PATH") == nullptr) return 90;
  gpscope::common::OutputDir out;
  std::string why;
  const char* output = Env("GPSCOPE_OUTPUT") ? Env("GPSCOPE_OUTPUT") : "./gpscope-out";
  if (!gpscope::common::OpenOutputDir(output, 0750, geteuid(), &out, &why)) {
    fprintf(stderr, "fake_traced_app: %s\n", why.c_str());
    return 91;
  }
  const std::string dir = out.path();

  std::vector<std::string> problems;
  App app;
  app.window = ic::CaptureWindow(ic::ParseCaptureConfig(&Env, &problems));
  app.trace_path = dir + "/fakejob_testhost.gpscope";
  app.reports_windows = Env("FAKE_APP_REPORTS_WINDOWS") != nullptr &&
                        std::string(Env("FAKE_APP_REPORTS_WINDOWS")) == "1";
  bool foreign = false;
  const int fd = gpscope::common::OpenTraceFileIn(out, "fakejob_testhost.gpscope", 0640, geteuid(),
                                                  &foreign, &why);
  if (fd < 0) {
    fprintf(stderr, "fake_traced_app: %s\n", why.c_str());
    return 91;
  }
  if (Env("FAKE_APP_STATUS_PID")) {
    app.status_pid = strtoull(Env("FAKE_APP_STATUS_PID"), nullptr, 10);
  }
  if (Env("FAKE_APP_TRACE_PATH")) app.status_trace_path = Env("FAKE_APP_TRACE_PATH");
  gpscope::testing::TraceBuilder trace;
  auto& process = trace.AddProcess(0x1000u + static_cast<uint64_t>(getpid()),
                                   static_cast<uint32_t>(getpid()));
  size_t written = gpscope::format::kFileHeaderBytes;  // OpenForAppend wrote the header
  auto ship = [&] {  // each new frame in one write(), like the collector
    const std::vector<uint8_t>& bytes = trace.bytes();
    const std::vector<size_t>& offsets = trace.frame_offsets();
    for (size_t i = 0; i < offsets.size(); ++i) {
      if (offsets[i] < written) continue;
      const size_t end = i + 1 < offsets.size() ? offsets[i + 1] : bytes.size();
      int e = 0;
      gpscope::format::AppendFrame(fd, bytes.data() + offsets[i], end - offsets[i], &e);
      written = end;
    }
  };
  process.WriteHeader();
  ship();

  // The control channel runs unless GPSCOPE_CONTROL=0, standby or not, as
  // in the collector.
  std::unique_ptr<ic::ControlChannel> channel;
  const ic::ControlConfig control = ic::ParseControlConfig(&Env, &problems);
  if (control.enabled && Env("FAKE_APP_SOCKET_PID") != nullptr) {
    ic::ControlChannel::Options options;
    options.dir = ic::ControlDirCandidates(&Env, geteuid())[0];
    options.pid = static_cast<pid_t>(atoi(Env("FAKE_APP_SOCKET_PID")));
    channel = std::make_unique<ic::ControlChannel>(&app, options);
    std::string error;
    if (!channel->Start(&error)) fprintf(stderr, "gpscope: %s\n", error.c_str());
  } else if (control.enabled) {
    std::vector<std::string> refused;
    std::string error;
    channel = ic::StartControlChannel(&app, ic::ControlDirCandidates(&Env, geteuid()), &refused,
                                      &error);
    for (const std::string& r : refused) fprintf(stderr, "gpscope: %s\n", r.c_str());
    if (channel == nullptr) fprintf(stderr, "gpscope: %s\n", error.c_str());
  }
  for (const std::string& p : problems) fprintf(stderr, "gpscope: %s\n", p.c_str());
  {
    std::lock_guard<std::mutex> lock(app.mu);
    app.Apply(app.window.Start(NowNs()));
  }
  // SIGTERM ends the run cleanly (end chunk), like the collector's handler.
  static volatile sig_atomic_t stop = 0;
  signal(SIGTERM, [](int) { stop = 1; });
  const uint64_t t0 = NowNs();
  uint64_t next_batch_ns = t0, start_ns = 1'000'000'000;
  while (!stop && NowNs() - t0 < run_ms * 1'000'000) {
    {
      std::lock_guard<std::mutex> lock(app.mu);
      app.Apply(app.window.OnTick(NowNs()));
      if (NowNs() >= next_batch_ns) {
        next_batch_ns += every_ms * 1'000'000;
        if (app.window.tracing()) {
          for (int k = 0; k < per_batch; ++k) {
            process.AddKernel(start_ns, 5'000, "fake_kernel");
            start_ns += 10'000;
          }
          app.events += static_cast<uint64_t>(per_batch);
          app.window_kernels += static_cast<uint64_t>(per_batch);
          process.Flush();
          ship();
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (channel) channel->Stop();
  process.WriteEnd();
  ship();
  std::lock_guard<std::mutex> lock(app.mu);
  if (app.window.tracing()) app.closed_windows.push_back(app.window_kernels);
  std::ofstream windows(dir + "/windows.txt", std::ios::app);
  for (uint64_t n : app.closed_windows) windows << "kernels " << n << "\n";
  return exit_code;
}
