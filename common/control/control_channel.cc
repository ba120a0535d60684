// common/control/control_channel.cc: see control_channel.h.
#include "common/control/control_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/control/capture_window.h"
#include "common/posix.h"

namespace gpscope::control {

using common::EnvValues;
using common::MsAsSeconds;
namespace {

constexpr char kCommands[] =
    "commands: status, start DURATION_MS [INTERVAL_MS], stop, stacks on|off";

std::string Errno(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + strerror(errno);
}

// Waits for `events` on fd (and, when wake_fd >= 0, for the wake pipe).
// Returns 1 ready, 0 timed out, -1 woken or error.
int WaitFd(int fd, short events, int wake_fd, uint64_t deadline_ms) {
  for (;;) {
    const uint64_t now = common::ClockMs(CLOCK_MONOTONIC);
    if (now >= deadline_ms) return 0;
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    const int n = poll(fds, wake_fd >= 0 ? 2 : 1, static_cast<int>(deadline_ms - now));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) return 0;
    if (wake_fd >= 0 && fds[1].revents != 0) return -1;
    return 1;
  }
}

// Sends all of `bytes` before the deadline. MSG_NOSIGNAL: a client that went
// away must not SIGPIPE the application.
bool SendAll(int fd, std::string_view bytes, int wake_fd, uint64_t deadline_ms) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (WaitFd(fd, POLLOUT, wake_fd, deadline_ms) != 1) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool ParseUint(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// Splits off the next space-separated word.
std::string_view NextWord(std::string_view* rest) {
  size_t i = 0;
  while (i < rest->size() && (*rest)[i] == ' ') ++i;
  size_t j = i;
  while (j < rest->size() && (*rest)[j] != ' ') ++j;
  const std::string_view word = rest->substr(i, j - i);
  rest->remove_prefix(j);
  return word;
}

// Replies are single lines: control characters become '?'.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------- configuration --

ControlConfig ParseControlConfig(GetEnvFn get_env, std::vector<std::string>* problems) {
  ControlConfig c;
  EnvValues env(get_env, problems);
  env.Bool("GPSCOPE_CONTROL", &c.enabled);
  if (const char* dir = env.Get("GPSCOPE_CONTROL_DIR")) {
    if (dir[0] != '/') {
      env.Problem("GPSCOPE_CONTROL_DIR", dir, "an absolute directory path", "the default");
    } else if (strlen(dir) + 24 >= sizeof(sockaddr_un::sun_path)) {
      env.Problem("GPSCOPE_CONTROL_DIR", dir, "short enough for a socket path (< 84 bytes)",
                  "the default");
    } else {
      c.dir = dir;
    }
  }
  return c;
}

std::vector<std::string> ControlDirCandidates(GetEnvFn get_env, uid_t uid) {
  const char* explicit_dir = get_env("GPSCOPE_CONTROL_DIR");
  if (explicit_dir != nullptr && explicit_dir[0] == '/') return {explicit_dir};
  std::vector<std::string> dirs;
  const char* runtime = get_env("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') dirs.push_back(std::string(runtime) + "/gpscope");
  dirs.push_back("/tmp/gpscope-" + std::to_string(uid));
  return dirs;
}

std::string ControlSocketPath(const std::string& dir, pid_t pid) {
  return dir + "/" + std::to_string(pid) + ".sock";
}

bool CheckPrivateDir(const std::string& dir, uid_t uid, std::string* error) {
  struct stat st{};
  if (lstat(dir.c_str(), &st) != 0) {
    *error = Errno("cannot stat control directory", dir);
    return false;
  }
  if (S_ISLNK(st.st_mode)) {
    *error = "control directory " + dir + " is a symbolic link; refusing it";
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = "control directory " + dir + " is not a directory; refusing it";
    return false;
  }
  if (st.st_uid != uid) {
    *error = "control directory " + dir + " belongs to uid " + std::to_string(st.st_uid) +
             ", not to uid " + std::to_string(uid) + "; refusing it";
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *error = "control directory " + dir + " has mode " + mode +
             " (group/other may enter it); refusing it: it must be 0700";
    return false;
  }
  return true;
}

bool CheckControlSocketPath(const std::string& socket_path, uid_t target_uid, std::string* error) {
  const size_t slash = socket_path.rfind('/');
  if (socket_path.empty() || socket_path[0] != '/' || slash == std::string::npos || slash == 0) {
    *error = "control socket path " + socket_path + " is not absolute";
    return false;
  }
  if (!CheckPrivateDir(socket_path.substr(0, slash), target_uid, error)) return false;
  struct stat st{};
  if (lstat(socket_path.c_str(), &st) != 0) {
    *error = Errno("cannot stat control socket", socket_path);
    return false;
  }
  if (!S_ISSOCK(st.st_mode) || st.st_uid != target_uid) {
    *error = "control socket " + socket_path + " is not a socket owned by uid " +
             std::to_string(target_uid) + "; refusing it";
    return false;
  }
  return true;
}

bool ServerIsTarget(pid_t peer_pid, uid_t peer_uid, pid_t target_pid, uid_t target_uid) {
  return peer_pid == target_pid && (peer_uid == target_uid || peer_uid == 0);
}

std::string FallbackDirTemplate(uid_t uid) {
  return "/tmp/gpscope-" + std::to_string(uid) + "-XXXXXX";
}

bool EnsurePrivateDir(const std::string& dir, uid_t uid, std::string* error) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = Errno("cannot create control directory", dir);
    return false;
  }
  return CheckPrivateDir(dir, uid, error);
}

// --------------------------------------------------------------- protocol --

std::string FormatStatusReply(const ControlStatus& s) {
  return OneLine("ok state=" + std::string(s.state) + " tracing=" + (s.tracing ? "1" : "0") +
                 " remaining_ms=" + std::to_string(s.remaining_ms) +
                 " events=" + std::to_string(s.events) + " drops=" + std::to_string(s.drops) +
                 (s.windows_written >= 0
                      ? " windows_written=" + std::to_string(s.windows_written)
                      : std::string()) +
                 " pid=" + std::to_string(s.pid) + " trace=" + s.trace_path);
}

bool ParseStatusReply(std::string_view line, ControlStatus* s, std::string* state_buf) {
  std::string_view rest = line;
  if (NextWord(&rest) != "ok") return false;
  bool have_state = false;
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.substr(0, 6) == "trace=") {
      s->trace_path = std::string(rest.substr(6));
      return have_state;
    }
    const std::string_view word = NextWord(&rest);
    if (word.empty()) break;
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    uint64_t n = 0;
    if (key == "state") {
      *state_buf = std::string(value);
      s->state = state_buf->c_str();
      have_state = true;
    } else if (ParseUint(value, UINT64_MAX, &n)) {
      if (key == "tracing") s->tracing = n != 0;
      if (key == "remaining_ms") s->remaining_ms = n;
      if (key == "events") s->events = n;
      if (key == "drops") s->drops = n;
      if (key == "pid") s->pid = n;
      if (key == "windows_written" && n <= INT64_MAX) s->windows_written = static_cast<int64_t>(n);
    }  // unknown keys (a newer collector) are skipped
  }
  return have_state;
}

