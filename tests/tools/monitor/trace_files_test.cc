// Tests of tools/monitor/trace_files.h: names, retention, and rotation by
// size (a hard limit) and by age (a fake clock); every file must read alone.
#include "tools/monitor/trace_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::monitor {
namespace {

// A fresh directory, removed with everything in it when the test ends.
class ScopedDir {
 public:
  ScopedDir() {
    char tmpl[] = "/tmp/gpscope_trace_files_XXXXXX";
    const char* dir = mkdtemp(tmpl);
    path_ = dir != nullptr ? dir : "";
  }
  ~ScopedDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  operator const std::string&() const { return path_; }

 private:
  std::string path_;
};

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Writes a header and `descriptors` metric descriptors (ids 1..n) at each file start.
class TestStarter : public FileStarter {
 public:
  explicit TestStarter(uint32_t descriptors) : descriptors_(descriptors) {}
  void OnFileStart(format::ChunkWriter& w, uint64_t) override {
    format::ProcessHeaderRecord h{};
    h.format_version = format::kFormatVersion;
    h.hostname = format::MakeStringRef("node-a");
    h.pid = 77;
    h.identity = format::IdentityRecord{{nullptr, 0}, -1, -1, 0, -1,
                                        format::MakeStringRef("gpscope-monitor")};
    w.WriteHeader(h);
    for (uint32_t id = 1; id <= descriptors_; ++id) {
      w.AddMetricDescriptor(format::MetricDescriptorRecord{
          id, format::MakeStringRef("gpm.sm_util"), format::MakeStringRef("percent"), 1, id, 0, 0,
          format::MakeStringRef("GPU-0000")});
    }
    ++starts;
  }
  int starts = 0;

 private:
  uint32_t descriptors_;
};

// What one file holds, read on its own.
struct FileContent {
  bool header = false;
  bool end = false;
  uint32_t end_reason = 0;
  std::set<uint32_t> descriptors;
  uint64_t samples = 0;
  uint64_t undefined_samples = 0;  // samples whose id has no descriptor in this file
  uint64_t damaged_regions = 0;
  bool truncated = false;
};

class ContentVisitor : public reader::ChunkVisitor {
 public:
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& chunk) override {
    if (chunk.has_header()) c.header = true;
    if (chunk.has_end()) {
      c.end = true;
      c.end_reason = static_cast<uint32_t>(chunk.end().reason());
    }
    if (chunk.has_batch()) {
      for (const auto& d : chunk.batch().metric_descriptors()) c.descriptors.insert(d.id());
      std::vector<format::MetricSample> samples;
      EXPECT_TRUE(reader::DecodeMetrics(chunk.batch(), &samples).ok());
      for (const auto& s : samples) {
        ++c.samples;
        if (c.descriptors.count(s.metric_id) == 0) ++c.undefined_samples;
      }
    }
    return absl::OkStatus();
  }
  FileContent c;
};

FileContent ReadAlone(const std::string& path) {
  ContentVisitor v;
  reader::TraceReader r(v);
  EXPECT_TRUE(r.ReadFile(path).ok()) << path;
  v.c.damaged_regions = r.index().files.at(0).damaged_regions;
  v.c.truncated = r.index().files.at(0).truncated;
  return v.c;
}

struct FakeClock {
  uint64_t realtime_ns = 1795947300ull * 1000000000ull;  // 2026-11-29T10:15:00Z
  uint64_t mono_ns = 1000;
  Clocks clocks() {
    return Clocks{[this] { return realtime_ns; }, [this] { return mono_ns; }};
  }
  void Advance(uint64_t ns) {
    realtime_ns += ns;
    mono_ns += ns;
  }
};

RotatingTraceWriter::Options WriterOptions(const std::string& dir, const FileLimits& limits) {
  RotatingTraceWriter::Options o;
  o.dir = dir;
  o.prefix = MonitorFilePrefix("node-a");
  o.limits = limits;
  o.pid = 77;
  o.zstd_level = 1;
  return o;
}

