// tools/monitor/monitor.cc: see monitor.h.
#include "tools/monitor/monitor.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "common/env_values.h"
#include "common/identity.h"
#include "common/posix.h"
#include "common/process_header.h"
#include "common/safe_text.h"
#include "metrics/host_stats.h"
#include "metrics/nvml_backend.h"
#include "metrics/replay_backend.h"
#include "metrics/sampler.h"
#include "proto/enums.h"
#include "proto/framing.h"
#include "proto/metric_names.h"
#include "tools/monitor/exposition.h"
#include "tools/monitor/http_server.h"
#include "tools/monitor/window_tracker.h"

#include "gpscope_version.h"  // GPSCOPE_VERSION, from git describe (cmake/Version.cmake)

namespace gpscope::monitor {
namespace {

namespace gm = gpscope::metrics;

constexpr char kUsage[] =
    "usage: gpscope-monitor [OPTIONS]\n"
    "\n"
    "Samples every GPU of this node and the processes using them (NVML + GPM, no\n"
    "injection), writes rotating gpscope trace files and serves /metrics to Prometheus.\n"
    "\n"
    "  --output DIR          where trace files go (default ./gpscope-out)\n"
    "  --interval-ms N       sampling interval, 100..60000 (default 1000)\n"
    "  --max-file-mb N       rotate before a file would exceed N MiB (default 64; >= 0.1)\n"
    "  --max-file-age T      rotate files older than T: 90s, 15m, 1h (default 1h; >= 1s)\n"
    "  --retention R         keep at most R: a file count (24), a total size (2048MB,\n"
    "                        2GB), both (24,2048MB) or none (default 2048MB)\n"
    "  --listen ADDR:PORT    Prometheus endpoint (default 127.0.0.1:9464; 'none' = off)\n"
    "  --duration S          stop after S seconds (default: run until SIGTERM/SIGINT)\n"
    "  --replay FILE         replay recorded NVML readings instead of NVML (no GPU needed)\n"
    "  --nvml-library PATH   NVML library to load (default libnvidia-ml.so.1)\n"
    "  --zstd-level N        compression level 1..19 (default 3)\n"
    "  --traces DIR          also follow the traces collectors write to DIR (their\n"
    "                        GPSCOPE_OUTPUT; repeatable) and summarize each capture window\n"
    "                        that closes (GPSCOPE_DUTY=2s/60s): gpscope_window_* on /metrics,\n"
    "                        WindowSummary records in the trace (default: off)\n"
    "  --window-ttl T        drop the window series of a process silent for T (default 10m)\n"
    "  --window-max-events N analyse at most N events of a window (default 2000000)\n"
    "  --version             print the version and exit\n"
    "\n"
    "Exit status: 0 stopped cleanly, 1 could not start, 2 bad usage.\n";

// Flag values are plain digits (at most 18), as the GPSCOPE_* variables are.
bool ParseUint(const std::string& s, uint64_t* out) {
  return s.find('\0') == std::string::npos &&
         common::ParseWholeNumber(s.c_str(), 0, 999999999999999999ull, out);
}

bool ParseNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(s.c_str(), &end);
  return errno == 0 && end == s.c_str() + s.size() && std::isfinite(*out);
}

std::string Seconds(uint64_t ms) {
  char buf[32];
  if (ms % 1000 == 0) {
    std::snprintf(buf, sizeof(buf), "%llu s", static_cast<unsigned long long>(ms / 1000));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ms) / 1000);
  }
  return buf;
}

// The job a GPU process belongs to, from its environment (launcher variables,
// as the collector reads its own). Sampling thread only: ParseLauncherEnv
// takes a plain function pointer, so the environment is passed through a
// file-level pointer that only this thread sets.
const std::map<std::string, std::string>* g_env_for_lookup = nullptr;

std::string JobOfProcess(uint32_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%u/environ", pid);
  const std::map<std::string, std::string> env =
      common::ParseEnvironBlock(common::ReadFileText(path, 1 << 20));
  common::ProcessIdentity id;
  g_env_for_lookup = &env;
  common::ParseLauncherEnv(
      +[](const char* name) -> const char* {
        auto it = g_env_for_lookup->find(name);
        return it == g_env_for_lookup->end() ? nullptr : it->second.c_str();
      },
      &id);
  g_env_for_lookup = nullptr;
  return id.job_id;
}

// ------------------------------------------------------------------ monitor --

class Monitor : public FileStarter {
 public:
  Monitor(const MonitorOptions& options, std::ostream& err)
      : options_(options), err_(err), store_(2) {}

  int Run(MonitorStats* stats);
  void OnFileStart(format::ChunkWriter& writer, uint64_t process_uid) override;

 private:
  // One trace series (an id in the output files), made from a Sampler's
  // MetricDef and owned by its generation. Output ids count up from 1 over
  // the monitor's life, so a renewed GPU sampler never reuses an id within
  // a file.
  struct Series {
    uint32_t out_id = 0;  // 0: no MetricDef with this index
    std::string name, unit, label;
    uint32_t scope = 0, device_id = 0, pid = 0, thread_id = 0;
    std::vector<uint32_t> expo;  // store handles; [1..] = clock event bits
  };
  struct Notice {
    std::string component;
    bool available;
    std::string reason;
  };
  struct Generation;
  // The MetricSink of one Sampler. Sampling thread.
  class Sink : public gm::MetricSink {
   public:
    Sink(Monitor* m, Generation* g) : m_(m), g_(g) {}
    bool OnDescriptor(const gm::MetricDef& def) override;
    bool OnCapability(const gm::CapabilityDef& cap) override;
    void OnSample(const format::MetricSample& sample) override;

