// common/control/control_channel.h: the per-process control socket that
// `gpscope attach` talks to, and the client side of it.
//
// The collector runs a ControlChannel on a thread of its own. It listens on
// a Unix-domain stream socket <dir>/<pid>.sock in a private directory
// (GPSCOPE_CONTROL_DIR, else $XDG_RUNTIME_DIR/gpscope, else
// /tmp/gpscope-<uid>): the directory is created 0700 and refused when it is
// a link, not a directory, owned by another user or open to group/others.
// Every connection's peer credentials (SO_PEERCRED) must carry the owner's
// uid; anything else gets one "error permission denied" line and is closed.
//
// Protocol: one request line (at most max_line_bytes, '\n'-terminated), one
// reply line, any number of requests per connection:
//   status                       -> ok state=STATE tracing=0|1 remaining_ms=N events=N
//                                   drops=N pid=N trace=PATH   (PATH: the rest of the line)
//   start DURATION_MS [INTERVAL_MS] -> ok MESSAGE | error MESSAGE
//   stop                         -> ok MESSAGE | error MESSAGE
//   stacks on|off                -> ok MESSAGE | error MESSAGE: call-site stacks (their
//                                   CUPTI API callbacks) switched at run time, for
//                                   measuring their cost inside one process
//                                   (bench/overhead_ab.py --toggle stacks)
// anything else                  -> error unknown command ...
// An overlong line gets "error line too long" and the connection is
// closed; so is a connection idle for client_timeout_ms. One client is
// served at a time; others wait in the listen backlog.
//
//   class Collector : public ControlHandler { ... };      // see ControlHandler
//   ControlChannel::Options options;
//   options.dir = ChooseControlDir(getenv, geteuid(), &problems);
//   ControlChannel channel(&collector, options);
//   std::string error;
//   if (!channel.Start(&error)) log(error);               // the app runs on
//   ...
//   channel.Stop();                                       // at exit, bounded
//   // in a fork child (pthread_atfork child handler): channel.ForgetAfterFork();
//
// Thread model: Start(), Stop() and ForgetAfterFork() from one controlling
// thread (the collector's start-up / exit path), never from a signal
// handler or a CUPTI callback. The server thread has SIGTERM/SIGINT blocked
// and never touches application threads; it calls the ControlHandler, one
// call at a time. Stop() wakes it through a pipe (also while a client is
// connected) and joins it: bounded by the handler call in progress. The
// counters are atomics (relaxed) readable from any thread.
#ifndef GPSCOPE_COMMON_CONTROL_CONTROL_CHANNEL_H_
#define GPSCOPE_COMMON_CONTROL_CONTROL_CHANNEL_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/env_values.h"

namespace gpscope::control {

using common::GetEnvFn;

// ------------------------------------------------------------ configuration --

// GPSCOPE_CONTROL      1|0   default 1: serve the control socket
// GPSCOPE_CONTROL_DIR  dir   default $XDG_RUNTIME_DIR/gpscope or /tmp/gpscope-<uid>
struct ControlConfig {
  bool enabled = true;
  std::string dir;  // empty: the default
};
ControlConfig ParseControlConfig(GetEnvFn get_env, std::vector<std::string>* problems);

// Where a process with this environment and uid puts its socket, most
// preferred first: GPSCOPE_CONTROL_DIR alone when set; else
// $XDG_RUNTIME_DIR/gpscope (when XDG_RUNTIME_DIR is an absolute path), then
// /tmp/gpscope-<uid>. The collector uses the first it can make private;
// `gpscope attach` tries them all.
std::vector<std::string> ControlDirCandidates(GetEnvFn get_env, uid_t uid);
// <dir>/<pid>.sock
std::string ControlSocketPath(const std::string& dir, pid_t pid);

// Creates `dir` (mode 0700, parents must exist) unless it exists, then
// checks it: a real directory (not a symlink), owned by `uid`, no group or
// other permission bits. False with a one-line reason otherwise.
bool EnsurePrivateDir(const std::string& dir, uid_t uid, std::string* error);
// The check alone (no creation).
bool CheckPrivateDir(const std::string& dir, uid_t uid, std::string* error);

// The peer-credential rule: only the owner's own uid.
inline bool PeerAllowed(uid_t peer_uid, uid_t owner_uid) { return peer_uid == owner_uid; }

// The server-side rule `gpscope attach` applies before it trusts a reply:
// the socket's directory is private to the target's euid (CheckPrivateDir),
// the socket file is a socket owned by it, and the peer that accepted the
// connection (SO_PEERCRED) is the target process itself, running as that
// uid or as root. False with a one-line reason.
bool CheckControlSocketPath(const std::string& socket_path, uid_t target_uid, std::string* error);
bool ServerIsTarget(pid_t peer_pid, uid_t peer_uid, pid_t target_pid, uid_t target_uid);

// The fallback directory prefix: /tmp/gpscope-<uid>-XXXXXX, made by mkdtemp
// (private and unguessable) when every candidate directory was refused
// (another user squatting /tmp/gpscope-<uid>). `gpscope attach` finds a
// socket there through the target's /proc/<pid>/net/unix.
std::string FallbackDirTemplate(uid_t uid);

// --------------------------------------------------------- the handler side --

struct ControlStatus {
  const char* state = "unknown";  // CaptureStateName(), e.g. "standby"
  bool tracing = false;
  uint64_t remaining_ms = 0;  // of the current window; 0: none or unbounded
  uint64_t events = 0;        // events written so far
  uint64_t drops = 0;         // records dropped so far, all reasons
  // Capture windows whose records are in the trace file (forced out of
  // CUPTI and written when the window ended); -1: not told (an older
  // collector), then a reader waits a flush interval instead.
  int64_t windows_written = -1;
  uint64_t pid = 0;
  std::string trace_path;  // the trace file this process appends to
};

struct StartRequest {
  uint64_t duration_ms = 0;         // 1..CaptureWindow::kMaxAttachMs
  uint32_t metrics_interval_ms = 0;  // 0: keep the current sampling interval
};

struct ControlReply {
  bool ok = false;
  std::string message;  // one line, no '\n'
};

// Implemented by the collector. Every call runs on the control thread, one
// at a time, and must return promptly (Stop() waits for it): take no lock
// an application thread or CUPTI callback can hold across a CUPTI call, and
// hand work that belongs to the writer thread over to it (e.g. a mutex the
// writer and control threads share around the CaptureWindow).
class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual void GetStatus(ControlStatus* status) = 0;
  virtual ControlReply Start(const StartRequest& request) = 0;
  virtual ControlReply Stop() = 0;
  // `stacks on|off`; a process without call-site stacks says so.
  virtual ControlReply SetStacks(bool /*on*/) {
    return {false, "call-site stacks cannot be switched in this process"};
  }
};

