// tests/report/report_test.cc: the C++ side of `gpscope-analyze report`:
// escaping the data into the page, the embedded template, the blob
// encodings, the timeline's lanes and time base, and the JSON document, on
// synthetic traces from TraceBuilder. The page itself is tested in a browser
// (tests/report/run.mjs, scripts/test_report.sh).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"
#include "tools/analyze/summary.h"
#include "tools/reader/event_reader.h"
#include "tools/render/report_blob.h"
#include "tools/render/report_data.h"
#include "tools/render/report_html.h"
#include "tools/render/report_timeline.h"

namespace gpscope::render {
namespace {

using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 2'000'000'000;  // CUPTI ns; DefaultHeader maps 1e9 -> 1.7e18
constexpr char kEvil[] = "</script><img src=x onerror=alert(1)>";

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/report_test_" + name;
}

TimelineData Collect(const std::string& path, TimelineOptions options = {}) {
  TimelineCollector collector(options);
  const reader::ReadResult read = reader::ReadEvents({path}, {&collector});
  EXPECT_TRUE(read.index.FirstFileError().ok());
  return collector.Finish(read.timebase);
}

const TimelineLane* FindLane(const TimelineData& t, size_t process, LaneKind kind) {
  for (const TimelineLane& l : t.lanes) {
    if (l.process == process && l.kind == kind) return &l;
  }
  return nullptr;
}

// ------------------------------------------------------------- escaping --

TEST(ReportHtmlTest, EscapesEverythingThatCouldEndTheScriptOrStartMarkup) {
  EXPECT_EQ(EscapeJsonForScript(R"({"k":"</script><b>&amp;"})"),
            R"({"k":"\u003c/script\u003e\u003cb\u003e\u0026amp;"})");
  EXPECT_EQ(EscapeJsonForScript("\"a\xe2\x80\xa8"
                                "b\xe2\x80\xa9"
                                "c\""),
            "\"a\\u2028b\\u2029c\"");
  // Other UTF-8 (here U+20AC and a truncated sequence) passes through.
  EXPECT_EQ(EscapeJsonForScript("\"\xe2\x82\xac\xe2\x80\""), "\"\xe2\x82\xac\xe2\x80\"");
}

TEST(ReportHtmlTest, SplicesTheDataAtThePlaceholderOnly) {
  const std::string page =
      std::string("<p>a</p><script>") + std::string(kReportDataPlaceholder) + "</script>";
  absl::StatusOr<std::string> html = RenderReportHtml(page, R"({"x":"<"})");
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(*html, R"(<p>a</p><script>{"x":"\u003c"}</script>)");
  EXPECT_FALSE(RenderReportHtml("<p>no placeholder</p>", "{}").ok());
  EXPECT_FALSE(RenderReportHtml(page + page, "{}").ok());
}

TEST(ReportHtmlTest, EmbeddedTemplateHoldsThePlaceholderOnceAndNoNetworkReference) {
  const std::string_view t = ReportTemplate();
  ASSERT_GT(t.size(), 10'000u) << "report/dist/report_template.html looks empty";
  const size_t at = t.find(kReportDataPlaceholder);
  ASSERT_NE(at, std::string_view::npos);
  EXPECT_EQ(t.find(kReportDataPlaceholder, at + 1), std::string_view::npos);
  EXPECT_EQ(t.find("src=\"http"), std::string_view::npos);
  EXPECT_EQ(t.find("href=\"http"), std::string_view::npos);
}

// ------------------------------------------------------------ encodings --

TEST(ReportBlobTest, Base64MatchesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(ReportBlobTest, VarintsAndGzipRoundTrip) {
  BlobWriter w;
  const ColumnRef c = w.Column([](BlobWriter& b) {
    b.Varint(0);
    b.Varint(127);
    b.Varint(128);
    b.Varint(uint64_t{1} << 53);
  });
  EXPECT_EQ(c.offset, 0u);
  EXPECT_EQ(w.bytes(), std::string("\x00\x7f\x80\x01\x80\x80\x80\x80\x80\x80\x80\x10", 12));
  std::string big;
  for (int i = 0; i < 100000; ++i) big.push_back(static_cast<char>(i % 7));
  const std::string gz = GzipCompress(big);
  ASSERT_FALSE(gz.empty());
  EXPECT_LT(gz.size(), big.size() / 10);
  // Inflate with zlib's gzip decoder.
  std::string back(big.size(), '\0');
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  inflateEnd(&z);
  EXPECT_EQ(back, big);
}

TEST(ReportDataTest, PearsonIsOneForLinearAndNanForConstantSeries) {
  EXPECT_NEAR(Pearson({1, 2, 3, 4}, {2, 4, 6, 8}), 1.0, 1e-12);
  EXPECT_NEAR(Pearson({1, 2, 3, 4}, {8, 6, 4, 2}), -1.0, 1e-12);
  EXPECT_TRUE(std::isnan(Pearson({1, 2, 3}, {5, 5, 5})));
  EXPECT_TRUE(std::isnan(Pearson({1, NAN}, {1, 2})));
}

// ------------------------------------------------------------- timeline --

TEST(ReportTimelineTest, AlignsProcessesWhoseCuptiClocksDiffer) {
  TraceBuilder trace;
  // Process B's CUPTI clock reads 7 s more than A's at the same wall time.
  TraceBuilder::Process& a = trace.AddProcess(0xa, 10);
  a.WriteHeader();
  TraceBuilder::Process& b = trace.AddProcess(0xb, 11);
  b.header().mutable_clocks(0)->set_cupti_ns(8'000'000'000);
  b.header().mutable_identity()->set_rank(0);
  b.WriteHeader();
  a.AddKernel(kT0, 100 * kUs, "_Z1kv").WriteEnd();
  b.AddKernel(kT0 + 7'000 * kMs, 100 * kUs, "_Z1kv").WriteEnd();
  const std::string path = TempPath("align.gpscope");
  ASSERT_TRUE(trace.WriteFile(path));

  const TimelineData t = Collect(path);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].pid, 11u) << "ranked processes come first";
  const TimelineLane* la = FindLane(t, 1, LaneKind::kStream);
  const TimelineLane* lb = FindLane(t, 0, LaneKind::kStream);
  ASSERT_NE(la, nullptr);
  ASSERT_NE(lb, nullptr);
  EXPECT_EQ(la->events[0].start_ns, lb->events[0].start_ns);
  EXPECT_EQ(la->events[0].start_ns, 0u);
  EXPECT_EQ(t.t0_realtime_ns, 1'700'000'000'000'000'000 + (kT0 - 1'000'000'000));
  EXPECT_EQ(t.span_ns, 100 * kUs);
  EXPECT_EQ(t.names[la->events[0].name], "k()");
  std::remove(path.c_str());
}

TEST(ReportTimelineTest, StacksNestedRangesInRowsAndSortsLanesByStream) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1, 42);
  p.WriteHeader();
  p.AddKernel(kT0 + 5 * kMs, 10 * kUs, "late", /*stream_id=*/9);
  p.AddKernel(kT0, 10 * kUs, "early", /*stream_id=*/3);
  const uint32_t outer = p.Intern("step 1"), inner = p.Intern("forward");
  p.Add(format::NvtxRangeEvent{kT0, kT0 + 4 * kMs, outer, 0, 42, 0});
  p.Add(format::NvtxRangeEvent{kT0 + kMs, kT0 + 2 * kMs, inner, 0, 42, 1});
  p.Add(format::NvtxRangeEvent{kT0 + 5 * kMs, kT0 + 6 * kMs, inner, 0, 42, 0});
  p.WriteEnd();
  const std::string path = TempPath("rows.gpscope");
  ASSERT_TRUE(trace.WriteFile(path));

  const TimelineData t = Collect(path);
  std::vector<uint32_t> streams;
  for (const TimelineLane& l : t.lanes) {
    if (l.kind == LaneKind::kStream) streams.push_back(l.stream_id);
  }
  EXPECT_EQ(streams, (std::vector<uint32_t>{3, 9}));
  const TimelineLane* nvtx = FindLane(t, 0, LaneKind::kNvtx);
  ASSERT_NE(nvtx, nullptr);
  EXPECT_EQ(nvtx->rows, 2u);
  ASSERT_EQ(nvtx->events.size(), 3u);
  EXPECT_EQ(nvtx->events[0].row, 0);
  EXPECT_EQ(nvtx->events[0].category, EventCategory::kNvtxStep);
  EXPECT_EQ(nvtx->events[1].row, 1);
  EXPECT_EQ(nvtx->events[2].row, 0);
  std::remove(path.c_str());
}

TEST(ReportTimelineTest, CountsEventsPastTheCapInsteadOfKeepingThem) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1, 42);
  p.WriteHeader();
  for (int i = 0; i < 100; ++i) p.AddKernel(kT0 + i * 20 * kUs, 10 * kUs, "k");
  p.WriteEnd();
  const std::string path = TempPath("cap.gpscope");
  ASSERT_TRUE(trace.WriteFile(path));
  TimelineOptions options;
  options.max_events = 60;
  const TimelineData t = Collect(path, options);
  EXPECT_EQ(t.events_kept, 60u);
  EXPECT_EQ(t.events_not_kept, 40u);
  std::remove(path.c_str());
}

// -------------------------------------------------------------- the JSON --

TEST(ReportDataTest, DocumentCarriesSummaryTimelineAndFindingRangesInReportTime) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1, 42);
  p.WriteHeader();
  // A starved loop: 3 ms of kernels, then 20 ms idle, 40 times.
  uint64_t t = kT0;
  for (int s = 0; s < 40; ++s) {
    const uint32_t step = p.Intern("step " + std::to_string(s));
    p.Add(format::NvtxRangeEvent{t, t + 3 * kMs, step, 0, 42, 0});
    for (int k = 0; k < 30; ++k) p.AddKernel(t + k * 100 * kUs, 90 * kUs, kEvil);
    t += 23 * kMs;
  }
  p.WriteEnd();
  const std::string path = TempPath("doc.gpscope");
  ASSERT_TRUE(trace.WriteFile(path));

  std::unique_ptr<analyze::SummaryResult> result =
      analyze::ComputeSummaryResult({path}, model::ModelOptions{}, analyses::ReportOptions{});
  const TimelineData timeline = Collect(path);
  ReportInputs in;
  in.model = &result->model;
  in.summary = &result->report;
  in.findings = &result->findings;
  in.summary_json = analyze::RenderSummaryJson(*result);
  in.timeline = &timeline;
  in.generator = "test";
  ReportDataOptions options;
  options.bin_threshold = 100;  // the 1,200 kernels get bins too
  const std::string json = BuildReportJson(in, options);

  EXPECT_EQ(json.rfind("{\"schema\":\"gpscope.report/1\"", 0), 0u);
  for (const char* key :
       {"\"summary\":{", "\"timeline\":{", "\"bins\":{\"busy\"", "\"steps\":{", "\"correlation\":{",
        "\"encoding\":\"gzip+base64\"", "\"kernel_duration\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  // The kernel name is JSON-escaped data; the page escapes < and > later.
  EXPECT_NE(json.find("\"</script><img src=x onerror=alert(1)>\""), std::string::npos);
  ASSERT_FALSE(result->findings.empty());
  // Finding ranges are in report ns: small numbers, not CUPTI's ~2e9.
  const size_t f = json.find("\"findings\":[{\"group\":");
  ASSERT_NE(f, std::string::npos);
  const size_t start = json.find("\"start_ns\":", f);
  ASSERT_NE(start, std::string::npos);
  EXPECT_LT(std::stoull(json.substr(start + 11, 20)), 40 * 23 * kMs);

  absl::StatusOr<std::string> html = RenderReportHtml(ReportTemplate(), json);
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->find(kEvil), std::string::npos);
  EXPECT_NE(html->find("\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e"),
            std::string::npos);
  std::remove(path.c_str());
}