   private:
    Monitor* m_;
    Generation* g_;
  };
  // One Sampler's life: the host sampler lives for the whole run; a GPU
  // sampler is replaced after a loss (and to make room for new processes).
  struct Generation {
    uint32_t first_metric_id = 1;
    bool gpu = false;
    bool initializing = true;  // notices are held back until Init decides
    std::unique_ptr<gm::Sampler> sampler;
    std::unique_ptr<Sink> sink;
    std::vector<Series> series;  // by MetricDef index (id - first_metric_id)
    std::vector<Notice> notices;
    std::vector<uint32_t> info_handles;  // gpscope_gpu_info
    uint32_t device_values[gm::kMaxDevices] = {};
    bool device_has_series[gm::kMaxDevices] = {};
    uint32_t failed_rounds[gm::kMaxDevices] = {};
    uint64_t failures_seen = 0;
    std::set<uint64_t> process_pairs;      // (device << 32 | pid) defined so far
    std::map<uint32_t, std::string> jobs;  // pid -> job id ("" = unknown)
    std::string last_failure;
  };

  void Log(const std::string& line) {
    // One line, whatever a path or a process's value in it holds.
    err_ << "gpscope-monitor: " << common::SanitizeText(line, 4096) << "\n";
    err_.flush();
    ++stats_.log_lines;
  }
  std::unique_ptr<Generation> NewGeneration(bool gpu);
  void DropGeneration(std::unique_ptr<Generation>& gen);
  void TryGpuInit(uint64_t now_mono);
  void GpuLost(const std::string& reason, uint64_t now_mono);
  void CheckGpuHealth(uint64_t now_mono);
  void WriteNotice(const Notice& n);
  // The GPUs of a generation as trace records (they borrow its text).
  static std::vector<format::DeviceRecord> DeviceRecords(const Generation& gen);
  void SetupMonitorSeries();
  void StageMonitorSeries();
  std::string BackendText() const;
  // --traces: the window thread's loop, and what the sampling thread does
  // with its results every round.
  void StartWindows();
  void StopWindows();
  void WindowLoop();
  void AppendLocked(WindowTracker::Result r);
  void DrainWindows();
  void WriteWindowSummary(const analyses::WindowSummary& s);

  MonitorOptions options_;
  std::ostream& err_;
  MetricStore store_;
  MonitorStats stats_;
  std::unique_ptr<RotatingTraceWriter> files_;
  std::string hostname_;
  common::ProcessIdentity self_;
  uint64_t start_realtime_ns_ = 0;

  uint32_t next_out_id_ = 1;
  std::unique_ptr<Generation> host_;
  std::unique_ptr<Generation> gpu_;
  Generation* initializing_gpu_ = nullptr;  // during its Init: a rotation must repeat its series
  uint32_t next_first_metric_id_ = 1;
  std::vector<Notice> monitor_notices_;  // "monitor.backend" when replaying

  // GPU retry state.
  uint64_t next_gpu_try_mono_ = 0;
  uint64_t backoff_ms_ = 0;
  uint64_t gpu_up_since_mono_ = 0;
  uint64_t gpu_down_since_ns_ = 0;  // realtime; 0 = not down (or never up)
  bool was_up_ = false;
  std::string last_init_failure_;
  uint32_t init_failures_in_streak_ = 0;
  uint32_t losses_logged_ = 0;
  uint32_t max_devices_seen_ = 0;
  uint64_t gpu_read_failures_total_ = 0;

  // Monitor's own series (store handles).
  uint32_t h_rounds_ = 0, h_up_ = 0, h_losses_ = 0, h_init_failures_ = 0, h_read_failures_ = 0;
  uint32_t h_files_ = 0, h_write_errors_ = 0, h_bytes_ = 0, h_dropped_ = 0, h_scrapes_ = 0;
  uint32_t h_info_ = 0, h_windows_ = 0;

  // --traces. tracker_ belongs to the window thread while it runs, then to
  // the sampling thread (the last Poll after the join).
  std::unique_ptr<WindowTracker> tracker_;
  std::thread window_thread_;
  std::mutex window_mu_;
  std::condition_variable window_cv_;
  bool window_stop_ = false;               // guarded by window_mu_
  WindowTracker::Result window_pending_;   // guarded by window_mu_
  WindowGauges window_gauges_{&store_};    // sampling thread
};

bool Monitor::Sink::OnDescriptor(const gm::MetricDef& def) {
  Series s;
  s.out_id = m_->next_out_id_++;
  s.name = def.name;
  s.unit = def.unit;
  s.label = def.label;
  s.scope = def.scope;
  s.device_id = def.device_id;
  s.pid = def.pid;
  s.thread_id = def.thread_id;

  // Prometheus labels.
  FamilySpec family;
  if (MapTraceMetric(s.name, s.scope, &family)) {
    Labels labels;
    const bool on_gpu = g_->gpu && (s.scope == gm::kScopeDevice || s.scope == gm::kScopeProcess);
    std::string uuid = s.scope == gm::kScopeDevice ? s.label : "";
    if (on_gpu && s.scope == gm::kScopeProcess) {
      for (uint32_t d = 0; d < g_->sampler->gpu_device_count(); ++d) {
        if (g_->sampler->gpu_device(d).cuda_ordinal == s.device_id) {
          uuid = g_->sampler->gpu_device(d).uuid;
        }
      }
    }
    if (on_gpu) {
      labels.emplace_back("gpu", std::to_string(s.device_id));
      labels.emplace_back("uuid", uuid);
    }
    if (on_gpu && s.scope == gm::kScopeProcess) {
      // Read every process_interval_ms, not every round: stale only after
      // two of those (at 100 ms they would vanish between reads).
      const uint32_t every = g_->sampler->options().process_interval_ms;
      const uint32_t interval = std::max<uint32_t>(1, m_->options_.interval_ms);
      family.stale_rounds = 2 * std::max<uint32_t>(1, (every + interval - 1) / interval);
      labels.emplace_back("pid", std::to_string(s.pid));
      labels.emplace_back("name", s.label);
      // Replayed pids are not this host's processes: no /proc lookup.
      if (m_->options_.replay_path.empty()) {
        auto [it, inserted] = g_->jobs.try_emplace(s.pid);
        if (inserted) it->second = JobOfProcess(s.pid);
        if (!it->second.empty()) labels.emplace_back("job", it->second);
      }
      g_->process_pairs.insert((uint64_t{s.device_id} << 32) | s.pid);
    }
    s.expo.push_back(m_->store_.AddSeries(family, labels));
    if (s.name == metric_names::kNvmlClockEventReasons) {
      for (const ClockEventBit& bit : kClockEventBits) {
        Labels l = labels;
        l.emplace_back("reason", bit.reason);
        s.expo.push_back(m_->store_.AddSeries(ClockEventActiveFamily(), l));
      }
    }
  }
  if (g_->gpu && s.scope == gm::kScopeDevice && s.device_id < gm::kMaxDevices) {
    g_->device_has_series[s.device_id] = true;
  }
  const size_t index = def.id - g_->first_metric_id;
  if (g_->series.size() <= index) g_->series.resize(index + 1);
  g_->series[index] = std::move(s);
  const Series& added = g_->series[index];
  if (format::ChunkWriter* w = m_->files_->Room()) {
    w->AddMetricDescriptor(format::MetricDescriptorRecord{
        added.out_id, {added.name.data(), added.name.size()}, {added.unit.data(), added.unit.size()},
        added.scope, added.device_id, added.pid, added.thread_id,
        {added.label.data(), added.label.size()}});
  }
  return true;  // always taken: the sampler never holds samples back
}