TEST(TraceFilesTest, NamesSortInCreationOrderAndSanitizeTheHost) {
  const std::string prefix = MonitorFilePrefix("node a/b");
  EXPECT_EQ(prefix, "gpscope-monitor_node_a_b_");
  EXPECT_EQ(MonitorFileName(prefix, 1795947300ull * 1000000000ull, 7),
            "gpscope-monitor_node_a_b_20261129T101500Z-007.gpscope");
  EXPECT_LT(MonitorFileName(prefix, 1795947300ull * 1000000000ull, 8),
            MonitorFileName(prefix, 1795947301ull * 1000000000ull, 0));
}

TEST(TraceFilesTest, PicksTheOldestFilesToDelete) {
  std::vector<TraceFileEntry> closed = {{"a", 10}, {"b", 20}, {"c", 30}, {"d", 40}};
  FileLimits count{100, 1, 3, 0};
  EXPECT_EQ(PickFilesToDelete(closed, count), (std::vector<size_t>{0, 1}));  // 2 kept + new = 3
  FileLimits total{100, 1, 0, 150};  // kept + 100 (the new file) <= 150
  EXPECT_EQ(PickFilesToDelete(closed, total), (std::vector<size_t>{0, 1, 2}));
  FileLimits none{100, 1, 0, 0};
  EXPECT_TRUE(PickFilesToDelete(closed, none).empty());
  FileLimits both{100, 1, 4, 1000};
  EXPECT_EQ(PickFilesToDelete(closed, both), (std::vector<size_t>{0}));
}

TEST(TraceFilesTest, SizeLimitIsNeverExceededAndEveryFileReadsAlone) {
  const ScopedDir scoped;
  const std::string& dir = scoped;
  FakeClock clock;
  TestStarter starter(8);
  const RotatingTraceWriter::Options o =
      WriterOptions(dir, FileLimits{128 * 1024, 3600ull * 1000000000ull, 0, 0});
  RotatingTraceWriter w(o, clock.clocks(), &starter, nullptr);
  std::string error;
  ASSERT_TRUE(w.Open(&error)) << error;

  // Random values compress badly, so files fill fast; flush now and then as
  // the monitor does once per interval.
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> value(0, 100);
  const uint64_t kSamples = 150000;
  for (uint64_t i = 0; i < kSamples; ++i) {
    format::ChunkWriter* cw = w.Room();
    ASSERT_NE(cw, nullptr);
    cw->AddMetricSample(format::MetricSample{clock.realtime_ns + i * 1000, static_cast<uint32_t>(1 + i % 8), value(rng)});
    if (i % 500 == 0) w.Flush();
    ASSERT_LE(w.current_bytes(), o.limits.max_file_bytes);
  }
  w.Close(format::ProcessEndRecord{});

  const std::vector<TraceFileEntry> files = ListTraceFiles(dir, o.prefix);
  ASSERT_GE(files.size(), 5u);
  EXPECT_EQ(static_cast<uint64_t>(starter.starts), files.size());
  uint64_t total = 0;
  for (const TraceFileEntry& f : files) {
    EXPECT_LE(f.bytes, o.limits.max_file_bytes) << f.path;
    if (&f != &files.back()) {
      EXPECT_GT(f.bytes, o.limits.max_file_bytes / 2) << f.path << " rotated far too early";
    }
    const FileContent c = ReadAlone(f.path);
    EXPECT_TRUE(c.header) << f.path;
    EXPECT_TRUE(c.end) << f.path;
    EXPECT_EQ(c.descriptors.size(), 8u) << f.path;
    EXPECT_EQ(c.undefined_samples, 0u) << f.path;
    EXPECT_EQ(c.damaged_regions, 0u) << f.path;
    total += c.samples;
  }
  EXPECT_EQ(total, kSamples);
  EXPECT_EQ(w.records_dropped(), 0u);
  // Rotated files end with END_FINALIZE (3), the last with what Close() said.
  EXPECT_EQ(ReadAlone(files.front().path).end_reason, 3u);
}