// ---------------------------------------------------- tiles by zoom level --

// Reads what the page reads from the JSON without a JSON library: the
// number after `key` from `at`, an [offset, bytes] column ref, a packed
// piece's bytes ({bytes, data}: base64 of gzip).
uint64_t NumberAfter(const std::string& json, const std::string& key, size_t at) {
  const size_t k = json.find(key, at);
  EXPECT_NE(k, std::string::npos) << key;
  return k == std::string::npos ? 0 : std::stoull(json.substr(k + key.size(), 24));
}

std::pair<size_t, size_t> RefAfter(const std::string& json, const std::string& name, size_t at) {
  const std::string key = "\"" + name + "\":[";
  const size_t k = json.find(key, at);
  EXPECT_NE(k, std::string::npos) << name;
  if (k == std::string::npos) return {0, 0};
  const std::vector<std::string> parts = absl::StrSplit(
      json.substr(k + key.size(), json.find(']', k) - k - key.size()), ',');
  return {std::stoull(parts[0]), std::stoull(parts[1])};
}

std::string Unpack(const std::string& json, size_t at) {
  const size_t raw_bytes = NumberAfter(json, "\"bytes\":", at);
  const size_t d = json.find("\"data\":\"", at) + 8;
  const std::string b64 = json.substr(d, json.find('"', d) - d);
  std::string gz;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : b64) {
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* pos = std::strchr(alphabet, ch);
    if (ch == '=' || pos == nullptr) break;
    acc = (acc << 6) | static_cast<uint32_t>(pos - alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      gz.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  std::string out(raw_bytes, '\0');
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(gz.data());
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

std::vector<uint64_t> Varints(const std::string& bytes, std::pair<size_t, size_t> ref, bool delta) {
  std::vector<uint64_t> out;
  uint64_t previous = 0;
  for (size_t p = ref.first; p < ref.first + ref.second;) {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
      b = static_cast<uint8_t>(bytes[p++]);
      v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
    } while (b >= 0x80);
    previous = delta ? previous + v : v;
    out.push_back(previous);
  }
  return out;
}

// Issue 24: a busy lane's events are tiles, each packed on its own, that
// together hold every event exactly; its finer bin levels count the same
// events (the page decodes a tile or a level only when a zoom needs it).
TEST(ReportDataTest, TilesHoldEveryEventAndFinerLevelsCountThem) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1, 42);
  p.WriteHeader();
  constexpr int kKernels = 5000;
  for (int i = 0; i < kKernels; ++i) {
    // Every 10th kernel runs into the next one (a negative gap).
    p.AddKernel(kT0 + i * 20 * kUs + (i % 7) * kUs, (i % 10 == 0 ? 25 : 3 + i % 11) * kUs,
                i % 3 == 0 ? "a" : (i % 3 == 1 ? "b" : "c"));
  }
  p.WriteEnd();
  const std::string path = TempPath("tiles.gpscope");
  ASSERT_TRUE(trace.WriteFile(path));
  std::unique_ptr<analyze::SummaryResult> result =
      analyze::ComputeSummaryResult({path}, model::ModelOptions{}, analyses::ReportOptions{});
  const TimelineData timeline = Collect(path);
  const TimelineLane* stream = FindLane(timeline, 0, LaneKind::kStream);
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(stream->events.size(), static_cast<size_t>(kKernels));
  ReportInputs in;
  in.model = &result->model;
  in.summary = &result->report;
  in.findings = &result->findings;
  in.summary_json = analyze::RenderSummaryJson(*result);
  in.timeline = &timeline;
  in.generator = "test";
  ReportDataOptions options;
  options.tiled_above = 1000;
  options.tile_events = 700;  // 8 tiles, the last one short
  options.bin_count = 50;
  options.levels = 3;
  options.level_factor = 4;
  options.level_events = 100;  // 5000 / 16 > 100: two finer levels
  const std::string json = BuildReportJson(in, options);

  const size_t lane_at = json.find("\"kind\":\"stream\"");
  ASSERT_NE(lane_at, std::string::npos);
  const size_t tiles_at = json.find("\"cols\":null,\"tiles\":{\"events\":700,", lane_at);
  ASSERT_NE(tiles_at, std::string::npos);
  // Every event, from the tiles, equals the timeline's, in order.
  std::vector<uint64_t> starts, durs, names;
  std::vector<uint64_t> first_ns;
  {
    const size_t f = json.find("\"first_ns\":[", tiles_at) + 12;
    for (absl::string_view v : absl::StrSplit(json.substr(f, json.find(']', f) - f), ',')) {
      first_ns.push_back(std::stoull(std::string(v)));
    }
  }
  ASSERT_EQ(first_ns.size(), 8u);
  size_t at = json.find("\"parts\":[", tiles_at);
  for (size_t t = 0; t < first_ns.size(); ++t) {
    at = json.find("{\"cols\":{", at);
    ASSERT_NE(at, std::string::npos);
    const std::string bytes = Unpack(json, at);
    const std::vector<uint64_t> gap = Varints(bytes, RefAfter(json, "gap", at), false);
    const std::vector<uint64_t> d = Varints(bytes, RefAfter(json, "dur", at), false);
    ASSERT_EQ(gap.size(), d.size());
    std::vector<uint64_t> s;  // start = previous end + unzigzag(gap)
    for (size_t i = 0, end = 0; i < gap.size(); ++i) {
      const uint64_t start = gap[i] % 2 ? end - (gap[i] + 1) / 2 : end + gap[i] / 2;
      s.push_back(start);
      end = start + d[i];
    }
    const std::vector<uint64_t> n = Varints(bytes, RefAfter(json, "name", at), false);
    ASSERT_EQ(s.size(), t + 1 < first_ns.size() ? 700u : kKernels - 7 * 700u);
    EXPECT_EQ(s.front(), first_ns[t]);
    starts.insert(starts.end(), s.begin(), s.end());
    durs.insert(durs.end(), d.begin(), d.end());
    names.insert(names.end(), n.begin(), n.end());
    at += 8;
  }
  ASSERT_EQ(starts.size(), stream->events.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSERT_EQ(starts[i], stream->events[i].start_ns) << i;
    ASSERT_EQ(durs[i], stream->events[i].duration_ns) << i;
    ASSERT_EQ(names[i], stream->events[i].name) << i;
  }
  // The finer levels: 200 and 800 bins, each bin's count the events that
  // overlap it.
  size_t level_at = json.find("\"levels\":[", at);
  ASSERT_NE(level_at, std::string::npos);
  for (uint64_t expected_bins : {200u, 800u}) {
    level_at = json.find("{\"bin_count\":", level_at);
    ASSERT_NE(level_at, std::string::npos);
    const uint64_t bins = NumberAfter(json, "\"bin_count\":", level_at);
    const uint64_t width = NumberAfter(json, "\"bin_ns\":", level_at);
    EXPECT_EQ(bins, expected_bins);
    EXPECT_GE(bins * width, timeline.span_ns);
    const std::string bytes = Unpack(json, level_at);
    const std::vector<uint64_t> count = Varints(bytes, RefAfter(json, "count", level_at), false);
    ASSERT_EQ(count.size(), bins);
    std::vector<uint64_t> exact(bins, 0);
    for (const TimelineEvent& e : stream->events) {
      const uint64_t end = e.start_ns + e.duration_ns;
      for (uint64_t b = e.start_ns / width; b < bins && b * width < std::max(end, e.start_ns + 1);
           ++b) {
        ++exact[b];
      }
    }
    EXPECT_EQ(count, exact) << bins;
    level_at += 12;
  }
  EXPECT_EQ(json.find("{\"bin_count\":", level_at), std::string::npos);  // no third level
  std::remove(path.c_str());
}

