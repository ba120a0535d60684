// tests/export/export_formats_test.cc: `gpscope-analyze export` in both
// formats on a small built trace that has every kind of event, a partial
// overlap on one stream and a nested call that arrives before its parent;
// the Perfetto bytes are compared with the committed sample.pftrace
// (check_perfetto.py decodes that with protoc). Plus the pieces:
// lanes, the reorder window, flow matching, enum names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"
#include "tools/render/chrome_tracks.h"
#include "tools/render/perfetto_trace.h"

namespace gpscope {
namespace {

using render::FlowEnd;
using render::FlowMatcher;
using render::LaneAssigner;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

constexpr uint64_t kT0 = 1'000'000'000;  // the builder's clock snapshot: CUPTI 1e9

format::ApiCallEvent Api(testing::TraceBuilder::Process& p, const char* name, uint64_t start,
                         uint64_t end, uint32_t correlation) {
  format::ApiCallEvent a{};
  a.start_ns = kT0 + start;
  a.end_ns = kT0 + end;
  a.thread_id = 40;
  a.correlation_id = correlation;
  a.api_name_id = p.Intern(name);
  return a;
}

format::KernelEvent Kernel(testing::TraceBuilder::Process& p, const char* name, uint32_t stream,
                           uint64_t start, uint64_t end, uint32_t correlation) {
  format::KernelEvent k{};
  k.start_ns = kT0 + start;
  k.end_ns = kT0 + end;
  k.name_id = p.Intern(name);
  k.stream_id = stream;
  k.context_id = 1;
  k.correlation_id = correlation;
  return k;
}

// Every event kind, times in ns after kT0.
std::string BuildTrace() {
  testing::TraceBuilder trace;
  testing::TraceBuilder::Process& p = trace.AddProcess(0x100, 40);
  p.header().mutable_identity()->set_rank(0);
  p.WriteHeader();
  proto::MetricDescriptor* d = p.batch().add_metric_descriptors();
  d->set_id(5);
  d->set_name("gpu_util");
  d->set_scope(proto::SCOPE_DEVICE);
  d->set_device_id(0);
  // Launches and their work.
  p.Add(Api(p, "cudaLaunchKernel", 1000, 1500, 1));
  p.Add(Kernel(p, "_Z4gemmPfS_", 7, 2000, 3000, 1));
  p.Add(Api(p, "cudaMemcpyAsync", 1600, 1700, 2));
  format::MemcpyEvent m{};
  m.start_ns = kT0 + 3000;
  m.end_ns = kT0 + 3500;
  m.bytes = 4096;
  m.copy_kind = 1;  // HtoD
  m.src_kind = 2;   // pinned
  m.dst_kind = 3;   // device
  m.stream_id = 7;
  m.correlation_id = 2;
  m.flags = 1;
  p.Add(m);
  p.Add(Api(p, "cudaMemsetAsync", 1800, 1900, 3));
  format::MemsetEvent s{};
  s.start_ns = kT0 + 3500;
  s.end_ns = kT0 + 3600;
  s.bytes = 64;
  s.memory_kind = 3;
  s.stream_id = 7;
  s.correlation_id = 3;
  p.Add(s);
  // Two kernels on stream 8 that overlap without nesting: the later one
  // gets a lane of its own.
  p.Add(Kernel(p, "relu", 8, 5000, 7000, 4));
  p.Add(Kernel(p, "relu", 8, 6000, 8000, 5));
  // A driver call inside a runtime call, recorded first (it returns first):
  // both stay on the thread's lane, nested.
  p.Add(Api(p, "cuLaunchKernel", 10100, 10400, 10));
  p.Add(Api(p, "cudaLaunchKernel", 10000, 10500, 11));
  format::SyncEvent y{};
  y.start_ns = kT0 + 9000;
  y.end_ns = kT0 + 9500;
  y.sync_kind = 3;  // stream synchronize
  y.context_id = 1;
  y.stream_id = 7;
  y.thread_id = 40;
  p.Add(y);
  format::NvtxRangeEvent r{};
  r.start_ns = kT0 + 900;
  r.end_ns = kT0 + 12000;
  r.thread_id = 40;
  r.name_id = p.Intern("step 0");
  p.Add(r);
  format::NvtxMarkEvent mark{};
  mark.timestamp_ns = kT0 + 4000;
  mark.thread_id = 40;
  mark.name_id = p.Intern("checkpoint");
  p.Add(mark);
  p.Add(format::MetricSample{kT0 + 1000, 5, 50.0});
  p.Add(format::MetricSample{kT0 + 2000, 5, 75.5});
  p.Flush();
  p.WriteEnd();
  std::string path =
      ::testing::TempDir() + "export_formats_test." + std::to_string(getpid()) + ".gpscope";
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

std::string Export(const std::string& path, const std::string& format) {
  std::ostringstream out, err;
  EXPECT_EQ(analyze::Run({"export", "--format", format, path}, out, err), analyze::kExitOk)
      << err.str();
  return out.str();
}

TEST(ExportFormatsTest, ChromeJsonHasFlowsLanesAndEnumNames) {
  const std::string path = BuildTrace();
  const std::string json = Export(path, "chrome");
  // One flow per launch with GPU work: kernel, memcpy, memset (the two
  // calls at 10 us launched nothing the trace saw).
  EXPECT_EQ(Count(json, "\"ph\":\"s\""), 3u);
  EXPECT_EQ(Count(json, "\"ph\":\"f\""), 3u);
  EXPECT_EQ(Count(json, "\"bp\":\"e\""), 3u);
  // Enum values as names.
  EXPECT_NE(json.find("\"name\":\"Sync: stream synchronize\""), std::string::npos);
  EXPECT_NE(json.find("\"kind\":\"stream synchronize\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"Memcpy HtoD\""), std::string::npos);
  EXPECT_NE(json.find("\"src\":\"pinned\",\"dst\":\"device\""), std::string::npos);
  EXPECT_NE(json.find("\"memory\":\"device\""), std::string::npos);
  // The overlap on stream 8 takes a second lane; nothing else does.
  EXPECT_EQ(Count(json, "\"name\":\"GPU 0 stream 8 (2)\""), 1u);
  EXPECT_EQ(Count(json, " (2)\""), 1u);
  // Both kernels on stream 8 keep one name (the correlation id is an arg).
  EXPECT_EQ(Count(json, "\"name\":\"relu\""), 2u);
  EXPECT_NE(json.find("\"name\":\"gemm(float*, float*)\""), std::string::npos);
  EXPECT_EQ(Count(json, "\"ph\":\"C\""), 2u);
  unlink(path.c_str());
}

TEST(ExportFormatsTest, PerfettoMatchesTheCommittedSample) {
  const std::string path = BuildTrace();
  const std::string bytes = Export(path, "perfetto");
  ASSERT_FALSE(bytes.empty());
  // Not the JSON any more.
  EXPECT_NE(bytes[0], '{');
  const std::string sample = std::string(GPSCOPE_EXPORT_DIR) + "/sample.pftrace";
  if (getenv("GPSCOPE_UPDATE_SAMPLE") != nullptr) {
    // The trace too, for the CLI and node checks (tests/export/CMakeLists.txt).
    std::ifstream trace(path, std::ios::binary);
    std::ofstream(std::string(GPSCOPE_EXPORT_DIR) + "/sample.gpscope", std::ios::binary)
        << trace.rdbuf();
    std::ofstream(sample, std::ios::binary) << bytes;
  }
  std::ifstream in(sample, std::ios::binary);
  ASSERT_TRUE(in) << sample << ": missing (GPSCOPE_UPDATE_SAMPLE=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_TRUE(want.str() == bytes)
      << sample << " differs from the export (" << bytes.size() << " vs " << want.str().size()
      << " bytes); if the change is intended, GPSCOPE_UPDATE_SAMPLE=1 rewrites it";
  unlink(path.c_str());
}

// Trace processor merges processes by pid: a second process with a pid
// already seen (another node) is a named track, not a ProcessDescriptor.
TEST(ExportFormatsTest, PerfettoKeepsProcessesWithTheSamePidApart) {
  testing::TraceBuilder trace;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    testing::TraceBuilder::Process& p = trace.AddProcess(0x100 + rank, 40);
    p.header().mutable_identity()->set_rank(static_cast<int32_t>(rank));
    p.WriteHeader();
    p.Add(Kernel(p, "k", 7, 1000, 2000, 1));
    p.Flush();
    p.WriteEnd();
  }
  const std::string path =
      ::testing::TempDir() + "export_formats_pid." + std::to_string(getpid()) + ".gpscope";
  ASSERT_TRUE(trace.WriteFile(path));
  const std::string bytes = Export(path, "perfetto");
  unlink(path.c_str());
  auto field = [](char tag, const std::string& text) {
    return std::string(1, tag) + static_cast<char>(text.size()) + text;
  };
  // ProcessDescriptor.process_name (6) for the first, TrackDescriptor.name (2) for the second.
  EXPECT_EQ(Count(bytes, field('\x32', "rank 0 · pid 40 on testhost")), 1u);
  EXPECT_EQ(Count(bytes, field('\x32', "rank 1 · pid 40 on testhost")), 0u);
  EXPECT_EQ(Count(bytes, field('\x12', "rank 1 · pid 40 on testhost")), 1u);
}

// A hostile trace that names a new thread with every call: tracks past
// the cap get no window (bounded memory), their slices still go out.
TEST(ExportFormatsTest, PastTheTrackCapSlicesGoOutUnwindowed) {
  testing::TraceBuilder trace;
  testing::TraceBuilder::Process& p = trace.AddProcess(0x100, 40);
  p.WriteHeader();
  constexpr uint32_t kCalls = (1 << 16) + 100;
  for (uint32_t i = 0; i < kCalls; ++i) {
    format::ApiCallEvent a = Api(p, "cudaGetDevice", 1000 + i, 1001 + i, i + 1);
    a.thread_id = 1000 + i;
    p.Add(a);
    if (i % 8192 == 8191) p.Flush();
  }
  p.WriteEnd();
  const std::string path =
      ::testing::TempDir() + "export_formats_cap." + std::to_string(getpid()) + ".gpscope";
  ASSERT_TRUE(trace.WriteFile(path));
  std::ostringstream out, err;
  EXPECT_EQ(analyze::Run({"export", path}, out, err), analyze::kExitOk) << err.str();
  unlink(path.c_str());
  EXPECT_EQ(Count(out.str(), "\"cat\":\"cuda_api\""), kCalls);
  EXPECT_NE(err.str().find("100 slices on tracks past the first 65536 went out unsorted"),
            std::string::npos)
      << err.str();
}

TEST(LaneAssignerTest, NestedAndAdjacentSlicesShareLaneZero) {
  LaneAssigner lanes;
  EXPECT_EQ(lanes.Place(0, 100), 0u);
  EXPECT_EQ(lanes.Place(10, 50), 0u);   // inside
  EXPECT_EQ(lanes.Place(10, 20), 0u);   // same start, inside the last one
  EXPECT_EQ(lanes.Place(50, 100), 0u);  // after [10,50], inside [0,100]: ends together
  EXPECT_EQ(lanes.Place(100, 200), 0u); // touches: not an overlap
  EXPECT_EQ(lanes.Place(200, 200), 0u); // zero length
  EXPECT_EQ(lanes.lanes(), 1u);
}

TEST(LaneAssignerTest, PartialOverlapGoesToTheFirstLaneThatFits) {
  LaneAssigner lanes;
  EXPECT_EQ(lanes.Place(0, 100), 0u);
  EXPECT_EQ(lanes.Place(50, 150), 1u);   // overlaps [0,100] without nesting
  EXPECT_EQ(lanes.Place(60, 120), 1u);   // nests in [50,150]; overlaps [0,100]
  EXPECT_EQ(lanes.Place(90, 200), 2u);   // fits neither
  EXPECT_EQ(lanes.Place(150, 160), 0u);  // lane 0 is free again
  // Before a lane's last start: never on it (its stack is gone).
  EXPECT_EQ(lanes.Place(10, 20), 3u);
  EXPECT_EQ(lanes.forced(), 0u);
}

TEST(LaneAssignerTest, PastTheLaneCapTheLastLaneIsForced) {
  LaneAssigner lanes;
  for (uint32_t i = 0; i < LaneAssigner::kMaxLanes; ++i) {
    EXPECT_EQ(lanes.Place(i, 1000 + i), i);  // each overlaps all before it
  }
  EXPECT_EQ(lanes.Place(100, 5000), LaneAssigner::kMaxLanes - 1);
  EXPECT_EQ(lanes.forced(), 1u);
  EXPECT_EQ(lanes.lanes(), LaneAssigner::kMaxLanes);
}

struct Item {
  int64_t start_ns;
  int64_t end_ns;
  int tag;
};

TEST(ReorderWindowTest, ReleasesByStartThenLongerFirstThenArrival) {
  render::ReorderWindow<Item> w;
  std::vector<int> order;
  auto emit = [&](Item&& it) { order.push_back(it.tag); };
  w.Push({30, 40, 1}, emit);
  w.Push({10, 20, 2}, emit);  // the inner call, recorded first
  w.Push({10, 50, 3}, emit);  // its parent
  w.Push({30, 40, 4}, emit);  // a tie with 1: arrival order
  EXPECT_TRUE(order.empty());  // the window holds them
  w.Flush(emit);
  EXPECT_EQ(order, (std::vector<int>{3, 2, 1, 4}));
  EXPECT_TRUE(w.empty());
}

TEST(ReorderWindowTest, AFullWindowReleasesItsEarliest) {
  render::ReorderWindow<Item> w;
  std::vector<int> order;
  auto emit = [&](Item&& it) { order.push_back(it.tag); };
  for (size_t i = 0; i <= render::ReorderWindow<Item>::kWindow; ++i) {
    const int64_t t = static_cast<int64_t>(render::ReorderWindow<Item>::kWindow - i);
    w.Push({t, t + 1, static_cast<int>(i)}, emit);
  }
  ASSERT_EQ(order.size(), 1u);
  EXPECT_EQ(order[0], static_cast<int>(render::ReorderWindow<Item>::kWindow));  // start 0
}

TEST(FlowMatcherTest, PairsWhicheverEndComesFirstOneFlowPerWork) {
  FlowMatcher m;
  std::vector<FlowMatcher::Flow> out;
  const uint64_t key = FlowMatcher::Key(0, 7);
  m.Work(key, {0, 1, 500}, &out);  // the kernel before its call
  EXPECT_TRUE(out.empty());
  m.Launch(key, {0, 2, 100}, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].from.tid, 2u);
  EXPECT_EQ(out[0].to.ts_ns, 500);
  // A graph launch: more work with the same correlation, a flow each.
  m.Work(key, {0, 1, 900}, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[0].id, out[1].id);
  // Another process's correlation 7 is another launch.
  m.Work(FlowMatcher::Key(1, 7), {1, 1, 600}, &out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(m.flows(), 2u);
}

// Found by analyzer_fuzz: a hostile trace's times overflowed origin + offset.
TEST(PerfettoTraceWriterTest, RealtimeSaturates) {
  using render::PerfettoTraceWriter;
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(1000, 5), 1005u);
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(1000, -400), 600u);
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(1000, -1000), 0u);
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(1000, INT64_MIN), 0u);
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(1'000'000'000, INT64_MAX),
            uint64_t{INT64_MAX} + 1'000'000'000);
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(UINT64_MAX - 10, 20), UINT64_MAX);
  EXPECT_EQ(PerfettoTraceWriter::RealtimeNs(1, INT64_MAX), uint64_t{INT64_MAX} + 1);
}

TEST(EnumNamesTest, TraceEnumsAsNames) {
  EXPECT_EQ(render::SyncKindName(1), "event synchronize");
  EXPECT_EQ(render::SyncKindName(2), "stream wait event");
  EXPECT_EQ(render::SyncKindName(3), "stream synchronize");
  EXPECT_EQ(render::SyncKindName(4), "context synchronize");
  EXPECT_EQ(render::SyncKindName(9), "sync kind 9");
  EXPECT_EQ(render::MemcpyKindName(1), "HtoD");
  EXPECT_EQ(render::MemcpyKindName(8), "DtoD");
  EXPECT_EQ(render::MemcpyKindName(10), "PtoP");
  EXPECT_EQ(render::MemcpyKindName(11), "kind 11");
  EXPECT_EQ(render::MemoryKindName(2), "pinned");
  EXPECT_EQ(render::MemoryKindName(7), "managed static");
  EXPECT_EQ(render::MemoryKindName(0), "unknown");
  EXPECT_EQ(render::MemoryKindName(0xffffffffu), "kind 4294967295");
}

}  // namespace
}  // namespace gpscope
