// tools/gpscope/attach.cc: see attach.h.
#include "tools/gpscope/attach.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/control/control_channel.h"
#include "common/posix.h"
#include "proto/framing.h"
#include "tools/gpscope/analysis.h"
#include "tools/gpscope/child.h"
#include "tools/gpscope/cli.h"
#include "tools/gpscope/paths.h"
#include "tools/gpscope/progress.h"
#include "tools/gpscope/run.h"
#include "tools/reader/trace_tail.h"
#include "tools/reader/window_cut.h"

namespace gpscope::launcher {
namespace {

using control::ClientError;
using control::ControlClient;
using control::ControlStatus;

constexpr uint32_t kRequestTimeoutMs = 5000;

constexpr char kUsage[] =
    "usage: gpscope attach --pid PID [--duration S] [--interval MS] [OPTIONS]\n"
    "\n"
    "Turns full tracing on in a running process for a window, shows its progress, then\n"
    "writes the report of that window. The process must have been started with the\n"
    "collector (CUDA reads CUDA_INJECTION64_PATH only at start-up); in production start it\n"
    "in standby: CUDA_INJECTION64_PATH=/path/libgpscope_inject.so GPSCOPE_STANDBY=1.\n"
    "\n"
    "options:\n"
    "  --pid PID           the process (yours: others' are refused)\n"
    "  --duration S        window length in seconds (default 600; up to 86400)\n"
    "  --interval MS       metrics sampling interval during the window, 10..1000\n"
    "  --output DIR        where the window's trace and report go\n"
    "                      (default: a new gpscope-out/attach-PID-<time>)\n"
    "  --report PATH       the HTML report (default DIR/report.html)\n"
    "  --no-report         only the window's trace file\n"
    "  --no-progress       no progress bar\n"
    "  --idle-gap-ms MS    idle gaps shorter than this are normal (analysis; default 5)\n"
    "\n"
    "Ctrl-C ends the window early (the report covers what was captured).\n"
    "Exit status: 0 ok, 1 not attachable / refused / no data, 2 usage error.\n";

const std::vector<OptionSpec> kAttachOptions = {
    {"help", false},     {"pid", true},         {"duration", true},   {"interval", true},
    {"output", true},    {"report", true},      {"no-report", false}, {"no-progress", false},
    {"idle-gap-ms", true},
};

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

// Whole /proc files: the target's environment, its maps, the host's Unix
// sockets (long on a busy host).
std::string ReadProcFile(const std::string& path) {
  return common::ReadFileText(path.c_str(), std::numeric_limits<size_t>::max());
}

std::string UserName(uid_t uid) {
  passwd pw{};
  passwd* result = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &result) == 0 && result != nullptr) {
    return absl::StrCat(pw.pw_name, ", uid ", uid);
  }
  return absl::StrCat("uid ", uid);
}

// The process attach talks to, and where.
struct Endpoint {
  std::string socket;
  pid_t pid = 0;
  uid_t uid = 0;  // the target's euid
};

// Every connection is checked before a byte of its reply is believed
// (docs/security.md): the socket's directory and file belong to the target's
// user, and the server that accepted is the target process itself
// (SO_PEERCRED), so another user's socket at that path cannot answer.
ClientError ConnectToTarget(const Endpoint& target, ControlClient* client, std::string* error) {
  if (!control::CheckControlSocketPath(target.socket, target.uid, error)) {
    return ClientError::kPermission;
  }
  const ClientError e = client->Connect(target.socket, error);
  if (e != ClientError::kOk) return e;
  pid_t peer_pid = 0;
  uid_t peer_uid = 0;
  if (!client->PeerCredentials(&peer_pid, &peer_uid) ||
      !control::ServerIsTarget(peer_pid, peer_uid, target.pid, target.uid)) {
    *error = absl::StrCat(target.socket, " is served by process ", peer_pid, " (uid ", peer_uid,
                          "), not by process ", target.pid, "; refusing to talk to it");
    client->Close();
    return ClientError::kPermission;
  }
  return ClientError::kOk;
}

