// tests/tools/hardening_test.cc: the analyzer's defences against hostile
// traces (issue 17) at unit level: the text sanitizer, JSON and CSV
// escaping, the reader's chunk limits, the memory-budget size parser, and
// resynchronisation through the CRC index (frames larger than the direct
// checksum size, found after damage, exactly as a direct sum finds them).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/testing/trace_builder.h"
#include "tools/reader/limits.h"
#include "tools/reader/trace_reader.h"
#include "tools/render/csv_writer.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_sanitize.h"

namespace gpscope {
namespace {

using testing::TraceBuilder;

TEST(TextSanitizeTest, ControlCharactersFromATraceAreShownEscaped) {
  EXPECT_EQ(render::Printable("gemm\x1b]0;t\x07"), "gemm\\x1b]0;t\\x07");
  EXPECT_EQ(render::Printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(render::Printable("line\nbreak\ttab\x7f"), "line\\x0abreak\\x09tab\\x7f");
  EXPECT_EQ(render::Printable("csi\xc2\x9b" "31m"), "csi\\u009b31m");          // C1
  EXPECT_EQ(render::Printable("rtl\xe2\x80\xae" "x"), "rtl\\u202ex");           // U+202E
  EXPECT_EQ(render::Printable("iso\xe2\x81\xa6" "x"), "iso\\u2066x");           // U+2066
  EXPECT_EQ(render::Printable("caf\xc3\xa9 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

TEST(TextSanitizeTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(render::Printable("a\xff" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(render::Printable("\xc3"), "\xef\xbf\xbd");              // truncated
  EXPECT_EQ(render::Printable("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong
  EXPECT_EQ(render::Printable("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_TRUE(render::IsValidUtf8(render::Printable("\xfe\xfe\x80\xc2")));
}

TEST(TextSanitizeTest, DocumentsKeepTheirLayout) {
  EXPECT_EQ(render::SanitizeTerminal("a\tb\nc\x1b[2J\r\n"), "a\tb\nc\\x1b[2J\\x0d\n");
}

TEST(TextSanitizeTest, CutsNeverSplitACharacter) {
  EXPECT_EQ(render::CutUtf8("h\xc3\xa9llo", 2), "h");
  EXPECT_EQ(render::CutUtf8("h\xc3\xa9llo", 3), "h\xc3\xa9");
  std::string wide;
  for (int i = 0; i < 50; ++i) wide += "\xc3\xa9";
  for (size_t w = 4; w < 40; ++w) {
    const std::string e = render::Ellipsize(wide, w);
    EXPECT_LE(e.size(), w);
    EXPECT_TRUE(render::IsValidUtf8(e)) << w;
  }
}

TEST(JsonQuoteTest, EveryStringBecomesValidJson) {
  EXPECT_EQ(render::JsonWriter::Quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(render::JsonWriter::Quote("\x1b[2J"), "\"\\u001b[2J\"");
  EXPECT_EQ(render::JsonWriter::Quote("x\xff"), "\"x\\ufffd\"");
  EXPECT_EQ(render::JsonWriter::Quote("rtl\xe2\x80\xae"), "\"rtl\\u202e\"");
  EXPECT_EQ(render::JsonWriter::Quote("\xc2\x85"), "\"\\u0085\"");
  EXPECT_EQ(render::JsonWriter::Quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  std::string out;
  render::JsonWriter j(&out);
  j.BeginArray().Double(std::nan("")).Double(INFINITY).Double(-INFINITY).Double(1.5).EndArray();
  EXPECT_EQ(out, "[\n  null,\n  null,\n  null,\n  1.5\n]\n");
}

TEST(CsvWriterTest, FormulaCellsAreNeutralized) {
  std::string out;
  render::CsvWriter csv(&out);
  csv.Field("=HYPERLINK(\"x\")").Field("+1").Field("-2").Field("@SUM(A1)").Field("\tcmd");
  csv.Field("plain").Field(int64_t{-5}).EndRow();
  // A leading tab is escaped, so it no longer starts the cell.
  EXPECT_EQ(out, "\"'=HYPERLINK(\"\"x\"\")\",'+1,'-2,'@SUM(A1),\\x09cmd,plain,-5\n");
}

TEST(ByteSizeTest, ParsesTheMemoryBudget) {
  EXPECT_EQ(*reader::ParseByteSize("2G"), uint64_t{2} << 30);
  EXPECT_EQ(*reader::ParseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(*reader::ParseByteSize("1536MiB"), uint64_t{1536} << 20);
  EXPECT_EQ(*reader::ParseByteSize("4gb"), uint64_t{4} << 30);
  EXPECT_EQ(*reader::ParseByteSize("unlimited"), 0u);
  EXPECT_EQ(*reader::ParseByteSize("33554432"), uint64_t{32} << 20);
  EXPECT_FALSE(reader::ParseByteSize("1M").ok());  // below 16 MiB
  EXPECT_FALSE(reader::ParseByteSize("lots").ok());
  EXPECT_FALSE(reader::ParseByteSize("-1G").ok());
  EXPECT_FALSE(reader::ParseByteSize("99999999999T").ok());
}

TEST(ChunkLimitsTest, IdsPastTheLimitsAndLongStringsAreCut) {
  proto::Chunk chunk;
  proto::EventBatch* b = chunk.mutable_batch();
  b->add_strings()->set_id(1);
  b->add_strings()->set_id(0xffffffffu);
  b->add_strings()->set_id(reader::kMaxStringId);
  std::string wide;
  for (size_t i = 0; i < reader::kMaxStringBytes; ++i) wide += "\xc3\xa9";
  b->mutable_strings(0)->set_value(wide);
  b->add_launch_configs()->set_id(reader::kMaxLaunchConfigId + 1);
  b->add_metric_descriptors()->set_id(7);
  for (int i = 0; i < reader::kMaxListEntries + 10; ++i) b->add_clocks();
  const reader::ChunkCheck check = reader::CheckChunk(&chunk);
  EXPECT_EQ(check.ids_dropped, 2u);
  EXPECT_EQ(check.strings_cut, 1u);
  EXPECT_EQ(check.entries_dropped, 10u);
  ASSERT_EQ(b->strings_size(), 2);
  EXPECT_EQ(b->strings(1).id(), reader::kMaxStringId);
  EXPECT_LE(b->strings(0).value().size(), reader::kMaxStringBytes);
  EXPECT_TRUE(render::IsValidUtf8(b->strings(0).value()));
  EXPECT_EQ(b->launch_configs_size(), 0);
  EXPECT_EQ(b->metric_descriptors_size(), 1);
}

// The node monitor's window summaries are checked like every other text
// field: cut, repaired to UTF-8, their GPU lists capped.
TEST(ChunkLimitsTest, WindowSummaryTextIsCutAndItsGpusCapped) {
  proto::Chunk chunk;
  proto::WindowSummary* w = chunk.mutable_batch()->add_window_summaries();
  w->set_top_title(std::string(reader::kMaxStringBytes + 5, 'x'));
  w->set_job_id("bad\xff");
  for (int i = 0; i < reader::kMaxListEntries + 3; ++i) w->add_gpus()->set_uuid("\xfe");
  const reader::ChunkCheck check = reader::CheckChunk(&chunk);
  EXPECT_EQ(check.strings_cut, 1u);
  EXPECT_EQ(check.entries_dropped, 3u);
  EXPECT_EQ(w->top_title().size(), reader::kMaxStringBytes);
  EXPECT_TRUE(render::IsValidUtf8(w->job_id()));
  ASSERT_EQ(w->gpus_size(), reader::kMaxListEntries);
  EXPECT_TRUE(render::IsValidUtf8(w->gpus(0).uuid()));
}

class Collect : public reader::ChunkVisitor {
 public:
  absl::Status OnChunk(const reader::ChunkContext& c, const proto::Chunk& chunk) override {
    offsets.push_back(c.offset);
    (void)chunk;
    return absl::OkStatus();
  }
  std::vector<uint64_t> offsets;
};

// Frames with payloads of every size around the direct-checksum limit,
// each behind damage (garbage and fake headers claiming long payloads):
// the reader must find exactly the valid frames, from memory and through
// a small file window alike.
TEST(ResyncTest, FindsEveryValidFrameBehindFakeHeadersWhateverItsSize) {
  std::mt19937_64 rng(7);
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(9, 9);
  p.WriteHeader();
  std::vector<size_t> expected = {trace.frame_offsets().back()};
  for (size_t payload : {100u, 500u, 511u, 512u, 513u, 600u, 4000u, 70000u, 300000u}) {
    // Garbage: random bytes, then fake headers claiming the rest of the file.
    std::vector<uint8_t> junk(64 + payload % 97);
    for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
    trace.AppendBytes(junk.data(), junk.size());
    for (int i = 0; i < 4; ++i) {
      const uint32_t fake[4] = {format::kFrameMagic, 1u << 20, 1u << 20, 0xdeadbeef};
      trace.AppendBytes(fake, sizeof(fake));
    }
    std::string incompressible(payload, '\0');
    for (char& c : incompressible) c = static_cast<char>('a' + rng() % 26);
    p.AddKernel(1'000'000'000 + payload, 10, incompressible);
    p.Flush();
    expected.push_back(trace.frame_offsets().back());
  }
  Collect memory;
  reader::TraceReader from_memory(memory);
  ASSERT_TRUE(from_memory.ReadBuffer("t", trace.bytes().data(), trace.bytes().size()).ok());
  std::vector<uint64_t> want(expected.begin(), expected.end());
  EXPECT_EQ(memory.offsets, want);

  const std::string path = ::testing::TempDir() + "/resync_test.gpscope";
  ASSERT_TRUE(trace.WriteFile(path));
  Collect file;
  reader::ReadOptions small;
  small.window_bytes = 4096;
  reader::TraceReader from_file(file, small);
  ASSERT_TRUE(from_file.ReadFile(path).ok());
  EXPECT_EQ(file.offsets, want);
  EXPECT_EQ(from_file.index().files[0].damaged_regions, expected.size() - 1);
}

TEST(MemoryBudgetTest, ReadingStopsPastTheBudgetAndSaysWhere) {
  TraceBuilder trace;
  for (uint32_t i = 0; i < 64; ++i) {
    trace.AddProcess(100 + i, i).WriteHeader();
  }
  const uint64_t saved = reader::MemoryBudgetBytes();
  // A budget below what the process already uses: the first check stops.
  reader::SetMemoryBudgetBytes(uint64_t{16} << 20);
  const bool over = reader::MemoryBudgetExceeded();
  Collect c;
  reader::TraceReader r(c);
  ASSERT_TRUE(r.ReadBuffer("t", trace.bytes().data(), trace.bytes().size()).ok());
  reader::SetMemoryBudgetBytes(saved);
  if (!over) GTEST_SKIP() << "this test process uses less than 16 MiB";
  ASSERT_TRUE(r.index().partial.has_value());
  EXPECT_LT(c.offsets.size(), 64u);
  EXPECT_NE(r.index().partial->Message().find("PARTIAL"), std::string::npos);
  EXPECT_NE(r.index().partial->Message().find("--max-memory"), std::string::npos);
  EXPECT_EQ(*r.index().files[0].stopped_at_offset, r.index().partial->offset);
}

}  // namespace
}  // namespace gpscope
