// proto/chunk_writer.h: events -> frames, held frames, failed writes.
#include "proto/chunk_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::format {
namespace {

// Reads a trace back: names per id, decoded events, drops, lost intervals.
struct Collected : reader::ChunkVisitor {
  std::map<uint32_t, std::string> strings;
  std::vector<format::KernelEvent> kernels;
  std::vector<format::ApiCallEvent> api;
  std::vector<proto::DropNotice> drops;
  std::vector<proto::LostInterval> lost;
  std::vector<proto::LaunchConfig> launches;
  int headers = 0, ends = 0;
  proto::ProcessEnd end;
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
    if (c.has_header()) ++headers;
    if (c.has_end()) {
      ++ends;
      end = c.end();
    }
    if (!c.has_batch()) return absl::OkStatus();
    for (auto& s : c.batch().strings()) strings[s.id()] = s.value();
    for (auto& l : c.batch().launch_configs()) launches.push_back(l);
    for (auto& d : c.batch().drops()) drops.push_back(d);
    for (auto& l : c.batch().lost_intervals()) lost.push_back(l);
    reader::DecodedBatch b;
    absl::Status st = reader::DecodeBatch(c.batch(), &b);
    if (!st.ok()) return st;
    kernels.insert(kernels.end(), b.kernels.begin(), b.kernels.end());
    api.insert(api.end(), b.api_calls.begin(), b.api_calls.end());
    return absl::OkStatus();
  }
};

std::string TempPath(const char* name) {
  std::string p = testing::TempDir() + "/" + name + std::to_string(getpid()) + ".gpscope";
  unlink(p.c_str());
  return p;
}

format::ProcessHeaderRecord Header() {
  format::ProcessHeaderRecord h{};
  h.format_version = format::kFormatVersion;
  h.hostname = format::MakeStringRef("test-host");
  h.pid = 1234;
  h.identity.rank = -1;
  h.identity.local_rank = -1;
  h.identity.node_rank = -1;
  return h;
}

format::KernelEvent Kernel(ChunkWriter& w, uint64_t i, const std::string& name) {
  format::KernelEvent k{};
  k.start_ns = 1'000'000'000'000ull + i * 5000;
  k.end_ns = k.start_ns + 3000 + (i % 7);
  k.name_id = w.InternString(name);
  format::LaunchConfigRecord shape{};
  shape.grid_x = 1 + i % 3;
  shape.grid_y = shape.grid_z = shape.block_y = shape.block_z = 1;
  shape.block_x = 128;
  k.launch_config_id = w.InternLaunchConfig(shape);
  k.stream_id = 7;
  k.correlation_id = static_cast<uint32_t>(i + 1);
  return k;
}

TEST(ChunkWriterTest, EventsRoundTripAcrossManyChunksWithNamesResolved) {
  std::string path = TempPath("cw_roundtrip");
  char err[256];
  int fd = format::OpenForAppend(path.c_str(), err, sizeof(err));
  ASSERT_GE(fd, 0) << err;
  ChunkWriter::Options opts;
  opts.max_chunk_bytes = 16 << 10;  // small chunks: force many
  ChunkWriter w(fd, 0xfeed, 1234, opts);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w.WriteHeader(Header()));
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) w.AddKernel(Kernel(w, i, "kernel_" + std::to_string(i % 50)));
  format::ProcessEndRecord end{};
  end.reason = 1;
  ASSERT_TRUE(w.WriteEnd(end));
  close(fd);
  EXPECT_GT(w.chunks_written(), 10u);
  EXPECT_EQ(w.events_written(), static_cast<uint64_t>(kN));
  EXPECT_EQ(w.events_lost(), 0u);

  Collected c;
  auto index = reader::ReadTraces({path}, c);
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->warnings.empty());
  ASSERT_EQ(index->processes.size(), 1u);
  EXPECT_EQ(index->processes[0].lost_chunks, 0u);
  EXPECT_EQ(c.headers, 1);
  EXPECT_EQ(c.ends, 1);
  EXPECT_EQ(c.end.events_written(), static_cast<uint64_t>(kN));
  EXPECT_EQ(c.end.chunks_written(), w.chunks_written());
  ASSERT_EQ(c.kernels.size(), static_cast<size_t>(kN));
  EXPECT_EQ(c.strings.size(), 50u);  // each name sent once
  EXPECT_EQ(c.launches.size(), 3u);
  for (int i = 0; i < kN; ++i) {
    const format::KernelEvent& k = c.kernels[i];
    ASSERT_EQ(k.start_ns, 1'000'000'000'000ull + i * 5000);
    ASSERT_EQ(k.end_ns - k.start_ns, 3000u + i % 7);
    ASSERT_EQ(c.strings[k.name_id], "kernel_" + std::to_string(i % 50));
    ASSERT_EQ(k.correlation_id, static_cast<uint32_t>(i + 1));
  }
  unlink(path.c_str());
}

