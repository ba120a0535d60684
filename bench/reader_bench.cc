// bench/reader_bench.cc: decode throughput of the trace reader on one core,
// as events/s, on a realistic kernel stream (TraceBuilder, zstd level 1 like
// the collector): 1M kernels in batches of 4,096, skewed name and stream
// mix, jittered gaps and heavy-tailed durations.
//
//   BM_ReadAndDecode  frame check + zstd + protobuf parse + column decode
//                     to absolute values: the number that matters
//   BM_ReadFile...    the same through the pread window (page cache)
//   BM_Stage_*        each stage alone, to see where the time goes
#include <benchmark/benchmark.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "google/protobuf/arena.h"
#include "proto/framing.h"
#include "tests/testing/trace_builder.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope {
namespace {

constexpr int kBatches = 256;
constexpr int kKernelsPerBatch = 4096;
constexpr int64_t kEvents = int64_t{kBatches} * kKernelsPerBatch;

const std::vector<uint8_t>& KernelTrace() {
  static const std::vector<uint8_t> bytes = [] {
    testing::TraceBuilder trace;
    testing::TraceBuilder::Process& p = trace.AddProcess(0x5EED, 4242);
    p.WriteHeader();
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> gap_ns(8.5, 0.8);       // median ~5 us
    std::lognormal_distribution<double> duration_ns(9.5, 1.5);  // median ~13 us, long tail
    std::geometric_distribution<int> name_rank(0.12);           // a few hot kernels
    uint64_t t = 1'700'000'000'000'000'000;
    uint32_t correlation = 1;
    for (int b = 0; b < kBatches; ++b) {
      for (int k = 0; k < kKernelsPerBatch; ++k) {
        format::KernelEvent e{};
        t += static_cast<uint64_t>(gap_ns(rng));
        e.start_ns = t;
        e.end_ns = t + 1000 + static_cast<uint64_t>(duration_ns(rng));
        const int name = std::min(name_rank(rng), 39);
        e.name_id = p.Intern("kernel_" + std::to_string(name));
        e.launch_config_id = 1 + name % 8;
        e.context_id = 1;
        e.stream_id = rng() % 5 == 0 ? 13 + rng() % 2 : 7;
        correlation += 1 + (rng() % 4 == 0);
        e.correlation_id = correlation;
        if (rng() % 10 == 0) {  // CUDA graph launches
          e.graph_id = 3;
          e.graph_node_id = 1000 + rng() % 64;
        }
        p.Add(e);
      }
      p.Flush();
    }
    p.WriteEnd();
    return trace.bytes();
  }();
  return bytes;
}

class DecodingVisitor : public reader::ChunkVisitor {
 public:
  explicit DecodingVisitor(bool decode) : decode_(decode) {}
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& chunk) override {
    if (!chunk.has_batch()) return absl::OkStatus();
    if (!decode_) {
      events += chunk.batch().kernels().start_delta_ns_size();
      return absl::OkStatus();
    }
    kernels_.clear();
    absl::Status s = reader::DecodeKernels(chunk.batch(), &kernels_);
    events += static_cast<int64_t>(kernels_.size());
    benchmark::DoNotOptimize(kernels_.data());
    return s;
  }
  int64_t events = 0;

 private:
  bool decode_;
  std::vector<format::KernelEvent> kernels_;
};

void Report(benchmark::State& state, int64_t events_per_iteration) {
  state.SetItemsProcessed(state.iterations() * events_per_iteration);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(KernelTrace().size()));
  state.counters["events/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * events_per_iteration), benchmark::Counter::kIsRate);
}

void BM_ReadAndDecode(benchmark::State& state) {
  const std::vector<uint8_t>& bytes = KernelTrace();
  for (auto _ : state) {
    DecodingVisitor visitor(/*decode=*/true);
    reader::TraceReader reader(visitor);
    if (!reader.ReadBuffer("bench", bytes.data(), bytes.size()).ok() || visitor.events != kEvents) {
      state.SkipWithError("read failed");
    }
  }
  Report(state, kEvents);
}
BENCHMARK(BM_ReadAndDecode)->Unit(benchmark::kMillisecond);

