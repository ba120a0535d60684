// End-to-end tests of the `gpscope` binary without a GPU: exit codes,
// signal forwarding, the report after a run, and attach against
// fake_traced_app (the real control channel and capture window in a
// stand-in process).
#include <fcntl.h>
#include <pty.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/reader/trace_reader.h"

#ifndef GPSCOPE_BINARY
#error "GPSCOPE_BINARY must name the gpscope executable"
#endif
#ifndef GPSCOPE_FAKE_APP
#error "GPSCOPE_FAKE_APP must name fake_traced_app"
#endif

namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gps-cli-XXXXXX";  // short: socket paths live below it
    path_ = mkdtemp(tmpl);
    chmod(path_.c_str(), 0755);
    std::ofstream(path_ + "/fake_inject.so") << "not a real library";
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  std::string lib() const { return path_ + "/fake_inject.so"; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0;
}

// Starts argv with `env` added to ours, stdout and stderr to files.
pid_t Start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& out_path, const std::string& err_path, uid_t as_uid = 0) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(out, 1);
  dup2(err, 2);
  if (as_uid != 0 && (setgid(as_uid) != 0 || setuid(as_uid) != 0)) _exit(99);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(98);
}

// Waits up to timeout_ms; kills and fails on a hang. Returns the shell-style code.
int WaitFor(pid_t pid, int timeout_ms = 60'000) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(timeout_ms)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "process " << pid << " did not exit in " << timeout_ms << " ms";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Result {
  int code;
  std::string out, err;
};

Result RunGpscope(const TempDir& dir, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}, int timeout_ms = 60'000) {
  std::vector<std::string> argv = {GPSCOPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out = dir.path() + "/gpscope.out", err = dir.path() + "/gpscope.err";
  const int code = WaitFor(Start(argv, env, out, err), timeout_ms);
  return {code, ReadFile(out), ReadFile(err)};
}