// Status through a fresh connection: the collector serves one client at a
// time, so the progress loop never holds one open.
ClientError QueryStatus(const Endpoint& target, ControlStatus* status, std::string* state,
                        std::string* error) {
  ControlClient client;
  ClientError e = ConnectToTarget(target, &client, error);
  if (e != ClientError::kOk) return e;
  std::string reply;
  e = client.Request("status", kRequestTimeoutMs, &reply, error);
  if (e != ClientError::kOk) return e;
  if (!control::ParseStatusReply(reply, status, state)) {
    *error = "unexpected reply: " + reply;
    return ClientError::kIo;
  }
  return ClientError::kOk;
}

ClientError Request(const Endpoint& target, const std::string& line, std::string* reply,
                    std::string* error) {
  ControlClient client;
  const ClientError e = ConnectToTarget(target, &client, error);
  if (e != ClientError::kOk) return e;
  return client.Request(line, kRequestTimeoutMs, reply, error);
}

// Copies the chunks of one process out of a (node) trace file into a
// trace of its own (tools/reader/window_cut.h). Pass 1 (before the window)
// finds the process's header and keeps what later batches refer to by id;
// pass 2 writes the window's chunks of that process.
class WindowExtractor : public reader::FrameVisitor {
 public:
  explicit WindowExtractor(uint32_t pid) : pid_(pid) {}

  void OnFrame(uint64_t, const uint8_t*, size_t, const proto::Chunk& c) override {
    if (searching_header_) {
      if (c.pid() != pid_) return;
      if (c.has_header()) uid_ = c.process_uid();  // (a reused pid: the latest process wins)
      if (c.process_uid() == uid_) cut_.Keep(c);
      return;
    }
    const bool mine = uid_ != 0 ? c.process_uid() == uid_ : c.pid() == pid_;
    if (mine) cut_.Add(c);
  }

  bool Open(const std::string& path, std::string* error) {
    fd_ = CreateOwnFile(path, error);
    if (fd_ < 0) return false;
    sink_ = std::make_unique<reader::FdCutSink>(fd_);
    if (cut_.Begin(sink_.get())) return true;
    *error = absl::StrCat(path, ": ", strerror(errno));
    close(fd_);
    fd_ = -1;
    return false;
  }
  bool Close() {
    bool ok = cut_.End();
    if (fd_ >= 0 && close(fd_) != 0) ok = false;
    fd_ = -1;
    return ok;
  }
  bool searching_header_ = true;
  uint64_t frames() const { return cut_.frames(); }
  // The process's header was found before the window, and how many of its
  // chunks the window held (header and definitions not counted).
  bool has_header() const { return cut_.has_header(); }
  uint64_t window_chunks() const { return cut_.window_chunks(); }

 private:
  uint32_t pid_;
  uint64_t uid_ = 0;
  reader::WindowCut cut_;
  std::unique_ptr<reader::FdCutSink> sink_;
  int fd_ = -1;
};

}  // namespace

absl::StatusOr<AttachOptions> ParseAttachArgs(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedOptions> parsed = ParseOptions(args, kAttachOptions);
  if (!parsed.ok()) return parsed.status();
  const ParsedOptions& p = *parsed;
  AttachOptions o;
  if (p.has("help")) {
    o.help = true;
    return o;
  }
  if (!p.rest.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", p.rest[0], "'"));
  }
  int64_t pid = 0;
  if (!p.has("pid")) return absl::InvalidArgumentError("--pid PID is required");
  if (!absl::SimpleAtoi(p.get("pid"), &pid) || pid <= 0 || pid > 0x3fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pid must be a process id, not '", p.get("pid"), "'"));
  }
  o.pid = static_cast<pid_t>(pid);
  o.duration_ms = 600'000;
  if (p.has("duration")) {
    double s = 0;
    if (!absl::SimpleAtod(p.get("duration"), &s) || !(s >= 0.001) || s > 86400) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--duration must be seconds in 0.001..86400, not '", p.get("duration"), "'"));
    }
    o.duration_ms = static_cast<uint64_t>(s * 1000 + 0.5);
  }
  if (p.has("interval")) {
    if (!absl::SimpleAtoi(p.get("interval"), &o.interval_ms) || o.interval_ms < 10 ||
        o.interval_ms > 1000) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--interval must be milliseconds 10..1000, not '", p.get("interval"), "'"));
    }
  }
  if (p.has("idle-gap-ms") && !ParseMillisecondsAsNs(p.get("idle-gap-ms"), &o.idle_gap_ns)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--idle-gap-ms must be a number of milliseconds > 0, not '", p.get("idle-gap-ms"), "'"));
  }
  if (p.has("output")) o.output_dir = p.get("output");
  if (p.has("report")) o.report_path = p.get("report");
  o.report = !p.has("no-report");
  o.progress = !p.has("no-progress");
  if (p.has("report") && !o.report) {
    return absl::InvalidArgumentError("--report and --no-report contradict each other");
  }
  return o;
}

