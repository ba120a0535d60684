// tests/tools/reader_test.cc: the streaming trace reader and batch decoding.
// Synthetic traces come from TraceBuilder (libprotobuf + FrameEncoder).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/crc32c.h"
#include "proto/framing.h"
#include "tests/testing/event_compare.h"
#include "tests/testing/trace_builder.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/frame_pipeline.h"
#include "tools/reader/trace_reader.h"

namespace gpscope {

// Field-wise equality for the event records (tests/testing/event_compare.h)
// makes round trips compare every column.

namespace reader {
namespace {

using testing::TraceBuilder;

// Keeps copies of everything the reader hands out.
class Collector : public ChunkVisitor {
 public:
  absl::Status OnChunk(const ChunkContext& context, const proto::Chunk& chunk) override {
    chunks.push_back(chunk);
    offsets.push_back(context.offset);
    header_known.push_back(context.process->header.has_value());
    if (chunk.has_batch()) {
      DecodedBatch batch;
      const absl::Status s = DecodeBatch(chunk.batch(), &batch);
      if (!s.ok()) return s;
      Append(events.kernels, batch.kernels);
      Append(events.memcpys, batch.memcpys);
      Append(events.memsets, batch.memsets);
      Append(events.syncs, batch.syncs);
      Append(events.api_calls, batch.api_calls);
      Append(events.nvtx_ranges, batch.nvtx_ranges);
      Append(events.nvtx_marks, batch.nvtx_marks);
      Append(events.overheads, batch.overheads);
      Append(events.metrics, batch.metrics);
    }
    return absl::OkStatus();
  }
  void OnWarning(std::string_view warning) override { warnings.emplace_back(warning); }

  std::vector<uint64_t> Sequences() const {
    std::vector<uint64_t> s;
    for (const proto::Chunk& c : chunks) s.push_back(c.sequence());
    return s;
  }

  std::vector<proto::Chunk> chunks;
  std::vector<uint64_t> offsets;
  std::vector<bool> header_known;
  std::vector<std::string> warnings;
  DecodedBatch events;

 private:
  template <typename T>
  static void Append(std::vector<T>& to, const std::vector<T>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }
};

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "reader_test." + std::to_string(getpid()) + "." + name;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int CountContaining(const std::vector<std::string>& lines, const std::string& part) {
  return static_cast<int>(std::count_if(lines.begin(), lines.end(),
                                        [&](const std::string& l) { return Contains(l, part); }));
}

std::vector<uint64_t> Iota(uint64_t n) {
  std::vector<uint64_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

struct Built {
  std::vector<uint8_t> bytes;
  std::vector<size_t> frame_offsets;
};

// One process: header, three batches of kernels, end: five frames.
Built SmallTrace() {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xABCDEF, 4242);
  p.WriteHeader();
  uint64_t t = 2'000'000'000;
  for (int batch = 0; batch < 3; ++batch) {
    for (int k = 0; k < 4; ++k, t += 10'000) p.AddKernel(t, 3'000 + k, k % 2 ? "gemm" : "relu");
    p.Flush();
  }
  p.WriteEnd();
  return {trace.bytes(), trace.frame_offsets()};
}

void WriteBytes(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(fwrite(data, 1, size, f), size);
  fclose(f);
}

struct ReadResult {
  absl::Status status;
  TraceIndex index;
};

ReadResult ReadBytes(const std::vector<uint8_t>& bytes, size_t size, Collector& collector) {
  TraceReader reader(collector);
  ReadResult r;
  r.status = reader.ReadBuffer("trace.gps", bytes.data(), size);
  r.index = reader.TakeIndex();
  return r;
}

// ---------------------------------------------------------------- round trip

TEST(TraceReaderTest, RoundTripsEveryEventKindThroughAFile) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x1122334455667788, 77);
  p.header().set_hostname("gpu-node-3");
  p.header().mutable_identity()->set_rank(5);
  p.WriteHeader();

  std::vector<format::KernelEvent> kernels;
  std::vector<format::MemcpyEvent> memcpys;
  std::vector<format::MemsetEvent> memsets;
  std::vector<format::SyncEvent> syncs;
  std::vector<format::ApiCallEvent> api_calls;
  std::vector<format::NvtxRangeEvent> ranges;
  std::vector<format::NvtxMarkEvent> marks;
  std::vector<format::OverheadEvent> overheads;
  std::vector<format::MetricSample> metrics;
  std::mt19937_64 rng(3);
  auto r32 = [&] { return static_cast<uint32_t>(rng()); };
  // Two batches; the second starts earlier than the first ended (negative
  // deltas) and has timestamps near 2^63 and correlation ids near 2^32.
  for (int batch = 0; batch < 2; ++batch) {
    const uint64_t base = batch == 0 ? 5'000'000'000 : (uint64_t{1} << 63) - 1'000'000;
    for (int i = 0; i < 20; ++i) {
      const uint64_t s = base + (rng() % 1'000'000);
      const uint64_t e = s + rng() % 100'000;
      const uint32_t corr = batch == 0 ? r32() % 1000 : 0xFFFFFFF0u + i % 16;
      format::KernelEvent k{};  // by name, drawn in the order the values always were
      k.start_ns = s;
      k.end_ns = e;
      k.graph_node_id = rng();
      k.name_id = p.Intern("k" + std::to_string(i % 3));
      k.launch_config_id = r32();
      k.device_id = r32() % 8;
      k.context_id = r32();
      k.stream_id = r32();
      k.correlation_id = corr;
      k.graph_id = r32();
      kernels.push_back(k);
      memcpys.push_back({s, e, rng(), r32() % 11, r32() % 8, r32() % 8, r32(), r32(), r32(), corr,
                         r32() % 2, r32(), r32()});
      memsets.push_back({s, e, rng(), r32(), r32() % 8, r32(), r32(), r32(), corr, r32(), r32()});
      syncs.push_back({s, e, r32() % 5, r32(), 0xffffffffu, r32(), corr, r32()});
      api_calls.push_back(
          {s, e, r32() % 3, r32(), r32(), corr, r32(), p.Intern("cudaLaunchKernel")});
      ranges.push_back({s, e, p.Intern("step"), p.Intern("dom"), r32(), r32() % 4});
      marks.push_back({s, p.Intern("mark"), 0, r32()});
      overheads.push_back({s, e, r32() % 10, r32(), r32()});
      metrics.push_back({s, r32(), static_cast<double>(rng()) / 3.0});
    }
    for (size_t i = kernels.size() - 20; i < kernels.size(); ++i) {
      p.Add(kernels[i]).Add(memcpys[i]).Add(memsets[i]).Add(syncs[i]).Add(api_calls[i]);
      p.Add(ranges[i]).Add(marks[i]).Add(overheads[i]).Add(metrics[i]);
    }
    proto::DropNotice* drop = p.batch().add_drops();
    drop->set_reason(proto::DROP_RING_FULL);
    drop->set_count(12 + batch);
    p.Flush();
  }
  proto::ProcessEnd end;
  end.set_events_dropped(25);
  p.WriteEnd(end);

