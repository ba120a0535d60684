// tests/tools/dump_test.cc: `gpscope-analyze dump` filters and time modes:
// --kind keeps only the named line types (nvtx and marker as aliases),
// --pid only the named processes, --time relative writes only ns since the
// origin (t_ns, end_t_ns; no absolute CUPTI ns, so no integer past 2^53),
// the default output unchanged, and usage errors in one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/synth.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"

namespace gpscope::analyze {
namespace {

using testing::Synth;
using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;

struct Output {
  int code;
  std::vector<std::string> lines;
  std::string err;
};

Output Dump(std::vector<std::string> args) {
  args.insert(args.begin(), "dump");
  std::ostringstream out, err;
  const int code = Run(args, out, err);
  Output o{code, {}, err.str()};
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) o.lines.push_back(l);
  return o;
}

std::string Type(const std::string& line) {
  const std::string k = "{\"type\":\"";
  if (line.rfind(k, 0) != 0) return "";
  return line.substr(k.size(), line.find('"', k.size()) - k.size());
}

// The value of integer `key` in a line, or -1.
int64_t Int(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return -1;
  const size_t from = at + k.size();
  const size_t to = line.find_first_not_of("0123456789", from);
  if (to == from) return -1;
  return std::stoll(line.substr(from, to - from));
}

size_t CountType(const Output& o, const std::string& type) {
  size_t n = 0;
  for (const std::string& l : o.lines) n += Type(l) == type ? 1 : 0;
  return n;
}

// Two processes (pids 100 and 101): kernels (with their launch calls),
// copies, a sync and NVTX steps; pid 101 has 3 kernels, pid 100 has 5.
std::string WriteTwoProcesses() {
  TraceBuilder trace;
  Synth a(trace, 0xA0, 100), b(trace, 0xB1, 101);
  for (Synth* s : {&a, &b}) {
    const int kernels = s == &a ? 5 : 3;
    uint64_t h = 2'000'000'000;
    for (int i = 0; i < kernels; ++i) {
      const uint64_t start = h;
      h = s->Copy(h, 20 * kUs, 1 << 20, proto::MEMCPY_HTOD, proto::MEMORY_PINNED);
      h = s->Kernel(h + 2 * kUs, 1 * kMs, "square");
      s->Step(start, h + 10 * kUs, static_cast<uint64_t>(i));
      h = s->Sync(h) + 100 * kUs;
    }
    s->p().WriteEnd();
  }
  const std::string path =
      ::testing::TempDir() + "dump_test." + std::to_string(getpid()) + ".gpscope";
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

TEST(DumpTest, KindKeepsOnlyThoseLineTypes) {
  const std::string path = WriteTwoProcesses();
  const Output all = Dump({path});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  EXPECT_EQ(CountType(all, "kernel"), 8u);
  ASSERT_GT(CountType(all, "api"), 0u);
  ASSERT_GT(CountType(all, "process"), 0u);
  const Output some = Dump({"--kind", "kernel,memcpy", path});
  ASSERT_EQ(some.code, kExitOk) << some.err;
  ASSERT_FALSE(some.lines.empty());
  EXPECT_EQ(Type(some.lines[0]), "time_origin");  // always first
  for (size_t i = 1; i < some.lines.size(); ++i) {
    const std::string t = Type(some.lines[i]);
    EXPECT_TRUE(t == "kernel" || t == "memcpy") << some.lines[i];
  }
  EXPECT_EQ(CountType(some, "kernel"), CountType(all, "kernel"));
  EXPECT_EQ(CountType(some, "memcpy"), CountType(all, "memcpy"));
  EXPECT_EQ(some.lines.size(), 1 + CountType(all, "kernel") + CountType(all, "memcpy"));
  // Aliases: nvtx is both NVTX types, marker is nvtx_mark.
  const Output nvtx = Dump({"--kind", "nvtx", path});
  EXPECT_EQ(CountType(nvtx, "nvtx_range"), 8u);
  EXPECT_EQ(nvtx.lines.size(), 1 + CountType(all, "nvtx_range") + CountType(all, "nvtx_mark"));
  const Output ends = Dump({"--kind", "end,process", path});
  EXPECT_EQ(CountType(ends, "end"), 2u);
  EXPECT_EQ(CountType(ends, "process"), 2u);
  EXPECT_EQ(ends.lines.size(), 5u);
  unlink(path.c_str());
}

TEST(DumpTest, PidKeepsOnlyThoseProcesses) {
  const std::string path = WriteTwoProcesses();
  const Output one = Dump({"--pid", "101", path});
  ASSERT_EQ(one.code, kExitOk) << one.err;
  EXPECT_EQ(CountType(one, "kernel"), 3u);
  EXPECT_EQ(CountType(one, "process"), 1u);
  for (size_t i = 1; i < one.lines.size(); ++i) EXPECT_EQ(Int(one.lines[i], "pid"), 101);
  const Output both = Dump({"--pid", "100,101", "--kind", "kernel", path});
  EXPECT_EQ(CountType(both, "kernel"), 8u);
  const Output kernels100 = Dump({"--pid=100", "--kind=kernel", path});
  EXPECT_EQ(kernels100.lines.size(), 6u);  // the origin and pid 100's 5 kernels
  const Output none = Dump({"--pid", "7", path});
  EXPECT_EQ(none.code, kExitOk);
  EXPECT_EQ(none.lines.size(), 1u);  // only the time origin
  unlink(path.c_str());
}

// On a recorded trace, whose CUPTI ns (~1.8e18) are past 2^53: relative
// output has the default's t_ns line for line, end_t_ns - t_ns the
// duration, and no integer a double would round.
TEST(DumpTest, RelativeTimeWritesOnlyTimesSinceTheOrigin) {
  const std::string trace = std::string(GPSCOPE_TEST_DATA_DIR) + "/torch_train.gpscope";
  const Output abs = Dump({trace});
  const Output rel = Dump({"--time", "relative", trace});
  ASSERT_EQ(abs.code, kExitOk) << abs.err;
  ASSERT_EQ(rel.code, kExitOk) << rel.err;
  ASSERT_EQ(abs.lines.size(), rel.lines.size());
  EXPECT_EQ(Dump({"--time", "absolute", trace}).lines, abs.lines);
  // The origin: a number by default, a string (past 2^53) in relative mode.
  EXPECT_GT(Int(abs.lines[0], "realtime_ns"), int64_t{1} << 53);
  EXPECT_NE(rel.lines[0].find("\"realtime_ns\":\"" +
                              std::to_string(Int(abs.lines[0], "realtime_ns")) + "\""),
            std::string::npos)
      << rel.lines[0];
  size_t spans = 0;
  for (size_t i = 0; i < rel.lines.size(); ++i) {
    const std::string& r = rel.lines[i];
    const std::string& a = abs.lines[i];
    ASSERT_EQ(Type(r), Type(a)) << i;
    for (const char* key : {"\"start_ns\"", "\"end_ns\"", "\"timestamp_ns\"", "\"first_ns\"",
                            "\"last_ns\""}) {
      EXPECT_EQ(r.find(key), std::string::npos) << r;
    }
    // Every integer: a run of digits after ':' (strings hold none here but
    // the origin's, which is quoted).
    for (size_t p = r.find(':'); p != std::string::npos; p = r.find(':', p + 1)) {
      const size_t to = r.find_first_not_of("0123456789", p + 1);
      if (to == p + 1 || to == std::string::npos) continue;
      EXPECT_LT(std::stoull(r.substr(p + 1, to - p - 1)), uint64_t{1} << 53) << r;
    }
    EXPECT_EQ(Int(r, "t_ns"), Int(a, "t_ns")) << r;
    if (Int(a, "start_ns") > 0 && Int(a, "end_ns") > 0) {
      ++spans;
      const int64_t duration = Int(a, "end_ns") - Int(a, "start_ns");
      // (both ends go through the clock alignment, which corrects drift:
      // a few ns per second)
      EXPECT_NEAR(static_cast<double>(Int(r, "end_t_ns") - Int(r, "t_ns")),
                  static_cast<double>(duration), 1 + 1e-7 * static_cast<double>(duration))
          << r;
    }
  }
  EXPECT_GT(spans, 10'000u);
  EXPECT_EQ(CountType(rel, "kernel"), CountType(abs, "kernel"));
}

TEST(DumpTest, BadFlagsExitTwoWithOneLine) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--kind", "kernels", "a.gpscope"},
           {"--kind", ",", "a.gpscope"},
           {"--pid", "12x", "a.gpscope"},
           {"--pid", "-1", "a.gpscope"},
           {"--time", "utc", "a.gpscope"},
           {"--frobnicate", "a.gpscope"}}) {
    const Output o = Dump(args);
    EXPECT_EQ(o.code, kExitUsage) << (args.empty() ? "" : args[0]);
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  const Output help = Dump({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  std::string text;
  for (const std::string& l : help.lines) text += l + "\n";
  for (const char* word : {"--kind", "--pid", "--time relative", "2^53", "nvtx_mark"}) {
    EXPECT_NE(text.find(word), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace gpscope::analyze
