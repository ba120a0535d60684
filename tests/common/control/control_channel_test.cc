#include "common/control/control_channel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpscope::control {
namespace {

// Records what the control thread asked for; all access under mu.
class FakeCollector : public ControlHandler {
 public:
  void GetStatus(ControlStatus* s) override {
    std::lock_guard<std::mutex> lock(mu);
    ++status_calls;
    RecordSignalMask();
    s->state = tracing ? "attached" : "standby";
    s->tracing = tracing;
    s->remaining_ms = tracing ? 599'000 : 0;
    s->events = 1234;
    s->drops = 5;
    s->pid = 4242;
    s->trace_path = "/out dir/job_host.gpscope";
  }
  ControlReply Start(const StartRequest& request) override {
    std::lock_guard<std::mutex> lock(mu);
    RecordSignalMask();
    starts.push_back(request);
    if (tracing) return {false, "already tracing"};
    tracing = true;
    return {true, "tracing for " + std::to_string(request.duration_ms) + " ms"};
  }
  ControlReply Stop() override {
    std::lock_guard<std::mutex> lock(mu);
    ++stop_calls;
    if (!tracing) return {false, "not tracing"};
    tracing = false;
    return {true, "stopped"};
  }
  ControlReply SetStacks(bool on) override {
    std::lock_guard<std::mutex> lock(mu);
    stacks_switches.push_back(on);
    return {true, std::string("stacks ") + (on ? "on" : "off")};
  }
  void RecordSignalMask() {
    sigset_t set;
    pthread_sigmask(SIG_SETMASK, nullptr, &set);
    signals_blocked = sigismember(&set, SIGTERM) == 1 && sigismember(&set, SIGINT) == 1 &&
                      sigismember(&set, SIGUSR1) == 0;
    handler_thread = std::this_thread::get_id();
  }

  std::mutex mu;
  bool tracing = false;
  int status_calls = 0;
  int stop_calls = 0;
  std::vector<StartRequest> starts;
  std::vector<bool> stacks_switches;
  bool signals_blocked = false;
  std::thread::id handler_thread;
};

// A fresh directory for each test, removed afterwards.
class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpscope-ctl-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/ctl";
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }

  ControlChannel::Options Options(pid_t pid = 777) {
    ControlChannel::Options o;
    o.dir = dir_;
    o.pid = pid;
    return o;
  }

  std::string root_, dir_;
};

std::string Ask(ControlClient& client, const std::string& line) {
  std::string reply, error;
  const ClientError e = client.Request(line, 5000, &reply, &error);
  return e == ClientError::kOk ? reply : std::string("CLIENT ERROR: ") + error;
}

uint64_t ElapsedMs(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - since)
                                   .count());
}

