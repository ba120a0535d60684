// common/identity.h: who this process is — host, pid, command line, and its
// place in a distributed job as told by the launcher's environment
// (torchrun, Slurm, Open MPI, MPICH/PMI, or GPSCOPE_JOB/GPSCOPE_RANK). The
// collector records its process's; the node monitor its own, and the job of
// each process on a GPU (ParseLauncherEnv over /proc/<pid>/environ).
//
// Cold path, runs once per process (and again in a fork child). CUDA-free.
// Only allow-listed environment variables are ever recorded: no secrets.
#ifndef GPSCOPE_COMMON_IDENTITY_H_
#define GPSCOPE_COMMON_IDENTITY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/env_values.h"

namespace gpscope::common {

// One trace file per node (processes append to it) or per process.
enum class FileMode { kNode, kProcess };

struct ProcessIdentity {
  std::string hostname;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::vector<std::string> cmdline;
  std::string exe_path;
  std::string job_id;
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = 0;
  int32_t node_rank = -1;
  std::string launcher;  // "torchrun", "slurm", "openmpi", "pmi", "env", ""
  std::vector<std::pair<std::string, std::string>> env;  // allow-listed only
  std::string driver_version;  // the NVIDIA kernel module's, "580.159.04"; "" unknown
  // In a PID namespace other than the host's (a container): NVML reports
  // host pids, which do not match `pid`.
  bool in_pid_namespace = false;
};

// True when the link text of /proc/self/ns/pid names a namespace other than
// the initial one ("pid:[4026531836]", PROC_PID_INIT_INO). Pure.
bool IsNonInitialPidNamespace(const std::string& ns_link);

// The driver version in the text of /proc/driver/nvidia/version ("NVRM
// version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." or "... Open
// Kernel Module for x86_64  580.159.04 ..."): the first dotted number after
// "Kernel Module"; "" if there is none. Pure.
std::string ParseNvidiaDriverVersion(const std::string& proc_text);

// Fills launcher fields and the allow-listed env from get_env. Pure.
void ParseLauncherEnv(GetEnvFn get_env, ProcessIdentity* id);

// True if `name` may be recorded in a trace.
bool IsAllowListedEnv(const char* name);

// Reads /proc/self, the host name ("unknown-host" when it has none) and
// /proc/driver/nvidia/version, then ParseLauncherEnv(getenv).
ProcessIdentity ReadProcessIdentity();

// "<job>_<host>.gpscope" (node mode) or "<job>_<host>_<pid>.gpscope"
// (process mode). Characters outside [A-Za-z0-9._-] become '_'. job may be
// empty: then "<host>.gpscope".
std::string TraceFileName(const std::string& job, const std::string& host, uint32_t pid,
                          FileMode mode);

}  // namespace gpscope::common

#endif  // GPSCOPE_COMMON_IDENTITY_H_
