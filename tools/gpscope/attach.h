// tools/gpscope/attach.h: `gpscope attach --pid PID --duration S [--interval MS]`.
//
// Switches full tracing on in a running process for a window, through the
// collector's control socket (common/control/control_channel.h), shows a
// progress bar, then writes the report of exactly that window.
//
// CUDA reads CUDA_INJECTION64_PATH only when it initializes, so only a
// process started with the collector can be attached to; in production it
// runs in standby (GPSCOPE_STANDBY=1: metrics only, tracing off). For any
// other process attach explains this (with the exact variables to set)
// instead of waiting; another user's process is refused before anything is
// sent (the collector would refuse it too: SO_PEERCRED).
//
// Nothing a socket answers is believed before it is checked
// (docs/security.md): the socket is found through the kernel
// (FindControlSockets) before any guessed path, its directory must be
// private to the target's user, and the server must be the target process
// (SO_PEERCRED pid and uid). The status must name that pid and an absolute
// trace path, and the window must hold frames of that process, or attach
// fails (exit 1) instead of reporting an empty window.
//
// The window's chunks are copied out of the process's trace file into
// <output>/<trace>_pid<PID>.gpscope (its header, the names and shapes that
// earlier batches defined, then the chunks it appended during the window,
// renumbered), and the report is made from that file, so earlier windows
// and other processes of the node file are not in it.
//
//   gpscope attach --pid 4242 --duration 600 --interval 100
//
// Exit codes: 0 ok, 1 failed (not attachable, refused, no data), 2 bad usage.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_GPSCOPE_ATTACH_H_
#define GPSCOPE_TOOLS_GPSCOPE_ATTACH_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpscope::launcher {

struct AttachOptions {
  pid_t pid = 0;
  uint64_t duration_ms = 0;
  uint32_t interval_ms = 0;  // metrics sampling during the window; 0: unchanged
  std::string output_dir;    // empty: a new gpscope-out/attach-<pid>-<time>
  std::string report_path;   // empty: <output>/report.html
  bool report = true;
  bool progress = true;
  uint64_t idle_gap_ns = 0;
  bool help = false;
};

absl::StatusOr<AttachOptions> ParseAttachArgs(const std::vector<std::string>& args);

// What /proc/<pid> says about a process.
struct TargetProcess {
  bool exists = false;
  uid_t euid = 0;
  bool env_readable = false;
  std::map<std::string, std::string> env;  // its initial environment
  bool collector_loaded = false;           // libgpscope_inject*.so is mapped
};
TargetProcess InspectProcess(pid_t pid, const std::string& proc_root = "/proc");

// The control sockets process `pid` listens on, as the kernel tells them
// (not guessed from names): the socket inodes among /proc/<pid>/fd whose
// listening entries in /proc/<pid>/net/unix have a path ending in
// "/<pid>.sock". Finds a collector's private fallback directory too
// (common/control/control_channel.h). Empty when /proc does not tell.
std::vector<std::string> FindControlSockets(pid_t pid, const std::string& proc_root = "/proc");

// Where the process's control socket can be: its GPSCOPE_CONTROL_DIR or
// XDG_RUNTIME_DIR-based directory (from its environment), then ours, then
// /tmp/gpscope-<uid>; without duplicates.
std::vector<std::string> ControlSocketCandidates(pid_t pid, const TargetProcess& target,
                                                 uid_t uid);

// The explanation for a process without a control socket.
std::string NotAttachableMessage(pid_t pid, const TargetProcess& target,
                                 const std::vector<std::string>& tried,
                                 const std::string& library_path);

// Writes process `pid`'s window [from_offset, to_offset) of `trace_path` to
// a new trace file `out_path`: its header chunk and definitions (found before
// from_offset), then its chunks of the window. *frames: frames written.
absl::Status ExtractProcessWindow(const std::string& trace_path, uint32_t pid,
                                  uint64_t from_offset, uint64_t to_offset,
                                  const std::string& out_path, uint64_t* frames);

int RunAttach(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_ATTACH_H_