bool WaitForFile(const std::string& path, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (Exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

uint64_t CountKernels(const std::string& path) {
  struct Count : gpscope::reader::ChunkVisitor {
    uint64_t kernels = 0;
    absl::Status OnChunk(const gpscope::reader::ChunkContext&,
                         const gpscope::proto::Chunk& c) override {
      kernels += static_cast<uint64_t>(c.batch().kernels().start_delta_ns_size());
      return absl::OkStatus();
    }
  } count;
  auto index = gpscope::reader::ReadTraces({path}, count);
  EXPECT_TRUE(index.ok() && index->files[0].status.ok()) << path;
  return count.kernels;
}

TEST(GpscopeRunTest, ExitCodeIsTheCommandsOwn) {
  TempDir dir;
  Result r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", dir.path() + "/o", "--",
                              "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("'/bin/sh' exited with code 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no trace was written"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  // The command's own stdout passes through untouched.
  r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", dir.path() + "/o", "echo", "hi"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "hi\n");
}

TEST(GpscopeRunTest, DeathBySignalIs128PlusTheSignal) {
  TempDir dir;
  const Result r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", dir.path() + "/o",
                                    "--", "/bin/sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.code, 128 + SIGKILL) << r.err;
}

TEST(GpscopeRunTest, SigtermToTheLauncherIsForwardedToTheCommand) {
  TempDir dir;
  const std::string ready = dir.path() + "/ready";
  // The shell exits 42 on SIGTERM, and only on it.
  const std::vector<std::string> argv = {
      GPSCOPE_BINARY, "run", "--lib", dir.lib(), "--output", dir.path() + "/o", "--no-report",
      "--", "/bin/sh", "-c",
      "trap 'exit 42' TERM; touch " + ready + "; while :; do sleep 0.05; done"};
  const pid_t pid = Start(argv, {}, dir.path() + "/out", dir.path() + "/err");
  ASSERT_TRUE(WaitForFile(ready, 10'000)) << ReadFile(dir.path() + "/err");
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  EXPECT_EQ(WaitFor(pid, 10'000), 42) << ReadFile(dir.path() + "/err");
}

TEST(GpscopeRunTest, CommandNotFoundAndBadUsage) {
  TempDir dir;
  Result r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", dir.path() + "/o", "--",
                              "/no/such/command"});
  EXPECT_EQ(r.code, 127);
  EXPECT_NE(r.err.find("cannot run '/no/such/command': No such file or directory"),
            std::string::npos)
      << r.err;
  r = RunGpscope(dir, {"run", "--lib", dir.path() + "/missing.so", "--", "true"});
  EXPECT_EQ(r.code, 125);
  EXPECT_EQ(r.err, "gpscope run: --lib " + dir.path() + "/missing.so: no such file\n");
  r = RunGpscope(dir, {"run", "--steps", "many", "--", "true"});
  EXPECT_EQ(r.code, 125);
  EXPECT_NE(r.err.find("--steps: GPSCOPE_CAPTURE_STEPS='many' is not a whole number"),
            std::string::npos)
      << r.err;
  r = RunGpscope(dir, {"frobnicate"});
  EXPECT_EQ(r.code, 2);
}

TEST(GpscopeRunTest, WritesTheReportAndPrintsFindingsAfterTheRun) {
  TempDir dir;
  const std::string out = dir.path() + "/o";
  const Result r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", out, "--idle-gap-ms",
                                    "1", "--", GPSCOPE_FAKE_APP, "300", "20", "50", "5"});
  EXPECT_EQ(r.code, 5) << r.err;  // the app's own exit code, with a trace written
  const std::string trace = out + "/fakejob_testhost.gpscope";
  const uint64_t kernels = CountKernels(trace);
  EXPECT_GT(kernels, 0u);
  EXPECT_EQ(kernels % 50, 0u);
  EXPECT_NE(r.err.find("; 1 process, " + std::to_string(kernels) + " events"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("gpscope: report: " + out + "/report.html\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("most costly first:\n  1. "), std::string::npos) << r.err;
  const std::string html = ReadFile(out + "/report.html");
  EXPECT_GT(html.size(), 10'000u);
  EXPECT_NE(html.find("<html"), std::string::npos);
  // The report and the output directory are not for other users (the
  // report shows the command line and environment, like the trace).
  struct stat st{};
  ASSERT_EQ(stat((out + "/report.html").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0007, 0u) << std::oct << st.st_mode;
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u) << std::oct << st.st_mode;
}

// An output directory another user could have planted (here: a link in a
// directory everyone may write to) stops the launcher before the command
// runs: one line, exit 125. A link at the report's name is not written
// through.
TEST(GpscopeRunTest, AnUntrustedOutputDirectoryOrReportPathIsOneLineNotAWrite) {
  TempDir dir;
  const std::string shared = dir.path() + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0777), 0);
  ASSERT_EQ(mkdir((dir.path() + "/target").c_str(), 0700), 0);
  ASSERT_EQ(symlink((dir.path() + "/target").c_str(), (shared + "/o").c_str()), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  Result r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", shared + "/o", "--",
                              "/bin/sh", "-c", "touch " + dir.path() + "/ran"});
  EXPECT_EQ(r.code, 125) << r.err;
  EXPECT_NE(r.err.find("in a directory other users may write to"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(dir.path() + "/ran")) << "the command ran anyway";

  const std::string out = dir.path() + "/o2";
  ASSERT_EQ(mkdir(out.c_str(), 0700), 0);
  const std::string elsewhere = dir.path() + "/elsewhere.html";
  std::ofstream(elsewhere) << "keep";
  ASSERT_EQ(symlink(elsewhere.c_str(), (out + "/report.html").c_str()), 0);
  r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", out, "--", GPSCOPE_FAKE_APP, "200",
                       "20", "5", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("report.html is a symbolic link; refusing to write through it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadFile(elsewhere), "keep");
}

TEST(GpscopeRunTest, ProgressLineOnlyOnATerminal) {
  TempDir dir;
  // stderr is a file here: no carriage returns, no escape sequences.
  const Result quiet = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", dir.path() + "/q",
                                        "--no-report", "--", GPSCOPE_FAKE_APP, "1200", "20", "5",
                                        "0"});
  EXPECT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find('\r'), std::string::npos) << quiet.err;
  EXPECT_EQ(quiet.err.find('\x1b'), std::string::npos) << quiet.err;

  // stderr on a pseudo-terminal: the line is drawn and redrawn.
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = dir.path() + "/t";
    execl(GPSCOPE_BINARY, GPSCOPE_BINARY, "run", "--lib", dir.lib().c_str(), "--output",
          out.c_str(), "--no-report", "--duration", "60", "--", GPSCOPE_FAKE_APP, "1200", "20",
          "5", "0", static_cast<char*>(nullptr));
    _exit(98);
  }
  std::string tty;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof(buf))) > 0;) tty.append(buf, static_cast<size_t>(n));
  close(master);
  EXPECT_EQ(WaitFor(pid), 0) << tty;
  EXPECT_NE(tty.find("\rgpscope 00:0"), std::string::npos) << tty;
  EXPECT_NE(tty.find(" left | 1 process | "), std::string::npos) << tty;
  EXPECT_NE(tty.find(" events | "), std::string::npos) << tty;
  EXPECT_NE(tty.find("\x1b[K"), std::string::npos) << tty;
}