std::string HandleControlLine(std::string_view line, ControlHandler& handler) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view rest = line;
  const std::string_view command = NextWord(&rest);
  const std::string_view arg1 = NextWord(&rest);
  const std::string_view arg2 = NextWord(&rest);
  const bool extra = !NextWord(&rest).empty();
  auto reply = [](const ControlReply& r) {
    return OneLine(std::string(r.ok ? "ok " : "error ") + r.message);
  };
  if (command == "status" && arg1.empty()) {
    ControlStatus status;
    handler.GetStatus(&status);
    return FormatStatusReply(status);
  }
  if (command == "start") {
    StartRequest request;
    uint64_t interval = 0;
    if (!ParseUint(arg1, CaptureWindow::kMaxAttachMs, &request.duration_ms) ||
        request.duration_ms == 0 || extra ||
        (!arg2.empty() && (!ParseUint(arg2, 1000, &interval) || interval < 10))) {
      return "error usage: start DURATION_MS [INTERVAL_MS] (DURATION_MS 1.." +
             std::to_string(CaptureWindow::kMaxAttachMs) + ", INTERVAL_MS 10..1000)";
    }
    request.metrics_interval_ms = static_cast<uint32_t>(interval);
    return reply(handler.Start(request));
  }
  if (command == "stop" && arg1.empty()) return reply(handler.Stop());
  if (command == "stacks") {
    if ((arg1 != "on" && arg1 != "off") || !arg2.empty()) return "error usage: stacks on|off";
    return reply(handler.SetStacks(arg1 == "on"));
  }
  std::string shown(line.substr(0, 40));
  return OneLine("error unknown request '" + shown + "'; " + kCommands);
}