  const std::string path = TempPath("roundtrip.gps");
  ASSERT_TRUE(trace.WriteFile(path));
  Collector c;
  absl::StatusOr<TraceIndex> index = ReadTraces({path}, c);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  ASSERT_EQ(c.chunks.size(), 4u);
  EXPECT_EQ(c.offsets,
            std::vector<uint64_t>(trace.frame_offsets().begin(), trace.frame_offsets().end()));
  EXPECT_EQ(c.events.kernels, kernels);
  EXPECT_EQ(c.events.memcpys, memcpys);
  EXPECT_EQ(c.events.memsets, memsets);
  EXPECT_EQ(c.events.syncs, syncs);
  EXPECT_EQ(c.events.api_calls, api_calls);
  EXPECT_EQ(c.events.nvtx_ranges, ranges);
  EXPECT_EQ(c.events.nvtx_marks, marks);
  EXPECT_EQ(c.events.overheads, overheads);
  EXPECT_EQ(c.events.metrics, metrics);
  EXPECT_EQ(c.chunks[1].batch().drops(0).count(), 12u);

  ASSERT_EQ(index->files.size(), 1u);
  EXPECT_EQ(index->files[0].frames, 4u);
  EXPECT_EQ(index->files[0].format_version, format::kFormatVersion);
  ASSERT_EQ(index->processes.size(), 1u);
  const ProcessInfo& info = index->processes[0];
  EXPECT_EQ(info.process_uid, 0x1122334455667788u);
  EXPECT_EQ(info.pid, 77u);
  ASSERT_TRUE(info.header.has_value());
  EXPECT_EQ(info.header->hostname(), "gpu-node-3");
  EXPECT_EQ(info.header->identity().rank(), 5);
  EXPECT_EQ(info.header->devices(0).sm_count(), 132u);
  ASSERT_TRUE(info.end.has_value());
  EXPECT_EQ(info.end->events_dropped(), 25u);
  EXPECT_EQ(info.end->chunks_written(), 4u);
  EXPECT_EQ(info.chunks, 4u);
  EXPECT_EQ(info.lost_chunks, 0u);
  unlink(path.c_str());
}

// --------------------------------------------------------------- truncation

// Every cut of a five-frame file, read from memory and from a file through a
// 64-byte window (so frames straddle windows): never a crash, every frame
// that ends before the cut is read, and a torn tail is one warning.
TEST(TraceReaderTest, TruncationAtEveryByteKeepsEveryCompleteFrame) {
  const Built trace = SmallTrace();
  const std::vector<uint8_t>& bytes = trace.bytes;
  std::vector<size_t> frame_ends(trace.frame_offsets.begin() + 1, trace.frame_offsets.end());
  frame_ends.push_back(bytes.size());
  const std::string path = TempPath("cut.gps");
  ReadOptions tiny_window;
  tiny_window.window_bytes = 64;

  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    for (bool from_file : {false, true}) {
      Collector c;
      TraceReader reader(c, tiny_window);
      absl::Status status;
      if (from_file) {
        WriteBytes(path, bytes.data(), cut);
        status = reader.ReadFile(path);
      } else {
        status = reader.ReadBuffer("trace.gps", bytes.data(), cut);
      }
      if (cut < format::kFileHeaderBytes) {
        EXPECT_FALSE(status.ok());
        EXPECT_TRUE(Contains(std::string(status.message()), cut == 0 ? "empty file" : "truncated"))
            << status;
        continue;
      }
      ASSERT_TRUE(status.ok()) << status;
      const uint64_t complete =
          std::count_if(frame_ends.begin(), frame_ends.end(), [&](size_t e) { return e <= cut; });
      EXPECT_EQ(c.Sequences(), Iota(complete));
      const bool on_boundary =
          cut == format::kFileHeaderBytes ||
          std::find(frame_ends.begin(), frame_ends.end(), cut) != frame_ends.end();
      const FileInfo& file = reader.index().files.at(0);
      EXPECT_EQ(file.truncated, !on_boundary);
      EXPECT_EQ(file.damaged_regions, 0u);
      EXPECT_EQ(CountContaining(c.warnings, "truncated"), on_boundary ? 0 : 1);
      if (!on_boundary) {
        const size_t torn_at = complete == 0 ? format::kFileHeaderBytes : frame_ends[complete - 1];
        EXPECT_EQ(CountContaining(c.warnings, "offset " + std::to_string(torn_at) + ": truncated"),
                  1);
        EXPECT_EQ(file.skipped_bytes, cut - torn_at);
      }
      // Apart from the torn tail, only "no frames" notices for a frameless file.
      EXPECT_EQ(c.warnings.size(), (on_boundary ? 0u : 1u) + (complete == 0 ? 1u : 0u));
    }
  }
  unlink(path.c_str());
}

// ------------------------------------------------------------------ damage