bool Monitor::Sink::OnCapability(const gm::CapabilityDef& cap) {
  g_->notices.push_back(Notice{cap.component, cap.available, cap.reason});
  // The Sampler notes a metric's first run-time failure as "GPU n: failed at
  // run time (CAUSE); ...": keep CAUSE for the log line about a lost GPU.
  const std::string reason = cap.reason;
  const std::string marker = "failed at run time (";
  const size_t at = reason.find(marker);
  if (!cap.available && at != std::string::npos) {
    const size_t from = at + marker.size();
    const size_t to = reason.find(");", from);
    g_->last_failure = reason.substr(from, to == std::string::npos ? std::string::npos : to - from);
  }
  if (!g_->initializing) m_->WriteNotice(g_->notices.back());
  return true;
}

void Monitor::Sink::OnSample(const format::MetricSample& sample) {
  const size_t index = sample.metric_id - g_->first_metric_id;
  if (index >= g_->series.size() || g_->series[index].out_id == 0) return;
  const Series& s = g_->series[index];
  if (format::ChunkWriter* w = m_->files_->Room()) {
    w->AddMetricSample(format::MetricSample{sample.timestamp_ns, s.out_id, sample.value});
  }
  if (!s.expo.empty()) {
    m_->store_.Stage(s.expo[0], sample.value);
    if (s.expo.size() > 1) {
      const uint64_t bits = static_cast<uint64_t>(sample.value);
      for (size_t i = 1; i < s.expo.size(); ++i) {
        m_->store_.Stage(s.expo[i], (bits & kClockEventBits[i - 1].mask) != 0 ? 1 : 0);
      }
    }
  }
  if (g_->gpu && s.scope == gm::kScopeDevice && s.device_id < gm::kMaxDevices) {
    ++g_->device_values[s.device_id];
  }
}

std::string Monitor::BackendText() const {
  if (!options_.replay_path.empty()) {
    return "GPU readings REPLAYED from " + options_.replay_path + " (no GPU, no NVML)";
  }
  return "NVML (" + (options_.nvml_library.empty() ? std::string("libnvidia-ml.so.1")
                                                   : options_.nvml_library) + ")";
}

std::vector<format::DeviceRecord> Monitor::DeviceRecords(const Generation& gen) {
  std::vector<format::DeviceRecord> out;
  for (uint32_t d = 0; d < gen.sampler->gpu_device_count(); ++d) {
    const gm::GpuDeviceInfo& info = gen.sampler->gpu_device(d);
    format::DeviceRecord r{};
    r.device_id = info.cuda_ordinal;
    r.name = format::MakeStringRef(info.name);
    r.uuid = format::MakeStringRef(info.uuid);
    r.pci_bus_id = format::MakeStringRef(info.pci_bus_id);
    out.push_back(r);
  }
  return out;
}

void Monitor::WriteNotice(const Notice& n) {
  if (format::ChunkWriter* w = files_->Room()) {
    w->AddCapability(format::CapabilityRecord{{n.component.data(), n.component.size()},
                                              n.available,
                                              {n.reason.data(), n.reason.size()}});
  }
}

std::unique_ptr<Monitor::Generation> Monitor::NewGeneration(bool gpu) {
  auto gen = std::make_unique<Generation>();
  gen->gpu = gpu;
  // Each sampler's ids get their own block, so a sample always maps back to
  // the right generation's table.
  gen->first_metric_id = next_first_metric_id_;
  next_first_metric_id_ += 1u << 16;
  if (next_first_metric_id_ > (1u << 31)) next_first_metric_id_ = (1u << 16) + 1;  // not the host's
  gm::SamplerOptions so;
  so.first_metric_id = gen->first_metric_id;
  so.gpm = true;
  so.gpu_processes = true;
  so.max_processes_per_device = 64;
  so.max_gpu_processes = options_.max_gpu_processes;
  so.threads = false;
  so.self_cost = false;  // host.process_cpu_* already is the monitor's whole cost
  std::unique_ptr<gm::GpuBackend> backend;
  std::unique_ptr<gm::HostSource> host;
  if (gpu) {
    if (!options_.replay_path.empty()) {
      backend = gm::ReplayBackend::FromFile(options_.replay_path.c_str(), /*loop=*/true);
    } else {
      gm::NvmlBackend::Options no;
      if (!options_.nvml_library.empty()) no.library = options_.nvml_library.c_str();
      backend = std::make_unique<gm::NvmlBackend>(no);
    }
  } else {
    host = std::make_unique<gm::ProcHostSource>();
  }
  gen->sampler = std::make_unique<gm::Sampler>(std::move(backend), std::move(host), so);
  gen->sink = std::make_unique<Sink>(this, gen.get());
  return gen;
}

void Monitor::DropGeneration(std::unique_ptr<Generation>& gen) {
  if (gen == nullptr) return;
  for (const Series& s : gen->series) {
    for (uint32_t h : s.expo) store_.RemoveSeries(h);
  }
  for (uint32_t h : gen->info_handles) store_.RemoveSeries(h);
  gen.reset();  // NvmlBackend's destructor shuts NVML down
}