// ----------------------------------------------------------------- server --

ControlChannel::Options::Options() : allowed_uid(geteuid()) {}

ControlChannel::ControlChannel(ControlHandler* handler, Options options)
    : handler_(handler), options_(std::move(options)) {
  if (options_.pid == 0) options_.pid = getpid();
  if (options_.max_line_bytes < 16) options_.max_line_bytes = 16;
}

ControlChannel::~ControlChannel() { Stop(); }

bool ControlChannel::Start(std::string* error) {
  if (running_) return true;
  if (!EnsurePrivateDir(options_.dir, geteuid(), error)) return false;
  const std::string path = ControlSocketPath(options_.dir, options_.pid);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *error = "control socket path " + path + " is too long for a Unix socket";
    return false;
  }
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = Errno("cannot create control socket", path);
    return false;
  }
  auto bind_socket = [&] {
    return bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  };
  bool bound = bind_socket();
  if (!bound && errno == EADDRINUSE) {
    // A socket file from an earlier process with this pid, or a live one
    // (pid namespaces sharing the directory). Replace it only when nobody
    // answers on it.
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live =
        probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      close(fd);
      *error = "control socket " + path + " is served by another live process; not replacing it";
      return false;
    }
    unlink(path.c_str());
    bound = bind_socket();
  }
  if (!bound || chmod(path.c_str(), 0600) != 0 || listen(fd, 8) != 0) {
    *error = Errno("cannot serve control socket", path);
    close(fd);
    if (bound) unlink(path.c_str());
    return false;
  }
  socket_path_ = path;
  unlink_at_stop_ = true;
  listen_fd_ = fd;
  if (!SpawnThread(error)) {
    unlink(path.c_str());
    CloseFds();
    return false;
  }
  return true;
}

bool ControlChannel::StartWithListeningSocket(int listen_fd, std::string* error) {
  if (running_) {
    *error = "control channel already running";
    return false;
  }
  const int flags = fcntl(listen_fd, F_GETFL);
  if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    *error = std::string("bad listening socket: ") + strerror(errno);
    return false;
  }
  listen_fd_ = listen_fd;
  unlink_at_stop_ = false;
  if (!SpawnThread(error)) {
    CloseFds();
    return false;
  }
  return true;
}

bool ControlChannel::SpawnThread(std::string* error) {
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    *error = std::string("cannot create control wake pipe: ") + strerror(errno);
    return false;
  }
  wake_read_fd_ = wake[0];
  wake_write_fd_ = wake[1];
  // The thread inherits this mask: SIGTERM and SIGINT blocked, so the
  // collector's exit flush (which waits for other threads) never runs on
  // it. Only those, like the writer and sampler threads: a gpscope thread
  // that blocked every signal was under suspicion in a CUDA hang seen on
  // the H200 (metrics/sampler_thread.cc). The caller's mask is
  // restored right after.
  sigset_t all, old;
  sigemptyset(&all);
  sigaddset(&all, SIGTERM);
  sigaddset(&all, SIGINT);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const int rc = pthread_create(&thread_, nullptr, &ControlChannel::ThreadMain, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    *error = std::string("cannot start control thread: ") + strerror(rc);
    return false;
  }
  running_ = true;
  return true;
}

void ControlChannel::Stop() {
  if (!running_) return;
  const char byte = 1;
  // The pipe is never drained: once written, every poll() sees it.
  while (write(wake_write_fd_, &byte, 1) < 0 && errno == EINTR) {
  }
  pthread_join(thread_, nullptr);
  running_ = false;
  if (unlink_at_stop_) unlink(socket_path_.c_str());
  if (unlink_at_stop_ && options_.remove_dir_at_stop) rmdir(options_.dir.c_str());
  CloseFds();
}