TargetProcess InspectProcess(pid_t pid, const std::string& proc_root) {
  TargetProcess t;
  const std::string dir = absl::StrCat(proc_root, "/", pid);
  std::istringstream status(ReadProcFile(dir + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream ids(line.substr(4));
    uint64_t real = 0, effective = 0;
    if (ids >> real >> effective) {
      t.exists = true;
      t.euid = static_cast<uid_t>(effective);
    }
  }
  if (!t.exists) return t;
  const std::string environ = ReadProcFile(dir + "/environ");
  t.env_readable = !environ.empty();
  t.env = common::ParseEnvironBlock(environ);
  t.collector_loaded = ReadProcFile(dir + "/maps").find("libgpscope_inject") != std::string::npos;
  return t;
}

std::vector<std::string> FindControlSockets(pid_t pid, const std::string& proc_root) {
  const std::string dir = absl::StrCat(proc_root, "/", pid);
  // The process's socket inodes: /proc/<pid>/fd/N -> "socket:[INODE]".
  std::set<std::string> inodes;
  if (DIR* fds = opendir((dir + "/fd").c_str())) {
    while (dirent* e = readdir(fds)) {
      char target[64];
      const ssize_t n =
          readlinkat(dirfd(fds), e->d_name, target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      const std::string t(target);
      if (t.rfind("socket:[", 0) == 0 && t.back() == ']') inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(fds);
  }
  std::vector<std::string> out;
  if (inodes.empty()) return out;
  // "Num RefCount Protocol Flags Type St Inode Path": listening (flag
  // __SO_ACCEPTCON 0x10000), bound to a path (not abstract).
  std::istringstream unix_table(ReadProcFile(dir + "/net/unix"));
  const std::string suffix = absl::StrCat("/", pid, ".sock");
  std::string line;
  std::getline(unix_table, line);  // the header
  while (std::getline(unix_table, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, st, inode, path;
    if (!(fields >> num >> refs >> protocol >> flags >> type >> st >> inode)) continue;
    std::getline(fields >> std::ws, path);
    // Hex digits without a prefix ("00010000"). std::from_chars, not
    // absl::SimpleHexAtoi: the release build's abseil (Debian 11's,
    // 20200923) predates it.
    uint64_t flag_bits = 0;
    const char* const flags_end = flags.data() + flags.size();
    const auto [parsed, ec] = std::from_chars(flags.data(), flags_end, flag_bits, 16);
    if (ec != std::errc() || parsed != flags_end || (flag_bits & 0x10000) == 0) continue;
    if (path.empty() || path[0] != '/' || inodes.count(inode) == 0) continue;
    if (path.size() > suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        std::find(out.begin(), out.end(), path) == out.end()) {
      out.push_back(path);
    }
  }
  return out;
}

std::vector<std::string> ControlSocketCandidates(pid_t pid, const TargetProcess& target,
                                                 uid_t uid) {
  std::vector<std::string> dirs;
  auto add = [&](const std::vector<std::string>& more) {
    for (const std::string& d : more) {
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
    }
  };
  // The target's own view first (its environment decides where it listens).
  static const std::map<std::string, std::string>* env_of = nullptr;
  env_of = &target.env;
  add(control::ControlDirCandidates(
      [](const char* name) -> const char* {
        const auto it = env_of->find(name);
        return it == env_of->end() ? nullptr : it->second.c_str();
      },
      uid));
  env_of = nullptr;
  add(control::ControlDirCandidates([](const char* n) -> const char* { return getenv(n); }, uid));
  std::vector<std::string> sockets;
  for (const std::string& d : dirs) sockets.push_back(control::ControlSocketPath(d, pid));
  return sockets;
}

std::string NotAttachableMessage(pid_t pid, const TargetProcess& target,
                                 const std::vector<std::string>& tried,
                                 const std::string& library_path) {
  const std::string lib =
      library_path.empty() ? "/path/to/libgpscope_inject.so" : Shown(library_path);
  if (!target.collector_loaded) {
    return absl::StrCat(
        "gpscope attach: process ", pid,
        " was not started with the gpscope collector, so it cannot be attached to.\n"
        "  CUDA reads CUDA_INJECTION64_PATH only when the process initializes CUDA; a running\n"
        "  process cannot load the collector later. Restart it with the collector in standby\n"
        "  (metrics only, tracing off, near-zero overhead) by adding these two variables:\n\n"
        "    CUDA_INJECTION64_PATH=", lib, "\n"
        "    GPSCOPE_STANDBY=1\n\n"
        "  (or: gpscope run --standby -- COMMAND), then: gpscope attach --pid NEWPID --duration S\n");
  }
  return absl::StrCat(
      "gpscope attach: process ", pid,
      " has the gpscope collector loaded but no control socket (looked at: ",
      Shown(absl::StrJoin(tried, ", ")),
      ").\n  Either it has not initialized CUDA yet (the collector starts at cuInit), it runs "
      "with GPSCOPE_CONTROL=0, or its control directory was refused: look for a 'gpscope:' "
      "line in its stderr.\n");
}

absl::Status ExtractProcessWindow(const std::string& trace_path, uint32_t pid,
                                  uint64_t from_offset, uint64_t to_offset,
                                  const std::string& out_path, uint64_t* frames) {
  WindowExtractor extractor(pid);
  reader::FrameFollower follower(trace_path);
  absl::Status s = follower.ReadNew(extractor, from_offset);  // finds the header
  if (!s.ok()) return s;
  if (!extractor.has_header()) {
    return absl::NotFoundError(absl::StrCat(
        trace_path, " holds no trace header of process ", pid,
        " before the window: it is not that process's trace (or it is damaged)"));
  }
  std::string error;
  if (!extractor.Open(out_path, &error)) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write the window's trace: ", error));
  }
  extractor.searching_header_ = false;
  follower.set_offset(std::max<uint64_t>(from_offset, format::kFileHeaderBytes));
  s = follower.ReadNew(extractor, to_offset);
  if (!extractor.Close() && s.ok()) {
    s = absl::DataLossError(absl::StrCat("cannot write ", out_path, ": ", strerror(errno)));
  }
  *frames = extractor.frames();
  if (s.ok() && extractor.window_chunks() == 0) {
    return absl::NotFoundError(absl::StrCat(
        trace_path, " got no frames of process ", pid, " during the window (bytes ", from_offset,
        "..", to_offset, "): the process wrote elsewhere or nothing reached the file"));
  }
  return s;
}

int RunAttach(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<AttachOptions> parsed = ParseAttachArgs(args);
  if (!parsed.ok()) {
    err << "gpscope attach: " << Shown(std::string(parsed.status().message()))
        << "; run 'gpscope attach --help'\n";
    return 2;
  }
  AttachOptions& o = *parsed;
  if (o.help) {
    out << kUsage;
    return 0;
  }
  const TargetProcess target = InspectProcess(o.pid);
  if (!target.exists) {
    err << "gpscope attach: no process " << o.pid << "\n";
    return 1;
  }
  if (target.euid != geteuid()) {
    err << "gpscope attach: process " << o.pid << " belongs to " << UserName(target.euid)
        << "; you are " << UserName(geteuid())
        << ". gpscope attach controls only your own processes (the collector accepts only its "
           "own user): run it as that user.\n";
    return 1;
  }
  // Find the socket: those the kernel says the process listens on first
  // (a collector whose default directory was squatted serves from a
  // private fallback), then the places its environment implies.
  std::vector<std::string> candidates = FindControlSockets(o.pid);
  for (const std::string& c : ControlSocketCandidates(o.pid, target, geteuid())) {
    if (std::find(candidates.begin(), candidates.end(), c) == candidates.end()) {
      candidates.push_back(c);
    }
  }
  Endpoint endpoint;
  endpoint.pid = o.pid;
  endpoint.uid = target.euid;
  std::string error;
  std::vector<std::string> problems;
  for (const std::string& c : candidates) {
    endpoint.socket = c;
    ControlClient probe;
    const ClientError e = ConnectToTarget(endpoint, &probe, &error);
    if (e == ClientError::kOk) break;
    endpoint.socket.clear();
    // A path nothing is at is not worth a line; a refused one is.
    if (e != ClientError::kNoSocket && !(e == ClientError::kPermission && error.find(
                                             "cannot stat control") != std::string::npos)) {
      problems.push_back(error);
    }
  }
  if (endpoint.socket.empty()) {
    for (const std::string& p : problems) err << "gpscope attach: " << Shown(p) << "\n";
    absl::StatusOr<std::string> lib = FindInjectLibrary("", SelfPath());
    err << NotAttachableMessage(o.pid, target, candidates, lib.ok() ? *lib : "");
    return 1;
  }
  const std::string& socket = endpoint.socket;
  ControlStatus status;
  std::string state;
  if (QueryStatus(endpoint, &status, &state, &error) != ClientError::kOk) {
    err << "gpscope attach: " << Shown(socket) << ": " << Shown(error) << "\n";
    return 1;
  }
  if (status.pid != static_cast<uint64_t>(o.pid)) {
    err << "gpscope attach: " << Shown(socket) << " answers for process " << status.pid
        << ", not " << o.pid << "; refusing it\n";
    return 1;
  }
  if (status.tracing) {
    if (state == "attached") {
      err << "gpscope attach: another attach window is open in process " << o.pid << " ("
          << FormatClock(status.remaining_ms) << " left); try again after it\n";
    } else {
      err << "gpscope attach: process " << o.pid << " is already tracing (state " << Shown(state)
          << ", not standby); its trace is " << Shown(status.trace_path)
          << "\n  analyse it with: gpscope-analyze report " << Shown(status.trace_path) << "\n";
    }
    return 1;
  }
  if (!status.trace_path.empty() && status.trace_path[0] != '/') {
    // An older collector named it relative to its own working directory.
    err << "gpscope attach: process " << o.pid << " names its trace file "
        << Shown(status.trace_path)
        << " relative to its own working directory; run attach from there, or upgrade the "
           "collector (it reports absolute paths)\n";
    return 1;
  }
  if (status.trace_path.empty() || !IsFile(status.trace_path)) {
    err << "gpscope attach: process " << o.pid << " has no trace file ("
        << (status.trace_path.empty() ? "none" : Shown(status.trace_path))
        << "): the collector could not open its output; see the process's stderr\n";
    return 1;
  }
  if (o.output_dir.empty()) o.output_dir = FreshDir(absl::StrCat("gpscope-out/attach-", o.pid));
  {
    std::string absolute, why;
    if (!OpenOwnDir(o.output_dir, &absolute, &why)) {
      err << "gpscope attach: output directory: " << Shown(why) << "\n";
      return 1;
    }
    o.output_dir = absolute;
  }

  // The file as the process named it at the start (later replies are not
  // allowed to move it).
  const std::string trace_path = status.trace_path;
  const uint64_t from_offset = FileSize(trace_path);
  const uint64_t events_before = status.events, drops_before = status.drops;
  const int64_t windows_before = status.windows_written;  // -1: an older collector
  std::string reply;
  const std::string request = o.interval_ms ? absl::StrCat("start ", o.duration_ms, " ", o.interval_ms)
                                            : absl::StrCat("start ", o.duration_ms);
  if (Request(endpoint, request, &reply, &error) != ClientError::kOk) {
    err << "gpscope attach: " << Shown(socket) << ": " << Shown(error) << "\n";
    return 1;
  }
  if (reply.rfind("ok", 0) != 0) {
    err << "gpscope attach: process " << o.pid << " refused: " << Shown(reply) << "\n";
    return 1;
  }
  err << "gpscope: tracing process " << o.pid << " for " << FormatClock(o.duration_ms) << " ("
      << Shown(reply.substr(std::min<size_t>(3, reply.size()))) << ")\n";

  // The window: Ctrl-C / SIGTERM end it early with `stop`.
  g_interrupted = 0;
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = &OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  ProgressPrinter printer(err, o.progress && isatty(STDERR_FILENO));
  const size_t width = TerminalWidth(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  bool stop_sent = false, process_gone = false;
  const uint64_t give_up_ms = o.duration_ms + 60'000;
  for (;;) {
    common::SleepMs(250);
    const uint64_t elapsed = MsSince(t0);
    if (g_interrupted && !stop_sent) {
      stop_sent = true;
      Request(endpoint, "stop", &reply, &error);
    }
    const ClientError e = QueryStatus(endpoint, &status, &state, &error);
    if (e != ClientError::kOk) {
      process_gone = !InspectProcess(o.pid).exists || e == ClientError::kNoSocket ||
                     e == ClientError::kStale;
      if (process_gone) break;
      continue;  // busy (another client), try again
    }
    printer.Show(RenderAttachProgress(elapsed, o.duration_ms, status.events - std::min(status.events, events_before),
                                      status.drops - std::min(status.drops, drops_before), width));
    if (!status.tracing) break;
    if (elapsed > give_up_ms) {
      printer.Clear();
      err << "gpscope attach: the window did not close in time; sending stop\n";
      Request(endpoint, "stop", &reply, &error);
      break;
    }
  }
  printer.Clear();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (process_gone) err << "gpscope: process " << o.pid << " ended during the window\n";

  // The collector writes the window's records when it ends and counts that
  // in windows_written; an older one ships them at its next flush: wait a
  // flush interval for those (and as a bound here).
  uint64_t flush_ms = 2000;
  if (const auto it = target.env.find("GPSCOPE_FLUSH_INTERVAL_MS"); it != target.env.end()) {
    uint64_t v = 0;
    if (absl::SimpleAtoi(it->second, &v) && v >= 100 && v <= 60000) flush_ms = v;
  }
  if (!process_gone) {
    const auto wait_from = std::chrono::steady_clock::now();
    const uint64_t bound_ms = flush_ms + 500;
    bool written = false;
    while (windows_before >= 0 && MsSince(wait_from) < bound_ms) {
      if (QueryStatus(endpoint, &status, &state, &error) == ClientError::kOk &&
          status.windows_written > windows_before) {
        written = true;
        break;
      }
      common::SleepMs(50);
    }
    if (!written) common::SleepMs(static_cast<unsigned>(bound_ms - std::min(bound_ms, MsSince(wait_from))));
  }
  const uint64_t to_offset = FileSize(trace_path);
  std::string base = Basename(trace_path);
  if (base.size() > 8 && base.compare(base.size() - 8, 8, ".gpscope") == 0) base.resize(base.size() - 8);
  const std::string window_path = absl::StrCat(o.output_dir, "/", base, "_pid", o.pid, ".gpscope");
  uint64_t frames = 0;
  const absl::Status s =
      ExtractProcessWindow(trace_path, static_cast<uint32_t>(o.pid), from_offset, to_offset,
                           window_path, &frames);
  if (!s.ok()) {
    err << "gpscope attach: " << Shown(std::string(s.message())) << "\n";
    return 1;
  }
  err << "gpscope: window captured after " << FormatClock(MsSince(t0)) << ": "
      << FormatCount(status.events - std::min(status.events, events_before)) << " events, "
      << FormatCount(status.drops - std::min(status.drops, drops_before)) << " drops, "
      << frames << " frames -> " << Shown(window_path) << "\n";
  if (!o.report) return 0;
  AnalysisOptions analysis;
  analysis.report_path =
      o.report_path.empty() ? o.output_dir + "/report.html" : Absolute(o.report_path);
  analysis.idle_gap_ns = o.idle_gap_ns;
  return ReportAndFindings({window_path}, analysis, err);
}

}  // namespace gpscope::launcher
