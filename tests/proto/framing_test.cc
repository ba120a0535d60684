// tests/proto/framing_test.cc: the frame and file layout of proto/framing.h,
// the encoder, and the append path (atomic header creation, single-write
// frames).
#include "proto/framing.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proto/crc32c.h"

namespace gpscope::format {
namespace {

uint32_t LE32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t{p[3]} << 24; }

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> Encode(FrameEncoder& encoder, const std::vector<uint8_t>& raw) {
  const uint8_t* frame = nullptr;
  const size_t n = encoder.Encode(raw.data(), raw.size(), &frame);
  EXPECT_GT(n, 0u);
  return std::vector<uint8_t>(frame, frame + n);
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh directory per test, so tests can run in parallel.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "framing_test.XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    DIR* d = opendir(path_.c_str());
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
    return names;
  }

 private:
  std::string path_;
};

TEST(FramingTest, FileHeaderIsMagicVersionAndZeroFlags) {
  uint8_t header[kFileHeaderBytes];
  WriteFileHeader(header);
  EXPECT_EQ(std::memcmp(header, "GPSCOPE\n", 8), 0);
  EXPECT_EQ(LE32(header + 8), kFormatVersion);
  EXPECT_EQ(LE32(header + 12), 0u);
  uint32_t version = 99;
  EXPECT_TRUE(ParseFileHeader(header, sizeof(header), &version));
  EXPECT_EQ(version, kFormatVersion);
}

TEST(FramingTest, ParseFileHeaderRejectsWrongMagicShortInputAndUnknownVersions) {
  uint8_t header[kFileHeaderBytes];
  WriteFileHeader(header);
  uint32_t version = 0;
  EXPECT_FALSE(ParseFileHeader(header, kFileHeaderBytes - 1, &version));
  header[8] = 2;  // a version from the future
  EXPECT_FALSE(ParseFileHeader(header, kFileHeaderBytes, &version));
  EXPECT_EQ(version, 2u);
  header[8] = 0;
  EXPECT_FALSE(ParseFileHeader(header, kFileHeaderBytes, &version));
  WriteFileHeader(header);
  header[0] = 'X';
  EXPECT_FALSE(ParseFileHeader(header, kFileHeaderBytes, &version));
}

TEST(FramingTest, EncodedFrameHasDocumentedLayout) {
  FrameEncoder encoder(1 << 16);
  ASSERT_TRUE(encoder.ok());
  const std::vector<uint8_t> raw = Bytes(std::string(1000, 'k') + "some chunk bytes");
  const std::vector<uint8_t> frame = Encode(encoder, raw);
  ASSERT_GE(frame.size(), kFrameHeaderBytes);
  EXPECT_EQ(LE32(frame.data()), kFrameMagic);
  EXPECT_EQ(std::memcmp(frame.data(), "GPSF", 4), 0);
  const uint32_t payload_bytes = LE32(frame.data() + 4);
  EXPECT_EQ(payload_bytes, frame.size() - kFrameHeaderBytes);
  EXPECT_EQ(LE32(frame.data() + 8), raw.size());
  EXPECT_LT(payload_bytes, raw.size());  // it compressed
  const uint32_t crc = Crc32cExtend(Crc32c(frame.data() + 4, 8), frame.data() + 16, payload_bytes);
  EXPECT_EQ(LE32(frame.data() + 12), crc);
  std::vector<uint8_t> back(raw.size());
  EXPECT_EQ(ZSTD_decompress(back.data(), back.size(), frame.data() + 16, payload_bytes),
            raw.size());
  EXPECT_EQ(back, raw);
}

TEST(FramingTest, ParseFrameAcceptsEncodedFrames) {
  FrameEncoder encoder(4096);
  const std::vector<uint8_t> raw = Bytes("chunk");
  const std::vector<uint8_t> frame = Encode(encoder, raw);
  FrameView view{};
  ASSERT_EQ(ParseFrame(frame.data(), frame.size(), &view), FrameStatus::kOk);
  EXPECT_EQ(view.payload, frame.data() + kFrameHeaderBytes);
  EXPECT_EQ(view.frame_bytes, frame.size());
  EXPECT_EQ(view.raw_bytes, raw.size());
  // Trailing bytes (the next frame) are not part of this one.
  std::vector<uint8_t> two = frame;
  two.insert(two.end(), frame.begin(), frame.end());
  ASSERT_EQ(ParseFrame(two.data(), two.size(), &view), FrameStatus::kOk);
  EXPECT_EQ(view.frame_bytes, frame.size());
}