std::unique_ptr<ControlChannel> StartControlChannel(ControlHandler* handler,
                                                    const std::vector<std::string>& dirs,
                                                    std::vector<std::string>* refusals,
                                                    std::string* error) {
  for (const std::string& dir : dirs) {
    ControlChannel::Options o;
    o.dir = dir;
    auto channel = std::make_unique<ControlChannel>(handler, o);
    std::string why;
    if (channel->Start(&why)) return channel;
    refusals->push_back(why);
    *error = why;
  }
  // Every candidate refused (another user may have made /tmp/gpscope-<uid>
  // before us): a directory nobody can have prepared.
  std::string tmpl = FallbackDirTemplate(geteuid());
  if (mkdtemp(tmpl.data()) == nullptr) {
    *error = Errno("cannot create a private control directory", tmpl);
    return nullptr;
  }
  ControlChannel::Options o;
  o.dir = tmpl;
  o.remove_dir_at_stop = true;
  auto channel = std::make_unique<ControlChannel>(handler, o);
  std::string why;
  if (channel->Start(&why)) return channel;
  rmdir(tmpl.c_str());
  *error = why;
  return nullptr;
}

void ControlChannel::ForgetAfterFork() {
  running_ = false;  // the thread is the parent's; never join it here
  unlink_at_stop_ = false;
  CloseFds();
}

void ControlChannel::CloseFds() {
  for (int* fd : {&listen_fd_, &wake_read_fd_, &wake_write_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void* ControlChannel::ThreadMain(void* self) {
  pthread_setname_np(pthread_self(), "gpscope-ctl");
  // An exception escaping a thread would terminate the application: the
  // control thread ends instead (Stop() still joins it).
  try {
    static_cast<ControlChannel*>(self)->Serve();
  } catch (...) {
  }
  return nullptr;
}

// The control thread: accept, serve one client, repeat, until woken.
void ControlChannel::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0) return;
    if ((fds[0].revents & (POLLERR | POLLNVAL)) != 0) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors (EMFILE) would spin: back off a little, awake.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        pollfd wake{wake_read_fd_, POLLIN, 0};
        if (poll(&wake, 1, 100) > 0) return;
      }
      continue;
    }
    connections_.fetch_add(1, std::memory_order_relaxed);
    try {
      ServeClient(fd);  // allocates (std::string) and calls the handler
    } catch (...) {
    }
    close(fd);
  }
}

void ControlChannel::ServeClient(int fd) {
  const uint64_t timeout_ms = options_.client_timeout_ms;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred) ||
      !PeerAllowed(cred.uid, options_.allowed_uid)) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    SendAll(fd,
            "error permission denied: only uid " + std::to_string(options_.allowed_uid) +
                " may control this process\n",
            wake_read_fd_, common::ClockMs(CLOCK_MONOTONIC) + timeout_ms);
    return;
  }
  // Bounded: one line of at most max_line_bytes (plus its '\n') is buffered.
  std::string buffer;
  buffer.reserve(options_.max_line_bytes + 1);
  char chunk[512];
  uint64_t deadline = common::ClockMs(CLOCK_MONOTONIC) + timeout_ms;
  for (;;) {
    if (WaitFd(fd, POLLIN, wake_read_fd_, deadline) != 1) return;  // idle, or Stop()
    const size_t room = options_.max_line_bytes + 1 - buffer.size();
    const ssize_t n = recv(fd, chunk, room < sizeof(chunk) ? room : sizeof(chunk), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return;  // the client closed, or an error
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      requests_.fetch_add(1, std::memory_order_relaxed);
      const std::string reply =
          HandleControlLine(std::string_view(buffer).substr(0, newline), *handler_) + "\n";
      buffer.erase(0, newline + 1);
      if (!SendAll(fd, reply, wake_read_fd_, common::ClockMs(CLOCK_MONOTONIC) + timeout_ms)) return;
      deadline = common::ClockMs(CLOCK_MONOTONIC) + timeout_ms;
    }
    if (buffer.size() > options_.max_line_bytes) {
      SendAll(fd,
              "error line too long (at most " + std::to_string(options_.max_line_bytes) +
                  " bytes)\n",
              wake_read_fd_, common::ClockMs(CLOCK_MONOTONIC) + timeout_ms);
      return;
    }
  }
}

