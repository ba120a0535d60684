// tools/monitor/monitor.h: the node monitor (`gpscope monitor`,
// `gpscope-monitor`): samples every GPU of the node and the processes using
// them, with no injection, through the same Sampler as the collector
// (metrics/sampler.h); writes the trace format to rotating per-node
// files (trace_files.h) and serves the latest values to Prometheus
// (exposition.h, http_server.h).
//
//   return gpscope::monitor::RunMonitor({"--output", "/var/lib/gpscope",
//                                        "--interval-ms", "1000"}, std::cout, std::cerr);
//
// Failures of the GPU side never stop it: NVML missing at start, a GPU
// whose every reading fails (reset, fallen off the bus, driver reloaded)
// make the monitor drop its GPU sampler, log one line and initialize NVML
// again with exponential backoff (1 s doubling to 60 s), recording the gap
// in the trace (a CapabilityNotice, then a LostInterval). Host metrics go on
// meanwhile. Repeated failures are logged once per distinct reason.
//
// With --traces DIR it also follows the trace files that collectors write
// there and summarizes each capture window that closes (the always-on duty
// cycle, GPSCOPE_DUTY: window_tracker.h), with the analyzer's own summary
// analyses; the summaries go into the monitor's trace (WindowSummary) and
// onto /metrics as gpscope_window_* gauges (exposition.h WindowGauges).
//
// Thread model: RunMonitor() runs the sampling loop on the calling thread:
// sampling, file writing and logging all happen there. It blocks SIGTERM
// and SIGINT on that thread and waits for them with sigtimedwait() between
// samples, so call it from the main thread before any other thread exists
// (threads created earlier would keep the signals unblocked and take them).
// The HTTP server runs on one more thread (all signals blocked) and reads
// only the MetricStore. With --traces, a window thread (signals blocked)
// reads the traces and analyses closed windows; it hands summaries and log
// lines to the sampling thread through one mutex-guarded queue, which the
// sampling thread drains every round (it alone writes the file, the store
// and the log), so an analysis never delays a sample. A driver call that hangs blocks the sampling loop
// (not the HTTP thread) until it returns.
#ifndef GPSCOPE_TOOLS_MONITOR_MONITOR_H_
#define GPSCOPE_TOOLS_MONITOR_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/monitor/trace_files.h"

namespace gpscope::monitor {

struct MonitorOptions {
  std::string output_dir = "./gpscope-out";
  uint32_t interval_ms = 1000;  // kMinIntervalMs..kMaxIntervalMs
  FileLimits limits{64ull << 20, 3600ull * 1000000000ull, 0, 2048ull << 20};
  std::string listen = "127.0.0.1:9464";  // "none": no HTTP server
  double duration_s = 0;                  // 0: until SIGTERM/SIGINT
  std::string replay_path;                // non-empty: ReplayBackend (no GPU)
  std::string nvml_library;               // "": libnvidia-ml.so.1
  int zstd_level = 3;
  // --traces: directories the collectors write to (their GPSCOPE_OUTPUT);
  // each closed capture window there is summarized (window_tracker.h).
  // Empty: off.
  std::vector<std::string> trace_dirs;
  uint64_t window_ttl_ns = 600ull * 1000000000ull;  // --window-ttl
  uint64_t window_max_events = 2000000;              // --window-max-events

  // Not on the command line: tests shorten these.
  uint32_t flush_interval_ms = 1000;
  uint32_t retry_initial_ms = 1000;
  uint32_t retry_max_ms = 60000;
  uint32_t failed_rounds_before_reinit = 3;
  uint32_t max_gpu_processes = 256;  // (GPU, pid) pairs per sampler before it is renewed
  const std::atomic<bool>* stop = nullptr;          // checked every 50 ms when set
  std::function<void(uint16_t port)> on_listening;  // called on the sampling thread
  std::string hostname;                             // "": gethostname()
  uint32_t window_poll_ms = 1000;       // how often the window thread reads the traces
  uint64_t window_settle_ns = 2000000000ull;  // WindowTrackerOptions::settle_ns
};

inline constexpr uint32_t kMinIntervalMs = 100;
inline constexpr uint32_t kMaxIntervalMs = 60000;

// What a run did; RunMonitor fills *stats when given.
struct MonitorStats {
  uint64_t rounds = 0;
  uint64_t gpu_init_attempts = 0;
  uint64_t gpu_init_failures = 0;
  uint64_t gpu_losses = 0;     // GPU sampler dropped after failing readings
  uint64_t gpu_renewals = 0;   // GPU sampler renewed to make room for processes
  uint64_t log_lines = 0;      // lines written to err
  uint64_t files_opened = 0;
  uint64_t files_deleted = 0;
  uint64_t records_dropped = 0;
  uint64_t scrapes = 0;
  uint64_t windows_summarized = 0;  // --traces: window summaries written
  uint64_t trace_files_refused = 0;
  uint16_t http_port = 0;
  int stop_signal = 0;
};

// Parses the command line (args exclude the program name). Returns 0 with
// *options filled, 2 with one line on err for bad usage, or -1 after
// printing --help to out.
int ParseMonitorArgs(const std::vector<std::string>& args, MonitorOptions* options,
                     std::ostream& out, std::ostream& err);

// The monitor with parsed options. Exit status: 0 after a clean stop
// (signal or --duration), 1 when it cannot start (output directory, listen
// address).
int RunMonitorWithOptions(const MonitorOptions& options, std::ostream& out, std::ostream& err,
               MonitorStats* stats = nullptr);

// The command: parse, then run. Exit status 2 for bad usage.
int RunMonitor(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Values such as "90", "90s", "15m", "1h" in ns; false for anything else.
bool ParseDurationNs(const std::string& text, uint64_t* ns);
// --retention: "24" (files), "2048MB" / "2GB" (total size), "24,2048MB", or
// "none". False for anything else.
bool ParseRetention(const std::string& text, uint32_t* max_files, uint64_t* max_total_bytes);

}  // namespace gpscope::monitor

#endif  // GPSCOPE_TOOLS_MONITOR_MONITOR_H_