TEST(TraceReaderTest, AFlippedBitAnywhereInAFrameLosesOnlyThatFrame) {
  const Built trace = SmallTrace();
  const std::vector<size_t>& starts = trace.frame_offsets;
  const size_t frames = starts.size();
  for (size_t bit = format::kFileHeaderBytes * 8; bit < trace.bytes.size() * 8; ++bit) {
    std::vector<uint8_t> bytes = trace.bytes;
    bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    const size_t damaged =
        std::upper_bound(starts.begin(), starts.end(), bit / 8) - starts.begin() - 1;
    SCOPED_TRACE("bit " + std::to_string(bit) + " in frame " + std::to_string(damaged));
    Collector c;
    const ReadResult r = ReadBytes(bytes, bytes.size(), c);
    ASSERT_TRUE(r.status.ok()) << r.status;
    std::vector<uint64_t> expected = Iota(frames);
    expected.erase(expected.begin() + damaged);
    ASSERT_EQ(c.Sequences(), expected);
    const std::string at = "offset " + std::to_string(starts[damaged]) + ": ";
    if (damaged + 1 < frames) {
      EXPECT_EQ(CountContaining(c.warnings, at), 1);
      EXPECT_EQ(CountContaining(c.warnings,
                                "skipped " + std::to_string(starts[damaged + 1] - starts[damaged]) +
                                    " bytes to next frame"),
                1);
      EXPECT_EQ(r.index.processes.at(0).lost_chunks, 1u);
    } else {
      // The last frame: damaged and torn look alike; either way one warning
      // at its offset and the process has no end.
      EXPECT_EQ(CountContaining(c.warnings, at), 1);
      EXPECT_FALSE(r.index.processes.at(0).end.has_value());
    }
  }
}

TEST(TraceReaderTest, GarbageBetweenFramesIsSkippedWithOneWarning) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(1, 10);
  p.WriteHeader();
  p.AddKernel(1000, 10, "a").Flush();
  const size_t garbage_at = trace.bytes().size();
  std::vector<uint8_t> garbage(100);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 7 + 1);
  // A fake frame header in the garbage: right magic, plausible lengths, bad checksum.
  const uint8_t fake[16] = {'G', 'P', 'S', 'F', 20, 0, 0, 0, 40, 0, 0, 0, 1, 2, 3, 4};
  std::memcpy(garbage.data() + 30, fake, sizeof(fake));
  trace.AppendBytes(garbage.data(), garbage.size());
  p.AddKernel(2000, 10, "b").Flush();
  p.WriteEnd();
  const size_t tail_at = trace.bytes().size();
  trace.AppendBytes("GPSF and no frame", 17);

  Collector c;
  const ReadResult r = ReadBytes(trace.bytes(), trace.bytes().size(), c);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(c.Sequences(), Iota(4));
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_EQ(c.warnings[0], "trace.gps: offset " + std::to_string(garbage_at) +
                               ": no frame magic, skipped 100 bytes to next frame");
  EXPECT_EQ(c.warnings[1], "trace.gps: offset " + std::to_string(tail_at) +
                               ": frame length out of range, skipped the last 17 bytes (no valid "
                               "frame follows)");
  EXPECT_EQ(r.index.files[0].skipped_bytes, 117u);
  EXPECT_EQ(r.index.files[0].damaged_regions, 2u);
  EXPECT_EQ(r.index.processes[0].lost_chunks, 0u);
}

TEST(TraceReaderTest, ValidFramesWithBadPayloadsAreSkippedPrecisely) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(1, 10);
  p.WriteHeader();
  // Checksum-valid frames holding (a) zstd data that is not a Chunk and
  // (b) bytes that are not zstd at all: a writer bug, not disk damage.
  format::FrameEncoder encoder(1024);
  const uint8_t not_a_chunk[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x0F};
  const uint8_t* frame = nullptr;
  const size_t n = encoder.Encode(not_a_chunk, sizeof(not_a_chunk), &frame);
  ASSERT_GT(n, 0u);
  const size_t bad_chunk_at = trace.bytes().size();
  trace.AppendBytes(frame, n);
  uint8_t not_zstd[16 + 8] = {'G', 'P', 'S', 'F', 8, 0, 0, 0, 8, 0, 0, 0};
  std::memcpy(not_zstd + 16, "notzstd!", 8);
  const uint32_t crc = format::Crc32cExtend(format::Crc32c(not_zstd + 4, 8), not_zstd + 16, 8);
  std::memcpy(not_zstd + 12, &crc, 4);
  const size_t not_zstd_at = trace.bytes().size();
  trace.AppendBytes(not_zstd, sizeof(not_zstd));
  p.AddKernel(1000, 10, "a").Flush();

  Collector c;
  const ReadResult r = ReadBytes(trace.bytes(), trace.bytes().size(), c);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(c.Sequences(), Iota(2));
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_TRUE(Contains(c.warnings[0],
                       "offset " + std::to_string(bad_chunk_at) + ": frame holds no valid Chunk"))
      << c.warnings[0];
  EXPECT_TRUE(Contains(c.warnings[1],
                       "offset " + std::to_string(not_zstd_at) + ": frame does not decompress"))
      << c.warnings[1];
  EXPECT_EQ(r.index.files[0].bad_chunks, 2u);
  EXPECT_EQ(r.index.files[0].frames, 4u);
}

// The file path (pread windows) and the memory path agree on damaged data,
// including frames much larger than the window.
TEST(TraceReaderTest, FileAndMemoryPathsAgreeWithSmallWindowsAndLargeFrames) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(9, 99);
  p.WriteHeader();
  std::mt19937 rng(5);
  for (int b = 0; b < 7; ++b) {  // random durations: frames of ~10 KB, far above the window
    for (int k = 0; k < 3000; ++k) p.AddKernel(1'000'000 * b + 97 * k, rng() % 5000, "k");
    p.Flush();
    if (b == 2) trace.AppendBytes("\x00\x01garbage GPSF\x10\x00", 16);
  }
  std::vector<uint8_t> bytes = trace.bytes();
  ASSERT_GT(trace.frame_offsets()[6] - trace.frame_offsets()[5], 5000u);
  bytes[trace.frame_offsets()[5] + 100] ^= 0x40;  // damage sequence 5
  bytes.resize(bytes.size() - 5);                 // and tear the last frame (7)
  const std::string path = TempPath("windows.gps");
  WriteBytes(path, bytes.data(), bytes.size());

  Collector memory;
  ReadBytes(bytes, bytes.size(), memory);
  EXPECT_EQ(memory.Sequences(), (std::vector<uint64_t>{0, 1, 2, 3, 4, 6}));
  EXPECT_EQ(memory.warnings.size(), 4u);  // garbage, damage, lost frame 5, torn tail
  for (size_t window : {size_t{64}, size_t{4096}, size_t{1} << 22}) {
    Collector c;
    ReadOptions options;
    options.window_bytes = window;
    TraceReader reader(c, options);
    ASSERT_TRUE(reader.ReadFile(path).ok());
    EXPECT_EQ(c.Sequences(), memory.Sequences()) << window;
    EXPECT_EQ(c.offsets, memory.offsets) << window;
    ASSERT_EQ(c.warnings.size(), memory.warnings.size());
    for (size_t i = 0; i < c.warnings.size(); ++i) {
      // Same text after the file name.
      EXPECT_EQ(c.warnings[i].substr(c.warnings[i].find(": ")),
                memory.warnings[i].substr(memory.warnings[i].find(": ")));
    }
    EXPECT_EQ(c.events.kernels.size(), memory.events.kernels.size());
  }
  unlink(path.c_str());
}

