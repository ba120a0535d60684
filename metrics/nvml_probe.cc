// nvml_probe: prints what the real NVML backend sees on this machine: the
// GPUs, every metric's value or why it is unavailable, the processes on
// each GPU, then what a full Sampler (NVML + /proc) defines and notes and
// what it costs per sample. Run it on the GPU host; it needs no CUDA.
//
//   nvml_probe [--samples N] [--interval-ms M] [--cost-samples K]
//              [--record FILE] [--library PATH] [--visible LIST] [--pcie-throughput]
//
// --visible takes a CUDA_VISIBLE_DEVICES value and samples only those GPUs,
// as the collector does.
//
// --record writes the readings in ReplayBackend's format (replay_backend.h),
// for tests and the node monitor without a GPU.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "common/posix.h"
#include "metrics/host_stats.h"
#include "metrics/nvml_backend.h"
#include "metrics/sampler.h"

namespace gm = gpscope::metrics;

namespace {

struct CountingSink : gm::MetricSink {
  size_t descriptors = 0, capabilities = 0, samples = 0;
  bool print = false;
  const gm::Sampler* sampler = nullptr;
  bool OnDescriptor(const gm::MetricDef& d) override {
    ++descriptors;
    std::printf("  descriptor %u %-28s %-8s scope=%u device=%u pid=%u tid=%u label=%s\n", d.id,
                d.name, d.unit, d.scope, d.device_id, d.pid, d.thread_id, d.label);
    return true;
  }
  bool OnCapability(const gm::CapabilityDef& c) override {
    ++capabilities;
    std::printf("  notice %-26s %s  %s\n", c.component, c.available ? "available  " : "UNAVAILABLE",
                c.reason);
    return true;
  }
  void OnSample(const gpscope::format::MetricSample& s) override {
    ++samples;
    if (print) std::printf("    id %-4u %.3f\n", s.metric_id, s.value);
  }
};

}  // namespace