// The report JSON of a synthetic two-rank job: rank 1's CUPTI clock reads
// 3 s more than rank 0's; rank 0 runs 1 s of kernels on GPU 0, rank 1
// 0.6 s on GPU 1 from 250 ms later, each with a GPU counter; rank 0's host
// blocks 300 ms in one cudaStreamSynchronize.
std::string TwoRankJson() {
  TraceBuilder trace;
  std::vector<TraceBuilder::Process*> procs;
  for (int r = 0; r < 2; ++r) {
    TraceBuilder::Process& p = trace.AddProcess(0x10 + r, 100 + r);
    p.header().mutable_identity()->set_rank(r);
    p.header().mutable_identity()->set_world_size(2);
    p.header().mutable_devices(0)->set_device_id(static_cast<uint32_t>(r));
    p.header().mutable_clocks(0)->set_cupti_ns(1'000'000'000 + r * 3'000'000'000ull);
    p.WriteHeader();
    procs.push_back(&p);
  }
  for (int r = 0; r < 2; ++r) {
    TraceBuilder::Process& p = *procs[static_cast<size_t>(r)];
    const uint64_t base = kT0 + static_cast<uint64_t>(r) * 3'000'000'000ull;
    proto::MetricDescriptor* d = p.batch().add_metric_descriptors();
    d->set_id(1);
    d->set_name("gpm.nvlink_rx_bytes_per_s");
    d->set_unit("bytes/s");
    d->set_scope(proto::SCOPE_DEVICE);
    d->set_device_id(static_cast<uint32_t>(r));
    d->set_label("GPU-uuid-" + std::to_string(r));
    const uint64_t first = r == 0 ? base : base + 250 * kMs;
    for (int i = 0; i < (r == 0 ? 100 : 60); ++i) {
      format::KernelEvent k{};
      k.start_ns = first + static_cast<uint64_t>(i) * 10 * kMs;
      k.end_ns = k.start_ns + 6 * kMs;
      k.device_id = static_cast<uint32_t>(r);
      k.context_id = 1;
      k.stream_id = 7;
      k.correlation_id = static_cast<uint32_t>(i + 1);
      k.name_id = p.Intern("_Z4gemmv");
      p.Add(k);
      p.Add(format::MetricSample{k.start_ns, 1, 1.5e9});
    }
    if (r == 0) {
      p.Add(format::ApiCallEvent{base + 400 * kMs, base + 700 * kMs, proto::API_RUNTIME, 131,
                                 100, 1000, 0, p.Intern("cudaStreamSynchronize")});
    }
    p.WriteEnd();
  }
  const std::string path = TempPath("two_ranks.gpscope");
  EXPECT_TRUE(trace.WriteFile(path));
  std::unique_ptr<analyze::SummaryResult> result =
      analyze::ComputeSummaryResult({path}, model::ModelOptions{}, analyses::ReportOptions{});
  const TimelineData timeline = Collect(path);
  ReportInputs in;
  in.model = &result->model;
  in.summary = &result->report;
  in.findings = &result->findings;
  in.summary_json = analyze::RenderSummaryJson(*result);
  in.timeline = &timeline;
  in.generator = "test";
  std::string json = BuildReportJson(in);
  std::remove(path.c_str());
  return json;
}