// ------------------------------------------------------------ bad files

TEST(TraceReaderTest, EmptyHeaderOnlyWrongMagicAndFutureVersionFilesAreReportedClearly) {
  Collector c;
  TraceReader reader(c);
  const std::vector<uint8_t> empty;
  absl::Status s = reader.ReadBuffer("empty.gps", empty.data(), 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "empty.gps: empty file, not a gpscope trace");

  const TraceBuilder header_only;
  s = reader.ReadBuffer("header.gps", header_only.bytes().data(), header_only.bytes().size());
  EXPECT_TRUE(s.ok()) << s;
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0], "header.gps: no frames (only the file header)");

  const std::string text = "#!/bin/sh\necho this is a script\n";
  s = reader.ReadBuffer("script.sh", reinterpret_cast<const uint8_t*>(text.data()), text.size());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "script.sh: not a gpscope trace (bad file magic)");

  std::vector<uint8_t> future = SmallTrace().bytes;
  future[8] = 2;
  s = reader.ReadBuffer("future.gps", future.data(), future.size());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(std::string(s.message()), "future.gps: trace format version 2")) << s;

  const TraceIndex& index = reader.index();
  ASSERT_EQ(index.files.size(), 4u);
  EXPECT_FALSE(index.files[0].status.ok());
  EXPECT_TRUE(index.files[1].status.ok());
  EXPECT_FALSE(index.files[2].status.ok());
  EXPECT_FALSE(index.files[3].status.ok());
  EXPECT_TRUE(c.chunks.empty());
}

TEST(TraceReaderTest, ReadTracesRecordsUnreadableFilesAndReadsTheRest) {
  const std::string a = TempPath("a.gps"), b = TempPath("b.gps"), missing = TempPath("missing");
  TraceBuilder ta, tb;
  ta.AddProcess(1, 100).WriteHeader().AddKernel(10, 1, "x").WriteEnd();
  tb.AddProcess(2, 200).WriteHeader().AddKernel(20, 1, "y").WriteEnd();
  ASSERT_TRUE(ta.WriteFile(a));
  ASSERT_TRUE(tb.WriteFile(b));
  Collector c;
  absl::StatusOr<TraceIndex> index = ReadTraces({a, missing, b, ::testing::TempDir()}, c);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(c.chunks.size(), 6u);
  ASSERT_EQ(index->files.size(), 4u);
  EXPECT_EQ(index->files[1].status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(index->files[1].status.message(), missing + ": no such file");
  EXPECT_TRUE(Contains(std::string(index->files[3].status.message()), "not a regular file"));
  EXPECT_EQ(index->FirstFileError(), index->files[1].status);
  ASSERT_EQ(index->processes.size(), 2u);
  EXPECT_EQ(index->processes[0].path, a);
  EXPECT_EQ(index->processes[1].path, b);
  EXPECT_TRUE(index->processes[1].end.has_value());
  unlink(a.c_str());
  unlink(b.c_str());
}

// Named twice (twice the same path, or a symlink to it): read once, with a
// warning; read twice, every event of the file would count double.
TEST(TraceReaderTest, AFileNamedTwiceIsReadOnce) {
  const std::string a = TempPath("twice.gps"), link = TempPath("twice_link.gps");
  TraceBuilder t;
  t.AddProcess(1, 100).WriteHeader().AddKernel(10, 1, "x").WriteEnd();
  ASSERT_TRUE(t.WriteFile(a));
  unlink(link.c_str());
  ASSERT_EQ(symlink(a.c_str(), link.c_str()), 0);
  Collector c;
  absl::StatusOr<TraceIndex> index = ReadTraces({a, a, link}, c);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(c.chunks.size(), 3u);  // header, batch, end: once
  EXPECT_EQ(index->files.size(), 1u);
  ASSERT_EQ(index->warnings.size(), 2u);
  EXPECT_EQ(index->warnings[0], a + ": the same file as " + a + ", read once");
  EXPECT_EQ(index->warnings[1], link + ": the same file as " + a + ", read once");
  unlink(link.c_str());
  unlink(a.c_str());
}

// ----------------------------------------------------- processes and order

TEST(TraceReaderTest, TracksSequenceGapsMissingEndsAndInterleavedProcesses) {
  TraceBuilder trace;
  TraceBuilder::Process& a = trace.AddProcess(0xA, 1);
  TraceBuilder::Process& b = trace.AddProcess(0xB, 2);
  a.WriteHeader();
  b.WriteHeader();
  a.AddKernel(100, 5, "a").Flush();                  // seq 1
  b.AddKernel(100, 5, "b").Flush();                  // seq 1
  a.SkipSequence(2).AddKernel(200, 5, "a").Flush();  // seq 4: 2 and 3 lost
  b.WriteEnd();                                      // b exits cleanly; a never does
  a.AddKernel(300, 5, "a").Flush();                  // seq 5

  Collector c;
  const ReadResult r = ReadBytes(trace.bytes(), trace.bytes().size(), c);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(c.chunks.size(), 7u);
  EXPECT_TRUE(std::all_of(c.header_known.begin(), c.header_known.end(), [](bool b) { return b; }));
  ASSERT_EQ(r.index.processes.size(), 2u);
  const ProcessInfo& pa = r.index.processes[0];
  EXPECT_EQ(pa.process_uid, 0xAu);
  EXPECT_EQ(pa.chunks, 4u);
  EXPECT_EQ(pa.lost_chunks, 2u);
  ASSERT_EQ(pa.gaps.size(), 1u);
  EXPECT_EQ(pa.gaps[0].first_sequence, 2u);
  EXPECT_EQ(pa.gaps[0].count, 2u);
  EXPECT_EQ(pa.next_sequence, 6u);
  EXPECT_FALSE(pa.end.has_value());
  const ProcessInfo& pb = r.index.processes[1];
  EXPECT_EQ(pb.lost_chunks, 0u);
  EXPECT_TRUE(pb.end.has_value());
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(Contains(c.warnings[0],
                       "process 1 (uid 000000000000000a): 2 frames lost "
                       "(sequence 2..3 missing)"))
      << c.warnings[0];
}

TEST(TraceReaderTest, AProcessWhoseHeaderFrameIsLostIsStillRead) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xC, 3);
  p.SkipSequence(1).AddKernel(100, 5, "k").Flush();
  p.AddKernel(200, 5, "k").Flush();
  p.AddKernel(150, 5, "k").Flush();
  // A duplicated frame (replayed bytes) is counted, not silently merged.
  const std::vector<uint8_t> last(trace.bytes().begin() + trace.frame_offsets().back(),
                                  trace.bytes().end());
  trace.AppendBytes(last.data(), last.size());
  Collector c;
  const ReadResult r = ReadBytes(trace.bytes(), trace.bytes().size(), c);
  ASSERT_EQ(r.index.processes.size(), 1u);
  const ProcessInfo& info = r.index.processes[0];
  EXPECT_FALSE(info.header.has_value());
  EXPECT_EQ(info.lost_chunks, 1u);
  EXPECT_EQ(info.out_of_order_chunks, 1u);
  EXPECT_EQ(c.events.kernels.size(), 4u);
  EXPECT_EQ(CountContaining(c.warnings, "sequence 3 arrives after 3 (duplicate"), 1);
}