std::vector<std::string> g_logged;
void Logged(const char* line) { g_logged.push_back(line); }

// A write that fails (here: file size limit, as with a full disk) loses that
// chunk only. The loss is logged once, recorded in the next chunk that
// lands, and names first sent in the lost chunk are sent again so later
// events resolve.
TEST(ChunkWriterTest, FailedWriteIsRecordedAndNamesAreResent) {
  std::string path = TempPath("cw_fail");
  char err[256];
  int fd = format::OpenForAppend(path.c_str(), err, sizeof(err));
  ASSERT_GE(fd, 0) << err;
  ChunkWriter::Options options;
  options.log_error = Logged;
  g_logged.clear();
  ChunkWriter w(fd, 0xbeef, 1234, options);
  ASSERT_TRUE(w.WriteHeader(Header()));
  w.AddKernel(Kernel(w, 0, "before"));
  ASSERT_TRUE(w.Flush());

  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old_limit;
  getrlimit(RLIMIT_FSIZE, &old_limit);
  struct stat st;
  fstat(fd, &st);
  struct rlimit tight = old_limit;
  tight.rlim_cur = st.st_size + 20;  // the next frame gets torn after 20 bytes
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tight), 0);
  for (int i = 1; i <= 100; ++i) w.AddKernel(Kernel(w, i, "lost_name"));
  EXPECT_FALSE(w.Flush());
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  EXPECT_EQ(w.frames_failed(), 1u);
  EXPECT_EQ(w.events_lost(), 100u);
  ASSERT_EQ(g_logged.size(), 1u);  // a torn write reads as a full disk
  EXPECT_EQ(g_logged[0], std::string("cannot write trace frame (") + strerror(ENOSPC) +
                             "); the application runs on, this part of the trace is lost and "
                             "the loss is recorded");

  w.AddKernel(Kernel(w, 101, "lost_name"));  // name defined only in the lost chunk
  ASSERT_TRUE(w.Flush());
  ASSERT_TRUE(w.WriteEnd({}));
  close(fd);

  Collected c;
  auto index = reader::ReadTraces({path}, c);
  ASSERT_TRUE(index.ok());
  EXPECT_FALSE(index->warnings.empty());  // the torn frame is reported
  ASSERT_EQ(c.kernels.size(), 2u);
  EXPECT_EQ(c.strings[c.kernels[1].name_id], "lost_name");
  ASSERT_EQ(c.drops.size(), 1u);
  EXPECT_EQ(c.drops[0].reason(), proto::DROP_WRITE_FAILED);
  EXPECT_EQ(c.drops[0].count(), 100u);
  ASSERT_EQ(c.lost.size(), 1u);
  EXPECT_EQ(c.lost[0].reason(), proto::LOST_WRITE_ERROR);
  EXPECT_LE(c.lost[0].start_ns(), 1'000'000'000'000ull + 5000);
  EXPECT_GE(c.lost[0].end_ns(), 1'000'000'000'000ull + 100 * 5000);
  EXPECT_EQ(c.end.events_dropped(), 100u);
  EXPECT_EQ(index->processes[0].lost_chunks, 1u);  // the sequence gap shows it too
  unlink(path.c_str());
}

