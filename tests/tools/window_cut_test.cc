// Tests of tools/reader/window_cut.h: a window of one process as a trace of
// its own, in memory (the node monitor's use; `gpscope attach` writes it to
// a file: tests/launcher/launcher_test.cc, ExtractProcessWindowTest).
#include "tools/reader/window_cut.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/trace_builder.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::reader {
namespace {

using testing::TraceBuilder;

// The chunks of a trace, parsed.
template <typename Bytes>
std::vector<proto::Chunk> Chunks(const Bytes& bytes) {
  struct Collect : ChunkVisitor {
    std::vector<proto::Chunk> chunks;
    absl::Status OnChunk(const ChunkContext&, const proto::Chunk& c) override {
      chunks.push_back(c);
      return absl::OkStatus();
    }
  } collect;
  TraceReader reader(collect);
  EXPECT_TRUE(reader.ReadBuffer("t", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())
                  .ok());
  return collect.chunks;
}

template <typename Bytes>
TraceIndex IndexOf(const Bytes& bytes) {
  struct Nothing : ChunkVisitor {
    absl::Status OnChunk(const ChunkContext&, const proto::Chunk&) override {
      return absl::OkStatus();
    }
  } nothing;
  TraceReader reader(nothing);
  (void)reader.ReadBuffer("t", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return reader.TakeIndex();
}

TEST(WindowCutTest, KeepsEarlierDefinitionsAndTheGapsInsideTheWindow) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xAA, 100);
  p.WriteHeader();
  p.AddKernel(1'000'000, 1'000, "early").Flush();  // defines "early" (id 1)
  p.batch().add_devices()->set_device_id(3);
  p.batch().mutable_devices(0)->set_name("first");
  p.Flush();
  p.batch().add_devices()->set_device_id(3);
  p.batch().mutable_devices(0)->set_name("renamed");  // the last definition wins
  p.Flush();
  std::vector<proto::Chunk> source = Chunks(trace.bytes());
  ASSERT_EQ(source.size(), 4u);

  WindowCut cut;
  for (const proto::Chunk& c : source) cut.Keep(c);
  ASSERT_TRUE(cut.has_header());

  // The window: two chunks with a lost one between them (sequence 5, 7).
  TraceBuilder later;
  TraceBuilder::Process& w = later.AddProcess(0xAA, 100);
  w.WriteHeader();  // sequence 0 in this builder: only to keep numbering below
  w.AddKernel(5'000'000, 1'000, "early").Flush();
  w.AddKernel(6'000'000, 1'000, "early").Flush();
  std::vector<proto::Chunk> window = Chunks(later.bytes());
  ASSERT_EQ(window.size(), 3u);
  window[1].set_sequence(5);
  window[2].set_sequence(7);

  std::string bytes;
  StringCutSink sink(&bytes);
  ASSERT_TRUE(cut.Begin(&sink));
  EXPECT_TRUE(cut.Add(window[0])) << "a header in the window is skipped";
  EXPECT_TRUE(cut.Add(window[1]));
  EXPECT_TRUE(cut.Add(window[2]));
  ASSERT_TRUE(cut.End());
  EXPECT_EQ(cut.window_chunks(), 2u);
  EXPECT_EQ(cut.frames(), 5u);  // header, definitions, 2 batches, end

  const std::vector<proto::Chunk> out = Chunks(bytes);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(out[0].has_header());
  const proto::EventBatch& defs = out[1].batch();
  ASSERT_EQ(defs.strings_size(), 1);
  EXPECT_EQ(defs.strings(0).value(), "early");
  ASSERT_EQ(defs.devices_size(), 1);
  EXPECT_EQ(defs.devices(0).name(), "renamed");
  EXPECT_EQ(out[2].sequence(), 2u);
  EXPECT_EQ(out[3].sequence(), 4u) << "one frame was lost in the window: still a gap";
  ASSERT_TRUE(out[4].has_end());
  EXPECT_EQ(out[4].end().reason(), proto::END_WINDOW_CUT);
  const TraceIndex index = IndexOf(bytes);
  ASSERT_EQ(index.processes.size(), 1u);
  EXPECT_EQ(index.processes[0].lost_chunks, 1u);

  // A second window of the same process starts numbering again.
  std::string second;
  StringCutSink sink2(&second);
  ASSERT_TRUE(cut.Begin(&sink2));
  EXPECT_TRUE(cut.Add(window[2]));
  ASSERT_TRUE(cut.End());
  EXPECT_EQ(IndexOf(second).processes[0].lost_chunks, 0u);
  EXPECT_EQ(Chunks(second).size(), 4u);
}

TEST(WindowCutTest, ANewHeaderStartsOverAndNoHeaderMeansNoCut) {
  WindowCut cut;
  std::string bytes;
  StringCutSink sink(&bytes);
  EXPECT_FALSE(cut.Begin(&sink));
  EXPECT_TRUE(bytes.empty());

  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xAA, 100);
  p.WriteHeader().AddKernel(1'000'000, 1'000, "old_name").Flush();
  TraceBuilder::Process& q = trace.AddProcess(0xBB, 100);  // the pid reused
  q.WriteHeader();
  for (const proto::Chunk& c : Chunks(trace.bytes())) cut.Keep(c);
  ASSERT_TRUE(cut.Begin(&sink));
  ASSERT_TRUE(cut.End());
  const std::vector<proto::Chunk> out = Chunks(bytes);
  ASSERT_EQ(out.size(), 1u) << "the header only: no definitions, no window, no end";
  EXPECT_EQ(out[0].process_uid(), 0xBBu);
}

}  // namespace
}  // namespace gpscope::reader