TEST(TraceReaderTest, AVisitorErrorStopsReading) {
  class StopAtSecond : public ChunkVisitor {
   public:
    absl::Status OnChunk(const ChunkContext&, const proto::Chunk&) override {
      return ++seen == 2 ? absl::CancelledError("enough") : absl::OkStatus();
    }
    int seen = 0;
  } visitor;
  const std::string path = TempPath("stop.gps");
  const Built trace = SmallTrace();
  WriteBytes(path, trace.bytes.data(), trace.bytes.size());
  absl::StatusOr<TraceIndex> index = ReadTraces({path, path}, visitor);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(visitor.seen, 2);
  unlink(path.c_str());
}

// ------------------------------------------------------ decode threads

// Everything a visitor can observe, as text: each chunk (with what Prepare
// made of it, on a decode thread), each warning, in order; then the index.
class Observer : public ChunkVisitor {
 public:
  struct Prepared : PreparedChunk {
    std::string summary;
    std::thread::id thread;
  };
  void Prepare(const proto::Chunk& chunk, std::unique_ptr<PreparedChunk>* prepared) const override {
    if (*prepared == nullptr) *prepared = std::make_unique<Prepared>();
    auto* p = static_cast<Prepared*>(prepared->get());
    p->thread = std::this_thread::get_id();
    p->summary = "seq " + std::to_string(chunk.sequence());
    if (chunk.has_batch()) {
      DecodedBatch events;
      const absl::Status s = DecodeBatch(chunk.batch(), &events);
      p->summary += s.ok() ? " events " + std::to_string(events.event_count())
                           : " " + std::string(s.message());
    }
  }
  absl::Status OnChunk(const ChunkContext& context, const proto::Chunk& chunk) override {
    const auto* p = static_cast<const Prepared*>(context.prepared);
    if (p == nullptr || p->summary.rfind("seq " + std::to_string(chunk.sequence()), 0) != 0) {
      return absl::InternalError("prepared for another chunk");
    }
    if (p->thread != std::this_thread::get_id()) ++prepared_elsewhere;
    log.push_back(context.file->path + " @" + std::to_string(context.offset) + " " +
                  std::to_string(context.frame_bytes) + " uid " +
                  std::to_string(chunk.process_uid()) + " chunks " +
                  std::to_string(context.process->chunks) + ": " + p->summary);
    return ++seen == stop_at ? absl::CancelledError("stop") : absl::OkStatus();
  }
  void OnWarning(std::string_view warning) override { log.push_back("warning " + std::string(warning)); }

  int stop_at = -1;
  int seen = 0;
  int prepared_elsewhere = 0;
  std::vector<std::string> log;
};

std::vector<std::string> Describe(const TraceIndex& index) {
  std::vector<std::string> out;
  for (const FileInfo& f : index.files) {
    out.push_back(absl::StrCat("file ", f.path, " ", f.status.ToString(), " bytes ", f.file_bytes,
                               " v", f.format_version, " frames ", f.frames, " bad ", f.bad_chunks,
                               " skipped ", f.skipped_bytes, " damaged ", f.damaged_regions,
                               " truncated ", f.truncated, " not_read ", f.not_read,
                               " stopped ", f.stopped_at_offset.value_or(0)));
  }
  for (const ProcessInfo& p : index.processes) {
    out.push_back(absl::StrCat("process ", p.process_uid, " ", p.pid, " ", p.path, " chunks ",
                               p.chunks, " next ", p.next_sequence, " lost ", p.lost_chunks,
                               " gaps ", p.gaps.size(), " ooo ", p.out_of_order_chunks,
                               " header ", p.header.has_value(), " end ", p.end.has_value()));
  }
  for (const std::string& w : index.warnings) out.push_back("warning " + w);
  out.push_back(absl::StrCat("omitted ", index.warnings_omitted));
  return out;
}