// Deferred output (the collector opens the file at the first CUDA context):
// frames made before Open() are held in order and written by it, so the
// file reads as if it had been open from the start; beyond the cap a held
// frame is lost and recorded like a failed write; nothing touches the disk
// until Open().
TEST(ChunkWriterTest, FramesHeldUntilOpenLandInOrderAndTheCapIsALoss) {
  std::string path = TempPath("cw_held");
  ChunkWriter::Options opts;
  opts.max_chunk_bytes = 16 << 10;
  opts.max_held_bytes = 64 << 10;
  ChunkWriter w(-1, 0xcafe, 1234, opts);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w.is_open());
  ASSERT_TRUE(w.WriteHeader(Header()));
  for (int i = 0; i < 10; ++i) {
    w.AddKernel(Kernel(w, i, "held_" + std::to_string(i % 3)));
    ASSERT_TRUE(w.Flush());
  }
  EXPECT_EQ(w.held_frames(), 11u);
  EXPECT_EQ(w.frames_failed(), 0u);
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0);  // no file yet

  char err[256];
  int fd = format::OpenForAppend(path.c_str(), err, sizeof(err));
  ASSERT_GE(fd, 0) << err;
  ASSERT_TRUE(w.Open(fd));
  EXPECT_TRUE(w.is_open());
  EXPECT_EQ(w.held_frames(), 0u);
  for (int i = 10; i < 20; ++i) w.AddKernel(Kernel(w, i, "held_" + std::to_string(i % 3)));
  ASSERT_TRUE(w.WriteEnd({}));
  close(fd);

  Collected c;
  auto index = reader::ReadTraces({path}, c);
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->warnings.empty());
  EXPECT_EQ(c.headers, 1);
  EXPECT_EQ(c.ends, 1);
  ASSERT_EQ(c.kernels.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(c.kernels[i].correlation_id, static_cast<uint32_t>(i + 1));
    EXPECT_EQ(c.strings[c.kernels[i].name_id], "held_" + std::to_string(i % 3));
  }
  EXPECT_EQ(index->processes[0].lost_chunks, 0u);
  unlink(path.c_str());

  // Beyond the cap: frames are lost, counted, and the loss is in the trace.
  std::string path2 = TempPath("cw_held_cap");
  opts.max_held_bytes = 4 << 10;
  ChunkWriter small(-1, 0xcafe, 1234, opts);
  ASSERT_TRUE(small.WriteHeader(Header()));
  for (int i = 0; i < 2000; ++i) small.AddKernel(Kernel(small, i, "k" + std::to_string(i)));
  small.Flush();
  EXPECT_GT(small.frames_failed(), 0u);
  EXPECT_GT(small.events_lost(), 0u);
  fd = format::OpenForAppend(path2.c_str(), err, sizeof(err));
  ASSERT_GE(fd, 0) << err;
  small.Open(fd);
  small.AddKernel(Kernel(small, 5000, "after"));
  ASSERT_TRUE(small.WriteEnd({}));
  close(fd);
  Collected c2;
  auto index2 = reader::ReadTraces({path2}, c2);
  ASSERT_TRUE(index2.ok());
  ASSERT_FALSE(c2.drops.empty());
  EXPECT_EQ(c2.drops[0].reason(), proto::DROP_WRITE_FAILED);
  EXPECT_EQ(c2.end.events_dropped(), small.events_lost());
  EXPECT_EQ(c2.strings[c2.kernels.back().name_id], "after");
  unlink(path2.c_str());
}

}  // namespace
}  // namespace gpscope::format
