// tests/proto/concurrent_append_test.cc: the collector's multi-process
// layout. Eight real processes (fork) race to create one trace file and
// append 1,000 frames each through OpenForAppend/AppendFrame. O_APPEND with
// one write() per frame must keep every frame whole: the file has to parse
// as header + 8,000 back-to-back valid frames, with no byte between them,
// and each process's sequence numbers complete and in order.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gpscope/trace.pb.h"
#include "proto/framing.h"

namespace gpscope::format {
namespace {

constexpr int kProcesses = 8;
constexpr int kFramesPerProcess = 1000;

// A chunk whose size varies with i: small batches most of the time, and a
// large one (tens of KB, beyond PIPE_BUF) every 100th frame.
std::string MakeChunk(uint64_t uid, uint64_t sequence, std::mt19937& rng) {
  proto::Chunk chunk;
  chunk.set_process_uid(uid);
  chunk.set_pid(static_cast<uint32_t>(getpid()));
  chunk.set_sequence(sequence);
  proto::EventBatch* batch = chunk.mutable_batch();
  batch->set_base_ns(1'000'000 * sequence);
  const int kernels = 1 + static_cast<int>(sequence % 50);
  for (int k = 0; k < kernels; ++k) {
    batch->mutable_kernels()->add_start_delta_ns(static_cast<int64_t>(rng() % 100'000));
    batch->mutable_kernels()->add_duration_ns(rng() % 50'000);
  }
  if (sequence % 100 == 99) {
    std::string text(64 << 10, 'a');
    for (char& c : text) c = static_cast<char>('a' + rng() % 26);
    proto::InternedString* s = batch->add_strings();
    s->set_id(1);
    s->set_value(text);
  }
  return chunk.SerializeAsString();
}

// The child's whole life: returns its exit code.
int AppendFrames(const std::string& path, uint64_t uid) {
  char err[256];
  const int fd = OpenForAppend(path.c_str(), err, sizeof(err));
  if (fd < 0) return 10;
  FrameEncoder encoder(1 << 20);
  if (!encoder.ok()) return 11;
  std::mt19937 rng(static_cast<uint32_t>(uid));
  for (int i = 0; i < kFramesPerProcess; ++i) {
    const std::string raw = MakeChunk(uid, static_cast<uint64_t>(i), rng);
    const uint8_t* frame = nullptr;
    const size_t bytes =
        encoder.Encode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &frame);
    if (bytes == 0) return 12;
    int err_no = 0;
    if (!AppendFrame(fd, frame, bytes, &err_no)) return 13;
  }
  close(fd);
  return 0;
}

TEST(ConcurrentAppendTest, EightProcessesAppendingToOneFileLoseAndTearNothing) {
  std::string dir_template = ::testing::TempDir() + "concurrent_append.XXXXXX";
  const std::string dir = mkdtemp(dir_template.data());
  const std::string path = dir + "/node.gpstrace";

  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(AppendFrames(path, 0x1000 + static_cast<uint64_t>(p)));
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << child;
  }

  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  uint32_t version = 0;
  ASSERT_TRUE(ParseFileHeader(file.data(), file.size(), &version));

  std::map<uint64_t, uint64_t> next_sequence;  // uid -> expected next
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<uint8_t> raw;
  size_t offset = kFileHeaderBytes;
  int frames = 0;
  while (offset < file.size()) {
    FrameView view{};
    ASSERT_EQ(ParseFrame(file.data() + offset, file.size() - offset, &view), FrameStatus::kOk)
        << "offset " << offset << " after " << frames << " frames";
    raw.resize(view.raw_bytes);
    ASSERT_EQ(ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), view.payload, view.payload_bytes),
              raw.size());
    proto::Chunk chunk;
    ASSERT_TRUE(chunk.ParseFromArray(raw.data(), static_cast<int>(raw.size())));
    ASSERT_EQ(chunk.sequence(), next_sequence[chunk.process_uid()]++)
        << "uid " << chunk.process_uid();
    ASSERT_EQ(chunk.batch().kernels().duration_ns_size(), 1 + chunk.sequence() % 50);
    offset += view.frame_bytes;
    ++frames;
  }
  ZSTD_freeDCtx(dctx);
  EXPECT_EQ(offset, file.size());
  EXPECT_EQ(frames, kProcesses * kFramesPerProcess);
  ASSERT_EQ(next_sequence.size(), static_cast<size_t>(kProcesses));
  for (const auto& [uid, count] : next_sequence) EXPECT_EQ(count, kFramesPerProcess) << uid;

  std::remove(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace gpscope::format