TEST(GpscopeRunTest, TheLauncherSetsTheInjectionVariable) {
  TempDir dir;
  // fake_traced_app exits 90 when CUDA_INJECTION64_PATH is missing.
  std::vector<std::string> argv = {GPSCOPE_FAKE_APP, "10", "5", "1", "0"};
  EXPECT_EQ(WaitFor(Start(argv, {{"GPSCOPE_OUTPUT", dir.path()}}, dir.path() + "/a", dir.path() + "/b")),
            90);
  const Result r = RunGpscope(dir, {"run", "--lib", dir.lib(), "--output", dir.path() + "/o",
                                    "--no-report", "--", GPSCOPE_FAKE_APP, "10", "5", "1", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("gpscope: traces: " + dir.path() + "/o/fakejob_testhost.gpscope"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Exists(dir.path() + "/o/report.html"));
}

// --------------------------------------------------------------- attach --

// fake_traced_app in standby (10 kernels every 20 ms while tracing, at most
// 30 s), its control socket in `ctl`, flushing every 100 ms.
pid_t StartStandbyApp(const TempDir& dir, const std::string& ctl) {
  return Start({GPSCOPE_FAKE_APP, "30000", "20", "10", "0"},
               {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", dir.path()},
                {"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CONTROL_DIR", ctl},
                {"GPSCOPE_FLUSH_INTERVAL_MS", "100"}},
               dir.path() + "/app.out", dir.path() + "/app.err");
}

TEST(GpscopeAttachTest, CapturesExactlyTheRequestedWindowOfAStandbyProcess) {
  TempDir dir;
  const std::string ctl = dir.path() + "/ctl";
  const pid_t app = StartStandbyApp(dir, ctl);
  ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000))
      << ReadFile(dir.path() + "/app.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // standby: nothing traced

  const auto t0 = std::chrono::steady_clock::now();
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(app), "--duration", "1",
                                    "--interval", "50", "--output", dir.path() + "/att"},
                              {{"GPSCOPE_CONTROL_DIR", ctl}});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GE(took, std::chrono::milliseconds(1000));
  EXPECT_LT(took, std::chrono::milliseconds(15'000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // standby again
  kill(app, SIGTERM);
  EXPECT_EQ(WaitFor(app, 10'000), 0);

  // The app's own record of the window vs. what the attach extracted.
  const std::string windows = ReadFile(dir.path() + "/windows.txt");
  ASSERT_EQ(windows.rfind("kernels ", 0), 0u) << windows;
  EXPECT_EQ(windows.find('\n'), windows.size() - 1) << "exactly one window: " << windows;
  const uint64_t in_window = std::stoull(windows.substr(8));
  EXPECT_GT(in_window, 0u);
  const std::string window_file =
      dir.path() + "/att/fakejob_testhost_pid" + std::to_string(app) + ".gpscope";
  EXPECT_EQ(CountKernels(window_file), in_window) << r.err;
  EXPECT_EQ(CountKernels(dir.path() + "/fakejob_testhost.gpscope"), in_window)
      << "nothing traced outside the window";
  EXPECT_TRUE(Exists(dir.path() + "/att/report.html")) << r.err;
  EXPECT_NE(r.err.find("gpscope: tracing process " + std::to_string(app) + " for 00:01"),
            std::string::npos)
      << r.err;
  // The copy ends with the window's end record: whole, not "no end record".
  EXPECT_EQ(r.err.find("No end record"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("incomplete"), std::string::npos) << r.err;
}

// A collector that tells windows_written (its window's records are on disk
// when the window ends) is not waited on for a flush interval: with a 20 s
// interval, the old wait alone would take 20.5 s.
TEST(GpscopeAttachTest, ReturnsOnceTheCollectorSaysTheWindowIsWritten) {
  TempDir dir;
  const std::string ctl = dir.path() + "/ctl";
  const pid_t app = Start({GPSCOPE_FAKE_APP, "30000", "20", "10", "0"},
                          {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", dir.path()},
                           {"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CONTROL_DIR", ctl},
                           {"GPSCOPE_FLUSH_INTERVAL_MS", "20000"},
                           {"FAKE_APP_REPORTS_WINDOWS", "1"}},
                          dir.path() + "/app.out", dir.path() + "/app.err");
  ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000))
      << ReadFile(dir.path() + "/app.err");
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(app), "--duration", "1",
                                    "--no-report", "--output", dir.path() + "/att"},
                              {{"GPSCOPE_CONTROL_DIR", ctl}});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GE(took, std::chrono::milliseconds(1000));
  EXPECT_LT(took, std::chrono::milliseconds(6000)) << r.err;
  kill(app, SIGTERM);
  EXPECT_EQ(WaitFor(app, 10'000), 0);
  const std::string windows = ReadFile(dir.path() + "/windows.txt");
  ASSERT_EQ(windows.rfind("kernels ", 0), 0u) << windows;
  const std::string window_file =
      dir.path() + "/att/fakejob_testhost_pid" + std::to_string(app) + ".gpscope";
  EXPECT_EQ(CountKernels(window_file), std::stoull(windows.substr(8))) << r.err;
}

TEST(GpscopeAttachTest, CtrlCEndsTheWindowEarlyAndStillReports) {
  TempDir dir;
  const std::string ctl = dir.path() + "/ctl";
  const pid_t app = StartStandbyApp(dir, ctl);
  ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000))
      << ReadFile(dir.path() + "/app.err");
  const pid_t attach =
      Start({GPSCOPE_BINARY, "attach", "--pid", std::to_string(app), "--duration", "600",
             "--output", dir.path() + "/att"},
            {}, dir.path() + "/attach.out", dir.path() + "/attach.err");
  // Interrupt once the window is open (the app has written kernels).
  const std::string node = dir.path() + "/fakejob_testhost.gpscope";
  for (int i = 0; i < 500 && CountKernels(node) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  kill(attach, SIGINT);
  EXPECT_EQ(WaitFor(attach, 20'000), 0) << ReadFile(dir.path() + "/attach.err");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(10'000));
  kill(app, SIGTERM);
  EXPECT_EQ(WaitFor(app, 10'000), 0);
  const std::string windows = ReadFile(dir.path() + "/windows.txt");
  ASSERT_EQ(windows.rfind("kernels ", 0), 0u) << windows;
  const uint64_t in_window = std::stoull(windows.substr(8));
  EXPECT_GT(in_window, 0u);
  EXPECT_EQ(CountKernels(dir.path() + "/att/fakejob_testhost_pid" + std::to_string(app) +
                         ".gpscope"),
            in_window);
  EXPECT_TRUE(Exists(dir.path() + "/att/report.html"));
}

TEST(GpscopeAttachTest, AProcessAlreadyTracingEverythingIsNotAttached) {
  TempDir dir;
  const std::string ctl = dir.path() + "/ctl";
  const pid_t app = Start({GPSCOPE_FAKE_APP, "20000", "20", "1", "0"},
                          {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", dir.path()},
                           {"GPSCOPE_CONTROL_DIR", ctl}},
                          dir.path() + "/app.out", dir.path() + "/app.err");
  ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000));
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(app), "--duration", "1"});
  kill(app, SIGTERM);
  WaitFor(app);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is already tracing (state tracing, not standby); its trace is " +
                       dir.path() + "/fakejob_testhost.gpscope"),
            std::string::npos)
      << r.err;
}