void Monitor::TryGpuInit(uint64_t now_mono) {
  ++stats_.gpu_init_attempts;
  std::unique_ptr<Generation> gen = NewGeneration(true);
  initializing_gpu_ = gen.get();
  const bool ok = gen->sampler->Init(gen->sink.get());
  initializing_gpu_ = nullptr;
  gen->initializing = false;
  if (!ok) {
    ++stats_.gpu_init_failures;
    std::string reason = "unknown";
    for (const Notice& n : gen->notices) {
      if (n.component == metric_names::kCapNvml && !n.available) reason = n.reason;
    }
    DropGeneration(gen);
    const uint64_t delay_ms = backoff_ms_ == 0 ? options_.retry_initial_ms : backoff_ms_;
    backoff_ms_ = std::min<uint64_t>(delay_ms * 2, options_.retry_max_ms);
    next_gpu_try_mono_ = now_mono + delay_ms * 1000000ull;
    ++init_failures_in_streak_;
    if (reason != last_init_failure_) {
      Log("GPU sampling unavailable: " + reason + "; retrying in " + Seconds(delay_ms) +
          ", backing off to every " + Seconds(options_.retry_max_ms) +
          " (logged again only if the reason changes)");
      const Notice n{metric_names::kCapNvml, false, reason + " (the monitor retries with backoff)"};
      WriteNotice(n);
      last_init_failure_ = reason;
    }
    return;
  }
  // Up.
  const uint32_t devices = gen->sampler->gpu_device_count();
  std::string what;
  for (const Notice& n : gen->notices) {
    if (n.component == metric_names::kCapNvml && n.available) what = n.reason;
  }
  if (!was_up_) {
    Log("GPU sampling up: " + what + "; " + BackendText());
  } else {
    Log("GPU sampling back after " + std::to_string(init_failures_in_streak_ + 1) +
        " attempt(s): " + what);
  }
  if (was_up_ && devices < max_devices_seen_) {
    Log(std::to_string(max_devices_seen_ - devices) + " of " + std::to_string(max_devices_seen_) +
        " GPUs seen before are missing now");
  }
  max_devices_seen_ = std::max(max_devices_seen_, devices);
  if (format::ChunkWriter* w = files_->Room()) {
    for (const format::DeviceRecord& r : DeviceRecords(*gen)) w->AddDevice(r);
    if (gpu_down_since_ns_ != 0) {
      static constexpr char kDetail[] = "GPU sampling was down (NVML failed); see the notices";
      w->AddLostInterval(format::LostIntervalRecord{gpu_down_since_ns_, common::ClockNs(CLOCK_REALTIME), 0,
                                                    {kDetail, sizeof(kDetail) - 1}});
    }
  }
  for (const Notice& n : gen->notices) WriteNotice(n);
  for (uint32_t d = 0; d < devices; ++d) {
    const gm::GpuDeviceInfo& info = gen->sampler->gpu_device(d);
    gen->info_handles.push_back(store_.AddSeries(
        FamilySpec{"gpscope_gpu_info", "GPUs the monitor samples (value 1).", MetricType::kGauge,
                   1, false},
        {{"gpu", std::to_string(info.cuda_ordinal)},
         {"uuid", info.uuid},
         {"model", info.name},
         {"pci_bus_id", info.pci_bus_id}}));
  }
  gpu_ = std::move(gen);
  gpu_down_since_ns_ = 0;
  gpu_up_since_mono_ = now_mono;
  init_failures_in_streak_ = 0;
  last_init_failure_.clear();
  was_up_ = true;
}

void Monitor::GpuLost(const std::string& reason, uint64_t now_mono) {
  ++stats_.gpu_losses;
  DropGeneration(gpu_);
  // A GPU that fails again soon after coming back keeps the backoff growing;
  // one that stayed up for 10 backoff maxima starts again at the minimum.
  if (now_mono - gpu_up_since_mono_ > 10ull * options_.retry_max_ms * 1000000ull) backoff_ms_ = 0;
  const uint64_t delay_ms = backoff_ms_ == 0 ? options_.retry_initial_ms : backoff_ms_;
  backoff_ms_ = std::min<uint64_t>(delay_ms * 2, options_.retry_max_ms);
  next_gpu_try_mono_ = now_mono + delay_ms * 1000000ull;
  gpu_down_since_ns_ = common::ClockNs(CLOCK_REALTIME);
  constexpr uint32_t kLoggedLosses = 5;
  if (losses_logged_ < kLoggedLosses) {
    ++losses_logged_;
    Log("GPU sampling lost: " + reason + "; re-initializing NVML in " + Seconds(delay_ms) +
        (losses_logged_ == kLoggedLosses
             ? " (further losses are counted in gpscope_monitor_gpu_losses_total, not logged)"
             : ""));
  }
  WriteNotice(
      Notice{metric_names::kCapNvml, false, "lost: " + reason + "; re-initializing with backoff"});
}

void Monitor::CheckGpuHealth(uint64_t now_mono) {
  Generation& g = *gpu_;
  const uint64_t failures = g.sampler->stats().gpu_read_failures.load(std::memory_order_relaxed);
  const bool failed_more = failures > g.failures_seen;
  gpu_read_failures_total_ += failures - g.failures_seen;
  g.failures_seen = failures;
  std::string lost;
  for (uint32_t d = 0; d < gm::kMaxDevices; ++d) {
    if (!g.device_has_series[d]) continue;
    if (g.device_values[d] == 0 && failed_more) {
      if (++g.failed_rounds[d] >= options_.failed_rounds_before_reinit && lost.empty()) {
        lost = "GPU " + std::to_string(d) + ": every reading failed for " +
               std::to_string(g.failed_rounds[d]) + " samples" +
               (g.last_failure.empty() ? "" : " (" + g.last_failure + ")");
      }
    } else {
      g.failed_rounds[d] = 0;
    }
    g.device_values[d] = 0;
  }
  if (!lost.empty()) {
    GpuLost(lost, now_mono);
    return;
  }
  // The sampler defines (GPU, pid) pairs up to a cap over its life: renew it
  // before new processes would be ignored.
  if (g.process_pairs.size() + 64 >= options_.max_gpu_processes) {
    ++stats_.gpu_renewals;
    Log("renewing the GPU sampler after " + std::to_string(g.process_pairs.size()) +
        " (GPU, process) pairs, to make room for new processes");
    DropGeneration(gpu_);
    was_up_ = false;  // the next "up" line is not a recovery
    TryGpuInit(now_mono);
    was_up_ = true;
  }
  if (losses_logged_ > 0 && now_mono - gpu_up_since_mono_ > 10ull * options_.retry_max_ms * 1000000ull) {
    losses_logged_ = 0;  // up for long: log the next loss again
  }
}