int main(int argc, char** argv) {
  uint32_t samples = 5, interval_ms = 500, cost_samples = 50;
  const char* record = nullptr;
  gm::NvmlBackend::Options nvml_options;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* flag) -> const char* {
      if (std::strcmp(argv[i], flag) != 0 || i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    const char* v;
    if ((v = next("--samples"))) {
      samples = static_cast<uint32_t>(std::atoi(v));
    } else if ((v = next("--interval-ms"))) {
      interval_ms = static_cast<uint32_t>(std::atoi(v));
    } else if ((v = next("--cost-samples"))) {
      cost_samples = static_cast<uint32_t>(std::atoi(v));
    } else if ((v = next("--record"))) {
      record = v;
    } else if ((v = next("--visible"))) {
      nvml_options.visible_devices = v;
    } else if ((v = next("--library"))) {
      nvml_options.library = v;
    } else if (std::strcmp(argv[i], "--pcie-throughput") == 0) {
      nvml_options.nvml_pcie_throughput = true;
    } else {
      std::fprintf(stderr,
                   "usage: nvml_probe [--samples N] [--interval-ms M] [--cost-samples K] "
                   "[--record FILE] [--library PATH] [--visible CUDA_VISIBLE_DEVICES] "
                   "[--pcie-throughput]\n");
      return 2;
    }
  }

  // ---- 1. The backend alone: devices, what each supports, values.
  FILE* rec = record != nullptr ? std::fopen(record, "w") : nullptr;
  if (record != nullptr && rec == nullptr) {
    std::fprintf(stderr, "nvml_probe: cannot write %s\n", record);
    return 1;
  }
  if (rec != nullptr) std::fprintf(rec, "# recorded by nvml_probe\n");
  {
    gm::NvmlBackend nvml(nvml_options);
    const char* why = nullptr;
    uint64_t t0 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
    if (!nvml.Open(&why)) {
      std::printf("NVML unavailable: %s\n", why);
      if (rec != nullptr) std::fprintf(rec, "nvml missing %s\n", why);
    } else {
      const uint32_t n = nvml.device_count();
      std::printf("NVML open in %.1f ms; driver %s; %u GPU(s) sampled, %u ignored\n",
                  (gpscope::common::ClockNs(CLOCK_MONOTONIC) - t0) / 1e6, nvml.driver_version(), n,
                  nvml.ignored_device_count());
      gm::GpuProbe probe[gm::kMaxDevices];
      t0 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
      nvml.Probe(probe);
      std::printf("probe in %.1f ms\n", (gpscope::common::ClockNs(CLOCK_MONOTONIC) - t0) / 1e6);
      for (uint32_t d = 0; d < n; ++d) {
        const gm::GpuDeviceInfo& info = nvml.device(d);
        const gm::GpuProbe& p = probe[d];
        std::printf("\nGPU %u (CUDA ordinal %u): %s  %s  pci %s\n", info.index, info.cuda_ordinal,
                    info.name, info.uuid, info.pci_bus_id);
        std::printf("  gpm: %s\n", p.gpm ? "available" : p.gpm_reason);
        std::printf("  processes: %s\n", p.processes ? "available" : p.processes_reason);
        std::printf("  process utilization: %s\n",
                    p.process_util ? "available" : p.process_util_reason);
        for (int m = 0; m < gm::kGpuMetricCount; ++m) {
          if (!((p.supported >> m) & 1)) {
            std::printf("  %-28s unavailable: %s\n", gm::GetGpuMetricInfo(m).name,
                        p.reason[m] != nullptr ? p.reason[m] : "?");
          }
        }
        if (rec != nullptr) {
          std::fprintf(rec, "device %u %s %s\n", d, info.uuid[0] ? info.uuid : "-", info.name);
          if (info.pci_bus_id[0]) std::fprintf(rec, "pci %u %s\n", d, info.pci_bus_id);
          if (!p.gpm) std::fprintf(rec, "unsupported %u gpm %s\n", d, p.gpm_reason);
          if (!p.processes)
            std::fprintf(rec, "unsupported %u processes %s\n", d, p.processes_reason);
          if (!p.process_util) {
            std::fprintf(rec, "unsupported %u process_util %s\n", d, p.process_util_reason);
          }
          for (int m = 0; m < gm::kGpuMetricCount; ++m) {
            if (!((p.supported >> m) & 1) && (m < gm::kFirstGpmMetric || p.gpm)) {
              std::fprintf(rec, "unsupported %u %s %s\n", d, gm::GetGpuMetricInfo(m).name,
                           p.reason[m] != nullptr ? p.reason[m] : "unsupported");
            }
          }
        }
      }
      int slot[gm::kMaxDevices] = {};
      bool have_prev[gm::kMaxDevices] = {};
      gm::GpuProcessReading procs[64];
      for (uint32_t s = 0; s < samples; ++s) {
        if (s > 0) gpscope::common::SleepMs(interval_ms);
        std::printf("\nsample %u\n", s);
        if (rec != nullptr) std::fprintf(rec, "step\n");
        nvml.BeginSample(gpscope::common::ClockNs(CLOCK_REALTIME));
        for (uint32_t d = 0; d < n; ++d) {
          gm::GpuReadings r;
          const uint64_t w0 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
          nvml.Read(d, probe[d].supported & gm::kNvmlMask, &r);
          const uint64_t w1 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
          if (probe[d].gpm && nvml.GpmSnapshot(d, slot[d])) {
            if (have_prev[d]) {
              nvml.GpmRead(d, 1 - slot[d], slot[d], probe[d].supported & gm::kGpmMask, &r);
            }
            have_prev[d] = true;
            slot[d] = 1 - slot[d];
          }
          const uint64_t w2 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
          std::printf("  GPU %u  (nvml reads %.0f us, gpm %.0f us)\n", nvml.device(d).index,
                      (w1 - w0) / 1e3, (w2 - w1) / 1e3);
          for (int m = 0; m < gm::kGpuMetricCount; ++m) {
            const gm::GpuMetricInfo& info = gm::GetGpuMetricInfo(m);
            if ((r.valid >> m) & 1) {
              if (m == static_cast<int>(gm::GpuMetric::kClockEventReasons)) {
                std::printf("    %-28s 0x%llx\n", info.name,
                            static_cast<unsigned long long>(r.value[m]));
              } else {
                std::printf("    %-28s %.2f %s\n", info.name, r.value[m], info.unit);
              }
              if (rec != nullptr) std::fprintf(rec, "%s %u %.17g\n", info.name, d, r.value[m]);
            } else if ((r.failed >> m) & 1) {
              std::printf("    %-28s FAILED: %s\n", info.name, r.error[m]);
              if (rec != nullptr) std::fprintf(rec, "fail %u %s %s\n", d, info.name, r.error[m]);
            }
          }
          bool more = false;
          const uint64_t w3 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
          size_t np = nvml.ReadProcesses(d, procs, 64, &more);
          std::printf("    processes (%.0f us)%s:\n", (gpscope::common::ClockNs(CLOCK_MONOTONIC) - w3) / 1e3,
                      more ? " (more not shown)" : "");
          for (size_t i = 0; i < np; ++i) {
            char name[96];
            nvml.ProcessName(procs[i].pid, name, sizeof(name));
            std::printf("      pid %-8u %-20s memory %s  sm_util %s\n", procs[i].pid, name,
                        procs[i].has_memory ? std::to_string(procs[i].memory_bytes).c_str() : "-",
                        procs[i].has_sm_util ? std::to_string(procs[i].sm_util_pct).c_str() : "-");
            if (rec != nullptr) {
              std::fprintf(
                  rec, "proc %u %u %s %s %s\n", d, procs[i].pid,
                  procs[i].has_memory ? std::to_string(procs[i].memory_bytes).c_str() : "-",
                  procs[i].has_sm_util ? std::to_string(procs[i].sm_util_pct).c_str() : "-",
                  name[0] ? name : "");
            }
          }
        }
      }
    }
  }
  if (rec != nullptr) std::fclose(rec);

  // ---- 2. The full Sampler (NVML + /proc): what a trace gets, and its cost.
  std::printf("\nSampler: descriptors and notices\n");
  gm::Sampler sampler(std::make_unique<gm::NvmlBackend>(nvml_options),
                      std::make_unique<gm::ProcHostSource>(), gm::SamplerOptions{});
  CountingSink sink;
  uint64_t t0 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
  sampler.Init(&sink);
  std::printf("Init: %.1f ms wall\n", (gpscope::common::ClockNs(CLOCK_MONOTONIC) - t0) / 1e6);
  if (cost_samples > 0) {
    const uint64_t cpu0 = gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID);
    uint64_t worst_wall = 0, total_wall = 0;
    for (uint32_t s = 0; s < cost_samples; ++s) {
      gpscope::common::SleepMs(100);
      const uint64_t w0 = gpscope::common::ClockNs(CLOCK_MONOTONIC);
      sampler.SampleOnce(gpscope::common::ClockNs(CLOCK_REALTIME), &sink);
      const uint64_t w = gpscope::common::ClockNs(CLOCK_MONOTONIC) - w0;
      total_wall += w;
      if (w > worst_wall) worst_wall = w;
    }
    const double cpu_us = (gpscope::common::ClockNs(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e3 / cost_samples;
    std::printf(
        "SampleOnce over %u samples at 100 ms: %.1f us CPU each (%.3f%% of one core); "
        "wall avg %.1f us, worst %.1f us; %zu values\n",
        cost_samples, cpu_us, cpu_us / 1000.0, total_wall / 1e3 / cost_samples, worst_wall / 1e3,
        sink.samples);
    const gm::SamplerStats& st = sampler.stats();
    std::printf("stats: read failures %llu, gpm snapshot failures %llu, held back %llu\n",
                static_cast<unsigned long long>(st.gpu_read_failures.load()),
                static_cast<unsigned long long>(st.gpm_snapshot_failures.load()),
                static_cast<unsigned long long>(st.values_held_back.load()));
  }
  return 0;
}