// Three files of many frames with every kind of damage between them, a
// missing file and one named twice.
std::vector<std::string> DamagedFiles() {
  std::vector<std::string> paths;
  std::mt19937 rng(17);
  for (int f = 0; f < 3; ++f) {
    TraceBuilder trace;
    TraceBuilder::Process& p = trace.AddProcess(0x100 + f, 700 + f);
    TraceBuilder::Process& q = trace.AddProcess(0x200 + f, 800 + f);
    p.WriteHeader();
    q.WriteHeader();
    for (int b = 0; b < 40; ++b) {
      TraceBuilder::Process& w = b % 3 == 0 ? q : p;
      for (int k = 0; k < 50 + static_cast<int>(rng() % 500); ++k) {
        w.AddKernel(1'000'000 * b + 300 * k, 1 + rng() % 200, b % 2 ? "gemm" : "relu");
      }
      if (b == 7) w.SkipSequence(2);
      w.Flush();
      if (b == 5) trace.AppendBytes("\x00\x01garbage GPSF\x10\x00", 16);
      if (b == 11) {  // a checksum-valid frame that is not zstd
        uint8_t not_zstd[16 + 8] = {'G', 'P', 'S', 'F', 8, 0, 0, 0, 8, 0, 0, 0};
        std::memcpy(not_zstd + 16, "notzstd!", 8);
        const uint32_t crc =
            format::Crc32cExtend(format::Crc32c(not_zstd + 4, 8), not_zstd + 16, 8);
        std::memcpy(not_zstd + 12, &crc, 4);
        trace.AppendBytes(not_zstd, sizeof(not_zstd));
      }
      if (b == 13) {  // zstd that is no Chunk
        format::FrameEncoder encoder(1024);
        const uint8_t not_a_chunk[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x0F};
        const uint8_t* frame = nullptr;
        const size_t n = encoder.Encode(not_a_chunk, sizeof(not_a_chunk), &frame);
        trace.AppendBytes(frame, n);
      }
    }
    p.WriteEnd();
    std::vector<uint8_t> bytes = trace.bytes();
    bytes[trace.frame_offsets()[20] + 40] ^= 0x10;  // a flipped bit
    if (f == 1) bytes.resize(bytes.size() - 7);     // a torn tail
    const std::string path = TempPath("threads" + std::to_string(f) + ".gps");
    WriteBytes(path, bytes.data(), bytes.size());
    paths.push_back(path);
  }
  return {paths[0], TempPath("threads_missing.gps"), paths[1], paths[0], paths[2]};
}

struct Observed {
  absl::Status status;
  std::vector<std::string> log;
  std::vector<std::string> index;
  int prepared_elsewhere = 0;
};

Observed ReadAll(const std::vector<std::string>& paths, int threads, int stop_at, bool per_file) {
  Observer o;
  o.stop_at = stop_at;
  ReadOptions options;
  options.decode_threads = threads;
  options.window_bytes = 4096;
  TraceReader reader(o, options);
  Observed r;
  if (per_file) {
    for (const std::string& path : paths) {
      r.status = reader.ReadFile(path);
      if (reader.stopped()) break;
    }
    if (!reader.stopped()) r.status = absl::OkStatus();
  } else {
    r.status = reader.ReadFiles(paths);
  }
  r.log = o.log;
  r.index = Describe(reader.index());
  r.prepared_elsewhere = o.prepared_elsewhere;
  return r;
}

TEST(TraceReaderThreadsTest, DecodeThreadsChangeNothingAVisitorSeesOrTheIndex) {
  const std::vector<std::string> paths = DamagedFiles();
  const Observed one = ReadAll(paths, 1, -1, /*per_file=*/false);
  ASSERT_TRUE(one.status.ok()) << one.status;
  EXPECT_EQ(one.prepared_elsewhere, 0);
  EXPECT_GT(one.log.size(), 100u);
  for (const char* part : {"no frame magic", "checksum mismatch", "does not decompress",
                           "no valid Chunk", "frames lost", "truncated", "no such file",
                           "read once"}) {
    EXPECT_GT(std::count_if(one.index.begin(), one.index.end(),
                            [&](const std::string& l) { return Contains(l, part); }),
              0)
        << part;
  }
  for (int threads : {2, 3, 8}) {
    for (bool per_file : {false, true}) {
      SCOPED_TRACE(absl::StrCat(threads, " threads", per_file ? ", file by file" : ""));
      const Observed many = ReadAll(paths, threads, -1, per_file);
      ASSERT_TRUE(many.status.ok()) << many.status;
      EXPECT_EQ(many.log, one.log);
      EXPECT_EQ(many.index, one.index);
      EXPECT_GT(many.prepared_elsewhere, 0);  // decoded on the pool
    }
  }
  for (const std::string& path : paths) unlink(path.c_str());
}

// The default counts the reading thread: one thread per core, so on two
// cores one decode thread works beside the reader (issue 24), none on one.
TEST(TraceReaderThreadsTest, DefaultThreadsAreOnePerCoreTheReadingThreadIncluded) {
  unsetenv("GPSCOPE_DECODE_THREADS");
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(DefaultDecodeThreads(), std::clamp(CPU_COUNT(&set), 1, kMaxDecodeThreads));
  setenv("GPSCOPE_DECODE_THREADS", "2", 1);
  EXPECT_EQ(DefaultDecodeThreads(), 2);
  unsetenv("GPSCOPE_DECODE_THREADS");
}

// Two threads: one decode thread beside the reading one (the two-core
// default), decoding ahead while the visitor runs on the reader's.
TEST(TraceReaderThreadsTest, OneDecodeThreadBesideTheReaderChangesNothing) {
  const std::vector<std::string> paths = DamagedFiles();
  const Observed one = ReadAll(paths, 1, -1, /*per_file=*/false);
  ASSERT_TRUE(one.status.ok()) << one.status;
  for (int round = 0; round < 3; ++round) {
    const Observed two = ReadAll(paths, 2, -1, /*per_file=*/round == 1);
    ASSERT_TRUE(two.status.ok()) << two.status;
    EXPECT_EQ(two.log, one.log);
    EXPECT_EQ(two.index, one.index);
    EXPECT_GT(two.prepared_elsewhere, 0);
  }
  for (const std::string& path : paths) unlink(path.c_str());
}

