// tools/gpscope/paths.cc: see paths.h.
#include "tools/gpscope/paths.h"

#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/safe_path.h"
#include "common/safe_text.h"
#include "proto/framing.h"

namespace gpscope::launcher {

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

bool IsFile(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool OpenOwnDir(const std::string& path, std::string* absolute, std::string* error) {
  common::OutputDir dir;
  if (!common::OpenOutputDir(path, common::DirModeFor(format::kDefaultFileMode), geteuid(), &dir,
                             error)) {
    return false;
  }
  *absolute = dir.path();
  return true;
}

int CreateOwnFile(const std::string& path, std::string* error) {
  common::OutputDir dir;
  if (!common::OpenOutputDir(Dirname(path), common::DirModeFor(format::kDefaultFileMode),
                             geteuid(), &dir, error)) {
    return -1;
  }
  return common::CreateFileIn(dir, Basename(path), format::kDefaultFileMode, geteuid(), error);
}

std::string Shown(const std::string& text) { return common::SanitizeText(text); }

std::string FreshDir(const std::string& prefix) {
  const time_t now = time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  const std::string base = absl::StrCat(prefix, "-", stamp);
  std::string dir = base;
  struct stat st{};
  for (int n = 2; stat(dir.c_str(), &st) == 0 && n < 1000; ++n) dir = absl::StrCat(base, "-", n);
  return dir;
}

std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

uint64_t FileSize(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint64_t MsSince(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - t0)
                                   .count());
}

}  // namespace gpscope::launcher
