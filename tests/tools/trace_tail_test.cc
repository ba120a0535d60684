// Tests of tools/reader/trace_tail.h: following trace files while they
// grow (FrameFollower), the launcher's directory tail (TraceTail), and the
// files the node monitor refuses to read (FollowPolicy::trusted_only:
// symbolic links, other users' files; docs/security.md). "Another user"
// needs root (chown to an unused uid); as anyone else those cases are
// SKIPPED.
#include "tools/reader/trace_tail.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "proto/framing.h"
#include "tests/testing/trace_builder.h"

namespace gpscope::reader {
namespace {

using testing::TraceBuilder;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpscope-trace-tail-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void AppendBytes(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// ------------------------------------------------------- the trace tail --

// A trace that grows in steps, a frame cut in half between two polls, a
// second file appearing later, garbage between frames: the tail counts each
// event once and waits for incomplete frames.
TEST(TraceTailTest, CountsAGrowingTraceIncrementally) {
  TempDir tmp;
  const std::string a = tmp.path() + "/job_a.gpscope", b = tmp.path() + "/job_b.gpscope";
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xAA, 100);
  p.WriteHeader();
  for (int i = 0; i < 5; ++i) p.AddKernel(1'000'000 + i * 10'000, 5'000, "k");
  p.Flush();
  std::ofstream(tmp.path() + "/ignored.txt") << "not a trace";
  AppendBytes(a, trace.bytes().data(), trace.bytes().size());
  size_t shipped = trace.bytes().size();

  TraceTail tail(tmp.path());
  tail.Poll();
  EXPECT_EQ(tail.stats().processes, 1u);
  EXPECT_EQ(tail.stats().events, 5u);
  EXPECT_EQ(tail.stats().frames, 2u);
  EXPECT_EQ(tail.stats().bytes, shipped - format::kFileHeaderBytes);

  // The next frame arrives in two halves.
  for (int i = 0; i < 7; ++i) p.AddKernel(2'000'000 + i * 10'000, 5'000, "k");
  proto::DropNotice* drop = p.batch().add_drops();
  drop->set_reason(proto::DROP_RING_FULL);
  drop->set_count(3);
  // The same loss in other units (refused buffer requests, stolen buffers):
  // not records, not counted again.
  drop = p.batch().add_drops();
  drop->set_reason(proto::DROP_CUPTI_BUFFER_POOL_EMPTY);
  drop->set_count(40);
  drop = p.batch().add_drops();
  drop->set_reason(proto::DROP_BUFFER_STOLEN);
  drop->set_count(2);
  p.Flush();
  const size_t half = shipped + (trace.bytes().size() - shipped) / 2;
  AppendBytes(a, trace.bytes().data() + shipped, half - shipped);
  tail.Poll();
  EXPECT_EQ(tail.stats().events, 5u) << "half a frame is not read";
  AppendBytes(a, trace.bytes().data() + half, trace.bytes().size() - half);
  shipped = trace.bytes().size();
  tail.Poll();
  EXPECT_EQ(tail.stats().events, 12u);
  EXPECT_EQ(tail.stats().drops, 3u);
  tail.Poll();
  EXPECT_EQ(tail.stats().events, 12u) << "nothing new, nothing counted twice";

  // Garbage, then a frame: skipped and counted as damage.
  const uint8_t junk[40] = {1, 2, 3};
  AppendBytes(a, junk, sizeof(junk));
  p.AddKernel(3'000'000, 5'000, "k");
  p.WriteEnd();
  AppendBytes(a, trace.bytes().data() + shipped, trace.bytes().size() - shipped);
  // A second file (another process) appears.
  TraceBuilder other;
  other.AddProcess(0xBB, 200).WriteHeader().AddKernel(1'000'000, 1'000, "x").Flush();
  ASSERT_TRUE(other.WriteFile(b));
  tail.Poll();
  EXPECT_EQ(tail.stats().events, 14u);
  EXPECT_EQ(tail.stats().processes, 2u);
  EXPECT_EQ(tail.stats().processes_ended, 1u);
  EXPECT_EQ(tail.stats().damaged_regions, 1u);
  EXPECT_EQ(tail.stats().files, 2u);
  EXPECT_EQ(tail.touched_files(), (std::vector<std::string>{a, b}));
}

TEST(TraceTailTest, SkipExistingCountsOnlyWhatIsAppendedAfterwards) {
  TempDir tmp;
  const std::string a = tmp.path() + "/old.gpscope";
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xAA, 100);
  p.WriteHeader().AddKernel(1'000'000, 5'000, "k").Flush();
  AppendBytes(a, trace.bytes().data(), trace.bytes().size());
  const size_t shipped = trace.bytes().size();
  std::ofstream(tmp.path() + "/untouched.gpscope") << "GPSCOPE\n";

  TraceTail tail(tmp.path());
  tail.SkipExisting();
  tail.Poll();
  EXPECT_EQ(tail.stats().events, 0u);
  EXPECT_TRUE(tail.ChangedFiles().empty());
  p.AddKernel(2'000'000, 5'000, "k").AddKernel(2'100'000, 5'000, "k").Flush();
  AppendBytes(a, trace.bytes().data() + shipped, trace.bytes().size() - shipped);
  tail.Poll();
  EXPECT_EQ(tail.stats().events, 2u);
  EXPECT_EQ(tail.ChangedFiles(), std::vector<std::string>{a});
  EXPECT_EQ(tail.touched_files(), std::vector<std::string>{a});
}

TEST(TraceTailTest, AFrameLargerThanTheWindowIsStillRead) {
  TempDir tmp;
  const std::string a = tmp.path() + "/big.gpscope";
  TraceBuilder trace(/*zstd_level=*/1);
  TraceBuilder::Process& p = trace.AddProcess(0xAA, 100);
  p.WriteHeader();
  for (int i = 0; i < 20'000; ++i) p.AddKernel(1'000'000 + i * 977, 5'000 + i % 13, "k");
  p.Flush();
  ASSERT_TRUE(trace.WriteFile(a));
  struct Count : FrameVisitor {
    uint64_t kernels = 0, frames = 0;
    void OnFrame(uint64_t, const uint8_t*, size_t, const proto::Chunk& c) override {
      ++frames;
      kernels += static_cast<uint64_t>(c.batch().kernels().start_delta_ns_size());
    }
  } count;
  FrameFollower follower(a, /*window_bytes=*/1024);
  ASSERT_TRUE(follower.ReadNew(count).ok());
  EXPECT_EQ(count.frames, 2u);
  EXPECT_EQ(count.kernels, 20'000u);
  EXPECT_EQ(follower.offset(), trace.bytes().size());
}

TEST(TraceTailTest, NotATraceIsReportedOnce) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/bad.gpscope") << "this is not a gpscope trace at all";
  TraceTail tail(tmp.path());
  tail.Poll();
  tail.Poll();
  EXPECT_EQ(tail.stats().unreadable_files, 1u);
  EXPECT_EQ(tail.stats().frames, 0u);
}

struct CountFrames : FrameVisitor {
  uint64_t frames = 0;
  void OnFrame(uint64_t, const uint8_t*, size_t, const proto::Chunk&) override { ++frames; }
};

TEST(FollowPolicyTest, TrustedOnlyRefusesASymbolicLinkWithoutReadingIt) {
  TempDir tmp;
  const std::string real = tmp.path() + "/real.gpscope", link = tmp.path() + "/link.gpscope";
  TraceBuilder trace;
  trace.AddProcess(0xAA, 100).WriteHeader().AddKernel(1'000'000, 1'000, "k").Flush();
  ASSERT_TRUE(trace.WriteFile(real));
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);

  CountFrames plain;
  FrameFollower launcher_side(link);
  EXPECT_TRUE(launcher_side.ReadNew(plain).ok()) << "without the policy a link is followed";
  EXPECT_EQ(plain.frames, 2u);

  CountFrames count;
  FrameFollower follower(link, 4u << 20, FollowPolicy{true, geteuid()});
  const absl::Status s = follower.ReadNew(count);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s;
  EXPECT_EQ(count.frames, 0u);
  EXPECT_EQ(follower.ReadNew(count), s) << "the refusal sticks";

  CountFrames direct;
  FrameFollower own(real, 4u << 20, FollowPolicy{true, geteuid()});
  EXPECT_TRUE(own.ReadNew(direct).ok());
  EXPECT_EQ(direct.frames, 2u);
}

TEST(FollowPolicyTest, TrustedOnlyRefusesAnotherUsersFile) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown a file to another user";
  TempDir tmp;
  const std::string path = tmp.path() + "/other.gpscope";
  TraceBuilder trace;
  trace.AddProcess(0xAA, 100).WriteHeader().AddKernel(1'000'000, 1'000, "k").Flush();
  ASSERT_TRUE(trace.WriteFile(path));
  ASSERT_EQ(chown(path.c_str(), 12345, 12345), 0);

  CountFrames count;
  FrameFollower follower(path, 4u << 20, FollowPolicy{true, geteuid()});
  const absl::Status s = follower.ReadNew(count);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("belongs to uid 12345"), std::string::npos) << s;
  EXPECT_EQ(count.frames, 0u);

  // A root-owned file is trusted by any reader (root writes for everyone).
  ASSERT_EQ(chown(path.c_str(), 0, 0), 0);
  CountFrames root_count;
  FrameFollower as_other(path, 4u << 20, FollowPolicy{true, 12345});
  EXPECT_TRUE(as_other.ReadNew(root_count).ok());
  EXPECT_EQ(root_count.frames, 2u);
}

TEST(FollowPolicyTest, ListTraceFilesInListsOnlyVisibleTraceNames) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/b.gpscope") << "x";
  std::ofstream(tmp.path() + "/a.gpscope") << "x";
  std::ofstream(tmp.path() + "/.hidden.gpscope") << "x";
  std::ofstream(tmp.path() + "/notes.txt") << "x";
  EXPECT_EQ(ListTraceFilesIn(tmp.path()),
            (std::vector<std::string>{tmp.path() + "/a.gpscope", tmp.path() + "/b.gpscope"}));
  EXPECT_TRUE(ListTraceFilesIn(tmp.path() + "/missing").empty());
}

}  // namespace
}  // namespace gpscope::reader