// A visitor that stops at chunk k leaves what a reader of one thread would:
// the files, counts and warnings up to there, none of what was decoded ahead.
TEST(TraceReaderThreadsTest, AVisitorThatStopsSeesNothingDecodedAhead) {
  const std::vector<std::string> paths = DamagedFiles();
  for (int stop_at : {1, 2, 9, 40, 42, 43, 83, 84, 124, 125}) {
    SCOPED_TRACE("stop at " + std::to_string(stop_at));
    const Observed one = ReadAll(paths, 1, stop_at, false);
    EXPECT_EQ(one.status.code(), absl::StatusCode::kCancelled);
    for (int threads : {2, 5}) {
      for (bool per_file : {false, true}) {
        const Observed many = ReadAll(paths, threads, stop_at, per_file);
        EXPECT_EQ(many.status, one.status);
        EXPECT_EQ(many.log, one.log);
        EXPECT_EQ(many.index, one.index);
      }
    }
  }
  for (const std::string& path : paths) unlink(path.c_str());
}

TEST(TraceReaderThreadsTest, ReadBufferWithThreadsReadsTheCallersBytesBeforeReturning) {
  const Built trace = SmallTrace();
  std::vector<uint8_t> bytes = trace.bytes;
  Observer o;
  ReadOptions options;
  options.decode_threads = 4;
  TraceReader reader(o, options);
  ASSERT_TRUE(reader.ReadBuffer("mem.gps", bytes.data(), bytes.size()).ok());
  std::fill(bytes.begin(), bytes.end(), 0);  // nothing may read them any more
  EXPECT_EQ(o.log.size(), 5u);
  EXPECT_EQ(reader.index().files.at(0).frames, 5u);
}

// ----------------------------------------------------------- batch decode

// BatchChunkParser (frame_pipeline.h) against a fresh message's
// ParseFromArray: the same verdict, and when both parse, the same chunk
// (serialized: presence of each column message included). One parser for
// all inputs, as a decode slot keeps one frame after frame.
class BatchChunkParserTest : public ::testing::Test {
 protected:
  // Compares one input; counts what the parser took.
  void Check(const std::string& bytes) {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    proto::Chunk fresh;
    const bool fresh_ok = fresh.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    const BatchChunkParser::Result r = parser_.Parse(data, bytes.size());
    if (r == BatchChunkParser::Result::kNotTaken) {
      ++not_taken_;
      return;
    }
    ++taken_;
    if (r == BatchChunkParser::Result::kFailed) ++failed_;
    ASSERT_EQ(r == BatchChunkParser::Result::kParsed, fresh_ok) << bytes.size() << " bytes";
    if (!fresh_ok) return;
    ASSERT_TRUE(fresh.has_batch());
    const proto::Chunk& got = *parser_.chunk();
    ASSERT_EQ(got.SerializeAsString(), fresh.SerializeAsString()) << bytes.size() << " bytes";
#define GPSCOPE_EXPECT_PRESENCE(Name, Message, field, number, Event, COLUMNS) \
  EXPECT_EQ(got.batch().has_##field(), fresh.batch().has_##field()) << #field;
    GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_EXPECT_PRESENCE)
#undef GPSCOPE_EXPECT_PRESENCE
  }

  // The chunks of the recorded traces under tests/data, serialized.
  static std::vector<std::string> RecordedChunks() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(GPSCOPE_TEST_DATA_DIR)) {
      if (e.path().extension() != ".gpscope") continue;
      Collector c;
      ReadOptions options;
      options.decode_threads = 1;
      TraceReader reader(c, options);
      (void)reader.ReadFile(e.path().string());
      for (const proto::Chunk& chunk : c.chunks) out.push_back(chunk.SerializeAsString());
    }
    return out;
  }

  // A length-delimited field: tag, length, bytes.
  static std::string Field(uint32_t number, const std::string& payload) {
    std::string out;
    auto varint = [&out](uint64_t v) {
      for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      out.push_back(static_cast<char>(v));
    };
    varint((uint64_t{number} << 3) | 2);
    varint(payload.size());
    return out + payload;
  }

  BatchChunkParser parser_;
  size_t taken_ = 0;
  size_t failed_ = 0;  // taken, and not a chunk
  size_t not_taken_ = 0;
};

TEST_F(BatchChunkParserTest, RecordedTracesParseAsAFreshMessage) {
  const std::vector<std::string> chunks = RecordedChunks();
  ASSERT_GT(chunks.size(), 100u);
  size_t batches = 0;
  for (const std::string& c : chunks) {
    proto::Chunk fresh;
    ASSERT_TRUE(fresh.ParseFromString(c));
    batches += fresh.has_batch() ? 1 : 0;
    Check(c);
  }
  // Every batch chunk is taken, headers and ends are not.
  EXPECT_EQ(taken_, batches);
  EXPECT_EQ(not_taken_, chunks.size() - batches);
  // In reverse order too: a small batch after large ones, and the other way.
  for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) Check(*it);
}

TEST_F(BatchChunkParserTest, PresenceFollowsTheBytes) {
  proto::Chunk c;
  c.set_process_uid(7);
  c.mutable_batch()->mutable_kernels()->add_start_delta_ns(5);  // columns of unequal length
  c.mutable_batch()->mutable_api_calls();                        // present, empty
  Check(c.SerializeAsString());
  proto::Chunk d;
  d.mutable_batch()->set_base_ns(1);  // no column message at all
  Check(d.SerializeAsString());
  EXPECT_FALSE(parser_.chunk()->batch().has_kernels());
  EXPECT_FALSE(parser_.chunk()->batch().has_api_calls());
  Check(c.SerializeAsString());
  EXPECT_TRUE(parser_.chunk()->batch().has_api_calls());
  // A batch given twice merges (libprotobuf's rule): left to the caller.
  Check(c.SerializeAsString() + c.SerializeAsString());
  EXPECT_EQ(not_taken_, 1u);
  EXPECT_EQ(taken_, 3u);
}