// The positions just past every occurrence of `needle` in `text`. (No
// std::regex: GCC 12's trips -Wmaybe-uninitialized in the ASan build.)
std::vector<size_t> After(const std::string& text, const std::string& needle, size_t from = 0,
                          size_t to = std::string::npos) {
  std::vector<size_t> out;
  for (size_t at = text.find(needle, from); at != std::string::npos && at < to;
       at = text.find(needle, at + 1)) {
    out.push_back(at + needle.size());
  }
  return out;
}

// The JSON number or string value at `pos` (a string without its quotes).
std::string ValueAt(const std::string& text, size_t pos) {
  if (text[pos] == '"') return text.substr(pos + 1, text.find('"', pos + 1) - pos - 1);
  return text.substr(pos, text.find_first_of(",}]", pos) - pos);
}

// Field `key` of the object that starts at or before `pos` (the first one
// after the object's start).
std::string FieldAfter(const std::string& text, size_t object_start, const std::string& key) {
  const size_t at = text.find("\"" + key + "\":", object_start);
  return at == std::string::npos ? "" : ValueAt(text, at + key.size() + 3);
}

TEST(ReportDataTest, GpuCountersFoldApartFromTheirStreams) {
  const std::string json = TwoRankJson();
  // Per rank: a "gpu" group for the streams and a "gpu_metrics" group for
  // the counters, both under the rank's process group.
  const size_t groups_at = json.find("\"groups\":[");
  const size_t lanes_at = json.find("\"lanes\":[", groups_at);
  ASSERT_NE(groups_at, std::string::npos);
  struct Group {
    std::string label, kind, parent;
  };
  std::vector<Group> groups;
  for (size_t at : After(json, "{\"label\":", groups_at, lanes_at)) {
    const size_t object = at - 9;
    groups.push_back({ValueAt(json, at), FieldAfter(json, object, "kind"),
                      FieldAfter(json, object, "parent")});
  }
  std::vector<Group> gpu_groups;
  for (const Group& g : groups) {
    if (g.kind == "gpu" || g.kind == "gpu_metrics") gpu_groups.push_back(g);
  }
  ASSERT_EQ(gpu_groups.size(), 4u) << json.substr(groups_at, 800);
  EXPECT_EQ(gpu_groups[0].kind, "gpu");
  EXPECT_EQ(gpu_groups[1].kind, "gpu_metrics");
  EXPECT_EQ(gpu_groups[1].label, "GPU 0 · metrics");
  EXPECT_EQ(gpu_groups[3].label, "GPU 1 · metrics");
  EXPECT_EQ(gpu_groups[0].parent, gpu_groups[1].parent) << "both under rank 0's group";
  EXPECT_NE(gpu_groups[1].parent, gpu_groups[3].parent);
  // The counter lane points at the metrics group, the stream lane at the GPU's.
  std::vector<std::string> gpu_of, metrics_of;
  for (size_t at : After(json, "\"metrics_group\":")) {
    metrics_of.push_back(ValueAt(json, at));
    const size_t group = json.rfind("\"group\":", at);
    gpu_of.push_back(ValueAt(json, group + 8));
  }
  ASSERT_EQ(metrics_of.size(), 2u);
  std::vector<std::string> stream_groups, counter_groups;
  for (size_t at : After(json, "{\"group\":", lanes_at)) {
    const std::string kind = FieldAfter(json, at, "kind");
    if (kind == "stream") stream_groups.push_back(ValueAt(json, at));
    if (kind == "counter") counter_groups.push_back(ValueAt(json, at));
  }
  EXPECT_EQ(stream_groups, gpu_of);
  EXPECT_EQ(counter_groups, metrics_of);
}