// One request line (without '\n') -> one reply line (without '\n').
// Exposed for tests; the server uses it for every line.
std::string HandleControlLine(std::string_view line, ControlHandler& handler);
std::string FormatStatusReply(const ControlStatus& status);
// Parses FormatStatusReply's output. False when it is not an "ok" status.
// Sets `state_buf` (owned by the caller) as the backing of status->state.
bool ParseStatusReply(std::string_view line, ControlStatus* status, std::string* state_buf);

// ------------------------------------------------------------ the server --

class ControlChannel {
 public:
  struct Options {
    std::string dir;       // the private directory (see ControlDirCandidates)
    pid_t pid = 0;         // names the socket; 0: getpid()
    uid_t allowed_uid;     // peers must have this uid; default geteuid()
    uint32_t client_timeout_ms = 2000;  // idle connections are closed after this
    size_t max_line_bytes = 256;        // longer request lines are refused
    bool remove_dir_at_stop = false;    // the directory is ours alone (a fallback)
    Options();
  };

  ControlChannel(ControlHandler* handler, Options options);
  ~ControlChannel();  // Stop()
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Makes the private directory, binds <dir>/<pid>.sock (replacing a stale
  // socket nobody answers on; refusing one a live process serves) and starts
  // the server thread. False with a one-line reason; nothing left running.
  bool Start(std::string* error);
  // Serves an already listening socket (ownership taken; not unlinked at
  // Stop). For tests and callers that make their own socket.
  bool StartWithListeningSocket(int listen_fd, std::string* error);
  // Wakes the server thread (also out of a connected client), joins it,
  // closes the socket and removes the socket file. Idempotent.
  void Stop();
  // In a fork child: the server thread does not exist there. Closes the
  // child's copies of the descriptors, keeps the parent's socket file, and
  // makes Stop()/the destructor no-ops. Async-signal-safe calls only.
  void ForgetAfterFork();

  bool running() const { return running_; }
  const std::string& socket_path() const { return socket_path_; }
  uint64_t connections() const { return connections_.load(std::memory_order_relaxed); }
  uint64_t refused_peers() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }

 private:
  static void* ThreadMain(void* self);
  void Serve();
  void ServeClient(int fd);
  bool SpawnThread(std::string* error);
  void CloseFds();

  ControlHandler* handler_;
  Options options_;
  std::string socket_path_;
  bool unlink_at_stop_ = false;
  int listen_fd_ = -1;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  pthread_t thread_{};
  bool running_ = false;
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> requests_{0};
};

// Starts a channel for `handler` in the first of `dirs` that can be made
// private (Start()); when every one is refused, in a fresh fallback
// directory (FallbackDirTemplate), removed again at Stop(). *refusals gets
// one line per refused directory (the caller logs them; a squatted default
// directory is worth a warning). Null with *error when nothing worked.
std::unique_ptr<ControlChannel> StartControlChannel(ControlHandler* handler,
                                                    const std::vector<std::string>& dirs,
                                                    std::vector<std::string>* refusals,
                                                    std::string* error);

// ------------------------------------------------------------ the client --

enum class ClientError {
  kOk,
  kNoSocket,      // nothing at that path (no collector, or control off)
  kStale,         // a socket file nobody listens on (the process is gone)
  kPermission,    // the directory or socket is not ours
  kTimeout,
  kClosed,        // the server closed the connection before replying
  kIo,
};
const char* ClientErrorName(ClientError e);

// A blocking client with timeouts, for `gpscope attach` and tests.
// Thread model: one thread per client.
class ControlClient {
 public:
  ControlClient() = default;
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  ClientError Connect(const std::string& socket_path, std::string* error);
  // Sends `line` + '\n' and reads one reply line (without '\n').
  ClientError Request(std::string_view line, uint32_t timeout_ms, std::string* reply,
                      std::string* error);
  ClientError SendRaw(std::string_view bytes, uint32_t timeout_ms, std::string* error);
  ClientError ReadLine(uint32_t timeout_ms, std::string* reply, std::string* error);
  // The server's credentials (SO_PEERCRED) of the connected socket.
  bool PeerCredentials(pid_t* pid, uid_t* uid) const;
  void Close();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string pending_;  // bytes read past the last line
};

}  // namespace gpscope::control

#endif  // GPSCOPE_COMMON_CONTROL_CONTROL_CHANNEL_H_