TEST_F(BatchChunkParserTest, HostileBytesGetTheFreshParsesVerdict) {
  std::vector<std::string> chunks = RecordedChunks();
  std::mt19937 rng(20261206);
  size_t inputs = 0;
  for (size_t i = 0; i < chunks.size(); i += 7) {
    const std::string& c = chunks[i];
    // Every truncation of small chunks, a sample of the large ones'.
    const size_t step = std::max<size_t>(1, c.size() / 64);
    for (size_t n = 0; n < c.size(); n += step, ++inputs) Check(c.substr(0, n));
    // Random bytes flipped, inserted and removed.
    for (int round = 0; round < 16 && !c.empty(); ++round, ++inputs) {
      std::string m = c;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        const size_t at = rng() % m.size();
        switch (rng() % 3) {
          case 0:
            m[at] = static_cast<char>(rng());
            break;
          case 1:
            m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng()));
            break;
          default:
            m.erase(at, 1);
        }
      }
      Check(m);
    }
    if (HasFatalFailure()) return;
  }
  // Garbage.
  for (int round = 0; round < 2000; ++round, ++inputs) {
    std::string g(rng() % 64, '\0');
    for (char& ch : g) ch = static_cast<char>(rng());
    if (round % 2 == 0) g.insert(0, "\x2a");  // a batch field's tag (5, length-delimited)
    Check(g);
  }
  // Inside well-framed fields, which the scan takes: a real batch's column
  // messages truncated or with bytes changed, and random column payloads,
  // each wrapped with lengths that hold.
  const size_t taken_before = taken_;
  size_t wrapped = 0;
  for (size_t i = 0; i < chunks.size(); i += 3) {
    proto::Chunk fresh;
    if (!fresh.ParseFromString(chunks[i]) || !fresh.has_batch()) continue;
    std::string batch = fresh.batch().SerializeAsString();
    for (int round = 0; round < 24; ++round, ++wrapped) {
      std::string inner = batch;
      const uint32_t number = round % 3 == 0 ? 6 + rng() % 9 : round % 3 == 1 ? 23 : 6;
      std::string column(rng() % 48, '\0');
      for (char& ch : column) ch = static_cast<char>(rng());
      if (round % 2 == 0 && fresh.batch().has_kernels()) {
        column = fresh.batch().kernels().SerializeAsString();
        if (!column.empty()) {
          if (round % 4 == 0) {
            column.resize(rng() % column.size());
          } else {
            column[rng() % column.size()] = static_cast<char>(rng());
          }
        }
      }
      inner += Field(number, column);
      Check(Field(5, inner));
    }
    if (HasFatalFailure()) return;
  }
  inputs += wrapped;
  EXPECT_EQ(taken_ - taken_before, wrapped);  // all of those are taken
  EXPECT_GT(taken_, inputs / 10);
  EXPECT_GT(failed_, wrapped / 10);  // and many of them are no chunk
  EXPECT_LT(failed_, taken_);
}

TEST(BatchDecodeTest, ExpandsDeltasFromBaseAndCorrelationsFromZero) {
  proto::EventBatch batch;
  batch.set_base_ns(1000);
  proto::Kernels* k = batch.mutable_kernels();
  for (int64_t d : {5, -3, 10}) k->add_start_delta_ns(d);
  for (uint64_t d : {1, 2, 3}) k->add_duration_ns(d);
  for (int64_t d : {7, 1, -2}) k->add_correlation_delta(d);
  for (int i = 0; i < 3; ++i) {
    k->add_name_id(i);
    k->add_launch_config_id(0);
    k->add_device_id(0);
    k->add_context_id(0);
    k->add_stream_id(0);
    k->add_graph_id(0);
    k->add_graph_node_id(0);
  }
  proto::NvtxMarks* m = batch.mutable_nvtx_marks();
  for (int64_t d : {-1000, 1}) {
    m->add_timestamp_delta_ns(d);
    m->add_name_id(1);
    m->add_domain_id(0);
    m->add_thread_id(0);
  }
  DecodedBatch out;
  ASSERT_TRUE(DecodeBatch(batch, &out).ok());
  ASSERT_EQ(out.kernels.size(), 3u);
  EXPECT_EQ(out.kernels[0].start_ns, 1005u);
  EXPECT_EQ(out.kernels[1].start_ns, 1002u);
  EXPECT_EQ(out.kernels[2].start_ns, 1012u);
  EXPECT_EQ(out.kernels[2].end_ns, 1015u);
  EXPECT_EQ(out.kernels[0].correlation_id, 7u);
  EXPECT_EQ(out.kernels[1].correlation_id, 8u);
  EXPECT_EQ(out.kernels[2].correlation_id, 6u);
  EXPECT_EQ(out.kernels[2].name_id, 2u);
  ASSERT_EQ(out.nvtx_marks.size(), 2u);
  EXPECT_EQ(out.nvtx_marks[0].timestamp_ns, 0u);
  EXPECT_EQ(out.nvtx_marks[1].timestamp_ns, 1u);
  EXPECT_EQ(out.event_count(), 5u);
  EXPECT_EQ(CountEvents(batch), 5u);
  // Reuse keeps nothing from the previous batch.
  ASSERT_TRUE(DecodeBatch(proto::EventBatch(), &out).ok());
  EXPECT_EQ(out.event_count(), 0u);
}

TEST(BatchDecodeTest, RejectsColumnsOfDifferentLengthsNamingTheColumn) {
  proto::EventBatch batch;
  proto::Memcpys* m = batch.mutable_memcpys();
  m->add_start_delta_ns(1);
  m->add_start_delta_ns(2);
  m->add_duration_ns(1);
  DecodedBatch out;
  const absl::Status s = DecodeBatch(batch, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "memcpys: column duration_ns has 1 values, start_delta_ns has 2");
}

TEST(BatchDecodeTest, HostileDeltasWrapWithoutUndefinedBehaviour) {
  proto::EventBatch batch;
  batch.set_base_ns(std::numeric_limits<uint64_t>::max() - 1);
  proto::MetricSamples* m = batch.mutable_metrics();
  for (int64_t d : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    m->add_timestamp_delta_ns(d);
    m->add_metric_id(1);
    m->add_value(0.5);
  }
  DecodedBatch out;
  ASSERT_TRUE(DecodeBatch(batch, &out).ok());
  ASSERT_EQ(out.metrics.size(), 3u);
  EXPECT_EQ(out.metrics[1].timestamp_ns, std::numeric_limits<uint64_t>::max() - 3);
}

}  // namespace
}  // namespace reader
}  // namespace gpscope