TEST_F(ControlChannelTest, RoundTripsEveryCommand) {
  FakeCollector collector;
  ControlChannel channel(&collector, Options());
  std::string error;
  ASSERT_TRUE(channel.Start(&error)) << error;
  EXPECT_EQ(channel.socket_path(), dir_ + "/777.sock");
  struct stat st{};
  ASSERT_EQ(stat(channel.socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  ControlClient client;
  ASSERT_EQ(client.Connect(channel.socket_path(), &error), ClientError::kOk) << error;
  EXPECT_EQ(Ask(client, "status"),
            "ok state=standby tracing=0 remaining_ms=0 events=1234 drops=5 pid=4242 "
            "trace=/out dir/job_host.gpscope");
  EXPECT_EQ(Ask(client, "start 600000 100"), "ok tracing for 600000 ms");
  EXPECT_EQ(Ask(client, "start 1000"), "error already tracing");
  ControlStatus status;
  std::string state;
  ASSERT_TRUE(ParseStatusReply(Ask(client, "status"), &status, &state));
  EXPECT_STREQ(status.state, "attached");
  EXPECT_TRUE(status.tracing);
  EXPECT_EQ(status.remaining_ms, 599'000u);
  EXPECT_EQ(status.trace_path, "/out dir/job_host.gpscope");
  EXPECT_EQ(Ask(client, "stop"), "ok stopped");
  EXPECT_EQ(Ask(client, "stop"), "error not tracing");
  EXPECT_EQ(Ask(client, "start"),
            "error usage: start DURATION_MS [INTERVAL_MS] (DURATION_MS 1..86400000, INTERVAL_MS "
            "10..1000)");
  EXPECT_EQ(Ask(client, "start 10 5"), Ask(client, "start -1"));  // both usage errors
  EXPECT_EQ(Ask(client, "reboot now"),
            "error unknown request 'reboot now'; commands: status, start DURATION_MS "
            "[INTERVAL_MS], stop, stacks on|off");
  EXPECT_EQ(Ask(client, "stacks off"), "ok stacks off");
  EXPECT_EQ(Ask(client, "stacks on"), "ok stacks on");
  EXPECT_EQ(Ask(client, "stacks"), "error usage: stacks on|off");
  EXPECT_EQ(Ask(client, "stacks 1"), "error usage: stacks on|off");
  EXPECT_EQ(Ask(client, "stacks on now"), "error usage: stacks on|off");

  std::lock_guard<std::mutex> lock(collector.mu);
  ASSERT_EQ(collector.starts.size(), 2u);
  EXPECT_EQ(collector.starts[0].duration_ms, 600'000u);
  EXPECT_EQ(collector.starts[0].metrics_interval_ms, 100u);
  EXPECT_EQ(collector.starts[1].metrics_interval_ms, 0u);
  EXPECT_EQ(collector.stop_calls, 2);
  EXPECT_EQ(collector.stacks_switches, (std::vector<bool>{false, true}));
  // The handler ran on the control thread, with SIGTERM/SIGINT blocked
  // there and nothing else.
  EXPECT_NE(collector.handler_thread, std::this_thread::get_id());
  EXPECT_TRUE(collector.signals_blocked);
}

TEST_F(ControlChannelTest, ServesASecondConnectionOnceTheFirstCloses) {
  FakeCollector collector;
  ControlChannel channel(&collector, Options());
  std::string error;
  ASSERT_TRUE(channel.Start(&error)) << error;
  ControlClient first, second;
  ASSERT_EQ(first.Connect(channel.socket_path(), &error), ClientError::kOk);
  EXPECT_EQ(Ask(first, "stop"), "error not tracing");
  // The second client connects (the backlog takes it) while the first is
  // still being served; its request is answered after the first leaves.
  ASSERT_EQ(second.Connect(channel.socket_path(), &error), ClientError::kOk);
  ASSERT_EQ(second.SendRaw("status\n", 1000, &error), ClientError::kOk);
  std::string reply;
  EXPECT_EQ(second.ReadLine(200, &reply, &error), ClientError::kTimeout);
  first.Close();
  ASSERT_EQ(second.ReadLine(5000, &reply, &error), ClientError::kOk) << error;
  EXPECT_EQ(reply.rfind("ok state=standby ", 0), 0u) << reply;
  EXPECT_EQ(channel.connections(), 2u);
}

TEST_F(ControlChannelTest, OverlongLineIsRefusedAndTheConnectionClosed) {
  FakeCollector collector;
  ControlChannel::Options o = Options();
  o.max_line_bytes = 64;
  ControlChannel channel(&collector, o);
  std::string error, reply;
  ASSERT_TRUE(channel.Start(&error)) << error;
  ControlClient client;
  ASSERT_EQ(client.Connect(channel.socket_path(), &error), ClientError::kOk);
  // Exactly the limit is fine; one byte more is not.
  EXPECT_EQ(Ask(client, "status" + std::string(58, ' ')).rfind("ok state=", 0), 0u);
  ASSERT_EQ(client.SendRaw(std::string(10'000, 'x'), 1000, &error), ClientError::kOk);
  ASSERT_EQ(client.ReadLine(5000, &reply, &error), ClientError::kOk) << error;
  EXPECT_EQ(reply, "error line too long (at most 64 bytes)");
  EXPECT_EQ(client.ReadLine(5000, &reply, &error), ClientError::kClosed);
  std::lock_guard<std::mutex> lock(collector.mu);
  EXPECT_EQ(collector.status_calls, 1);
}

TEST_F(ControlChannelTest, PeerWithAnotherUidIsRefusedWithoutReachingTheCollector) {
  FakeCollector collector;
  ControlChannel::Options o = Options();
  o.allowed_uid = geteuid() + 1;  // the check compares SO_PEERCRED's uid to this
  ControlChannel channel(&collector, o);
  std::string error, reply;
  ASSERT_TRUE(channel.Start(&error)) << error;
  ControlClient client;
  ASSERT_EQ(client.Connect(channel.socket_path(), &error), ClientError::kOk);
  ASSERT_EQ(client.ReadLine(5000, &reply, &error), ClientError::kOk) << error;
  EXPECT_EQ(reply, "error permission denied: only uid " + std::to_string(geteuid() + 1) +
                       " may control this process");
  EXPECT_EQ(client.ReadLine(5000, &reply, &error), ClientError::kClosed);
  EXPECT_EQ(channel.refused_peers(), 1u);
  // A request sent after the refusal closed the socket (EPIPE on send) still
  // shows the process's reason, not a bare "closed the connection".
  ControlClient late;
  ASSERT_EQ(late.Connect(channel.socket_path(), &error), ClientError::kOk);
  for (int i = 0; i < 500 && channel.refused_peers() < 2; ++i) usleep(1000);
  usleep(50 * 1000);  // the channel closes right after it counts the refusal
  ASSERT_EQ(late.Request("status", 5000, &reply, &error), ClientError::kOk) << error;
  EXPECT_EQ(reply, "error permission denied: only uid " + std::to_string(geteuid() + 1) +
                       " may control this process");
  std::lock_guard<std::mutex> lock(collector.mu);
  EXPECT_EQ(collector.status_calls, 0);
  EXPECT_TRUE(PeerAllowed(1000, 1000));
  EXPECT_FALSE(PeerAllowed(0, 1000));
  EXPECT_FALSE(PeerAllowed(1001, 1000));
}

// As root: a child that really runs as another user (setuid) is refused by
// the kernel-reported credentials. The socket sits in a world-open
// directory here on purpose, so the credential check is the only barrier.
TEST_F(ControlChannelTest, SetuidChildIsRefusedByPeerCredentials) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to setuid a child";
  const uid_t nobody = 65534;
  const std::string open_dir = root_ + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  const std::string path = open_dir + "/s.sock";
  const int listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listen_fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(chmod(path.c_str(), 0777), 0);
  ASSERT_EQ(listen(listen_fd, 4), 0);

  // Fork before the server thread exists; the child uses raw syscalls only.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(nobody) != 0 || setuid(nobody) != 0 || getuid() != nobody) _exit(10);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) _exit(11);
    // The server answers a refused peer on accept and closes without
    // reading, so this send may meet a closed socket: MSG_NOSIGNAL (no
    // SIGPIPE) and the refusal is read all the same.
    const ssize_t sent = send(fd, "status\n", 7, MSG_NOSIGNAL);
    if (sent != 7 && !(sent < 0 && (errno == EPIPE || errno == ECONNRESET))) _exit(12);
    char buf[256] = {};
    size_t got = 0;
    for (ssize_t n; got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0;)
      got += static_cast<size_t>(n);
    _exit(strncmp(buf, "error permission denied", 23) == 0 ? 0 : 13);
  }
  FakeCollector collector;
  ControlChannel channel(&collector, Options());
  std::string error;
  ASSERT_TRUE(channel.StartWithListeningSocket(listen_fd, &error)) << error;
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child step failed: " << WEXITSTATUS(status);
  EXPECT_EQ(channel.refused_peers(), 1u);
  // The same uid is still served on that socket.
  ControlClient client;
  ASSERT_EQ(client.Connect(path, &error), ClientError::kOk) << error;
  EXPECT_EQ(Ask(client, "stop"), "error not tracing");
  channel.Stop();
  struct stat st{};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << "a socket the channel did not make stays";
}

TEST_F(ControlChannelTest, PrivateDirectoryIsCreated0700AndRefusedWhenNotPrivate) {
  std::string error;
  ASSERT_TRUE(EnsurePrivateDir(dir_, geteuid(), &error)) << error;
  struct stat st{};
  ASSERT_EQ(lstat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(EnsurePrivateDir(dir_, geteuid(), &error)) << "an existing private dir is fine";

  // Someone else's directory (the check run for a different uid).
  EXPECT_FALSE(CheckPrivateDir(dir_, geteuid() + 1, &error));
  EXPECT_EQ(error, "control directory " + dir_ + " belongs to uid " + std::to_string(geteuid()) +
                       ", not to uid " + std::to_string(geteuid() + 1) + "; refusing it");

  ASSERT_EQ(chmod(dir_.c_str(), 0750), 0);
  EXPECT_FALSE(EnsurePrivateDir(dir_, geteuid(), &error));
  EXPECT_EQ(error, "control directory " + dir_ +
                       " has mode 0750 (group/other may enter it); refusing it: it must be 0700");
  ASSERT_EQ(chmod(dir_.c_str(), 0701), 0);
  EXPECT_FALSE(EnsurePrivateDir(dir_, geteuid(), &error));

  const std::string link = root_ + "/link";
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  ASSERT_EQ(symlink(dir_.c_str(), link.c_str()), 0);
  EXPECT_FALSE(EnsurePrivateDir(link, geteuid(), &error));
  EXPECT_NE(error.find("is a symbolic link"), std::string::npos) << error;

  const std::string file = root_ + "/file";
  std::fclose(std::fopen(file.c_str(), "w"));
  EXPECT_FALSE(EnsurePrivateDir(file, geteuid(), &error));
  EXPECT_NE(error.find("is not a directory"), std::string::npos) << error;

  EXPECT_FALSE(EnsurePrivateDir(root_ + "/missing/parent", geteuid(), &error));
  EXPECT_NE(error.find("cannot create control directory"), std::string::npos) << error;
}

TEST_F(ControlChannelTest, DirectoryOwnedByAnotherUserIsRefusedByStart) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(chown(dir_.c_str(), 65534, 65534), 0);
  FakeCollector collector;
  ControlChannel channel(&collector, Options());
  std::string error;
  EXPECT_FALSE(channel.Start(&error));
  EXPECT_EQ(error, "control directory " + dir_ + " belongs to uid 65534, not to uid 0; refusing it");
  EXPECT_FALSE(channel.running());
}

TEST_F(ControlChannelTest, StopWakesTheThreadWhileAClientIsConnected) {
  FakeCollector collector;
  ControlChannel::Options o = Options();
  o.client_timeout_ms = 60'000;  // only Stop() can end the idle client
  ControlChannel channel(&collector, o);
  std::string error, reply;
  ASSERT_TRUE(channel.Start(&error)) << error;
  ControlClient client;
  ASSERT_EQ(client.Connect(channel.socket_path(), &error), ClientError::kOk);
  ASSERT_EQ(client.SendRaw("stat", 1000, &error), ClientError::kOk);  // half a line
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  channel.Stop();
  EXPECT_LT(ElapsedMs(t0), 2000u);
  EXPECT_FALSE(channel.running());
  EXPECT_EQ(client.ReadLine(5000, &reply, &error), ClientError::kClosed);
  struct stat st{};
  EXPECT_NE(stat((dir_ + "/777.sock").c_str(), &st), 0) << "socket file removed at Stop";
  channel.Stop();  // idempotent
}

TEST_F(ControlChannelTest, IdleClientIsDroppedAndTheNextServed) {
  FakeCollector collector;
  ControlChannel::Options o = Options();
  o.client_timeout_ms = 100;
  ControlChannel channel(&collector, o);
  std::string error, reply;
  ASSERT_TRUE(channel.Start(&error)) << error;
  ControlClient idle, next;
  ASSERT_EQ(idle.Connect(channel.socket_path(), &error), ClientError::kOk);
  EXPECT_EQ(idle.ReadLine(5000, &reply, &error), ClientError::kClosed);
  ASSERT_EQ(next.Connect(channel.socket_path(), &error), ClientError::kOk);
  EXPECT_EQ(Ask(next, "stop"), "error not tracing");
}

TEST_F(ControlChannelTest, ReplacesAStaleSocketButNotALiveOne) {
  FakeCollector collector;
  std::string error;
  ASSERT_TRUE(EnsurePrivateDir(dir_, geteuid(), &error));
  // A socket file left by a dead process with this pid: bound, never listening.
  const std::string path = ControlSocketPath(dir_, 777);
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  ControlClient probe;
  EXPECT_EQ(probe.Connect(path, &error), ClientError::kStale);
  ControlChannel first(&collector, Options());
  ASSERT_TRUE(first.Start(&error)) << error;
  ControlChannel second(&collector, Options());
  EXPECT_FALSE(second.Start(&error));
  EXPECT_EQ(error, "control socket " + path +
                       " is served by another live process; not replacing it");
  ControlClient client;
  ASSERT_EQ(client.Connect(path, &error), ClientError::kOk);
  EXPECT_EQ(Ask(client, "stop"), "error not tracing") << "the first channel still serves";
}

// A handler that throws must not take the application down: the connection
// is dropped and the next one is served.
TEST_F(ControlChannelTest, AThrowingHandlerDropsTheConnectionNotTheProcess) {
  struct Throwing : FakeCollector {
    void GetStatus(ControlStatus*) override { throw std::runtime_error("collector bug"); }
  } collector;
  ControlChannel channel(&collector, Options());
  std::string error, reply;
  ASSERT_TRUE(channel.Start(&error)) << error;
  ControlClient first, second;
  ASSERT_EQ(first.Connect(channel.socket_path(), &error), ClientError::kOk);
  EXPECT_EQ(first.Request("status", 5000, &reply, &error), ClientError::kClosed);
  ASSERT_EQ(second.Connect(channel.socket_path(), &error), ClientError::kOk);
  EXPECT_EQ(Ask(second, "stop"), "error not tracing");
}

TEST_F(ControlChannelTest, ClientReportsAMissingSocket) {
  ControlClient client;
  std::string error;
  EXPECT_EQ(client.Connect(dir_ + "/1.sock", &error), ClientError::kNoSocket);
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST_F(ControlChannelTest, ForgetAfterForkLeavesTheParentsSocketAlone) {
  FakeCollector collector;
  ControlChannel channel(&collector, Options());
  std::string error;
  ASSERT_TRUE(channel.Start(&error)) << error;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    channel.ForgetAfterFork();
    channel.Stop();  // a no-op now: no join of the parent's thread, no unlink
    _exit(channel.running() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ControlClient client;
  ASSERT_EQ(client.Connect(channel.socket_path(), &error), ClientError::kOk) << error;
  EXPECT_EQ(Ask(client, "stop"), "error not tracing");
}

// ------------------------------------------------------------ pure parts --

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

TEST(ControlConfigTest, DirectoryCandidatesFollowTheEnvironment) {
  std::map<std::string, std::string> env;
  g_env = &env;
  EXPECT_EQ(ControlDirCandidates(FakeEnv, 1000), std::vector<std::string>{"/tmp/gpscope-1000"});
  env["XDG_RUNTIME_DIR"] = "/run/user/1000";
  EXPECT_EQ(ControlDirCandidates(FakeEnv, 1000),
            (std::vector<std::string>{"/run/user/1000/gpscope", "/tmp/gpscope-1000"}));
  env["GPSCOPE_CONTROL_DIR"] = "/shared/ctl";
  EXPECT_EQ(ControlDirCandidates(FakeEnv, 1000), std::vector<std::string>{"/shared/ctl"});

  std::vector<std::string> problems;
  env["GPSCOPE_CONTROL"] = "off";
  ControlConfig c = ParseControlConfig(FakeEnv, &problems);
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.dir, "/shared/ctl");
  EXPECT_TRUE(problems.empty());
  env["GPSCOPE_CONTROL_DIR"] = "relative/dir";
  env["GPSCOPE_CONTROL"] = "2";
  c = ParseControlConfig(FakeEnv, &problems);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "GPSCOPE_CONTROL='2' is not one of 1|0|true|false; using 1");
  EXPECT_EQ(problems[1],
            "GPSCOPE_CONTROL_DIR='relative/dir' is not an absolute directory path; using the "
            "default");
  EXPECT_TRUE(c.dir.empty());
  g_env = nullptr;
}

TEST(ControlProtocolTest, StatusReplyRoundTripsAndToleratesUnknownKeys) {
  ControlStatus s;
  s.state = "waiting_range";
  s.events = 99;
  s.pid = 12;
  s.trace_path = "/a b/c\nd.gpscope";  // a newline cannot break the line
  const std::string line = FormatStatusReply(s);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  ControlStatus back;
  std::string state;
  ASSERT_TRUE(ParseStatusReply(line, &back, &state));
  EXPECT_STREQ(back.state, "waiting_range");
  EXPECT_EQ(back.events, 99u);
  EXPECT_EQ(back.pid, 12u);
  EXPECT_EQ(back.trace_path, "/a b/c?d.gpscope");
  EXPECT_EQ(back.windows_written, -1);  // not told
  s.windows_written = 3;
  ControlStatus told;
  ASSERT_TRUE(ParseStatusReply(FormatStatusReply(s), &told, &state));
  EXPECT_EQ(told.windows_written, 3);
  ASSERT_TRUE(ParseStatusReply("ok state=standby future_key=x tracing=1 trace=/t", &back, &state));
  EXPECT_TRUE(back.tracing);
  EXPECT_FALSE(ParseStatusReply("error permission denied", &back, &state));
  EXPECT_FALSE(ParseStatusReply("ok stopped", &back, &state));
}

// A squatted candidate directory (another user made it before us, here: a
// mode that is not private) does not leave the process without a socket:
// it serves from a fresh private directory, removed again at Stop().
TEST_F(ControlChannelTest, EveryCandidateRefusedFallsBackToAPrivateDirectory) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0777), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  FakeCollector collector;
  std::vector<std::string> refused;
  std::string error;
  std::unique_ptr<ControlChannel> channel =
      StartControlChannel(&collector, {dir_}, &refused, &error);
  ASSERT_NE(channel, nullptr) << error;
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("has mode 0777"), std::string::npos) << refused[0];
  const std::string path = channel->socket_path();
  const std::string prefix = "/tmp/gpscope-" + std::to_string(geteuid()) + "-";
  ASSERT_EQ(path.rfind(prefix, 0), 0u) << path;
  const std::string fallback = path.substr(0, path.rfind('/'));
  EXPECT_TRUE(CheckPrivateDir(fallback, geteuid(), &error)) << error;
  EXPECT_TRUE(CheckControlSocketPath(path, geteuid(), &error)) << error;
  ControlClient client;
  ASSERT_EQ(client.Connect(path, &error), ClientError::kOk) << error;
  pid_t pid = 0;
  uid_t uid = 0;
  ASSERT_TRUE(client.PeerCredentials(&pid, &uid));
  EXPECT_TRUE(ServerIsTarget(pid, uid, getpid(), geteuid()));
  EXPECT_EQ(Ask(client, "stop"), "error not tracing");
  client.Close();
  channel->Stop();
  struct stat st{};
  EXPECT_NE(lstat(fallback.c_str(), &st), 0) << "the fallback directory is removed";
  // A usable candidate is used as before, no fallback.
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  refused.clear();
  channel = StartControlChannel(&collector, {dir_}, &refused, &error);
  ASSERT_NE(channel, nullptr) << error;
  EXPECT_TRUE(refused.empty());
  EXPECT_EQ(channel->socket_path().rfind(dir_ + "/", 0), 0u);
}

TEST_F(ControlChannelTest, ServerChecksAttachAppliesBeforeTrustingAReply) {
  // The server must be the target process, as its own uid or root.
  EXPECT_TRUE(ServerIsTarget(42, 1000, 42, 1000));
  EXPECT_TRUE(ServerIsTarget(42, 0, 42, 1000));
  EXPECT_FALSE(ServerIsTarget(43, 1000, 42, 1000)) << "another process of the same user";
  EXPECT_FALSE(ServerIsTarget(42, 1001, 42, 1000));
  // The socket path: absolute, in a private directory of the target's uid,
  // a socket owned by it.
  std::string error;
  EXPECT_FALSE(CheckControlSocketPath("relative/42.sock", geteuid(), &error));
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  FakeCollector collector;
  ControlChannel channel(&collector, Options());
  ASSERT_TRUE(channel.Start(&error)) << error;
  EXPECT_TRUE(CheckControlSocketPath(channel.socket_path(), geteuid(), &error)) << error;
  EXPECT_FALSE(CheckControlSocketPath(channel.socket_path(), geteuid() + 1, &error));
  EXPECT_NE(error.find("belongs to uid"), std::string::npos) << error;
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  EXPECT_FALSE(CheckControlSocketPath(channel.socket_path(), geteuid(), &error));
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  const std::string file = dir_ + "/99.sock";
  std::fclose(std::fopen(file.c_str(), "w"));
  EXPECT_FALSE(CheckControlSocketPath(file, geteuid(), &error));
  EXPECT_NE(error.find("is not a socket"), std::string::npos) << error;
  channel.Stop();
}

}  // namespace
}  // namespace gpscope::control
