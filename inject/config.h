// inject/config.h: GPSCOPE_* environment variables -> a validated Config.
//
// Cold path, runs once in InitializeInjection. A bad value never stops the
// application: it gets one clear stderr line naming the variable and the
// default is used instead (the parser and its message: common/env_values.h).
// CUDA-free, so it is unit-tested without a GPU.
//
//   GPSCOPE_ENABLE            1|0                  default 1
//   GPSCOPE_OUTPUT            directory            default ./gpscope-out
//   GPSCOPE_FILE_MODE         node|process         default node (one file per node)
//   GPSCOPE_FILE_PERMISSIONS  octal, e.g. 0600     default 0640: the trace files' permission
//                             bits (before the umask); owner rw required, no execute bits,
//                             never writable by others (docs/security.md)
//   GPSCOPE_JOB               job id for file names and the trace identity
//   GPSCOPE_OPEN_AT           context|start        default context: the trace file is
//                             created at the process's first CUDA context, so a
//                             process that only initializes CUDA (torchrun's agent)
//                             leaves none; start: at CUDA initialization
//   GPSCOPE_FLUSH_INTERVAL_MS 100..60000           default 2000
//   GPSCOPE_BUFFER_KB         64..65536            default 4096 (a CUPTI buffer while few are
//                             held; 256 KiB ones for more threads: inject/buffer_pool.h)
//   GPSCOPE_MAX_BUFFER_MB     4..4096              default 64 (all CUPTI buffers)
//   GPSCOPE_API               1|0                  default 1 (runtime/driver call records)
//   GPSCOPE_API_SOURCE        activity|callback    default activity: those records from
//                             CUPTI's RUNTIME/DRIVER activity kinds; callback: from the
//                             API callbacks gpscope holds anyway (inject/stack_capture.h;
//                             cheaper per call), activity when the callbacks are unavailable
//   GPSCOPE_NVTX              1|0                  default 1
//   GPSCOPE_SYNC              1|0                  default 1: CUPTI's SYNCHRONIZATION records
//                             (each sync's stream or event, cudaStreamWaitEvent); 0 leaves
//                             the kind off: the API rows still hold every sync call, and the
//                             kind costs ~1.4 us per PyTorch eager op (bench/RESULTS.md, session 14)
//   GPSCOPE_DETACH            1|0                  default 1: between capture windows (duty
//                             cycle, attach, a delayed window's end) CUPTI is detached
//                             (cuptiFinalize) and attached again at the next window: kinds
//                             switched off keep most of their cost (bench/RESULTS.md,
//                             session 15); 0 keeps CUPTI attached
//   GPSCOPE_EXIT_TIMEOUT_MS   100..60000           default 4000
//   GPSCOPE_CUPTI_MODE        hold|yield           default hold (see inject/collector.h)
//   GPSCOPE_ZSTD_LEVEL        1..19                default 1
//   GPSCOPE_LOG_LEVEL         error|warning|info|debug  default warning
//   GPSCOPE_CUPTI_PATH        path to libcupti.so  default: search (see cupti_loader.h)
//   GPSCOPE_METRICS           1|0|LIST             default 1: every source; LIST picks
//                             sources from nvml,gpm,processes,host (e.g. "nvml,host");
//                             default 0 with GPSCOPE_CUPTI_MODE=yield (see collector.h)
//   GPSCOPE_METRICS_INTERVAL_MS 10..1000           default 100
//   GPSCOPE_NVML_PATH         path to libnvidia-ml default: libnvidia-ml.so.1
//   GPSCOPE_STACKS            1|0|python|native    default 1: call-site stacks at CUDA calls
//                             (inject/stacks/stack_settings.h, docs/stacks.md)
//   GPSCOPE_STACK_SAMPLE_MS   0..60000             default 1: time-based launch samples
// The capture window's settings (GPSCOPE_STANDBY, GPSCOPE_CAPTURE_*,
// GPSCOPE_DUTY=ON/PERIOD: the always-on duty cycle, e.g. 2s/60s) are parsed
// by common/control/capture_window.h (the launcher checks them the same way)
// and written into the header with these.
// (The overhead-diagnosis switches, GPSCOPE_DIAG_*, are no settings: only
// bench and test builds read them, inject/diag_switches.h.)
#ifndef GPSCOPE_INJECT_CONFIG_H_
#define GPSCOPE_INJECT_CONFIG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/env_values.h"
#include "common/identity.h"
#include "common/raw_log.h"
#include "inject/stacks/stack_settings.h"

namespace gpscope::inject {

using common::FileMode;  // GPSCOPE_FILE_MODE (it names the trace file: common/identity.h)
using common::GetEnvFn;
enum class CuptiMode { kHold, kYield };
enum class ApiSource { kActivity, kCallback };  // GPSCOPE_API_SOURCE

struct Config {
  bool enabled = true;
  std::string output_dir = "./gpscope-out";
  FileMode file_mode = FileMode::kNode;
  uint32_t file_permissions = 0640;  // GPSCOPE_FILE_PERMISSIONS
  bool open_at_context = true;  // GPSCOPE_OPEN_AT=context
  std::string job;
  uint32_t flush_interval_ms = 2000;
  uint32_t buffer_kb = 4096;
  uint32_t max_buffer_mb = 64;
  bool api_records = true;
  ApiSource api_source = ApiSource::kActivity;
  bool nvtx = true;
  bool sync_records = true;  // GPSCOPE_SYNC
  bool detach = true;        // GPSCOPE_DETACH
  uint32_t exit_timeout_ms = 4000;
  CuptiMode cupti_mode = CuptiMode::kHold;
  int zstd_level = 1;
  common::LogLevel log_level = common::LogLevel::kWarning;
  std::string cupti_path;
  bool metrics = true;  // any source on
  // Metric sources (GPSCOPE_METRICS): device readings, GPM counters (need
  // nvml), per-process GPU use (need nvml), this process and the host.
  bool metrics_nvml = true;
  bool metrics_gpm = true;
  bool metrics_processes = true;
  bool metrics_host = true;
  bool metrics_set = false;  // GPSCOPE_METRICS was given
  uint32_t metrics_interval_ms = 100;
  std::string nvml_path;
  stacks::StackSettings stacks;  // GPSCOPE_STACKS, GPSCOPE_STACK_SAMPLE_MS

  // Every effective setting as (GPSCOPE_NAME, value), for the trace header.
  std::vector<std::pair<std::string, std::string>> AsKeyValues() const;
};

// Parses the environment. Each problem is appended to *problems as one line
// ("GPSCOPE_BUFFER_KB='abc' is not a number in 64..65536; using 4096").
Config ParseConfig(GetEnvFn get_env, std::vector<std::string>* problems);

// GPSCOPE_METRICS as it takes effect: "1", "0" or the list of sources.
std::string MetricSourcesText(const Config& c);

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CONFIG_H_
