// common/identity.cc: see identity.h.
#include "common/identity.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/posix.h"

namespace gpscope::common {
namespace {

// Exact names, then prefixes. Launcher topology, CUDA/NCCL knobs that change
// behaviour, and framework switches — never credentials or paths with tokens.
// The analyzer cites them as causes (CUDA_LAUNCH_BLOCKING behind synchronous
// launches, PYTORCH_NO_CUDA_MEMORY_CACHING behind per-step cudaMalloc, ...).
constexpr const char* kAllowExact[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
    "MASTER_PORT", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MODULE_LOADING", "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
    "SLURM_NODEID", "SLURM_NNODES", "SLURM_STEP_ID", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
    "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "XLA_FLAGS", "JAX_PLATFORMS",
    "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "LD_PRELOAD",
    // CUDA driver and library behaviour.
    "CUDA_DEVICE_ORDER", "CUDA_CACHE_DISABLE", "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT",
    "CUDA_AUTO_BOOST", "CUDA_SCALE_LAUNCH_QUEUES", "CUDA_MANAGED_FORCE_DEVICE_ALLOC",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE",
    "NVIDIA_TF32_OVERRIDE", "MKL_NUM_THREADS",
    // PyTorch.
    "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_NVML_BASED_CUDA_CHECK",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "TORCH_CUDNN_V8_API_DISABLED", "TORCH_USE_CUDA_DSA",
    "TORCH_DISTRIBUTED_DEBUG", "TORCHDYNAMO_DISABLE", "TORCH_COMPILE_DISABLE",
    // JAX / XLA / TensorFlow allocators.
    "JAX_ENABLE_X64", "JAX_DISABLE_JIT", "TF_GPU_ALLOCATOR", "TF_FORCE_GPU_ALLOW_GROWTH",
    // CuPy.
    "CUPY_ACCELERATORS", "CUPY_GPU_MEMORY_LIMIT", "CUPY_TF32",
};
constexpr const char* kAllowPrefix[] = {"GPSCOPE_", "NCCL_", "TORCH_NCCL_", "TORCHINDUCTOR_",
                                        "XLA_PYTHON_CLIENT_"};
// Even under an allowed prefix, names containing these are dropped.
constexpr const char* kDenySubstring[] = {"KEY",        "TOKEN",  "SECRET", "PASSWORD",
                                           "CREDENTIAL", "PASSWD", "AUTH"};

bool ParseInt(const char* s, int32_t* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  long v = strtol(s, &end, 10);
  if (*end != '\0' || v < INT32_MIN || v > INT32_MAX) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

constexpr size_t kMaxProcFileBytes = 1 << 20;

}  // namespace

bool IsAllowListedEnv(const char* name) {
  for (const char* deny : kDenySubstring) {
    if (strstr(name, deny) != nullptr) return false;
  }
  for (const char* exact : kAllowExact) {
    if (!strcmp(name, exact)) return true;
  }
  for (const char* prefix : kAllowPrefix) {
    if (!strncmp(name, prefix, strlen(prefix))) return true;
  }
  return false;
}

void ParseLauncherEnv(GetEnvFn get_env, ProcessIdentity* id) {
  struct Launcher {
    const char* name;
    const char* rank;
    const char* local_rank;
    const char* world_size;
    const char* node_rank;
    const char* job;
  };
  // Most specific first: torchrun inside Slurm should say torchrun, since its
  // RANK is the process's rank and SLURM_PROCID is the launcher's.
  static constexpr Launcher kLaunchers[] = {
      {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
       nullptr, nullptr},
      {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID", nullptr},
      {"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", nullptr, nullptr},
      {"pmi", "PMIX_RANK", nullptr, nullptr, nullptr, nullptr},
  };
  for (const Launcher& l : kLaunchers) {
    int32_t rank;
    if (!ParseInt(get_env(l.rank), &rank)) continue;
    id->launcher = l.name;
    id->rank = rank;
    if (l.local_rank) ParseInt(get_env(l.local_rank), &id->local_rank);
    if (l.world_size) ParseInt(get_env(l.world_size), &id->world_size);
    if (l.node_rank) ParseInt(get_env(l.node_rank), &id->node_rank);
    if (l.job && get_env(l.job)) id->job_id = get_env(l.job);
    break;
  }
  // Slurm's node id and job id complete what torchrun/MPI inside Slurm lack.
  if (id->node_rank < 0) ParseInt(get_env("SLURM_NODEID"), &id->node_rank);
  if (const char* slurm_job = get_env("SLURM_JOB_ID"); slurm_job && *slurm_job) {
    id->job_id = slurm_job;
  }
  // Explicit settings win.
  if (const char* job = get_env("GPSCOPE_JOB"); job && *job) id->job_id = job;
  int32_t v;
  if (ParseInt(get_env("GPSCOPE_RANK"), &v)) {
    id->rank = v;
    if (id->launcher.empty()) id->launcher = "env";
  }
  if (ParseInt(get_env("GPSCOPE_WORLD_SIZE"), &v)) id->world_size = v;
}

ProcessIdentity ReadProcessIdentity() {
  ProcessIdentity id;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) id.hostname = host;
  if (id.hostname.empty()) id.hostname = "unknown-host";
  id.pid = static_cast<uint32_t>(getpid());
  id.ppid = static_cast<uint32_t>(getppid());
  std::string cmd = ReadFileText("/proc/self/cmdline", kMaxProcFileBytes);
  for (size_t pos = 0; pos < cmd.size();) {
    size_t nul = cmd.find('\0', pos);
    if (nul == std::string::npos) nul = cmd.size();
    id.cmdline.push_back(cmd.substr(pos, nul - pos));
    pos = nul + 1;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) id.exe_path.assign(exe, n);
  ParseLauncherEnv(+[](const char* n) -> const char* { return getenv(n); }, &id);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq == nullptr) continue;
    std::string name(*e, eq - *e);
    if (IsAllowListedEnv(name.c_str())) id.env.emplace_back(name, eq + 1);
  }
  id.driver_version =
      ParseNvidiaDriverVersion(ReadFileText("/proc/driver/nvidia/version", kMaxProcFileBytes));
  char ns[64];
  const ssize_t ns_len = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
  if (ns_len > 0) id.in_pid_namespace = IsNonInitialPidNamespace(std::string(ns, ns_len));
  return id;
}