TEST(GpscopeAttachTest, AProcessWithoutTheCollectorGetsAnExplanationNotAHang) {
  TempDir dir;
  const pid_t sleeper = Start({"sleep", "30"}, {}, dir.path() + "/s.out", dir.path() + "/s.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(sleeper), "--duration", "5"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(3000));
  kill(sleeper, SIGKILL);
  WaitFor(sleeper);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("process " + std::to_string(sleeper) +
                       " was not started with the gpscope collector"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("GPSCOPE_STANDBY=1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CUDA_INJECTION64_PATH="), std::string::npos) << r.err;

  const Result missing = RunGpscope(dir, {"attach", "--pid", "999999999"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "gpscope attach: no process 999999999\n");
}

TEST(GpscopeAttachTest, AnotherUsersProcessIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start a process as another user";
  TempDir dir;
  const pid_t other = Start({"sleep", "30"}, {}, dir.path() + "/s.out", dir.path() + "/s.err",
                            /*as_uid=*/65534);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(other)});
  kill(other, SIGKILL);
  WaitFor(other);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("belongs to "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("controls only your own processes"), std::string::npos) << r.err;
}

// ---- attach believes nothing a socket says before checking who serves it ----

// Another process (same user here) serves a socket under the target's name
// in a directory attach would look in: attach refuses it (SO_PEERCRED pid)
// and sends it nothing.
TEST(GpscopeAttachTest, ASocketServedByAnotherProcessUnderTheTargetsNameIsRefused) {
  TempDir dir;
  const std::string ctl = dir.path() + "/ctl";
  // The target: standby, no control socket of its own.
  const pid_t app = Start({GPSCOPE_FAKE_APP, "30000", "20", "10", "0"},
                          {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", dir.path()},
                           {"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CONTROL", "0"}},
                          dir.path() + "/app.out", dir.path() + "/app.err");
  const std::string impostor_out = dir.path() + "/imp";
  const pid_t impostor =
      Start({GPSCOPE_FAKE_APP, "30000", "20", "10", "0"},
            {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", impostor_out},
             {"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CONTROL_DIR", ctl},
             {"FAKE_APP_SOCKET_PID", std::to_string(app)},
             {"FAKE_APP_STATUS_PID", std::to_string(app)}},
            dir.path() + "/imp.out", dir.path() + "/imp.err");
  ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000))
      << ReadFile(dir.path() + "/imp.err");
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(app), "--duration", "1",
                                    "--output", dir.path() + "/att"},
                              {{"GPSCOPE_CONTROL_DIR", ctl}});
  kill(impostor, SIGTERM);
  kill(app, SIGTERM);
  WaitFor(impostor);
  WaitFor(app);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("is served by process " + std::to_string(impostor)), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("not by process " + std::to_string(app) + "; refusing to talk to it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("gpscope: tracing process"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(impostor_out + "/windows.txt"), "") << "the impostor was asked to trace";
}