void Monitor::OnFileStart(format::ChunkWriter& w, uint64_t process_uid) {
  (void)process_uid;
  // Header: who wrote this (the monitor, its pid and command line), as the
  // collector writes its own (common/process_header.h).
  common::ProcessHeaderBuilder header(self_);
  header.SetHostname(hostname_);
  header.SetProgram("gpscope-monitor");
  header.AddConfig("mode", "monitor");
  header.AddConfig("interval_ms", std::to_string(options_.interval_ms));
  header.AddConfig("backend", options_.replay_path.empty() ? "nvml" : "replay");
  header.AddConfig("max_file_bytes", std::to_string(options_.limits.max_file_bytes));
  header.AddConfig("max_file_age_s",
                   std::to_string(options_.limits.max_file_age_ns / 1000000000ull));
  header.AddConfig("listen", options_.listen);
  if (!options_.replay_path.empty()) header.AddConfig("replay", options_.replay_path);
  for (const std::string& dir : options_.trace_dirs) header.AddConfig("traces", dir);
  if (gpu_ != nullptr) {
    for (const format::DeviceRecord& d : DeviceRecords(*gpu_)) header.AddDevice(d);
  }
  header.SetClock({0, common::ClockNs(CLOCK_REALTIME), common::ClockNs(CLOCK_MONOTONIC)});
  header.SetStartRealtimeNs(start_realtime_ns_);
  w.WriteHeader(header.Build());

  // What every file must repeat to stand alone: notices and live descriptors.
  auto notice = [&w](const Notice& n) {
    w.AddCapability(format::CapabilityRecord{{n.component.data(), n.component.size()},
                                             n.available,
                                             {n.reason.data(), n.reason.size()}});
  };
  for (const Notice& n : monitor_notices_) notice(n);
  if (host_ != nullptr) {
    for (const Notice& n : host_->notices) notice(n);
  }
  if (gpu_ != nullptr) {
    for (const Notice& n : gpu_->notices) notice(n);
  } else if (!last_init_failure_.empty()) {
    notice(Notice{metric_names::kCapNvml, false,
                  last_init_failure_ + " (the monitor retries with backoff)"});
  }
  for (const Generation* g : {host_.get(), gpu_.get(), initializing_gpu_}) {
    if (g == nullptr) continue;
    for (const Series& s : g->series) {
      if (s.out_id == 0) continue;
      w.AddMetricDescriptor(format::MetricDescriptorRecord{
          s.out_id, {s.name.data(), s.name.size()}, {s.unit.data(), s.unit.size()}, s.scope,
          s.device_id, s.pid, s.thread_id, {s.label.data(), s.label.size()}});
    }
  }
}

// ------------------------------------------------------ window summaries --

void Monitor::StartWindows() {
  if (options_.trace_dirs.empty()) return;
  WindowTrackerOptions o;
  o.dirs = options_.trace_dirs;
  o.max_window_events = options_.window_max_events;
  o.settle_ns = options_.window_settle_ns;
  o.ttl_ns = options_.window_ttl_ns;
  o.uid = geteuid();
  tracker_ = std::make_unique<WindowTracker>(o);
  // Created after RunMonitor blocked SIGTERM/SIGINT: the thread inherits the mask.
  window_thread_ = std::thread([this] { WindowLoop(); });
}

// Window thread: reads and analyses; hands the results over.
void Monitor::WindowLoop() {
  std::unique_lock<std::mutex> lock(window_mu_);
  while (!window_stop_) {
    lock.unlock();
    WindowTracker::Result r =
        tracker_->Poll(common::ClockNs(CLOCK_REALTIME), common::ClockNs(CLOCK_MONOTONIC));
    lock.lock();
    AppendLocked(std::move(r));
    window_cv_.wait_for(lock, std::chrono::milliseconds(options_.window_poll_ms),
                        [this] { return window_stop_; });
  }
}

// With window_mu_ held: a Poll's results join those not yet drained.
void Monitor::AppendLocked(WindowTracker::Result r) {
  auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(window_pending_.summaries, r.summaries);
  append(window_pending_.gone, r.gone);
  append(window_pending_.log, r.log);
}

void Monitor::StopWindows() {
  if (tracker_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    window_stop_ = true;
  }
  window_cv_.notify_all();
  window_thread_.join();
  // What was written until now, read once more on this thread.
  WindowTracker::Result r =
      tracker_->Poll(common::ClockNs(CLOCK_REALTIME), common::ClockNs(CLOCK_MONOTONIC));
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    AppendLocked(std::move(r));
  }
  DrainWindows();
  stats_.trace_files_refused = tracker_->stats().files_refused;
}

// Sampling thread, every round: the window thread's results into the log,
// the trace file and the store.
void Monitor::DrainWindows() {
  if (tracker_ == nullptr) return;
  WindowTracker::Result r;
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    std::swap(r, window_pending_);
  }
  for (const std::string& line : r.log) Log(line);
  for (const analyses::WindowSummary& s : r.summaries) {
    WriteWindowSummary(s);
    window_gauges_.Publish(s);
    ++stats_.windows_summarized;
  }
  for (uint64_t uid : r.gone) window_gauges_.Forget(uid);
}