TEST(FramingTest, EncoderHandlesEverySizeUpToItsLimitWithoutGrowing) {
  // The zstd context is static (ZSTD_initStaticCCtx): if any input size
  // needed more workspace than the constructor reserved, Encode would fail
  // with a memory error instead of allocating. So success here means the
  // reservation covers all sizes.
  constexpr size_t kMax = 1 << 20;
  FrameEncoder encoder(kMax);
  ASSERT_TRUE(encoder.ok());
  std::mt19937 rng(1);
  std::vector<uint8_t> random(kMax);
  for (uint8_t& b : random) b = static_cast<uint8_t>(rng());
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{16 << 10}, size_t{16 << 10} + 1,
                   size_t{128 << 10}, size_t{256 << 10} + 7, kMax - 1, kMax}) {
    const uint8_t* frame = nullptr;
    const size_t bytes = encoder.Encode(random.data(), n, &frame);  // incompressible: worst case
    ASSERT_GT(bytes, 0u) << n;
    FrameView view{};
    ASSERT_EQ(ParseFrame(frame, bytes, &view), FrameStatus::kOk) << n;
    EXPECT_EQ(view.raw_bytes, n);
  }
  const uint8_t* frame = nullptr;
  EXPECT_EQ(encoder.Encode(random.data(), kMax + 1, &frame), 0u);
}

TEST(FramingTest, EveryPrefixOfAFrameNeedsMoreDataAndKnowsItsLengthOnceTheHeaderIsIn) {
  FrameEncoder encoder(4096);
  const std::vector<uint8_t> frame = Encode(encoder, Bytes("a chunk of some length"));
  for (size_t n = 0; n < frame.size(); ++n) {
    FrameView view{};
    ASSERT_EQ(ParseFrame(frame.data(), n, &view), FrameStatus::kNeedMoreData) << n;
    if (n >= kFrameHeaderBytes) {
      EXPECT_EQ(view.frame_bytes, frame.size()) << n;
    }
  }
}

TEST(FramingTest, DetectsBadMagicBadLengthsAndEveryFlippedBit) {
  FrameEncoder encoder(4096);
  const std::vector<uint8_t> good = Encode(encoder, Bytes(std::string(300, 'x') + "tail"));
  FrameView view{};
  std::vector<uint8_t> f = good;
  f[1] ^= 1;
  EXPECT_EQ(ParseFrame(f.data(), f.size(), &view), FrameStatus::kBadMagic);
  EXPECT_EQ(ParseFrame(f.data(), 2, &view), FrameStatus::kBadMagic);  // even on a short prefix

  // The two little-endian length fields after the magic, written bounds-checked (at()): with
  // unchecked [] GCC 12 at -O3 cannot see that the copy is longer than 12 bytes and warns
  // (stringop-overflow) about the path where it would be empty.
  auto with_lengths = [&](uint32_t payload, uint32_t raw) {
    std::vector<uint8_t> g = good;
    for (size_t i = 0; i < 4; ++i) {
      g.at(4 + i) = static_cast<uint8_t>(payload >> (8 * i));
      g.at(8 + i) = static_cast<uint8_t>(raw >> (8 * i));
    }
    return ParseFrame(g.data(), g.size(), &view);
  };
  EXPECT_EQ(with_lengths(0, 10), FrameStatus::kBadLength);
  EXPECT_EQ(with_lengths(kMaxFrameBytes + 1, kMaxFrameBytes), FrameStatus::kBadLength);
  EXPECT_EQ(with_lengths(100, kMaxFrameBytes + 1), FrameStatus::kBadLength);
  EXPECT_EQ(with_lengths(1000, 10), FrameStatus::kBadLength);  // more than zstd can produce

  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    f = good;
    f[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    const FrameStatus s = ParseFrame(f.data(), f.size(), &view);
    EXPECT_NE(s, FrameStatus::kOk) << "bit " << bit;
  }
}

TEST(FramingTest, FindNextFrameMagicScansToTheEnd) {
  std::vector<uint8_t> data(100, 'G');  // 'G' is the magic's first byte: many near misses
  EXPECT_EQ(FindNextFrameMagic(data.data(), data.size(), 0), data.size());
  std::memcpy(data.data() + 37, "GPSF", 4);
  std::memcpy(data.data() + 96, "GPSF", 4);  // ends exactly at size
  EXPECT_EQ(FindNextFrameMagic(data.data(), data.size(), 0), 37u);
  EXPECT_EQ(FindNextFrameMagic(data.data(), data.size(), 37), 37u);
  EXPECT_EQ(FindNextFrameMagic(data.data(), data.size(), 38), 96u);
  EXPECT_EQ(FindNextFrameMagic(data.data(), 99, 38), 99u);  // cut inside the magic
  EXPECT_EQ(FindNextFrameMagic(data.data(), data.size(), 100), 100u);
  EXPECT_EQ(FindNextFrameMagic(data.data(), 3, 0), 3u);
}

TEST(FramingTest, OpenForAppendCreatesTheHeaderOnceAndLeavesNoTempFiles) {
  TempDir dir;
  const std::string path = dir.File("node.gpstrace");
  char err[256] = "";
  FrameEncoder encoder(4096);
  const std::vector<uint8_t> frame = Encode(encoder, Bytes("one"));
  for (int i = 0; i < 2; ++i) {
    const int fd = OpenForAppend(path.c_str(), err, sizeof(err));
    ASSERT_GE(fd, 0) << err;
    EXPECT_EQ(fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND), O_WRONLY | O_APPEND);
    EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    int err_no = 0;
    EXPECT_TRUE(AppendFrame(fd, frame.data(), frame.size(), &err_no));
    close(fd);
  }
  const std::vector<uint8_t> file = ReadAll(path);
  ASSERT_EQ(file.size(), kFileHeaderBytes + 2 * frame.size());
  uint32_t version = 0;
  EXPECT_TRUE(ParseFileHeader(file.data(), file.size(), &version));
  EXPECT_TRUE(std::equal(frame.begin(), frame.end(), file.begin() + kFileHeaderBytes));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"node.gpstrace"});
}