TEST(ReportDataTest, TrendWindowsShareOneWidthAlignedInReportTime) {
  const std::string json = TwoRankJson();
  std::vector<uint64_t> starts, widths;
  for (size_t at : After(json, "\"trend\":{\"start_ns\":")) {
    starts.push_back(std::stoull(ValueAt(json, at)));
    widths.push_back(std::stoull(FieldAfter(json, at, "width_ns")));
  }
  ASSERT_EQ(starts.size(), 2u);
  const uint64_t width = widths[0];
  EXPECT_GT(width, 0u);
  EXPECT_EQ(widths[1], width) << "one window width for every GPU";
  for (uint64_t start : starts) EXPECT_EQ(start % width, 0u) << start;
  // Rank 1 started 250 ms later: its first window is the one holding 250 ms.
  EXPECT_EQ(starts[0], 0u);
  EXPECT_EQ(starts[1], 250 * kMs / width * width);
}

TEST(ReportDataTest, HostBlockedShareStaysWithinEachWindow) {
  const std::string json = TwoRankJson();
  std::vector<std::vector<double>> series;
  for (size_t at : After(json, "\"sync_blocked_share\":[")) {
    std::vector<double> values;
    for (absl::string_view v :
         absl::StrSplit(json.substr(at, json.find(']', at) - at), ',', absl::SkipEmpty())) {
      if (v != "null") values.push_back(std::stod(std::string(v)));
    }
    series.push_back(std::move(values));
  }
  ASSERT_EQ(series.size(), 2u);
  double max0 = 0, sum0 = 0, max1 = 0;
  for (double v : series[0]) {
    max0 = std::max(max0, v);
    sum0 += v;
  }
  for (double v : series[1]) max1 = std::max(max1, v);
  // One 300 ms call spans several windows: each is at most fully blocked,
  // and the windows add up to the call.
  EXPECT_LE(max0, 1.0);
  EXPECT_GE(max0, 0.99);
  const size_t width_at = json.find("\"width_ns\":", json.find("\"trend\":{"));
  const double width = std::stod(ValueAt(json, width_at + 11));
  EXPECT_NEAR(sum0 * width, 300.0 * kMs, 1.0 * kMs);
  EXPECT_EQ(max1, 0.0);
}

