// bench/gen_trace.cc: writes a large synthetic trace through the collector's
// own ChunkWriter, for the analyzer's scale benchmark (issue 5: summary of a
// 50-million-event trace in <= 30 s with peak RSS <= 2 GiB on 2 cores).
//
//   gen_trace --events 50000000 --out /tmp/big.gpscope [--processes 1]
//
// The stream looks like a training job: steps of 200 kernels (50 names,
// 6 launch shapes, 3 streams) each with its cudaLaunchKernel record, an H2D
// copy, a D2H copy and a stream sync per step, an NVTX "step N" range, a
// host-side gap of 6 ms every step (a slow data loader), and a metric sample
// every 100 ms. Deterministic: the same arguments give the same file.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "proto/chunk_writer.h"
#include "proto/framing.h"
#include "proto/metric_names.h"

namespace {

using gpscope::format::ChunkWriter;
namespace format = gpscope::format;

int Usage() {
  fprintf(stderr, "usage: gen_trace --events N --out FILE [--processes P]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 0;
  const char* out = nullptr;
  int processes = 1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc) {
      events = strtoull(argv[++i], nullptr, 10);
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(argv[i], "--processes") && i + 1 < argc) {
      processes = atoi(argv[++i]);
    } else {
      return Usage();
    }
  }
  if (events == 0 || out == nullptr || processes < 1) return Usage();
  unlink(out);
  char err[256];
  int fd = format::OpenForAppend(out, err, sizeof(err));
  if (fd < 0) {
    fprintf(stderr, "gen_trace: %s\n", err);
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t per_process = events / processes;
  uint64_t written = 0;
  for (int p = 0; p < processes; ++p) {
    std::mt19937_64 rng(42 + p);
    const uint32_t pid = 1000 + p;
    ChunkWriter w(fd, 0x5eed0000ull + p, pid, {});
    format::ProcessHeaderRecord h{};
    h.format_version = format::kFormatVersion;
    h.hostname = format::MakeStringRef("gen-host");
    h.pid = pid;
    h.identity.rank = p;
    h.identity.local_rank = p;
    h.identity.world_size = processes;
    h.identity.node_rank = 0;
    const format::ClockRecord clock{1'700'000'000'000'000'000ull, 1'700'000'000'000'000'000ull, 1};
    h.clocks = &clock;
    h.clock_count = 1;
    h.start_realtime_ns = clock.realtime_ns;
    w.WriteHeader(h);
    format::DeviceRecord dev{};
    dev.device_id = 0;
    dev.name = format::MakeStringRef("Synthetic GPU");
    dev.uuid = format::MakeStringRef("GPU-00000000-0000-0000-0000-000000000000");
    dev.sm_count = 132;
    dev.compute_capability_major = 9;
    w.AddDevice(dev);
    uint32_t names[50];
    for (int i = 0; i < 50; ++i) names[i] = w.InternString("_Z12synth_kernel" + std::to_string(i) + "Pf");
    uint32_t shapes[6];
    for (int i = 0; i < 6; ++i) {
      format::LaunchConfigRecord s{};
      s.grid_x = 1u << (i * 2);
      s.grid_y = s.grid_z = s.block_y = s.block_z = 1;
      s.block_x = 256;
      s.registers_per_thread = 32 + i * 8;
      shapes[i] = w.InternLaunchConfig(s);
    }
    const uint32_t api_launch = w.InternString("cudaLaunchKernel_v7000");
    const uint32_t api_sync = w.InternString("cudaStreamSynchronize_v3020");
    const uint32_t util_metric = 1;
    format::MetricDescriptorRecord md{};
    md.id = util_metric;
    md.name = format::MakeStringRef(gpscope::metric_names::kGpmSmUtil);
    md.unit = format::MakeStringRef("percent");
    md.scope = 1;
    w.AddMetricDescriptor(md);

    uint64_t gpu_ns = clock.cupti_ns + 1'000'000;
    uint64_t cpu_ns = gpu_ns - 50'000;
    uint64_t next_metric_ns = gpu_ns;
    uint32_t correlation = 1;
    uint64_t produced = 0;
    for (uint64_t step = 0; produced < per_process; ++step) {
      const uint64_t step_start = gpu_ns;
      format::MemcpyEvent h2d{};
      h2d.start_ns = gpu_ns;
      h2d.end_ns = gpu_ns + 40'000;
      h2d.bytes = 8 << 20;
      h2d.copy_kind = 1;
      h2d.src_kind = 2;
      h2d.dst_kind = 3;
      h2d.stream_id = 7;
      h2d.flags = 1;
      h2d.correlation_id = correlation++;
      w.AddMemcpy(h2d);
      gpu_ns = h2d.end_ns + 2'000;
      produced += 1;
      for (int k = 0; k < 200 && produced < per_process; ++k) {
        const int n = static_cast<int>(rng() % 50);
        const uint64_t dur = 3'000 + (n * 37'000) % 400'000 + rng() % 2'000;
        format::ApiCallEvent a{};
        a.start_ns = cpu_ns;
        a.end_ns = cpu_ns + 4'000 + rng() % 1'000;
        a.domain = 1;
        a.cbid = 211;
        a.thread_id = pid;
        a.correlation_id = correlation;
        a.api_name_id = api_launch;
        w.AddApiCall(a);
        cpu_ns = a.end_ns + 1'000;
        format::KernelEvent e{};
        e.start_ns = gpu_ns > a.end_ns ? gpu_ns : a.end_ns + 3'000;
        e.end_ns = e.start_ns + dur;
        e.name_id = names[n];
        e.launch_config_id = shapes[n % 6];
        e.stream_id = 7 + (k % 3 == 0 ? 1 : 0);
        e.correlation_id = correlation++;
        w.AddKernel(e);
        gpu_ns = e.end_ns + 1'500;
        produced += 2;
      }
      format::MemcpyEvent d2h = h2d;
      d2h.start_ns = gpu_ns;
      d2h.end_ns = gpu_ns + 5'000;
      d2h.bytes = 4;
      d2h.copy_kind = 2;
      d2h.src_kind = 3;
      d2h.dst_kind = 1;
      d2h.flags = 0;
      d2h.correlation_id = correlation++;
      w.AddMemcpy(d2h);
      format::SyncEvent s{};
      s.start_ns = cpu_ns;
      s.end_ns = d2h.end_ns + 1'000;
      s.sync_kind = 3;
      s.stream_id = 7;
      s.event_id = 0xffffffffu;
      s.correlation_id = correlation;
      w.AddSync(s);
      format::ApiCallEvent sa{};
      sa.start_ns = cpu_ns;
      sa.end_ns = s.end_ns;
      sa.domain = 1;
      sa.cbid = 131;
      sa.thread_id = pid;
      sa.correlation_id = correlation++;
      sa.api_name_id = api_sync;
      w.AddApiCall(sa);
      format::NvtxRangeEvent r{};
      r.start_ns = step_start;
      r.end_ns = s.end_ns;
      r.name_id = w.InternString("step " + std::to_string(step));
      r.thread_id = pid;
      w.AddNvtxRange(r);
      produced += 5;
      // The data loader: the host prepares the next batch while the GPU idles.
      cpu_ns = s.end_ns + 6'000'000;
      gpu_ns = cpu_ns + 20'000;
      while (next_metric_ns < gpu_ns) {
        w.AddMetricSample({next_metric_ns, util_metric, 40.0 + static_cast<double>(rng() % 200) / 10});
        next_metric_ns += 100'000'000;
        ++produced;
      }
    }
    format::ProcessEndRecord end{};
    end.reason = 1;
    end.end_ns = gpu_ns;
    w.WriteEnd(end);
    written += w.events_written();
  }
  close(fd);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fprintf(stderr, "gen_trace: %llu events to %s in %.1f s\n",
          static_cast<unsigned long long>(written), out, s);
  return 0;
}