void BM_ReadFileAndDecode(benchmark::State& state) {
  const std::string path = "/tmp/reader_bench." + std::to_string(getpid()) + ".gps";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(KernelTrace().data(), 1, KernelTrace().size(), f);
  std::fclose(f);
  for (auto _ : state) {
    DecodingVisitor visitor(/*decode=*/true);
    reader::TraceReader reader(visitor);
    if (!reader.ReadFile(path).ok() || visitor.events != kEvents)
      state.SkipWithError("read failed");
  }
  unlink(path.c_str());
  Report(state, kEvents);
}
BENCHMARK(BM_ReadFileAndDecode)->Unit(benchmark::kMillisecond);

// Frames, zstd and protobuf, without expanding columns.
void BM_Stage_ReadWithoutDecode(benchmark::State& state) {
  const std::vector<uint8_t>& bytes = KernelTrace();
  for (auto _ : state) {
    DecodingVisitor visitor(/*decode=*/false);
    reader::TraceReader reader(visitor);
    if (!reader.ReadBuffer("bench", bytes.data(), bytes.size()).ok()) state.SkipWithError("read");
  }
  Report(state, kEvents);
}
BENCHMARK(BM_Stage_ReadWithoutDecode)->Unit(benchmark::kMillisecond);

// The serialized chunks, decompressed once up front.
const std::vector<std::string>& RawChunks() {
  static const std::vector<std::string> chunks = [] {
    std::vector<std::string> out;
    const std::vector<uint8_t>& bytes = KernelTrace();
    for (size_t off = format::kFileHeaderBytes; off < bytes.size();) {
      format::FrameView v{};
      if (format::ParseFrame(bytes.data() + off, bytes.size() - off, &v) !=
          format::FrameStatus::kOk)
        break;
      std::string raw(v.raw_bytes, '\0');
      ZSTD_decompress(raw.data(), raw.size(), v.payload, v.payload_bytes);
      out.push_back(std::move(raw));
      off += v.frame_bytes;
    }
    return out;
  }();
  return chunks;
}

void BM_Stage_FrameCheckAndZstd(benchmark::State& state) {
  const std::vector<uint8_t>& bytes = KernelTrace();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<uint8_t> raw(8 << 20);
  for (auto _ : state) {
    for (size_t off = format::kFileHeaderBytes; off < bytes.size();) {
      format::FrameView v{};
      format::ParseFrame(bytes.data() + off, bytes.size() - off, &v);
      benchmark::DoNotOptimize(
          ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), v.payload, v.payload_bytes));
      off += v.frame_bytes;
    }
  }
  ZSTD_freeDCtx(dctx);
  Report(state, kEvents);
}
BENCHMARK(BM_Stage_FrameCheckAndZstd)->Unit(benchmark::kMillisecond);

void BM_Stage_ProtobufParse(benchmark::State& state) {
  const std::vector<std::string>& chunks = RawChunks();
  google::protobuf::Arena arena;
  for (auto _ : state) {
    for (const std::string& raw : chunks) {
      arena.Reset();
      proto::Chunk* chunk = google::protobuf::Arena::CreateMessage<proto::Chunk>(&arena);
      benchmark::DoNotOptimize(chunk->ParseFromString(raw));
    }
  }
  Report(state, kEvents);
}
BENCHMARK(BM_Stage_ProtobufParse)->Unit(benchmark::kMillisecond);

void BM_Stage_ColumnDecode(benchmark::State& state) {
  std::vector<proto::Chunk> chunks(RawChunks().size());
  for (size_t i = 0; i < chunks.size(); ++i) chunks[i].ParseFromString(RawChunks()[i]);
  std::vector<format::KernelEvent> kernels;
  for (auto _ : state) {
    for (const proto::Chunk& c : chunks) {
      kernels.clear();
      benchmark::DoNotOptimize(reader::DecodeKernels(c.batch(), &kernels).ok());
    }
  }
  Report(state, kEvents);
}
BENCHMARK(BM_Stage_ColumnDecode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpscope

BENCHMARK_MAIN();