bool IsNonInitialPidNamespace(const std::string& ns_link) {
  return ns_link.rfind("pid:[", 0) == 0 && ns_link != "pid:[4026531836]";
}

std::string ParseNvidiaDriverVersion(const std::string& proc_text) {
  const size_t at = proc_text.find("Kernel Module");
  if (at == std::string::npos) return "";
  const size_t line_end = proc_text.find('\n', at);
  const std::string line = proc_text.substr(at, line_end == std::string::npos ? std::string::npos
                                                                              : line_end - at);
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9' || (i > 0 && line[i - 1] != ' ' && line[i - 1] != '\t')) {
      continue;
    }
    size_t j = i;
    bool dot = false;
    while (j < line.size() && ((line[j] >= '0' && line[j] <= '9') || line[j] == '.')) {
      dot |= line[j] == '.';
      ++j;
    }
    const bool ends = j == line.size() || line[j] == ' ' || line[j] == '\t';
    if (dot && ends && line[j - 1] != '.') return line.substr(i, j - i);
    i = j;
  }
  return "";
}

std::string TraceFileName(const std::string& job, const std::string& host, uint32_t pid,
                          FileMode mode) {
  std::string name = job.empty() ? host : job + "_" + host;
  if (mode == FileMode::kProcess) name += "_" + std::to_string(pid);
  for (char& c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return name + ".gpscope";
}

}  // namespace gpscope::common
