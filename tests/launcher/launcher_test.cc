// Unit tests of the `gpscope` launcher's parts: argument parsing, library
// lookup, environment, progress rendering (the trace tail it reads from is
// tools/reader's: tests/tools/trace_tail_test.cc),
// window extraction, /proc inspection.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "proto/framing.h"
#include "tests/testing/trace_builder.h"
#include "tools/gpscope/analysis.h"
#include "tools/gpscope/attach.h"
#include "tools/gpscope/cli.h"
#include "tools/gpscope/progress.h"
#include "tools/gpscope/run.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::launcher {
namespace {

using testing::TraceBuilder;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpscope-launcher-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ------------------------------------------------------------------ options --

TEST(RunArgsTest, OptionsBecomeCollectorVariablesAndTheRestIsTheCommand) {
  absl::StatusOr<RunOptions> o = ParseRunArgs(
      {"--output", "out", "--delay=2.5", "--duration", "30", "--capture-range", "nvtx:train*",
       "--range-count", "2", "--steps", "10", "--metrics-interval-ms", "50", "--idle-gap-ms",
       "2.5", "--no-report", "python3", "-u", "train.py", "--lr", "3"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->output_dir, "out");
  EXPECT_FALSE(o->report);
  EXPECT_EQ(o->idle_gap_ns, 2'500'000u);
  EXPECT_EQ(o->command, (std::vector<std::string>{"python3", "-u", "train.py", "--lr", "3"}));
  EXPECT_EQ(o->env.at("GPSCOPE_CAPTURE_DELAY_S"), "2.5");
  EXPECT_EQ(o->env.at("GPSCOPE_CAPTURE_DURATION_S"), "30");
  EXPECT_EQ(o->env.at("GPSCOPE_CAPTURE_RANGE"), "nvtx:train*");
  EXPECT_EQ(o->env.at("GPSCOPE_CAPTURE_RANGE_COUNT"), "2");
  EXPECT_EQ(o->env.at("GPSCOPE_CAPTURE_STEPS"), "10");
  EXPECT_EQ(o->env.at("GPSCOPE_METRICS_INTERVAL_MS"), "50");
  EXPECT_EQ(o->window.delay_ms, 2500u);
  EXPECT_EQ(o->window.duration_ms, 30000u);
  EXPECT_TRUE(o->window.triggered);
}

TEST(RunArgsTest, DoubleDashEndsOptionsAndPlainRunSetsNothing) {
  absl::StatusOr<RunOptions> o = ParseRunArgs({"--", "--weird-command", "--output"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, (std::vector<std::string>{"--weird-command", "--output"}));
  EXPECT_TRUE(o->env.empty());
  EXPECT_TRUE(o->report);
  o = ParseRunArgs({"--standby", "--", "app"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->env.at("GPSCOPE_STANDBY"), "1");
}

TEST(RunArgsTest, BadValuesAreOneLineNamingTheOption) {
  auto message = [](std::vector<std::string> args) {
    absl::StatusOr<RunOptions> o = ParseRunArgs(args);
    return o.ok() ? std::string("OK") : std::string(o.status().message());
  };
  EXPECT_EQ(message({"--delay", "soon", "--", "app"}),
            "--delay: GPSCOPE_CAPTURE_DELAY_S='soon' is not a number of seconds in 0..604800 "
            "(like 30 or 2.5)");
  EXPECT_EQ(message({"--capture-range", "train", "app"}),
            "--capture-range: GPSCOPE_CAPTURE_RANGE='train' is not nvtx:NAME (an NVTX range name "
            "of 1..255 bytes, NAME* for a prefix)");
  EXPECT_EQ(message({"--standby", "--duration", "5", "app"}),
            "--standby: GPSCOPE_CAPTURE_DURATION_S is ignored with GPSCOPE_STANDBY=1 (tracing "
            "starts only on `gpscope attach`)");
  EXPECT_EQ(message({"--metrics-interval-ms", "5", "app"}),
            "--metrics-interval-ms must be a whole number 10..1000, not '5'");
  EXPECT_EQ(message({"--idle-gap-ms", "0", "app"}),
            "--idle-gap-ms must be a number of milliseconds > 0, not '0'");
  EXPECT_EQ(message({"--report", "r.html", "--no-report", "app"}),
            "--report and --no-report contradict each other");
  EXPECT_EQ(message({"--outptu", "x", "app"}), "unknown option --outptu");
  EXPECT_EQ(message({"-x", "app"}), "unknown option -x");
  EXPECT_EQ(message({"--output"}), "option --output needs a value");
  EXPECT_EQ(message({"--no-report=1", "app"}), "option --no-report takes no value");
  EXPECT_EQ(message({"--output", "o"}),
            "no command given: gpscope run [OPTIONS] -- COMMAND [ARGS...]");
}

TEST(AttachArgsTest, ParsesPidDurationAndInterval) {
  absl::StatusOr<AttachOptions> o =
      ParseAttachArgs({"--pid", "4242", "--duration", "600", "--interval", "100"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->pid, 4242);
  EXPECT_EQ(o->duration_ms, 600'000u);
  EXPECT_EQ(o->interval_ms, 100u);
  o = ParseAttachArgs({"--pid=7", "--duration=0.25"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->duration_ms, 250u);
  EXPECT_EQ(ParseAttachArgs({"--pid", "7"})->duration_ms, 600'000u);
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{},
                                             {"--pid", "abc"},
                                             {"--pid", "-3"},
                                             {"--pid", "7", "--duration", "0"},
                                             {"--pid", "7", "--duration", "86401"},
                                             {"--pid", "7", "--interval", "5"},
                                             {"--pid", "7", "extra"}}) {
    EXPECT_FALSE(ParseAttachArgs(bad).ok()) << (bad.empty() ? "" : bad.back());
  }
  EXPECT_EQ(ParseAttachArgs({}).status().message(), "--pid PID is required");
}

// ------------------------------------------------------------ environment --

TEST(FindInjectLibraryTest, ExplicitPathNextToBinaryAndLibDir) {
  TempDir tmp;
  const std::string bin = tmp.path() + "/bin", lib = tmp.path() + "/lib";
  mkdir(bin.c_str(), 0755);
  mkdir(lib.c_str(), 0755);
  absl::StatusOr<std::string> found = FindInjectLibrary("", bin + "/gpscope", "");
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("cannot find libgpscope_inject.so (looked at: " + bin +
                                          "/libgpscope_inject.so, " + bin +
                                          "/../lib/libgpscope_inject.so"),
            std::string::npos)
      << found.status().message();
  EXPECT_NE(found.status().message().find("pass --lib"), std::string::npos);

  std::ofstream(lib + "/libgpscope_inject.so") << "x";
  found = FindInjectLibrary("", bin + "/gpscope", "");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, bin + "/../lib/libgpscope_inject.so");
  std::ofstream(bin + "/libgpscope_inject.so") << "x";
  EXPECT_EQ(*FindInjectLibrary("", bin + "/gpscope", ""), bin + "/libgpscope_inject.so");
  EXPECT_EQ(*FindInjectLibrary(lib + "/libgpscope_inject.so", "", ""),
            lib + "/libgpscope_inject.so");
  EXPECT_EQ(FindInjectLibrary(tmp.path() + "/nope.so", bin + "/gpscope", "").status().message(),
            "--lib " + tmp.path() + "/nope.so: no such file");
}

TEST(MergeEnvironmentTest, ReplacesAndAdds) {
  EXPECT_EQ(MergeEnvironment({"PATH=/bin", "CUDA_INJECTION64_PATH=/old.so", "A=b=c"},
                             {{"CUDA_INJECTION64_PATH", "/new.so"}, {"GPSCOPE_OUTPUT", "/o"}}),
            (std::vector<std::string>{"PATH=/bin", "A=b=c", "CUDA_INJECTION64_PATH=/new.so",
                                      "GPSCOPE_OUTPUT=/o"}));
}

// --------------------------------------------------------------- progress --

TEST(ProgressTest, FormatsClockCountsAndBytes) {
  EXPECT_EQ(FormatClock(0), "00:00");
  EXPECT_EQ(FormatClock(83'999), "01:23");
  EXPECT_EQ(FormatClock(3'723'000), "1:02:03");
  EXPECT_EQ(FormatCount(9'999), "9999");
  EXPECT_EQ(FormatCount(12'345), "12.3k");
  EXPECT_EQ(FormatCount(1'234'567), "1.2M");
  EXPECT_EQ(FormatCount(999'999), "1.0M");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(12'900), "12.6 KiB");
  EXPECT_EQ(FormatBytes(3u << 20), "3.0 MiB");
}

TEST(ProgressTest, RunLineShowsWindowProcessesEventsBytesDrops) {
  RunProgress p;
  p.elapsed_ms = 12'000;
  p.stats.processes = 2;
  p.stats.events = 1'234'567;
  p.stats.bytes = 5u << 20;
  p.stats.drops = 1;
  EXPECT_EQ(RenderRunProgress(p, 200),
            "gpscope 00:12 | 2 processes | 1.2M events | 5.0 MiB | 1 drop");
  p.window.delay_ms = 20'000;
  p.window.duration_ms = 60'000;
  EXPECT_EQ(RenderRunProgress(p, 200).rfind("gpscope 00:12 | starts in 00:08 | 2 processes", 0), 0u);
  p.elapsed_ms = 50'000;
  EXPECT_NE(RenderRunProgress(p, 200).find("| window 00:30 left |"), std::string::npos);
  p.elapsed_ms = 90'000;
  EXPECT_NE(RenderRunProgress(p, 200).find("| window over |"), std::string::npos);
  EXPECT_EQ(RenderRunProgress(p, 20), "gpscope 01:30 | wind");
}

TEST(ProgressTest, AttachBarFillsWithTheWindow) {
  EXPECT_EQ(RenderAttachProgress(0, 600'000, 0, 0, 200),
            "gpscope attach [....................]   0%  00:00 / 10:00 | 0 events | 0 drops");
  EXPECT_EQ(RenderAttachProgress(240'000, 600'000, 12'345, 2, 200),
            "gpscope attach [########............]  40%  04:00 / 10:00 | 12.3k events | 2 drops");
  EXPECT_EQ(RenderAttachProgress(700'000, 600'000, 1, 0, 200),
            "gpscope attach [####################] 100%  10:00 / 10:00 | 1 event | 0 drops");
}

TEST(ProgressTest, PrinterRewritesOneLineOnlyWhenEnabled) {
  std::ostringstream tty, pipe;
  ProgressPrinter on(tty, true), off(pipe, false);
  for (ProgressPrinter* p : {&on, &off}) {
    p->Show("a");
    p->Show("bb");
    p->Clear();
    p->Clear();
  }
  EXPECT_EQ(tty.str(), "\ra\x1b[K\rbb\x1b[K\r\x1b[K");
  EXPECT_EQ(pipe.str(), "");
}

// ------------------------------------------------------ window extraction --

TEST(ExtractProcessWindowTest, CopiesTheHeaderAndOnlyThatProcesssWindowFrames) {
  TempDir tmp;
  const std::string node = tmp.path() + "/node.gpscope", out = tmp.path() + "/window.gpscope";
  TraceBuilder trace;
  TraceBuilder::Process& mine = trace.AddProcess(0xAA, 100);
  TraceBuilder::Process& other = trace.AddProcess(0xBB, 200);
  mine.WriteHeader();
  other.WriteHeader();
  mine.AddKernel(1'000'000, 1'000, "before").Flush();  // before the window
  const uint64_t from = trace.bytes().size();
  // "before" was interned before the window: the window file must define it.
  mine.AddKernel(2'000'000, 1'000, "in").AddKernel(2'100'000, 1'000, "before").Flush();
  other.AddKernel(2'000'000, 1'000, "other").Flush();
  mine.AddKernel(2'200'000, 1'000, "in");
  proto::ClockSnapshot* clock = mine.batch().add_clocks();
  clock->set_cupti_ns(2'300'000);
  clock->set_realtime_ns(1'800'000'000'002'300'000);
  proto::DropNotice* drop = mine.batch().add_drops();
  drop->set_reason(proto::DROP_CUPTI_REPORTED);
  drop->set_count(3);
  mine.Flush();
  const uint64_t to = trace.bytes().size();
  mine.AddKernel(3'000'000, 1'000, "after").Flush();  // after the window
  ASSERT_TRUE(trace.WriteFile(node));

  uint64_t frames = 0;
  ASSERT_TRUE(ExtractProcessWindow(node, 100, from, to, out, &frames).ok());
  EXPECT_EQ(frames, 5u);  // header, definitions, 2 batches, the window's end
  struct Collect : reader::ChunkVisitor {
    std::vector<std::string> names;
    int headers = 0, kernels = 0;
    absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
      EXPECT_EQ(c.process_uid(), 0xAAu);
      headers += c.has_header() ? 1 : 0;
      kernels += c.batch().kernels().start_delta_ns_size();
      for (const auto& s : c.batch().strings()) names.push_back(s.value());
      return absl::OkStatus();
    }
  } collect;
  absl::StatusOr<reader::TraceIndex> index = reader::ReadTraces({out}, collect);
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->files[0].status.ok());
  EXPECT_EQ(index->files[0].damaged_regions, 0u);
  EXPECT_EQ(collect.headers, 1);
  EXPECT_EQ(collect.kernels, 3);
  EXPECT_EQ(collect.names, (std::vector<std::string>{"before", "in"}));
  ASSERT_EQ(index->processes.size(), 1u);
  EXPECT_TRUE(index->processes[0].header.has_value());
  EXPECT_EQ(index->processes[0].lost_chunks, 0u) << "sequences renumbered: no gap";
  EXPECT_EQ(index->processes[0].chunks, 5u);
  // Not the process's end: the window's, so the copy reads as whole.
  ASSERT_TRUE(index->processes[0].end.has_value());
  const proto::ProcessEnd& end = *index->processes[0].end;
  EXPECT_EQ(end.reason(), proto::END_WINDOW_CUT);
  EXPECT_EQ(end.end_ns(), 2'300'000u);
  EXPECT_EQ(end.clock().realtime_ns(), 1'800'000'000'002'300'000u);
  EXPECT_EQ(end.chunks_written(), 5u);
  EXPECT_EQ(end.events_dropped(), 3u);
}

// A process that exits inside the window keeps its own end chunk, only it.
TEST(ExtractProcessWindowTest, AProcessThatEndedInTheWindowKeepsItsOwnEnd) {
  TempDir tmp;
  const std::string node = tmp.path() + "/node.gpscope", out = tmp.path() + "/window.gpscope";
  TraceBuilder trace;
  TraceBuilder::Process& mine = trace.AddProcess(0xAA, 100);
  mine.WriteHeader();
  const uint64_t from = trace.bytes().size();
  mine.AddKernel(2'000'000, 1'000, "in");
  proto::ProcessEnd exit_end;
  exit_end.set_reason(proto::END_EXIT);
  mine.WriteEnd(exit_end);
  ASSERT_TRUE(trace.WriteFile(node));

  uint64_t frames = 0;
  ASSERT_TRUE(ExtractProcessWindow(node, 100, from, trace.bytes().size(), out, &frames).ok());
  struct Ends : reader::ChunkVisitor {
    int ends = 0;
    absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
      ends += c.has_end() ? 1 : 0;
      return absl::OkStatus();
    }
  } ends;
  absl::StatusOr<reader::TraceIndex> index = reader::ReadTraces({out}, ends);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(ends.ends, 1);
  ASSERT_TRUE(index->processes[0].end.has_value());
  EXPECT_EQ(index->processes[0].end->reason(), proto::END_EXIT);
  EXPECT_EQ(index->processes[0].lost_chunks, 0u);
}

// ---------------------------------------------------------- /proc, errors --

TEST(InspectProcessTest, ReadsOwnerEnvironmentAndLoadedCollector) {
  TempDir tmp;
  const std::string proc = tmp.path() + "/proc";
  mkdir(proc.c_str(), 0755);
  mkdir((proc + "/42").c_str(), 0755);
  std::ofstream(proc + "/42/status") << "Name:\tpython3\nUid:\t1000\t1001\t1000\t1000\n";
  std::ofstream(proc + "/42/environ")
      << std::string("XDG_RUNTIME_DIR=/run/user/1001\0GPSCOPE_STANDBY=1\0", 50);
  std::ofstream(proc + "/42/maps") << "7f00 r-xp /opt/gpscope/lib/libgpscope_inject.so\n";
  const TargetProcess t = InspectProcess(42, proc);
  EXPECT_TRUE(t.exists);
  EXPECT_EQ(t.euid, 1001u);
  EXPECT_EQ(t.env.at("XDG_RUNTIME_DIR"), "/run/user/1001");
  EXPECT_EQ(t.env.at("GPSCOPE_STANDBY"), "1");
  EXPECT_TRUE(t.collector_loaded);
  EXPECT_FALSE(InspectProcess(43, proc).exists);

  const std::vector<std::string> sockets = ControlSocketCandidates(42, t, 1001);
  ASSERT_GE(sockets.size(), 2u);
  EXPECT_EQ(sockets[0], "/run/user/1001/gpscope/42.sock");
  EXPECT_EQ(sockets.back(), "/tmp/gpscope-1001/42.sock");

  // This very process: real /proc, our uid, no collector.
  const TargetProcess self = InspectProcess(getpid());
  EXPECT_TRUE(self.exists);
  EXPECT_EQ(self.euid, geteuid());
  EXPECT_FALSE(self.collector_loaded);
}

// The socket a process listens on is found through the kernel, wherever it
// is: the fallback directory of a collector whose default was squatted has
// a random name no guess would find.
TEST(FindControlSocketsTest, FindsTheListeningSocketsOfAProcessByItsPid) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/gpscope-1000-Ab3xYz";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const std::string path = dir + "/" + std::to_string(getpid()) + ".sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  // Bound, not listening: not a server.
  EXPECT_TRUE(FindControlSockets(getpid()).empty());
  ASSERT_EQ(listen(fd, 1), 0);
  EXPECT_EQ(FindControlSockets(getpid()), std::vector<std::string>{path});
  // Another pid's name is not ours to serve.
  EXPECT_TRUE(FindControlSockets(1).empty() ||
              FindControlSockets(1) != std::vector<std::string>{path});
  close(fd);
  EXPECT_TRUE(FindControlSockets(getpid()).empty());
}

TEST(NotAttachableMessageTest, ExplainsStandbyWithTheExactVariables) {
  TargetProcess t;
  t.exists = true;
  const std::string m = NotAttachableMessage(42, t, {"/tmp/gpscope-0/42.sock"}, "/opt/lib/x.so");
  EXPECT_NE(m.find("process 42 was not started with the gpscope collector"), std::string::npos);
  EXPECT_NE(m.find("    CUDA_INJECTION64_PATH=/opt/lib/x.so\n    GPSCOPE_STANDBY=1\n"),
            std::string::npos)
      << m;
  t.collector_loaded = true;
  EXPECT_NE(NotAttachableMessage(42, t, {"/tmp/gpscope-0/42.sock"}, "")
                .find("has the gpscope collector loaded but no control socket (looked at: "
                      "/tmp/gpscope-0/42.sock)"),
            std::string::npos);
}

TEST(FindingsBriefTest, RendersMostCostlyFirstWithAFix) {
  analyses::Finding f;
  f.rule = "host_sync";
  f.title = "Host syncs stall the GPU";
  f.severity = analyses::Severity::kWarning;
  f.cost_ns = 1'234'000'000;
  f.scope = "GPU 0 (pid 7)";
  f.summary = "The host waited 1.2 s.";
  f.fixes = {"Remove .item() from the loop.", "second"};
  analyses::Finding g = f;
  g.rule = "tiny_kernels";
  g.cost_ns = 0;
  g.fixes.clear();
  EXPECT_EQ(RenderFindingsBrief({f, g}, 1),
            "gpscope: 2 findings, warnings first, most costly first:\n"
            "  1. WARNING  host_sync: Host syncs stall the GPU (cost ~1.23 s)\n"
            "     GPU 0 (pid 7)\n"
            "     The host waited 1.2 s.\n"
            "     fix: Remove .item() from the loop.\n"
            "  ... and 1 more in the report\n");
  EXPECT_EQ(RenderFindingsBrief({}, 5),
            "gpscope: no findings: no rule fired (see the report's numbers)\n");
}

}  // namespace
}  // namespace gpscope::launcher
