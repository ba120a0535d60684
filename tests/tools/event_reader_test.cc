// tests/tools/event_reader_test.cc: the reader's one pass (event_reader.h):
// each process resolved once into its ProcessTables before its events reach
// a sink, several sinks fed from one decode, ids checked in the tables,
// streams resolved and capped, the common timebase and the time origin;
// and ClockAlign, the one clock alignment.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/trace_builder.h"
#include "tools/reader/clock_align.h"
#include "tools/reader/event_reader.h"
#include "tools/reader/limits.h"

namespace gpscope::reader {
namespace {

using testing::TraceBuilder;

constexpr uint64_t kMs = 1'000'000;

// Records what every call saw, resolving names through the tables.
class RecordingSink : public EventSink {
 public:
  void OnHeader(const ProcessTables& t, const proto::ProcessHeader& h, const ChunkPlace&) override {
    log.push_back("header " + h.hostname() + " devices " + std::to_string(t.devices().size()));
  }
  void OnBatch(const ResolvedBatch& b) override {
    if (!b.decode_status.ok()) {
      log.push_back("undecodable");
      return;
    }
    for (size_t i = 0; i < b.events.kernels.size(); ++i) {
      const format::KernelEvent& k = b.events.kernels[i];
      const LaunchShape* shape = b.tables.Launch(k.launch_config_id);
      const uint32_t s = b.kernel_streams[i];
      log.push_back("kernel " + b.tables.String(k.name_id) + " blocks " +
                    std::to_string(shape != nullptr ? shape->blocks() : 0) + " stream " +
                    (s == kNoStream ? std::string("none")
                                    : std::to_string(b.tables.stream(s).stream_id)));
    }
    for (const format::MetricSample& m : b.events.metrics) {
      const proto::MetricDescriptor* d = b.tables.Metric(m.metric_id);
      log.push_back("metric " + (d != nullptr ? d->name() : std::string("?")));
    }
  }
  void OnEnd(const ProcessTables&, const proto::ProcessEnd&, const ChunkPlace&) override {
    log.push_back("end");
  }
  std::vector<std::string> log;
};

format::KernelEvent Kernel(uint64_t start_ns, uint32_t name_id, uint32_t config, uint32_t stream) {
  format::KernelEvent k{};
  k.start_ns = start_ns;
  k.end_ns = start_ns + kMs;
  k.name_id = name_id;
  k.launch_config_id = config;
  k.context_id = 1;
  k.stream_id = stream;
  return k;
}

std::string Write(TraceBuilder& trace, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/event_reader_test_" + name;
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

TEST(EventReaderTest, ResolvesIdsThroughTheTablesBeforeSinksSeeTheEvents) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x11, 11);
  p.WriteHeader();
  proto::LaunchConfig* c = p.batch().add_launch_configs();
  c->set_id(3);
  c->set_grid_x(4);
  c->set_grid_y(2);
  c->set_grid_z(1);
  proto::MetricDescriptor* d = p.batch().add_metric_descriptors();
  d->set_id(5);
  d->set_name("nvml.power_w");
  const uint32_t gemm = p.Intern("gemm");
  p.Add(Kernel(2'000 * kMs, gemm, 3, 7));
  p.Add(Kernel(2'001 * kMs, 999, 42, 8));  // name and shape never defined
  p.Add(format::MetricSample{2'002 * kMs, 5, 300.0});
  p.Add(format::MetricSample{2'003 * kMs, 77, 1.0});  // undefined metric
  p.WriteEnd();
  const std::string path = Write(trace, "resolve");

  RecordingSink a, b;
  const ReadResult r = ReadEvents({path}, {&a, &b});
  const std::vector<std::string> want = {
      "header testhost devices 1", "kernel gemm blocks 8 stream 7", "kernel  blocks 0 stream 8",
      "metric nvml.power_w",       "metric ?",                      "end"};
  EXPECT_EQ(a.log, want);
  EXPECT_EQ(b.log, want);  // both sinks, from one decode
  ASSERT_EQ(r.tables.size(), 1u);
  const ProcessTables& t = *r.tables[0];
  EXPECT_EQ(t.process_uid(), 0x11u);
  EXPECT_EQ(t.String(gemm), "gemm");
  EXPECT_EQ(t.String(123456), "");
  EXPECT_EQ(t.string_ids(), size_t{gemm} + 1);
  EXPECT_EQ(t.Launch(42), nullptr);
  EXPECT_EQ(t.streams().size(), 2u);
  EXPECT_NE(t.Device(0), nullptr);  // DefaultHeader's device
}

// Counts the GPU ops' streams it was handed, wanting none.
class StreamlessSink : public EventSink {
 public:
  void OnBatch(const ResolvedBatch& b) override {
    kernels += b.events.kernels.size();
    streams += b.kernel_streams.size() + b.memcpy_streams.size() + b.memset_streams.size();
  }
  bool WantsStreams() const override { return false; }
  size_t kernels = 0;
  size_t streams = 0;
};

TEST(EventReaderTest, StreamsAreResolvedOnlyWhenASinkWantsThem) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x12, 12);
  p.WriteHeader();
  p.Add(Kernel(2'000 * kMs, p.Intern("gemm"), 3, 7));
  p.Add(Kernel(2'001 * kMs, p.Intern("gemm"), 3, 8));
  p.WriteEnd();
  const std::string path = Write(trace, "streamless");

  StreamlessSink alone;
  const ReadResult r = ReadEvents({path}, {&alone});
  EXPECT_EQ(alone.kernels, 2u);
  EXPECT_EQ(alone.streams, 0u);
  ASSERT_EQ(r.tables.size(), 1u);
  EXPECT_TRUE(r.tables[0]->streams().empty());

  StreamlessSink beside;
  RecordingSink wants;  // the default: resolved for every sink of the pass
  const ReadResult both = ReadEvents({path}, {&beside, &wants});
  EXPECT_EQ(beside.streams, 2u);
  EXPECT_EQ(wants.log[1], "kernel gemm blocks 0 stream 7");
  ASSERT_EQ(both.tables.size(), 1u);
  EXPECT_EQ(both.tables[0]->streams().size(), 2u);
}

TEST(EventReaderTest, IdsPastTheLimitsNeverSizeATable) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x12, 12);
  p.WriteHeader();
  proto::InternedString* s = p.batch().add_strings();
  s->set_id(kMaxStringId + 1);
  s->set_value("too far");
  proto::LaunchConfig* c = p.batch().add_launch_configs();
  c->set_id(0xffffffffu);
  p.Add(Kernel(2'000 * kMs, kMaxStringId + 1, 0xffffffffu, 7));
  p.WriteEnd();
  const std::string path = Write(trace, "limits");
  RecordingSink sink;
  const ReadResult r = ReadEvents({path}, {&sink});
  ASSERT_EQ(r.tables.size(), 1u);
  EXPECT_EQ(r.tables[0]->string_ids(), 0u);
  EXPECT_EQ(r.tables[0]->launch_ids(), 0u);
  EXPECT_EQ(r.tables[0]->String(kMaxStringId + 1), "");
}

TEST(EventReaderTest, StreamsPastTheLimitResolveToNoStreamAndAreCounted) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x13, 13);
  p.WriteHeader();
  const uint32_t name = p.Intern("k");
  for (uint32_t i = 0; i < kMaxStreamsPerProcess + 10; ++i) {
    p.Add(Kernel(2'000 * kMs + i, name, 0, i));
    if (i % 4096 == 4095) p.Flush();
  }
  p.WriteEnd();
  const std::string path = Write(trace, "streams");
  struct Count : EventSink {
    void OnBatch(const ResolvedBatch& b) override {
      for (uint32_t s : b.kernel_streams) (s == kNoStream ? none : some)++;
    }
    uint64_t some = 0, none = 0;
  } sink;
  const ReadResult r = ReadEvents({path}, {&sink});
  EXPECT_EQ(sink.some, kMaxStreamsPerProcess);
  EXPECT_EQ(sink.none, 10u);
  EXPECT_EQ(r.tables[0]->streams().size(), kMaxStreamsPerProcess);
  EXPECT_EQ(r.tables[0]->ops_past_limits(), 10u);
}

TEST(EventReaderTest, AnUndecodableBatchStillDefinesItsNamesAndReachesEverySink) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x14, 14);
  p.WriteHeader();
  const uint32_t name = p.Intern("kept");
  p.Add(Kernel(2'000 * kMs, name, 0, 7));
  p.batch().mutable_kernels()->add_duration_ns(1);  // one column longer than the others
  p.Flush();
  p.WriteEnd();
  const std::string path = Write(trace, "undecodable");
  RecordingSink sink;
  const ReadResult r = ReadEvents({path}, {&sink});
  EXPECT_EQ(sink.log, (std::vector<std::string>{"header testhost devices 1", "undecodable", "end"}));
  EXPECT_EQ(r.tables[0]->String(name), "kept");
}

// Two processes whose CUPTI clocks differ by an hour: the origin is the
// earliest event on CLOCK_REALTIME, not the smallest CUPTI timestamp.
TEST(EventReaderTest, TheOriginIsTheEarliestEventOnTheCommonTimebase) {
  TraceBuilder trace;
  TraceBuilder::Process& a = trace.AddProcess(0x21, 21);  // DefaultHeader: cupti 1e9 -> 1.7e18
  a.WriteHeader();
  a.Add(Kernel(1'000 * kMs + 5 * kMs, a.Intern("a"), 0, 7));  // realtime 1.7e18 + 5 ms
  a.WriteEnd();
  TraceBuilder::Process& b = trace.AddProcess(0x22, 22);
  b.header().clear_clocks();
  proto::ClockSnapshot* snap = b.header().add_clocks();
  snap->set_cupti_ns(5'000'000 * kMs);           // a far larger CUPTI time...
  snap->set_realtime_ns(1'700'000'000'000'000'000 + 2 * kMs);  // ...that is 2 ms after a's zero
  b.WriteHeader();
  b.Add(Kernel(5'000'000 * kMs, b.Intern("b"), 0, 7));
  b.Add(format::MetricSample{0, 1, 1.0});  // timestamp 0: an incomplete record, not a time
  b.WriteEnd();
  const std::string path = Write(trace, "origin");
  const ReadResult r = ReadEvents({path}, {});
  ASSERT_TRUE(r.timebase.has_origin());
  EXPECT_EQ(r.timebase.origin_realtime_ns(), 1'700'000'000'000'000'000u + 2 * kMs);
  EXPECT_EQ(r.timebase.ToOriginNs(0x22, 5'000'000 * kMs), 0u);
  EXPECT_EQ(r.timebase.ToOriginNs(0x21, 1'005 * kMs), 3 * kMs);
  EXPECT_EQ(r.timebase.OriginUtc(), "2023-11-14T22:13:20.002000000Z");
  // The scan that dump and export run first finds the same.
  EXPECT_EQ(ScanTimebase({path}).origin_realtime_ns(), r.timebase.origin_realtime_ns());
}

// trace.proto's text fields are bytes: a kernel name that is not valid
// UTF-8 no longer makes the parser drop the whole chunk (its kernels, the
// other names); the reader repairs the name (bad bytes -> U+FFFD) and says so.
TEST(EventReaderTest, AKernelNameThatIsNotUtf8KeepsItsChunkAndIsRepaired) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x31, 31);
  p.WriteHeader();
  const uint32_t bad = p.Intern(std::string("gemm_\xff\xfe_kernel"));
  const uint32_t good = p.Intern("copy_kernel");
  p.Add(Kernel(2'000 * kMs, bad, 0, 7));
  p.Add(Kernel(2'001 * kMs, good, 0, 7));
  p.WriteEnd();
  const std::string path = Write(trace, "utf8");
  RecordingSink sink;
  const ReadResult r = ReadEvents({path}, {&sink});
  const std::vector<std::string> want = {"header testhost devices 1",
                                         "kernel gemm_\xef\xbf\xbd\xef\xbf\xbd_kernel blocks 0 stream 7",
                                         "kernel copy_kernel blocks 0 stream 7", "end"};
  EXPECT_EQ(sink.log, want);
  EXPECT_EQ(r.index.files[0].bad_chunks, 0u);
  bool warned = false;
  for (const std::string& w : r.index.warnings) warned |= w.find("not valid UTF-8") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(Utf8Test, RepairReplacesOnlyTheBadBytes) {
  std::string s = "ok";
  EXPECT_FALSE(RepairUtf8(&s));
  EXPECT_EQ(s, "ok");
  s = "a\xc3\xa9" "b\x80" "c\xed\xa0\x80";  // é kept; a stray continuation; a surrogate
  EXPECT_TRUE(RepairUtf8(&s));
  EXPECT_EQ(s, "a\xc3\xa9" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(ClockAlignTest, InterpolatesAndStatesItsResidual) {
  ClockAlign c;
  EXPECT_EQ(c.residual_ns(), 0u);
  c.Add(1'000, 10'000);        // offset 9000
  c.Add(3'000, 12'100);        // offset 9100
  EXPECT_EQ(c.ToRealtimeNs(2'000), 11'050u);  // halfway: 9050
  EXPECT_EQ(c.residual_ns(), 0u);             // two snapshots: nothing to check
  c.Add(5'000, 14'200);        // offset 9200: on the line
  EXPECT_EQ(c.residual_ns(), 0u);
  c.Add(7'000, 16'600);        // offset 9600: 5000 misses the line 9100..9600 through it by 150
  EXPECT_EQ(c.residual_ns(), 150u);
  EXPECT_EQ(c.drift_ns(), 600u);
  c.Add(0, 7);  // a snapshot without CUPTI (cupti_ns 0) is no reading
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.ToRealtimeNs(2'000), 11'050u);
}

}  // namespace
}  // namespace gpscope::reader
