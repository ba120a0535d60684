// bench/encode_bench.cc: the collector writer thread's encode path on one
// core: events -> BatchBuilder (columnar varints) -> FrameEncoder (zstd 1).
//
// The stream imitates a training loop as CUPTI reports it: every step
// replays one fixed sequence of ~220 launches over 50 distinct kernels with
// per-kernel typical durations (log-uniform 3 us .. 2 ms, +-3% jitter),
// 6 launch configs, 3 streams (records of different streams interleave, so
// start deltas go negative), launch gaps of 1-6 us, correlation ids rising
// by 1-3, plus a few memcpys and API calls per step. Timestamps keep full ns
// resolution, which is the hard case for compression. The "irregular"
// variant draws every launch's kernel at random and jitters durations by
// 10%: a pessimistic stream with no step-to-step repetition.
//
// Counters: events/s (the target is >= 2M on one core) and bytes/event of
// the frames as written to disk (target <= 8); raw_bytes/event is the
// uncompressed Chunk size.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "proto/batch_builder.h"
#include "proto/framing.h"

namespace gpscope::format {
namespace {

struct StreamEvent {
  enum Kind : uint8_t { kKernel, kMemcpy, kApiCall } kind;
  union {
    KernelEvent kernel;
    MemcpyEvent memcpy;
    ApiCallEvent api;
  };
};

struct Workload {
  std::vector<std::string> names;  // index + 1 = interned id
  std::vector<LaunchConfigRecord> configs;
  std::vector<StreamEvent> events;
};

Workload MakeTrainingLoop(size_t num_events, bool irregular) {
  std::mt19937_64 rng(42);
  Workload w;
  constexpr int kKernels = 50, kConfigs = 6, kStreams = 3;
  for (int i = 0; i < kKernels; ++i) {
    w.names.push_back("_ZN7cutlass6KernelINS_4gemm6kernel4GemmILi" + std::to_string(i) +
                      "EEEEvNT_6ParamsE");
  }
  w.names.push_back("cudaMemcpyAsync");
  w.names.push_back("cudaStreamSynchronize");
  for (uint32_t i = 0; i < kConfigs; ++i) {
    w.configs.push_back(LaunchConfigRecord{i + 1, 108u << i, 1, 1, 256, 1, 1, 64, 0,
                                           16384u * i, 0, 1, 1, 1});
  }
  struct KernelSpec {
    double typical_ns;
    uint32_t config, stream;
  };
  std::vector<KernelSpec> specs;
  std::uniform_real_distribution<double> log_dur(std::log(3e3), std::log(2e6));
  for (int i = 0; i < kKernels; ++i) {
    specs.push_back({std::exp(log_dur(rng)), static_cast<uint32_t>(rng() % kConfigs) + 1,
                     i % 10 == 9 ? 2u + static_cast<uint32_t>(rng() % (kStreams - 1)) : 1u});
  }
  std::vector<int> step_pattern;  // forward and backward passes: a fixed order
  for (int i = 0; i < 220; ++i) step_pattern.push_back(static_cast<int>(rng() % kKernels));

  std::normal_distribution<double> jitter(1.0, irregular ? 0.10 : 0.03);
  uint64_t stream_clock_ns[kStreams + 1];
  std::fill(std::begin(stream_clock_ns), std::end(stream_clock_ns), 1'700'000'000'000'000'000ull);
  uint64_t host_ns = stream_clock_ns[0];
  uint32_t correlation = 1;
  auto api = [&](uint32_t name_id, uint32_t cbid, uint64_t dur_ns) {
    StreamEvent e{};
    e.kind = StreamEvent::kApiCall;
    e.api = ApiCallEvent{host_ns, host_ns + dur_ns, 1, cbid, 4242, correlation, 0, name_id};
    correlation += 1 + static_cast<uint32_t>(rng() % 3);
    host_ns += dur_ns + 1000 + rng() % 4000;
    w.events.push_back(e);
  };
  while (w.events.size() < num_events) {
    // Input batch to the device.
    api(kKernels + 1, 41, 4000 + rng() % 2000);
    StreamEvent m{};
    m.kind = StreamEvent::kMemcpy;
    const uint64_t copy_start = std::max(stream_clock_ns[1], host_ns) + 2000 + rng() % 3000;
    m.memcpy = MemcpyEvent{copy_start, copy_start + 150000 + rng() % 20000, 8u << 20, 1, 2, 3, 0,
                           1, 1, correlation - 1, 1, 0, 0};
    stream_clock_ns[1] = m.memcpy.end_ns;
    w.events.push_back(m);
    for (int k : step_pattern) {
      if (irregular) k = static_cast<int>(rng() % kKernels);
      const KernelSpec& s = specs[k];
      StreamEvent e{};
      e.kind = StreamEvent::kKernel;
      uint64_t& clock = stream_clock_ns[s.stream];
      const uint64_t start = std::max(clock, host_ns) + 1000 + rng() % 5000;
      const auto dur = static_cast<uint64_t>(s.typical_ns * std::max(0.5, jitter(rng)));
      e.kernel = KernelEvent{};
      e.kernel.start_ns = start;
      e.kernel.end_ns = start + dur;
      e.kernel.name_id = static_cast<uint32_t>(k) + 1;
      e.kernel.launch_config_id = s.config;
      e.kernel.context_id = 1;
      e.kernel.stream_id = s.stream;
      e.kernel.correlation_id = correlation;
      clock = start + dur;
      correlation += 1 + static_cast<uint32_t>(rng() % 3);
      host_ns += 3000 + rng() % 4000;  // the host runs ahead of the GPU
      w.events.push_back(e);
    }
    api(kKernels + 2, 131, stream_clock_ns[1] > host_ns ? stream_clock_ns[1] - host_ns : 2000);
  }
  w.events.resize(num_events);
  return w;
}

const Workload& TheWorkload(bool irregular) {
  static const Workload regular_loop = MakeTrainingLoop(1'000'000, false);
  static const Workload irregular_loop = MakeTrainingLoop(1'000'000, true);
  return irregular ? irregular_loop : regular_loop;
}

// Runs the whole stream through the builder and, when `encoder` is given,
// through zstd. Returns the bytes that would reach the disk (or raw bytes).
struct PassResult {
  size_t raw_bytes = 0, frame_bytes = 0, chunks = 0;
};
PassResult EncodeStream(const Workload& w, BatchBuilder& b, FrameEncoder* encoder,
                        std::vector<uint8_t>& out) {
  PassResult r;
  uint64_t sequence = 1;
  auto finish = [&] {
    const size_t n = b.FinishChunk(0x1234567890abcdefull, 4242, sequence++, out.data(), out.size());
    r.raw_bytes += n;
    ++r.chunks;
    if (encoder != nullptr) {
      const uint8_t* frame;
      r.frame_bytes += encoder->Encode(out.data(), n, &frame);
      benchmark::DoNotOptimize(frame);
    }
  };
  b.Begin(w.events.front().kernel.start_ns);
  for (size_t i = 0; i < w.names.size(); ++i) {
    b.AddString(static_cast<uint32_t>(i + 1), w.names[i].data(), w.names[i].size());
  }
  for (const LaunchConfigRecord& c : w.configs) b.AddLaunchConfig(c);
  for (const StreamEvent& e : w.events) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool added = false;
      switch (e.kind) {
        case StreamEvent::kKernel: added = b.AddKernel(e.kernel); break;
        case StreamEvent::kMemcpy: added = b.AddMemcpy(e.memcpy); break;
        case StreamEvent::kApiCall: added = b.AddApiCall(e.api); break;
      }
      if (added) break;
      finish();
      b.Begin(e.kernel.start_ns);  // start_ns is the first field of all three
    }
  }
  finish();
  return r;
}

