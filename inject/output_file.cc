#include "inject/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "common/raw_log.h"
#include "proto/framing.h"

namespace gpscope::inject {

// Shared with the node monitor (common/safe_path.h, common/identity.h).
using common::DirModeFor;
using common::OpenOutputDir;
using common::OpenTraceFileIn;
using common::PrivateTraceName;
using common::TraceFileName;

bool OutputFile::Prepare(const Config& config, const common::ProcessIdentity& identity,
                         std::string* error) {
  const std::string& dir = config.output_dir;
  permissions_ = config.file_permissions;
  pid_ = identity.pid;
  std::string why;
  if (!OpenOutputDir(dir, DirModeFor(config.file_permissions), geteuid(), &dir_, &why)) {
    *error = "GPSCOPE_OUTPUT=" + dir + ": " + why;
    return false;
  }
  if (faccessat(dir_.fd(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    *error = "cannot write to output directory GPSCOPE_OUTPUT=" + dir + ": " + strerror(errno);
    return false;
  }
  FileMode mode = config.file_mode;
  if (mode == FileMode::kNode && format::IsNetworkFilesystemFd(dir_.fd())) {
    GPSCOPE_LOG_WARNING("%s is on a network filesystem where appends from several processes are "
                        "not atomic; writing one file per process",
                        dir_.path().c_str());
    mode = FileMode::kProcess;
  }
  name_ = TraceFileName(identity.job_id, identity.hostname, identity.pid, mode);
  path_ = dir_.path() + "/" + name_;
  return true;
}

bool OutputFile::Open(format::ChunkWriter* writer, std::string* error) {
  bool foreign = false;
  std::string why;
  fd_ = OpenTraceFileIn(dir_, name_, permissions_, geteuid(), &foreign, &why);
  if (fd_ < 0 && foreign) {
    const std::string private_name = PrivateTraceName(name_, geteuid(), pid_);
    GPSCOPE_LOG_WARNING("%s; tracing to %s/%s instead", why.c_str(), dir_.path().c_str(),
                        private_name.c_str());
    fd_ = OpenTraceFileIn(dir_, private_name, permissions_, geteuid(), &foreign, &why);
    if (fd_ >= 0) {
      name_ = private_name;
      std::lock_guard<std::mutex> lock(path_mu_);
      path_ = dir_.path() + "/" + name_;
    }
  }
  if (fd_ < 0) {
    *error = "cannot open trace file: " + why;
    return false;
  }
  return writer == nullptr || writer->Open(fd_);
}

bool OutputFile::MaybeOpen(format::ChunkWriter* writer,
                           const std::atomic<uint64_t>& context_devices) {
  if (writer->is_open()) return true;
  if (!open_at_context_ || context_devices.load(std::memory_order_acquire) == 0) return false;
  std::string error;
  if (!Open(writer, &error) && fd_ < 0) {
    GPSCOPE_LOG_ERROR("%s; the application runs on untraced", error.c_str());
    writer->StopHolding();  // from here on frames are dropped (and counted)
    open_at_context_ = false;
    return false;
  }
  GPSCOPE_LOG_INFO("first CUDA context: tracing to %s", path().c_str());
  return true;
}

std::string OutputFile::path() {
  std::lock_guard<std::mutex> lock(path_mu_);
  return path_;
}

}  // namespace gpscope::inject