void Monitor::WriteWindowSummary(const analyses::WindowSummary& s) {
  auto ref = [](const std::string& text) { return format::StringRef{text.data(), text.size()}; };
  std::vector<format::WindowGpuRecord> gpus;
  gpus.reserve(s.gpus.size());
  for (const analyses::WindowGpuSummary& g : s.gpus) {
    gpus.push_back(format::WindowGpuRecord{g.device_id, ref(g.uuid),
                                           g.idle_share, g.busy_share, g.sm_util_pct,
                                           g.sm_util_estimated, g.mem_bw_util_pct,
                                           g.kernel_p50_ns, g.kernel_p95_ns, g.kernels,
                                           g.traced_ns});
  }
  format::WindowSummaryRecord r{};
  r.process_uid = s.process_uid;
  r.pid = s.pid;
  r.hostname = ref(s.hostname);
  r.job_id = ref(s.job_id);
  r.rank = s.rank;
  r.start_realtime_ns = s.start_realtime_ns;
  r.end_realtime_ns = s.end_realtime_ns;
  r.close_reason = ref(s.close_reason);
  r.events = s.events;
  r.events_not_analysed = s.events_not_analysed;
  r.events_dropped = s.events_dropped;
  r.gpus = gpus.data();
  r.gpu_count = gpus.size();
  r.top_rule = ref(s.top_rule);
  r.top_severity = ref(s.top_severity);
  r.top_title = ref(s.top_title);
  r.top_cost_ns = s.top_cost_ns;
  r.top_cost_share = s.top_cost_share;
  r.trace_path = ref(s.trace_path);
  if (format::ChunkWriter* w = files_->Room()) w->AddWindowSummary(r);
}

void Monitor::SetupMonitorSeries() {
  auto counter = [this](const char* name, const char* help) {
    return store_.AddSeries(FamilySpec{name, help, MetricType::kCounter, 1, true}, {});
  };
  h_rounds_ = counter("gpscope_monitor_samples_total", "Sampling rounds done.");
  h_up_ = store_.AddSeries(FamilySpec{"gpscope_monitor_gpu_sampling_up",
                                      "1 while GPU metrics are being read, 0 while NVML is "
                                      "unavailable and being retried.",
                                      MetricType::kGauge, 1, true},
                           {});
  h_losses_ = counter("gpscope_monitor_gpu_losses_total",
                      "Times the GPU sampler was dropped because every reading of a GPU failed.");
  h_init_failures_ = counter("gpscope_monitor_gpu_init_failures_total",
                             "Failed attempts to initialize NVML.");
  h_read_failures_ = counter("gpscope_monitor_gpu_read_failures_total",
                             "Individual GPU metric reads that failed.");
  h_files_ = counter("gpscope_monitor_trace_files_total", "Trace files opened.");
  h_write_errors_ = counter("gpscope_monitor_trace_write_errors_total",
                            "Trace frames that could not be written (disk full, I/O error).");
  h_bytes_ = counter("gpscope_monitor_trace_bytes_total", "Bytes written to trace files.");
  h_dropped_ = counter("gpscope_monitor_trace_records_dropped_total",
                       "Records not written because no trace file could be opened.");
  h_scrapes_ = counter("gpscope_monitor_scrapes_total", "Pages served on /metrics.");
  if (!options_.trace_dirs.empty()) {
    h_windows_ = counter("gpscope_monitor_windows_summarized_total",
                         "Capture windows of traced processes summarized (--traces).");
  }
  h_info_ = store_.AddSeries(
      FamilySpec{"gpscope_monitor_info", "The monitor's version and GPU backend (value 1).",
                 MetricType::kGauge, 1, true},
      {{"version", GPSCOPE_VERSION},
       {"backend", options_.replay_path.empty() ? "nvml" : "replay"}});
}

void Monitor::StageMonitorSeries() {
  store_.Stage(h_rounds_, static_cast<double>(stats_.rounds));
  store_.Stage(h_up_, gpu_ != nullptr ? 1 : 0);
  store_.Stage(h_losses_, static_cast<double>(stats_.gpu_losses));
  store_.Stage(h_init_failures_, static_cast<double>(stats_.gpu_init_failures));
  store_.Stage(h_read_failures_, static_cast<double>(gpu_read_failures_total_));
  store_.Stage(h_files_, static_cast<double>(files_->files_opened()));
  store_.Stage(h_write_errors_, static_cast<double>(files_->frames_failed()));
  store_.Stage(h_bytes_, static_cast<double>(files_->bytes_written()));
  store_.Stage(h_dropped_, static_cast<double>(files_->records_dropped()));
  store_.Stage(h_scrapes_, static_cast<double>(store_.scrapes()));
  store_.Stage(h_info_, 1);
  if (!options_.trace_dirs.empty()) {
    store_.Stage(h_windows_, static_cast<double>(stats_.windows_summarized));
  }
  if (gpu_ != nullptr) {
    for (uint32_t h : gpu_->info_handles) store_.Stage(h, 1);
  }
}