// Issue 20: a sync wait (CUPTI's synchronization record) clicked on the
// timeline shows the stack of the call it waited in, joined by correlation
// id whichever of the two comes first, also across batches.
TEST(ReportTimelineTest, ASyncWaitCarriesTheStackOfTheCallItWaitedIn) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x5717c, 4242);
  p.WriteHeader();
  const uint32_t f_item = p.AddPythonFrame("/home/u/train.py", 42, "train_step");
  const uint32_t stack = p.AddStack({f_item});
  constexpr uint32_t kTid = 4242;
  auto sync = [&](uint64_t t, uint32_t corr) {
    format::SyncEvent y{};
    y.start_ns = t + 2 * kUs;
    y.end_ns = t + 40 * kUs;
    y.sync_kind = proto::SYNC_STREAM_SYNCHRONIZE;
    y.context_id = 1;
    y.stream_id = 7;
    y.event_id = 0xffffffff;
    y.correlation_id = corr;
    y.thread_id = kTid;
    p.Add(y);
  };
  auto call = [&](uint64_t t, uint32_t corr) {
    p.AddStackSample(t, kTid, corr, stack, proto::STACK_SYNC);
    p.Add(format::ApiCallEvent{t, t + 45 * kUs, proto::API_RUNTIME, 131, kTid, corr, 0,
                               p.Intern("cudaStreamSynchronize_v3020")});
  };
  p.AddKernel(kT0, 30 * kUs, "k");
  call(kT0 + 1 * kMs, 900);  // the call first, its wait in the same batch
  sync(kT0 + 1 * kMs, 900);
  sync(kT0 + 2 * kMs, 901);  // the wait first, its call in the next batch
  p.Flush();
  call(kT0 + 2 * kMs, 901);
  sync(kT0 + 3 * kMs, 902);  // a wait whose call never came: no stack
  p.WriteEnd();
  const std::string path = TempPath("sync_stacks.gpscope");
  ASSERT_TRUE(trace.WriteFile(path));

  const TimelineData t = Collect(path);
  const TimelineLane* waits = FindLane(t, 0, LaneKind::kSync);
  const TimelineLane* api = FindLane(t, 0, LaneKind::kApi);
  ASSERT_NE(waits, nullptr);
  ASSERT_NE(api, nullptr);
  ASSERT_EQ(waits->events.size(), 3u);
  ASSERT_EQ(api->stack_calls.size(), 2u);
  ASSERT_EQ(waits->stack_calls.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(waits->stack_calls[i].first, waits->events[i].start_ns) << i;
    EXPECT_EQ(waits->stack_calls[i].second, api->stack_calls[i].second) << i;
    EXPECT_NE(waits->stack_calls[i].second, 0u);
  }
  std::remove(path.c_str());
}

TEST(ReportCommandTest, WritesAFileAndRejectsBadUsage) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1, 42);
  p.WriteHeader();
  p.AddKernel(kT0, 10 * kUs, "k").WriteEnd();
  const std::string path = TempPath("cmd.gpscope");
  const std::string out_path = TempPath("cmd.html");
  ASSERT_TRUE(trace.WriteFile(path));
  std::ostringstream out, err;
  EXPECT_EQ(analyze::Run({"report", path, "-o", out_path}, out, err), analyze::kExitOk)
      << err.str();
  EXPECT_NE(out.str().find("wrote " + out_path), std::string::npos);
  FILE* f = std::fopen(out_path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  std::ostringstream out2, err2;
  EXPECT_EQ(analyze::Run({"report"}, out2, err2), analyze::kExitUsage);
  EXPECT_EQ(analyze::Run({"report", "--bins", "3", path}, out2, err2), analyze::kExitUsage);
  EXPECT_EQ(analyze::Run({"report", "/nonexistent/x.gpscope", "-o", out_path}, out2, err2),
            analyze::kExitFailed);
  std::remove(path.c_str());
  std::remove(out_path.c_str());
}

}  // namespace
}  // namespace gpscope::render