// ----------------------------------------------------------------- client --

const char* ClientErrorName(ClientError e) {
  switch (e) {
    case ClientError::kOk: return "ok";
    case ClientError::kNoSocket: return "no socket";
    case ClientError::kStale: return "stale socket";
    case ClientError::kPermission: return "permission denied";
    case ClientError::kTimeout: return "timed out";
    case ClientError::kClosed: return "closed by the process";
    case ClientError::kIo: return "I/O error";
  }
  return "unknown";
}

ControlClient::~ControlClient() { Close(); }

void ControlClient::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  pending_.clear();
}

ClientError ControlClient::Connect(const std::string& socket_path, std::string* error) {
  Close();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    *error = socket_path + ": path too long for a Unix socket";
    return ClientError::kIo;
  }
  memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = Errno("cannot create socket for", socket_path);
    return ClientError::kIo;
  }
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    *error = Errno("cannot connect to", socket_path);
    Close();
    if (e == ENOENT || e == ENOTDIR) return ClientError::kNoSocket;
    if (e == ECONNREFUSED) return ClientError::kStale;
    if (e == EACCES || e == EPERM) return ClientError::kPermission;
    return ClientError::kIo;
  }
  const int flags = fcntl(fd_, F_GETFL);
  fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  return ClientError::kOk;
}

ClientError ControlClient::SendRaw(std::string_view bytes, uint32_t timeout_ms,
                                   std::string* error) {
  if (fd_ < 0) {
    *error = "not connected";
    return ClientError::kIo;
  }
  if (!SendAll(fd_, bytes, -1, common::ClockMs(CLOCK_MONOTONIC) + timeout_ms)) {
    *error = errno == EPIPE || errno == ECONNRESET ? "the process closed the connection"
                                                   : std::string("send failed: ") + strerror(errno);
    return errno == EPIPE || errno == ECONNRESET ? ClientError::kClosed : ClientError::kIo;
  }
  return ClientError::kOk;
}

ClientError ControlClient::ReadLine(uint32_t timeout_ms, std::string* reply, std::string* error) {
  if (fd_ < 0) {
    *error = "not connected";
    return ClientError::kIo;
  }
  const uint64_t deadline = common::ClockMs(CLOCK_MONOTONIC) + timeout_ms;
  constexpr size_t kMaxReplyBytes = 64 * 1024;
  for (;;) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      *reply = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return ClientError::kOk;
    }
    if (pending_.size() > kMaxReplyBytes) {
      *error = "reply longer than 64 KiB";
      return ClientError::kIo;
    }
    const int w = WaitFd(fd_, POLLIN, -1, deadline);
    if (w == 0) {
      *error = "no reply within " + std::to_string(timeout_ms) + " ms";
      return ClientError::kTimeout;
    }
    char chunk[1024];
    const ssize_t n = w < 0 ? -1 : recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      *error = "the process closed the connection without a reply";
      return ClientError::kClosed;
    }
    if (n < 0) {
      *error = std::string("receive failed: ") + strerror(errno);
      return ClientError::kIo;
    }
    pending_.append(chunk, static_cast<size_t>(n));
  }
}

bool ControlClient::PeerCredentials(pid_t* pid, uid_t* uid) const {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (fd_ < 0 || getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      len != sizeof(cred)) {
    return false;
  }
  *pid = cred.pid;
  *uid = cred.uid;
  return true;
}

ClientError ControlClient::Request(std::string_view line, uint32_t timeout_ms, std::string* reply,
                                   std::string* error) {
  std::string framed(line);
  framed.push_back('\n');
  const ClientError e = SendRaw(framed, timeout_ms, error);
  if (e == ClientError::kClosed) {
    // A process that refuses this peer (another uid) answers on accept and
    // closes before reading: its reason is already buffered here, and it is
    // the message worth showing, not "closed the connection".
    std::string refused;
    std::string read_error;
    if (ReadLine(timeout_ms, &refused, &read_error) == ClientError::kOk) {
      *reply = std::move(refused);
      return ClientError::kOk;
    }
  }
  if (e != ClientError::kOk) return e;
  return ReadLine(timeout_ms, reply, error);
}

}  // namespace gpscope::control