int Monitor::Run(MonitorStats* stats) {
  self_ = common::ReadProcessIdentity();
  hostname_ = options_.hostname.empty() ? self_.hostname : options_.hostname;
  start_realtime_ns_ = common::ClockNs(CLOCK_REALTIME);
  if (!options_.replay_path.empty()) {
    monitor_notices_.push_back(Notice{metric_names::kCapMonitorBackend, true, BackendText()});
  }

  RotatingTraceWriter::Options fo;
  fo.dir = options_.output_dir;
  fo.prefix = MonitorFilePrefix(hostname_);
  fo.limits = options_.limits;
  fo.pid = self_.pid;
  fo.zstd_level = options_.zstd_level;
  files_ = std::make_unique<RotatingTraceWriter>(fo, Clocks::System(), this, &err_);

  // SIGTERM/SIGINT: blocked here (and so in the HTTP thread made below), taken
  // with sigtimedwait() between samples.
  sigset_t stop_set, old_mask;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_set, &old_mask);
  auto finish = [&](int code) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (stats != nullptr) *stats = stats_;
    return code;
  };

  std::string error;
  if (!files_->Open(&error)) {
    Log("cannot write trace files: " + error);
    return finish(1);
  }
  SetupMonitorSeries();
  HttpServer server;
  if (options_.listen != "none") {
    if (!server.Listen(options_.listen, &error)) {
      Log("cannot serve /metrics on " + error + " (choose another with --listen, or --listen none)");
      files_->Close(format::ProcessEndRecord{});
      return finish(1);
    }
    stats_.http_port = server.port();
    server.Start([this](const HttpRequest& req) {
      // HTTP thread: reads only the store.
      if (req.path != "/metrics") {
        return HttpResponse{404, "text/plain; charset=utf-8",
                            "404 Not Found: the monitor serves only /metrics\n"};
      }
      const ExpositionFormat f = NegotiateFormat(req.accept);
      return HttpResponse{200,
                          f == ExpositionFormat::kOpenMetrics ? kOpenMetricsContentType
                                                              : kPrometheusTextContentType,
                          store_.Render(f)};
    });
  }
  std::string traces_text;
  for (const std::string& dir : options_.trace_dirs) {
    traces_text += (traces_text.empty() ? "; summarizing the capture windows of the traces in "
                                        : ", ") + dir;
  }
  Log(std::string("sampling every ") + std::to_string(options_.interval_ms) + " ms into " +
      files_->current_path() +
      (options_.listen != "none"
           ? "; serving http://" + options_.listen.substr(0, options_.listen.rfind(':')) + ":" +
                 std::to_string(server.port()) + "/metrics"
           : "; no HTTP endpoint") +
      (options_.replay_path.empty() ? "" : "; " + BackendText()) + traces_text);
  if (options_.on_listening) options_.on_listening(server.port());

  host_ = NewGeneration(false);
  if (!host_->sampler->Init(host_->sink.get())) {
    Log("host metrics unavailable (cannot read /proc); GPU metrics only");
  }
  host_->initializing = false;
  for (const Notice& n : host_->notices) WriteNotice(n);
  StartWindows();

  const uint64_t interval_ns = uint64_t{options_.interval_ms} * 1000000ull;
  const uint64_t flush_ns = uint64_t{std::max(options_.flush_interval_ms, options_.interval_ms)} *
                            1000000ull;
  const uint64_t start_mono = common::ClockNs(CLOCK_MONOTONIC);
  const uint64_t end_mono =
      options_.duration_s > 0 ? start_mono + static_cast<uint64_t>(options_.duration_s * 1e9)
                              : UINT64_MAX;
  uint64_t next_mono = start_mono;
  uint64_t last_flush_mono = start_mono;
  int signal_number = 0;
  for (;;) {
    uint64_t now = common::ClockNs(CLOCK_MONOTONIC);
    if (gpu_ == nullptr && now >= next_gpu_try_mono_) TryGpuInit(now);

    const uint64_t ts = common::ClockNs(CLOCK_REALTIME);
    ++stats_.rounds;
    host_->sampler->SampleOnce(ts, host_->sink.get());
    if (gpu_ != nullptr) {
      gpu_->sampler->SampleOnce(ts, gpu_->sink.get());
      CheckGpuHealth(common::ClockNs(CLOCK_MONOTONIC));
    }
    DrainWindows();
    StageMonitorSeries();
    store_.Commit();
    files_->MaybeRotateByAge();
    now = common::ClockNs(CLOCK_MONOTONIC);
    if (now - last_flush_mono >= flush_ns) {
      files_->Flush();
      last_flush_mono = now;
    }

    // Wait for the next sample, a signal, the end of --duration or a stop.
    next_mono += interval_ns;
    if (next_mono <= now) next_mono = now + interval_ns;  // fell behind: skip, never burst
    bool stop = false;
    while (!stop) {
      now = common::ClockNs(CLOCK_MONOTONIC);
      if (now >= end_mono || (options_.stop != nullptr && options_.stop->load())) {
        stop = true;
        break;
      }
      if (now >= next_mono) break;
      uint64_t wait_ns = std::min(next_mono, end_mono) - now;
      if (options_.stop != nullptr) wait_ns = std::min<uint64_t>(wait_ns, 50000000ull);
      timespec timeout{static_cast<time_t>(wait_ns / 1000000000ull),
                       static_cast<long>(wait_ns % 1000000000ull)};
      const int sig = sigtimedwait(&stop_set, nullptr, &timeout);
      if (sig > 0) {
        signal_number = sig;
        stop = true;
      }
    }
    if (stop) break;
  }

  server.Stop();
  StopWindows();
  format::ProcessEndRecord end{};
  end.reason = signal_number != 0 ? wire::END_SIGNAL : wire::END_EXIT;
  end.signal = signal_number;
  if (gpu_down_since_ns_ != 0) {
    if (format::ChunkWriter* w = files_->Room()) {
      static constexpr char kDetail[] = "GPU sampling was down (NVML failed) until the end";
      w->AddLostInterval(
          format::LostIntervalRecord{gpu_down_since_ns_, 0, 0, {kDetail, sizeof(kDetail) - 1}});
    }
  }
  const std::string last_path = files_->current_path();
  files_->Close(end);
  stats_.files_opened = files_->files_opened();
  stats_.files_deleted = files_->files_deleted();
  stats_.records_dropped = files_->records_dropped();
  stats_.scrapes = store_.scrapes();
  stats_.stop_signal = signal_number;
  Log(std::string("stopped") +
      (signal_number != 0 ? std::string(" on ") + strsignal(signal_number) : "") + " after " +
      std::to_string(stats_.rounds) + " samples; " + std::to_string(stats_.files_opened) +
      " file(s), the last " + last_path + " (closed cleanly)");
  DropGeneration(gpu_);
  DropGeneration(host_);
  return finish(0);
}

}  // namespace

bool ParseDurationNs(const std::string& text, uint64_t* ns) {
  if (text.empty()) return false;
  uint64_t unit = 1000000000ull;
  std::string digits = text;
  const char last = text.back();
  if (last == 's' || last == 'm' || last == 'h') {
    unit = last == 's' ? 1000000000ull : last == 'm' ? 60000000000ull : 3600000000000ull;
    digits.pop_back();
  }
  uint64_t v = 0;
  if (!ParseUint(digits, &v) || v > 10ull * 365 * 24 * 3600) return false;
  *ns = v * unit;
  return true;
}