void Run(benchmark::State& state, bool compress, bool irregular = false) {
  const Workload& w = TheWorkload(irregular);
  const size_t chunk_bytes = static_cast<size_t>(state.range(0));
  BatchBuilder b(chunk_bytes);
  FrameEncoder encoder(chunk_bytes, /*zstd_level=*/1);
  std::vector<uint8_t> out(chunk_bytes);
  if (!b.ok() || !encoder.ok()) {
    state.SkipWithError("allocation failed");
    return;
  }
  PassResult r;
  for (auto _ : state) r = EncodeStream(w, b, compress ? &encoder : nullptr, out);
  const double events = static_cast<double>(w.events.size());
  state.counters["events/s"] =
      benchmark::Counter(events * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["raw_bytes/event"] = static_cast<double>(r.raw_bytes) / events;
  if (compress) state.counters["disk_bytes/event"] = static_cast<double>(r.frame_bytes) / events;
  state.counters["chunks"] = static_cast<double>(r.chunks);
}

void BM_EncodeOnly(benchmark::State& state) { Run(state, false); }
void BM_EncodeAndCompress(benchmark::State& state) { Run(state, true); }
void BM_EncodeAndCompressIrregular(benchmark::State& state) { Run(state, true, true); }
BENCHMARK(BM_EncodeOnly)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeAndCompress)->Arg(256 << 10)->Arg(1 << 20)->Arg(4 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeAndCompressIrregular)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpscope::format

BENCHMARK_MAIN();