TEST(FramingTest, OpenForAppendRefusesAFileThatIsNotATrace) {
  TempDir dir;
  const std::string path = dir.File("notes.txt");
  std::ofstream(path) << "hello, this is not a trace";
  char err[256] = "";
  errno = 0;
  EXPECT_EQ(OpenForAppend(path.c_str(), err, sizeof(err)), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(std::string(err).find("not a gpscope trace"), std::string::npos) << err;
  EXPECT_NE(std::string(err).find(path), std::string::npos) << err;
  EXPECT_EQ(ReadAll(path).size(), 26u);  // untouched

  const std::string empty = dir.File("empty");
  std::ofstream(empty).close();
  EXPECT_EQ(OpenForAppend(empty.c_str(), err, sizeof(err)), -1);
  EXPECT_NE(std::string(err).find("not a gpscope trace"), std::string::npos) << err;
}

TEST(FramingTest, OpenForAppendRefusesAFutureFormatVersion) {
  TempDir dir;
  const std::string path = dir.File("future.gpstrace");
  uint8_t header[kFileHeaderBytes];
  WriteFileHeader(header);
  header[8] = 9;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<char*>(header), sizeof(header));
  char err[256] = "";
  EXPECT_EQ(OpenForAppend(path.c_str(), err, sizeof(err)), -1);
  EXPECT_NE(std::string(err).find("version 9"), std::string::npos) << err;
}

TEST(FramingTest, OpenForAppendNamesThePathWhenTheDirectoryIsMissing) {
  char err[256] = "";
  const std::string path = ::testing::TempDir() + "no/such/dir/t.gpstrace";
  EXPECT_EQ(OpenForAppend(path.c_str(), err, sizeof(err)), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_NE(std::string(err).find("no/such/dir"), std::string::npos) << err;
  // A tiny error buffer is truncated, not overrun.
  char tiny[8];
  EXPECT_EQ(OpenForAppend(path.c_str(), tiny, sizeof(tiny)), -1);
  EXPECT_EQ(std::strlen(tiny), sizeof(tiny) - 1);
}

TEST(FramingTest, RacingCreatorsShareOneHeader) {
  TempDir dir;
  const std::string path = dir.File("race.gpstrace");
  FrameEncoder encoder(4096);
  const std::vector<uint8_t> frame = Encode(encoder, Bytes("racer"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      char err[256];
      const int fd = OpenForAppend(path.c_str(), err, sizeof(err));
      ASSERT_GE(fd, 0) << err;
      int err_no = 0;
      EXPECT_TRUE(AppendFrame(fd, frame.data(), frame.size(), &err_no));
      close(fd);
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<uint8_t> file = ReadAll(path);
  ASSERT_EQ(file.size(), kFileHeaderBytes + 8 * frame.size());
  for (int i = 0; i < 8; ++i) {
    FrameView view{};
    EXPECT_EQ(ParseFrame(file.data() + kFileHeaderBytes + i * frame.size(), frame.size(), &view),
              FrameStatus::kOk);
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{"race.gpstrace"});
}

TEST(FramingTest, AppendFrameReportsErrors) {
  int err_no = 0;
  const uint8_t byte = 0;
  EXPECT_FALSE(AppendFrame(-1, &byte, 1, &err_no));
  EXPECT_EQ(err_no, EBADF);
}

// A write cut short by the file size limit stands in for a full disk: the
// frame is left torn (not retried) and the error is ENOSPC.
TEST(FramingTest, ShortWriteIsReportedAsEnospcAndNotRetried) {
  TempDir dir;
  const std::string path = dir.File("short.gpstrace");
  std::vector<uint8_t> frame(200, 0xAB);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);  // get a short write instead of the signal
    char err[256];
    const int fd = OpenForAppend(path.c_str(), err, sizeof(err));
    if (fd < 0) _exit(10);
    const rlimit limit{kFileHeaderBytes + 50, kFileHeaderBytes + 50};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(11);
    int err_no = 0;
    const bool ok = AppendFrame(fd, frame.data(), frame.size(), &err_no);
    _exit(ok ? 12 : err_no == ENOSPC ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ReadAll(path).size(), kFileHeaderBytes + 50);  // written once, not retried
}

TEST(FramingTest, LocalFilesystemsAreNotNetworkFilesystems) {
  EXPECT_FALSE(IsNetworkFilesystem(::testing::TempDir().c_str()));
  EXPECT_FALSE(IsNetworkFilesystem("/proc"));
  EXPECT_FALSE(IsNetworkFilesystem("/no/such/directory"));
}

}  // namespace
}  // namespace gpscope::format