bool ParseRetention(const std::string& text, uint32_t* max_files, uint64_t* max_total_bytes) {
  *max_files = 0;
  *max_total_bytes = 0;
  if (text == "none") return true;
  size_t pos = 0;
  bool any = false;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(pos, comma - pos);
    pos = comma + 1;
    uint64_t scale = 0;
    if (part.size() > 2 && (part.compare(part.size() - 2, 2, "MB") == 0 ||
                            part.compare(part.size() - 2, 2, "GB") == 0)) {
      scale = part[part.size() - 2] == 'M' ? (1ull << 20) : (1ull << 30);
      part.resize(part.size() - 2);
    }
    uint64_t v = 0;
    if (!ParseUint(part, &v) || v == 0) return false;
    if (scale == 0) {
      if (*max_files != 0 || v > 1000000) return false;
      *max_files = static_cast<uint32_t>(v);
    } else {
      if (*max_total_bytes != 0 || v > (1ull << 40) / scale) return false;
      *max_total_bytes = v * scale;
    }
    any = true;
  }
  return any;
}

int ParseMonitorArgs(const std::vector<std::string>& args, MonitorOptions* o, std::ostream& out,
                     std::ostream& err) {
  auto bad = [&err](const std::string& msg) {
    err << "gpscope-monitor: " << common::SanitizeText(msg, 4096) << " (see --help)\n";
    return 2;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    bool has_value = false;
    if (name == "--help" || name == "-h") {
      out << kUsage;
      return -1;
    }
    if (name == "--version") {
      out << "gpscope-monitor " << GPSCOPE_VERSION << "\n";
      return -1;
    }
    if (name.compare(0, 2, "--") != 0) return bad("unexpected argument '" + name + "'");
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    } else if (i + 1 < args.size()) {
      value = args[i + 1];
      has_value = true;
      ++i;
    }
    if (!has_value) return bad("option " + name + " needs a value");
    double number = 0;
    uint64_t ns = 0;
    uint64_t u = 0;
    if (name == "--output") {
      if (value.empty()) return bad("--output needs a directory");
      o->output_dir = value;
    } else if (name == "--interval-ms") {
      if (!ParseUint(value, &u) || u < kMinIntervalMs || u > kMaxIntervalMs) {
        return bad("--interval-ms '" + value + "' is not a number in 100..60000");
      }
      o->interval_ms = static_cast<uint32_t>(u);
    } else if (name == "--max-file-mb") {
      if (!ParseNumber(value, &number) || number < 0.1 || number > 1024 * 1024) {
        return bad("--max-file-mb '" + value + "' is not a number >= 0.1");
      }
      o->limits.max_file_bytes = static_cast<uint64_t>(number * 1048576.0);
    } else if (name == "--max-file-age") {
      if (!ParseDurationNs(value, &ns) || ns < 1000000000ull) {
        return bad("--max-file-age '" + value + "' is not a duration >= 1s (e.g. 90s, 15m, 1h)");
      }
      o->limits.max_file_age_ns = ns;
    } else if (name == "--retention") {
      if (!ParseRetention(value, &o->limits.max_files, &o->limits.max_total_bytes)) {
        return bad("--retention '" + value +
                   "' is not a file count (24), a size (2048MB, 2GB), both (24,2048MB) or none");
      }
    } else if (name == "--listen") {
      std::string host, error;
      uint16_t port = 0;
      if (value != "none" && !ParseListenAddress(value, &host, &port, &error)) return bad(error);
      o->listen = value;
    } else if (name == "--duration") {
      if (!ParseNumber(value, &number) || number <= 0 || number > 1e9) {
        return bad("--duration '" + value + "' is not a positive number of seconds");
      }
      o->duration_s = number;
    } else if (name == "--replay") {
      auto replay = gm::ReplayBackend::FromFile(value.c_str());
      if (!replay->ok()) return bad("--replay: " + replay->error());
      o->replay_path = value;
    } else if (name == "--nvml-library") {
      o->nvml_library = value;
    } else if (name == "--traces") {
      if (value.empty()) return bad("--traces needs a directory");
      o->trace_dirs.push_back(value);
    } else if (name == "--window-ttl") {
      if (!ParseDurationNs(value, &ns) || ns < 1000000000ull) {
        return bad("--window-ttl '" + value + "' is not a duration >= 1s (e.g. 90s, 15m, 1h)");
      }
      o->window_ttl_ns = ns;
    } else if (name == "--window-max-events") {
      if (!ParseUint(value, &u) || u < 1000 || u > 1000000000) {
        return bad("--window-max-events '" + value + "' is not a number in 1000..1000000000");
      }
      o->window_max_events = u;
    } else if (name == "--zstd-level") {
      if (!ParseUint(value, &u) || u < 1 || u > 19) {
        return bad("--zstd-level '" + value + "' is not a number in 1..19");
      }
      o->zstd_level = static_cast<int>(u);
    } else {
      return bad("unknown option " + name);
    }
  }
  if (o->limits.max_total_bytes != 0 && o->limits.max_total_bytes < o->limits.max_file_bytes) {
    return bad("--retention total size is smaller than --max-file-mb: one file would not fit");
  }
  if (!o->replay_path.empty() && !o->nvml_library.empty()) {
    return bad("--replay and --nvml-library exclude each other");
  }
  return 0;
}

int RunMonitorWithOptions(const MonitorOptions& options, std::ostream& out, std::ostream& err,
               MonitorStats* stats) {
  (void)out;
  Monitor monitor(options, err);
  return monitor.Run(stats);
}

int RunMonitor(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  MonitorOptions options;
  const int parsed = ParseMonitorArgs(args, &options, out, err);
  if (parsed == -1) return 0;
  if (parsed != 0) return parsed;
  return RunMonitorWithOptions(options, out, err);
}

}  // namespace gpscope::monitor