TEST(TraceFilesTest, RotatesByAgeOnTheClock) {
  const ScopedDir scoped;
  const std::string& dir = scoped;
  FakeClock clock;
  TestStarter starter(1);
  const RotatingTraceWriter::Options o =
      WriterOptions(dir, FileLimits{64ull << 20, 10ull * 1000000000ull, 0, 0});
  RotatingTraceWriter w(o, clock.clocks(), &starter, nullptr);
  std::string error;
  ASSERT_TRUE(w.Open(&error)) << error;
  const std::string first = w.current_path();
  w.Room()->AddMetricSample(format::MetricSample{clock.realtime_ns, 1, 1});
  clock.Advance(9ull * 1000000000ull);
  w.MaybeRotateByAge();
  EXPECT_EQ(w.current_path(), first);
  clock.Advance(1ull * 1000000000ull);
  w.MaybeRotateByAge();
  EXPECT_NE(w.current_path(), first);
  EXPECT_EQ(w.files_opened(), 2u);
  w.Room()->AddMetricSample(format::MetricSample{clock.realtime_ns, 1, 2});
  w.Close(format::ProcessEndRecord{});
  const FileContent a = ReadAlone(first);
  EXPECT_TRUE(a.end);
  EXPECT_EQ(a.samples, 1u);
  EXPECT_EQ(ReadAlone(w.current_path()).samples, 1u);
  // The new name carries the new time.
  EXPECT_NE(w.current_path().find("20261129T101510Z"), std::string::npos) << w.current_path();
}

TEST(TraceFilesTest, RetentionDeletesOnlyThisHostsOldestFiles) {
  const ScopedDir scoped;
  const std::string& dir = scoped;
  const std::string prefix = MonitorFilePrefix("node-a");
  for (int i = 0; i < 5; ++i) {
    std::ofstream(dir + "/" + MonitorFileName(prefix, (1700000000ull + i) * 1000000000ull, 0))
        << "old";
  }
  const std::string other = dir + "/" + MonitorFileName(MonitorFilePrefix("node-b"), 1, 0);
  std::ofstream(other) << "other host";
  const std::string unrelated = dir + "/notes.txt";
  std::ofstream(unrelated) << "keep";

  FakeClock clock;
  TestStarter starter(1);
  const RotatingTraceWriter::Options o =
      WriterOptions(dir, FileLimits{64ull << 20, 10ull * 1000000000ull, 3, 0});
  RotatingTraceWriter w(o, clock.clocks(), &starter, nullptr);
  std::string error;
  ASSERT_TRUE(w.Open(&error)) << error;
  std::vector<TraceFileEntry> files = ListTraceFiles(dir, prefix);
  ASSERT_EQ(files.size(), 3u);  // the two newest old ones and the new one
  EXPECT_NE(files[0].path.find("20231114T221323Z"), std::string::npos) << files[0].path;
  EXPECT_EQ(files[2].path, w.current_path());
  EXPECT_EQ(w.files_deleted(), 3u);
  EXPECT_EQ(FileSize(other), 10u);
  EXPECT_EQ(FileSize(unrelated), 4u);

  for (int i = 0; i < 4; ++i) {
    clock.Advance(11ull * 1000000000ull);
    w.MaybeRotateByAge();
    EXPECT_EQ(ListTraceFiles(dir, prefix).size(), 3u);
  }
  w.Close(format::ProcessEndRecord{});
  files = ListTraceFiles(dir, prefix);
  ASSERT_EQ(files.size(), 3u);
  for (const TraceFileEntry& f : files) EXPECT_TRUE(ReadAlone(f.path).header) << f.path;
}

TEST(TraceFilesTest, TotalSizeRetentionHoldsWhileWriting) {
  const ScopedDir scoped;
  const std::string& dir = scoped;
  FakeClock clock;
  TestStarter starter(2);
  const RotatingTraceWriter::Options o =
      WriterOptions(dir, FileLimits{100 * 1024, 3600ull * 1000000000ull, 0, 350 * 1024});
  RotatingTraceWriter w(o, clock.clocks(), &starter, nullptr);
  std::string error;
  ASSERT_TRUE(w.Open(&error)) << error;
  std::mt19937_64 rng(2);
  for (int i = 0; i < 120000; ++i) {
    format::ChunkWriter* cw = w.Room();
    ASSERT_NE(cw, nullptr);
    cw->AddMetricSample(format::MetricSample{clock.realtime_ns + i, 1, static_cast<double>(rng())});
    if (i % 1000 == 0) {
      uint64_t total = 0;
      for (const TraceFileEntry& f : ListTraceFiles(dir, o.prefix)) total += f.bytes;
      ASSERT_LE(total, o.limits.max_total_bytes);
    }
  }
  w.Close(format::ProcessEndRecord{});
  EXPECT_GT(w.files_deleted(), 2u);
  uint64_t total = 0;
  for (const TraceFileEntry& f : ListTraceFiles(dir, o.prefix)) total += f.bytes;
  EXPECT_LE(total, o.limits.max_total_bytes);
}

