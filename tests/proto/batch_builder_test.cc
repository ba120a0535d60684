// Unit tests for proto/batch_builder.h with hand-picked values, parsed back
// with the protoc-generated classes. encoder_property_test.cc covers the
// random and extreme values.
#include "proto/batch_builder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "gpscope/trace.pb.h"

// Counts every operator new in this binary, to prove the builder's
// steady-state calls never allocate. The replacements pair malloc with free,
// which GCC 12 cannot see through once inlined (a false
// -Wmismatched-new-delete under -fsanitize=address).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<uint64_t> g_allocations{0};
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace gpscope::format {
namespace {

proto::Chunk Finish(const BatchBuilder& b, uint64_t uid = 1, uint32_t pid = 2, uint64_t seq = 3) {
  std::vector<uint8_t> out(b.encoded_bytes_estimate());
  const size_t n = b.FinishChunk(uid, pid, seq, out.data(), out.size());
  EXPECT_GT(n, 0u);
  proto::Chunk c;
  EXPECT_TRUE(c.ParseFromArray(out.data(), static_cast<int>(n)));
  return c;
}

KernelEvent Kernel(uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id) {
  KernelEvent k{};
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  k.correlation_id = correlation_id;
  k.name_id = 1;
  k.stream_id = 7;
  return k;
}

TEST(BatchBuilderTest, EmptyBatchCarriesOnlyItsHeaderFields) {
  BatchBuilder b(4096);
  ASSERT_TRUE(b.ok());
  b.Begin(12345);
  const proto::Chunk c = Finish(b, 0xfeedface12345678ull, 42, 9);
  EXPECT_EQ(c.process_uid(), 0xfeedface12345678ull);
  EXPECT_EQ(c.pid(), 42u);
  EXPECT_EQ(c.sequence(), 9u);
  ASSERT_EQ(c.body_case(), proto::Chunk::kBatch);
  EXPECT_EQ(c.batch().base_ns(), 12345u);
  EXPECT_FALSE(c.batch().has_kernels());
  EXPECT_FALSE(c.batch().has_memcpys());
  EXPECT_FALSE(c.batch().has_metrics());
  EXPECT_EQ(c.batch().strings_size(), 0);
}

TEST(BatchBuilderTest, KernelColumnsAreDeltasAsTheSchemaSays) {
  BatchBuilder b(4096);
  b.Begin(1000);
  ASSERT_TRUE(b.AddKernel(Kernel(1500, 1600, 10)));
  ASSERT_TRUE(b.AddKernel(Kernel(1200, 1250, 8)));   // earlier stream: goes backwards
  ASSERT_TRUE(b.AddKernel(Kernel(3000, 2990, 11)));  // end before start
  EXPECT_EQ(b.event_count(), 3u);
  const proto::Chunk c = Finish(b);
  const proto::Kernels& k = c.batch().kernels();
  ASSERT_EQ(k.start_delta_ns_size(), 3);
  EXPECT_EQ(k.start_delta_ns(0), 500);
  EXPECT_EQ(k.start_delta_ns(1), -300);
  EXPECT_EQ(k.start_delta_ns(2), 1800);
  EXPECT_EQ(k.duration_ns(0), 100u);
  EXPECT_EQ(k.duration_ns(1), 50u);
  EXPECT_EQ(k.duration_ns(2), ~uint64_t{0} - 9);  // -10 mod 2^64
  EXPECT_EQ(k.correlation_delta(0), 10);
  EXPECT_EQ(k.correlation_delta(1), -2);
  EXPECT_EQ(k.correlation_delta(2), 3);
  ASSERT_EQ(k.stream_id_size(), 3);
  EXPECT_EQ(k.stream_id(2), 7u);
  EXPECT_EQ(k.graph_node_id_size(), 3);  // all-zero columns are still full length
}

TEST(BatchBuilderTest, EachKindKeepsItsOwnDeltaChain) {
  BatchBuilder b(4096);
  b.Begin(100);
  ASSERT_TRUE(b.AddKernel(Kernel(150, 160, 5)));
  ApiCallEvent api{};
  api.start_ns = 120;
  api.end_ns = 130;
  api.correlation_id = 5;
  ASSERT_TRUE(b.AddApiCall(api));
  MetricSample m{};
  m.timestamp_ns = 90;
  m.value = 2.5;
  ASSERT_TRUE(b.AddMetricSample(m));
  const proto::EventBatch batch = Finish(b).batch();
  EXPECT_EQ(batch.kernels().start_delta_ns(0), 50);
  EXPECT_EQ(batch.api_calls().start_delta_ns(0), 20);   // from base_ns, not the kernel
  EXPECT_EQ(batch.api_calls().correlation_delta(0), 5);  // from 0
  EXPECT_EQ(batch.metrics().timestamp_delta_ns(0), -10);
  EXPECT_EQ(batch.metrics().value(0), 2.5);
  EXPECT_FALSE(batch.has_memcpys());
  EXPECT_FALSE(batch.has_nvtx_ranges());
}

TEST(BatchBuilderTest, BeginDropsEverythingAndRestartsDeltas) {
  BatchBuilder b(4096);
  b.Begin(0);
  ASSERT_TRUE(b.AddKernel(Kernel(5000, 6000, 100)));
  ASSERT_TRUE(b.AddString(1, "old", 3));
  b.Begin(4000);
  EXPECT_EQ(b.event_count(), 0u);
  ASSERT_TRUE(b.AddKernel(Kernel(5000, 6000, 100)));
  const proto::EventBatch batch = Finish(b).batch();
  EXPECT_EQ(batch.strings_size(), 0);
  ASSERT_EQ(batch.kernels().start_delta_ns_size(), 1);
  EXPECT_EQ(batch.kernels().start_delta_ns(0), 1000);
  EXPECT_EQ(batch.kernels().correlation_delta(0), 100);
}

TEST(BatchBuilderTest, RejectsWhatDoesNotFitAndAddsNothing) {
  BatchBuilder b(BatchBuilder::kMinChunkBytes);
  b.Begin(0);
  uint32_t accepted = 0;
  while (b.AddKernel(Kernel(1000 * (accepted + 1), 1000 * (accepted + 1) + 10, accepted + 1))) {
    ++accepted;
  }
  ASSERT_GT(accepted, 2u);
  // Nearly full: less than one worst-case kernel (10 varints) left.
  EXPECT_LT(b.max_chunk_bytes() - b.encoded_bytes_estimate(), 10 * kMaxVarintBytes);
  const std::string too_long(10 * kMaxVarintBytes, 'x');
  EXPECT_FALSE(b.AddString(1, too_long.data(), too_long.size()));
  EXPECT_EQ(b.event_count(), accepted);
  const proto::Chunk c = Finish(b);
  const proto::Kernels& k = c.batch().kernels();
  ASSERT_EQ(k.start_delta_ns_size(), static_cast<int>(accepted));
  EXPECT_EQ(c.batch().strings_size(), 0);
  // The rejected kernel did not advance the delta chain.
  uint64_t start = 0;
  for (int i = 0; i < k.start_delta_ns_size(); ++i) start += k.start_delta_ns(i);
  EXPECT_EQ(start, 1000u * accepted);
}

TEST(BatchBuilderTest, FillsManyBlocksAndDecodesEveryEvent) {
  BatchBuilder b(4 << 20);
  b.Begin(1'000'000);
  uint64_t t = 1'000'000;
  uint32_t n = 0;
  for (;; ++n) {
    KernelEvent k = Kernel(t, t + 3000 + n % 977, n + 1);
    k.name_id = n % 50 + 1;
    k.stream_id = n % 4;
    if (!b.AddKernel(k)) break;
    MemcpyEvent m{};
    m.start_ns = t + 10;
    m.end_ns = t + 20;
    m.bytes = n;
    if (n % 7 == 0 && !b.AddMemcpy(m)) break;
    t += 4000 + n % 313;
  }
  ASSERT_GT(n, 100000u);  // ~1024 blocks per column chain at least once over
  const proto::EventBatch batch = Finish(b).batch();
  const proto::Kernels& k = batch.kernels();
  ASSERT_EQ(k.start_delta_ns_size(), static_cast<int>(n));
  t = 1'000'000;
  uint64_t start = 1'000'000;
  for (uint32_t i = 0; i < n; ++i) {
    start += static_cast<uint64_t>(k.start_delta_ns(i));
    ASSERT_EQ(start, t) << i;
    ASSERT_EQ(k.duration_ns(i), 3000u + i % 977) << i;
    ASSERT_EQ(k.name_id(i), i % 50 + 1) << i;
    t += 4000 + i % 313;
  }
  EXPECT_EQ(batch.memcpys().bytes_size(), static_cast<int>((n + 6) / 7));
}

TEST(BatchBuilderTest, FinishChunkFailsCleanlyWhenOutIsTooSmall) {
  BatchBuilder b(8192);
  b.Begin(7);
  for (uint32_t i = 0; i < 50; ++i) ASSERT_TRUE(b.AddKernel(Kernel(i * 100, i * 100 + 5, i)));
  std::vector<uint8_t> full(b.encoded_bytes_estimate());
  const size_t n = b.FinishChunk(1, 2, 3, full.data(), full.size());
  ASSERT_GT(n, 0u);
  EXPECT_LE(n, b.encoded_bytes_estimate());
  for (size_t cap : {size_t{0}, size_t{1}, n / 2, n - 1}) {
    std::vector<uint8_t> out(cap + 16, 0xCC);
    EXPECT_EQ(b.FinishChunk(1, 2, 3, out.data(), cap), 0u) << cap;
    for (size_t i = cap; i < out.size(); ++i) ASSERT_EQ(out[i], 0xCC) << cap;
  }
  std::vector<uint8_t> exact(n);
  EXPECT_EQ(b.FinishChunk(1, 2, 3, exact.data(), n), n);
  EXPECT_EQ(exact, std::vector<uint8_t>(full.begin(), full.begin() + n));
}

TEST(BatchBuilderTest, NothingAllocatesAfterConstruction) {
  BatchBuilder b(1 << 20);
  std::vector<uint8_t> out(1 << 20);
  const char name[] = "_Z6kernelPfS_i";
  ProcessEndRecord end{};
  end.reason = 1;
  StringRef argv[] = {MakeStringRef("python"), MakeStringRef("train.py")};
  ProcessHeaderRecord header{};
  header.hostname = MakeStringRef("node1");
  header.cmdline = argv;
  header.cmdline_count = 2;

  const uint64_t before = g_allocations.load();
  size_t total = 0;
  for (int chunk = 0; chunk < 3; ++chunk) {
    b.Begin(chunk * 1000000ull);
    b.AddString(1, name, sizeof(name) - 1);
    b.AddLaunchConfig(LaunchConfigRecord{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
    b.AddClock(ClockRecord{1, 2, 3});
    for (uint32_t i = 0; i < 20000; ++i) {
      b.AddKernel(Kernel(i * 5000ull, i * 5000ull + 3000, i));
      if (i % 10 == 0) b.AddApiCall(ApiCallEvent{i * 5000ull, i * 5000ull + 800, 1, 211, 77, i, 0, 2});
    }
    total += b.FinishChunk(1, 2, chunk + 1, out.data(), out.size());
  }
  total += EncodeHeaderChunk(header, 1, 2, out.data(), out.size());
  total += EncodeEndChunk(end, 1, 2, 4, out.data(), out.size());
  const uint64_t after = g_allocations.load();
  EXPECT_EQ(after, before);
  EXPECT_GT(total, 3u * 20000u);
}

// The node monitor's window summaries (issue 24): every field, the
// nested GPUs, -1 for "not available" and the omitted defaults.
TEST(BatchBuilderTest, WindowSummariesRoundTripWithTheirGpus) {
  BatchBuilder b(4096);
  b.Begin(0);
  const WindowGpuRecord gpus[2] = {
      {0, MakeStringRef("GPU-0"), 0.25, 0.7, 88.5, false, 41.0, 12000, 90000, 1000, 2000000000},
      {3, MakeStringRef(""), 0.9, 0.05, -1, true, -1, 0, 0, 0, 1000000000},
  };
  WindowSummaryRecord r{};
  r.process_uid = 0xfedcba9876543210ull;
  r.pid = 4242;
  r.hostname = MakeStringRef("node7");
  r.job_id = MakeStringRef("job-1");
  r.rank = -1;
  r.start_realtime_ns = 1'800'000'000'000'000'000ull;
  r.end_realtime_ns = 1'800'000'002'000'000'000ull;
  r.close_reason = MakeStringRef("tracing_disabled");
  r.events = 12345;
  r.events_not_analysed = 7;
  r.events_dropped = 2;
  r.gpus = gpus;
  r.gpu_count = 2;
  r.top_rule = MakeStringRef("host-bound");
  r.top_severity = MakeStringRef("critical");
  r.top_title = MakeStringRef("GPU waits for the host");
  r.top_cost_ns = 1'500'000'000;
  r.top_cost_share = 0.75;
  r.trace_path = MakeStringRef("/traces/job-1_node7.gpscope");
  ASSERT_TRUE(b.AddWindowSummary(r));
  const proto::Chunk c = Finish(b);
  ASSERT_EQ(c.batch().window_summaries_size(), 1);
  const proto::WindowSummary& w = c.batch().window_summaries(0);
  EXPECT_EQ(w.process_uid(), 0xfedcba9876543210ull);
  EXPECT_EQ(w.pid(), 4242u);
  EXPECT_EQ(w.hostname(), "node7");
  EXPECT_EQ(w.job_id(), "job-1");
  EXPECT_EQ(w.rank(), -1);
  EXPECT_EQ(w.start_realtime_ns(), r.start_realtime_ns);
  EXPECT_EQ(w.end_realtime_ns(), r.end_realtime_ns);
  EXPECT_EQ(w.close_reason(), "tracing_disabled");
  EXPECT_EQ(w.events(), 12345u);
  EXPECT_EQ(w.events_not_analysed(), 7u);
  EXPECT_EQ(w.events_dropped(), 2u);
  EXPECT_EQ(w.top_rule(), "host-bound");
  EXPECT_EQ(w.top_severity(), "critical");
  EXPECT_EQ(w.top_title(), "GPU waits for the host");
  EXPECT_EQ(w.top_cost_ns(), 1'500'000'000u);
  EXPECT_EQ(w.top_cost_share(), 0.75);
  EXPECT_EQ(w.trace_path(), "/traces/job-1_node7.gpscope");
  ASSERT_EQ(w.gpus_size(), 2);
  EXPECT_EQ(w.gpus(0).uuid(), "GPU-0");
  EXPECT_EQ(w.gpus(0).idle_share(), 0.25);
  EXPECT_EQ(w.gpus(0).busy_share(), 0.7);
  EXPECT_EQ(w.gpus(0).sm_util_pct(), 88.5);
  EXPECT_FALSE(w.gpus(0).sm_util_estimated());
  EXPECT_EQ(w.gpus(0).mem_bw_util_pct(), 41.0);
  EXPECT_EQ(w.gpus(0).kernel_p50_ns(), 12000u);
  EXPECT_EQ(w.gpus(0).kernel_p95_ns(), 90000u);
  EXPECT_EQ(w.gpus(0).kernels(), 1000u);
  EXPECT_EQ(w.gpus(0).traced_ns(), 2000000000u);
  EXPECT_EQ(w.gpus(1).device_id(), 3u);
  EXPECT_EQ(w.gpus(1).sm_util_pct(), -1.0);
  EXPECT_TRUE(w.gpus(1).sm_util_estimated());
  EXPECT_EQ(w.gpus(1).mem_bw_util_pct(), -1.0);
  EXPECT_EQ(w.gpus(1).kernels(), 0u);

  // What does not fit the chunk is refused, as every sub-message.
  BatchBuilder small(BatchBuilder::kMinChunkBytes);
  small.Begin(0);
  std::string long_title(400, 'x');
  r.top_title = {long_title.data(), long_title.size()};
  const size_t before = small.encoded_bytes_estimate();
  EXPECT_FALSE(small.AddWindowSummary(r));
  EXPECT_EQ(small.encoded_bytes_estimate(), before);
}

TEST(BatchBuilderTest, HeaderAndEndChunksCarryTheirRecords) {
  std::vector<uint8_t> out(4096);
  ProcessEndRecord end{};
  end.end_ns = 99;
  end.reason = 2;
  end.signal = -15;  // int32: sign-extended on the wire
  end.clock = ClockRecord{1, 2, 3};
  size_t n = EncodeEndChunk(end, 5, 6, 7, out.data(), out.size());
  ASSERT_GT(n, 0u);
  proto::Chunk c;
  ASSERT_TRUE(c.ParseFromArray(out.data(), static_cast<int>(n)));
  ASSERT_EQ(c.body_case(), proto::Chunk::kEnd);
  EXPECT_EQ(c.sequence(), 7u);
  EXPECT_EQ(c.end().signal(), -15);
  EXPECT_EQ(c.end().reason(), proto::END_SIGNAL);
  EXPECT_EQ(c.end().clock().monotonic_ns(), 3u);

  ProcessHeaderRecord h{};
  h.format_version = 1;
  h.identity.rank = -1;
  h.identity.launcher = MakeStringRef("torchrun");
  StringRef argv[] = {MakeStringRef("python"), MakeStringRef("")};
  h.cmdline = argv;
  h.cmdline_count = 2;
  n = EncodeHeaderChunk(h, 5, 6, out.data(), out.size());
  ASSERT_GT(n, 0u);
  ASSERT_TRUE(c.ParseFromArray(out.data(), static_cast<int>(n)));
  ASSERT_EQ(c.body_case(), proto::Chunk::kHeader);
  EXPECT_EQ(c.sequence(), 0u);
  EXPECT_EQ(c.header().identity().rank(), -1);
  EXPECT_EQ(c.header().identity().launcher(), "torchrun");
  ASSERT_EQ(c.header().cmdline_size(), 2);  // the empty argument is kept
  EXPECT_EQ(c.header().cmdline(1), "");
  EXPECT_EQ(EncodeHeaderChunk(h, 5, 6, out.data(), n - 1), 0u);
}

}  // namespace
}  // namespace gpscope::format