// Another user made the target's control directory first (as for
// /tmp/gpscope-0) and serves a fake collector there under the target's pid.
// The target serves from a private fallback; attach finds that one through
// /proc, refuses the squatter's, and captures the real window.
TEST(GpscopeAttachTest, ASquattedControlDirectoryIsRefusedAndTheFallbackIsFound) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to play another user";
  TempDir dir;
  const uid_t kNobody = 65534;
  const std::string ctl = dir.path() + "/ctl";
  ASSERT_EQ(mkdir(ctl.c_str(), 0700), 0);
  ASSERT_EQ(chown(ctl.c_str(), kNobody, kNobody), 0);
  const pid_t app = StartStandbyApp(dir, ctl);
  // The fallback is announced on the target's stderr (refusal, then where).
  ASSERT_TRUE(WaitForFile(dir.path() + "/fakejob_testhost.gpscope", 10'000));
  const std::string squat_out = dir.path() + "/squat";
  ASSERT_EQ(mkdir(squat_out.c_str(), 0700), 0);
  ASSERT_EQ(chown(squat_out.c_str(), kNobody, kNobody), 0);
  // A copy of the stand-in the other user can run.
  const std::string fake_app = dir.path() + "/fake_traced_app";
  ASSERT_EQ(std::system(("cp '" + std::string(GPSCOPE_FAKE_APP) + "' '" + fake_app + "'").c_str()),
            0);
  const pid_t squatter =
      Start({fake_app, "30000", "20", "10", "0"},
            {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", squat_out},
             {"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CONTROL_DIR", ctl},
             {"FAKE_APP_SOCKET_PID", std::to_string(app)},
             {"FAKE_APP_STATUS_PID", std::to_string(app)},
             {"FAKE_APP_TRACE_PATH", squat_out + "/fakejob_testhost.gpscope"}},
            dir.path() + "/squat.out", dir.path() + "/squat.err", kNobody);
  ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000))
      << ReadFile(dir.path() + "/squat.err");
  const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(app), "--duration", "1",
                                    "--no-report", "--output", dir.path() + "/att"},
                              {{"GPSCOPE_CONTROL_DIR", ctl}});
  kill(squatter, SIGTERM);
  WaitFor(squatter);
  kill(app, SIGTERM);
  EXPECT_EQ(WaitFor(app, 10'000), 0);
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string app_err = ReadFile(dir.path() + "/app.err");
  EXPECT_NE(app_err.find("control directory " + ctl + " belongs to uid 65534"), std::string::npos)
      << app_err;
  const std::string windows = ReadFile(dir.path() + "/windows.txt");
  ASSERT_EQ(windows.rfind("kernels ", 0), 0u) << windows << r.err;
  EXPECT_EQ(CountKernels(dir.path() + "/att/fakejob_testhost_pid" + std::to_string(app) +
                         ".gpscope"),
            std::stoull(windows.substr(8)));
  EXPECT_EQ(ReadFile(squat_out + "/windows.txt"), "") << "the squatter was asked to trace";
}

// A status that names a trace holding nothing of the target (another
// process's file, or a relative path from an older collector) fails with a
// clear line instead of an empty report and exit 0.
TEST(GpscopeAttachTest, ATraceWithoutTheTargetsFramesFailsInsteadOfAnEmptyReport) {
  TempDir dir;
  // Another process's trace: a short, fully traced run.
  const std::string other = dir.path() + "/other";
  const pid_t first = Start({GPSCOPE_FAKE_APP, "200", "20", "1", "0"},
                            {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", other},
                             {"GPSCOPE_CONTROL", "0"}},
                            dir.path() + "/o.out", dir.path() + "/o.err");
  ASSERT_EQ(WaitFor(first, 10'000), 0) << ReadFile(dir.path() + "/o.err");
  for (const std::string& path :
       {other + "/fakejob_testhost.gpscope", std::string("rel.gpscope")}) {
    SCOPED_TRACE(path);
    const std::string ctl = dir.path() + "/ctl";
    const pid_t app = Start({GPSCOPE_FAKE_APP, "30000", "20", "10", "0"},
                            {{"CUDA_INJECTION64_PATH", dir.lib()}, {"GPSCOPE_OUTPUT", dir.path()},
                             {"GPSCOPE_STANDBY", "1"}, {"GPSCOPE_CONTROL_DIR", ctl},
                             {"FAKE_APP_TRACE_PATH", path}},
                            dir.path() + "/app.out", dir.path() + "/app.err");
    ASSERT_TRUE(WaitForFile(ctl + "/" + std::to_string(app) + ".sock", 10'000));
    if (path[0] != '/') std::ofstream(dir.path() + "/" + path) << "x";  // exists from here
    const Result r = RunGpscope(dir, {"attach", "--pid", std::to_string(app), "--duration", "0.3",
                                      "--output", dir.path() + "/att"},
                                {{"GPSCOPE_CONTROL_DIR", ctl}});
    kill(app, SIGTERM);
    WaitFor(app);
    EXPECT_EQ(r.code, 1) << r.err;
    if (path[0] == '/') {
      EXPECT_NE(r.err.find(path + " holds no trace header of process " + std::to_string(app)),
                std::string::npos)
          << r.err;
      EXPECT_FALSE(Exists(dir.path() + "/att/report.html"));
    } else {
      EXPECT_NE(r.err.find("relative to its own working directory"), std::string::npos) << r.err;
    }
  }
}

}  // namespace