TEST(TraceFilesTest, LimitBelowTheFileStartDropsInsteadOfRotatingForever) {
  const ScopedDir scoped;
  const std::string& dir = scoped;
  FakeClock clock;
  TestStarter starter(1);
  const RotatingTraceWriter::Options o =
      WriterOptions(dir, FileLimits{8 * 1024, 3600ull * 1000000000ull, 0, 0});  // below the reserve
  std::ostringstream log;
  RotatingTraceWriter w(o, clock.clocks(), &starter, &log);
  std::string error;
  ASSERT_TRUE(w.Open(&error)) << error;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w.Room(), nullptr);
  EXPECT_EQ(w.records_dropped(), 3u);
  EXPECT_EQ(w.files_opened(), 1u);
  EXPECT_NE(log.str().find("too small"), std::string::npos);
  // One line, not one per record.
  EXPECT_EQ(log.str().find('\n'), log.str().size() - 1);
  w.Close(format::ProcessEndRecord{});
  EXPECT_LE(FileSize(ListTraceFiles(dir, o.prefix).at(0).path), o.limits.max_file_bytes);
}

TEST(TraceFilesTest, UnwritableDirectoryIsOneError) {
  FakeClock clock;
  RotatingTraceWriter::Options o;
  o.dir = "/proc/gpscope-no-such-dir";
  o.prefix = MonitorFilePrefix("node-a");
  RotatingTraceWriter w(o, clock.clocks(), nullptr, nullptr);
  std::string error;
  EXPECT_FALSE(w.Open(&error));
  EXPECT_NE(error.find("/proc/gpscope-no-such-dir"), std::string::npos) << error;
}

// The monitor's files hold the node's process names and job ids: 0640 like
// the collector's, in a directory checked against other users; a link or a
// FIFO planted at the next file's name is skipped, never written through.
TEST(TraceFilesTest, FilesAre0640AndAPlantedLinkAtTheNextNameIsSkipped) {
  const ScopedDir scoped;
  const std::string dir = static_cast<const std::string&>(scoped) + "/out";
  FakeClock clock;
  TestStarter starter(1);
  const RotatingTraceWriter::Options o = WriterOptions(dir, FileLimits{});
  // What the first file would be called: taken by a link to another file.
  std::filesystem::create_directory(dir);
  const std::string victim = static_cast<const std::string&>(scoped) + "/victim";
  std::ofstream(victim) << "not the monitor's";
  const std::string taken = dir + "/" + MonitorFileName(o.prefix, clock.realtime_ns, 0);
  ASSERT_EQ(symlink(victim.c_str(), taken.c_str()), 0);
  const mode_t old = umask(022);
  RotatingTraceWriter w(o, clock.clocks(), &starter, nullptr);
  std::string error;
  const bool opened = w.Open(&error);
  umask(old);
  ASSERT_TRUE(opened) << error;
  EXPECT_NE(w.current_path(), taken);
  w.Room()->AddMetricSample(format::MetricSample{clock.realtime_ns, 1, 1});
  w.Close(format::ProcessEndRecord{});
  struct stat st;
  ASSERT_EQ(lstat(w.current_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(ReadAlone(w.current_path()).samples, 1u);
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "not the monitor's");
  // Retention never deletes through (or the) link: it is not one of ours.
  for (const TraceFileEntry& e : ListTraceFiles(dir, o.prefix)) EXPECT_NE(e.path, taken);
}

TEST(TraceFilesTest, AWorldWritableOutputDirectoryIsRefused) {
  const ScopedDir scoped;
  const std::string dir = static_cast<const std::string&>(scoped) + "/open";
  std::filesystem::create_directory(dir);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  FakeClock clock;
  RotatingTraceWriter w(WriterOptions(dir, FileLimits{}), clock.clocks(), nullptr, nullptr);
  std::string error;
  EXPECT_FALSE(w.Open(&error));
  EXPECT_NE(error.find("writable by every user"), std::string::npos) << error;
}

}  // namespace
}  // namespace gpscope::monitor
