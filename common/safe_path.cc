// common/safe_path.cc: see safe_path.h.
#include "common/safe_path.h"

#include <fcntl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

#include "proto/framing.h"

namespace gpscope::common {
namespace {

std::string Octal(mode_t mode) {
  char buf[8];
  snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Who(uid_t uid) { return "uid " + std::to_string(uid); }

// "a FIFO", "a directory", ... for a refusal line.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Writable by users other than the owner, without the sticky bit that
// keeps them from renaming or deleting what is not theirs.
bool OpenToOthers(const struct stat& st) {
  return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0;
}

}  // namespace

mode_t DirModeFor(mode_t file_mode) {
  mode_t m = (file_mode & 0777) | S_IRWXU;
  if (m & S_IRGRP) m |= S_IXGRP;
  if (m & S_IROTH) m |= S_IXOTH;
  return m;
}

OutputDir::~OutputDir() { Close(); }

OutputDir::OutputDir(OutputDir&& o) noexcept
    : fd_(o.fd_), path_(std::move(o.path_)), shared_(o.shared_) {
  o.fd_ = -1;
}

OutputDir& OutputDir::operator=(OutputDir&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    shared_ = o.shared_;
    o.fd_ = -1;
  }
  return *this;
}

void OutputDir::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool OpenOutputDir(const std::string& path, mode_t dir_mode, uid_t uid, OutputDir* out,
                   std::string* error) {
  if (path.empty()) {
    *error = "empty directory name";
    return false;
  }
  int fd = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("cannot open ") + (path[0] == '/' ? "/" : "the working directory") +
             ": " + strerror(errno);
    return false;
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i && path.compare(i, j - i, ".") != 0) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  std::string so_far = path[0] == '/' ? "" : ".";
  auto fail = [&](std::string why) {
    close(fd);
    *error = std::move(why);
    return false;
  };
  constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  for (const std::string& c : parts) {
    so_far += "/" + c;
    int next = openat(fd, c.c_str(), kDirFlags);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(fd, c.c_str(), dir_mode) != 0 && errno != EEXIST) {
        return fail("cannot create directory " + so_far + ": " + strerror(errno));
      }
      next = openat(fd, c.c_str(), kDirFlags);
    }
    if (next < 0 && (errno == ELOOP || errno == ENOTDIR)) {
      struct stat link{}, parent{};
      if (fstatat(fd, c.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(link.st_mode)) {
        return fail(so_far + " is " + KindOf(link.st_mode) + ", not a directory");
      }
      if (link.st_uid != uid && link.st_uid != 0) {
        return fail(so_far + " is a symbolic link that belongs to " + Who(link.st_uid) +
                    " (not to " + Who(uid) + " or root); refusing to follow it");
      }
      if (fstat(fd, &parent) != 0 || OpenToOthers(parent)) {
        return fail(so_far + " is a symbolic link in a directory other users may write to (mode " +
                    Octal(parent.st_mode) + "); refusing to follow it");
      }
      next = openat(fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (next < 0) return fail("cannot open directory " + so_far + ": " + strerror(errno));
    close(fd);
    fd = next;
  }
  struct stat st{};
  if (fstat(fd, &st) != 0) return fail("cannot stat " + path + ": " + strerror(errno));
  if (st.st_uid != uid && st.st_uid != 0) {
    return fail(path + " belongs to " + Who(st.st_uid) + ", not to " + Who(uid) +
                " or root; refusing to write traces there (another user could read or replace "
                "them): use a directory of your own");
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return fail(path + " is writable by every user (mode " + Octal(st.st_mode) +
                ", not sticky); refusing to write traces there: use a directory of your own");
  }
  out->Close();
  out->fd_ = fd;
  out->shared_ = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) != 0;
  char link[64], real[4096];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, real, sizeof(real) - 1);
  if (n > 0 && real[0] == '/') {
    out->path_.assign(real, static_cast<size_t>(n));
  } else if (path[0] == '/') {
    out->path_ = path;
  } else {
    char cwd[4096];
    out->path_ = getcwd(cwd, sizeof(cwd)) != nullptr ? std::string(cwd) + "/" + path : path;
  }
  return true;
}

bool TrustedFile(const struct stat& st, const OutputDir& dir, uid_t uid, std::string* why) {
  if (!S_ISREG(st.st_mode)) {
    *why = std::string("is ") + KindOf(st.st_mode);
    return false;
  }
  if (st.st_uid != uid && (dir.shared() || st.st_uid != 0)) {
    *why = "belongs to " + Who(st.st_uid) + (dir.shared() ? " in a shared (sticky) directory" : "");
    return false;
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    *why = "is writable by every user (mode " + Octal(st.st_mode) + ")";
    return false;
  }
  return true;
}

int OpenTraceFileIn(const OutputDir& dir, const std::string& name, mode_t mode, uid_t uid,
                    bool* foreign, std::string* error) {
  *foreign = false;
  char err[256] = "";
  const int fd = format::OpenForAppendAt(dir.fd(), name.c_str(), mode, err, sizeof(err));
  if (fd < 0) {
    const int e = errno;
    // Taken by something that is not ours to append to.
    *foreign = e == ELOOP || e == EINVAL || e == EACCES || e == EPERM || e == ETXTBSY;
    *error = dir.path() + "/" + err;
    return -1;
  }
  struct stat st{};
  std::string why;
  if (fstat(fd, &st) != 0 || !TrustedFile(st, dir, uid, &why)) {
    close(fd);
    *foreign = true;
    *error = dir.path() + "/" + name + " " + why + "; refusing to append to it";
    return -1;
  }
  return fd;
}

std::string PrivateTraceName(const std::string& name, uid_t uid, pid_t pid) {
  std::string stem = name;
  const std::string suffix = ".gpscope";
  if (stem.size() > suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(),
                                                  suffix) == 0) {
    stem.resize(stem.size() - suffix.size());
  }
  uint32_t salt = 0;
  if (getrandom(&salt, sizeof(salt), GRND_NONBLOCK) != sizeof(salt)) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    salt = static_cast<uint32_t>(ts.tv_nsec) ^ static_cast<uint32_t>(ts.tv_sec * 2654435761u);
  }
  char tail[64];
  snprintf(tail, sizeof(tail), ".u%u-%d-%08x", static_cast<unsigned>(uid), static_cast<int>(pid),
           salt);
  return stem + tail + suffix;
}

int CreateFileIn(const OutputDir& dir, const std::string& name, mode_t mode, uid_t uid,
                 std::string* error) {
  // Not O_TRUNC: a foreign file must be refused before it is touched.
  const int fd = openat(dir.fd(), name.c_str(),
                        O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = dir.path() + "/" + name + (errno == ELOOP ? ": is a symbolic link; refusing it"
                                                       : std::string(": ") + strerror(errno));
    return -1;
  }
  struct stat st{};
  std::string why;
  if (fstat(fd, &st) != 0 || !TrustedFile(st, dir, uid, &why)) {
    close(fd);
    *error = dir.path() + "/" + name + " " + why + "; refusing to write it";
    return -1;
  }
  if (ftruncate(fd, 0) != 0) {
    *error = dir.path() + "/" + name + ": " + strerror(errno);
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, O_WRONLY);
  return fd;
}

bool IsRegularFile(const std::string& path, std::string* why) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    *why = path + ": " + strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = path + " is " + KindOf(st.st_mode) + ", not a library or data file";
    return false;
  }
  return true;
}

bool SearchPathIsSafe(const std::string& soname, std::string* why) {
  if (soname.find('/') != std::string::npos) return IsRegularFile(soname, why);
  const char* env = getenv("LD_LIBRARY_PATH");
  if (env == nullptr) return true;
  const std::string dirs(env);
  for (size_t i = 0; i <= dirs.size();) {
    size_t j = dirs.find_first_of(":;", i);
    if (j == std::string::npos) j = dirs.size();
    const std::string dir = j > i ? dirs.substr(i, j - i) : ".";
    const std::string candidate = dir + "/" + soname;
    struct stat st{};
    if (stat(candidate.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      *why = candidate + " (on LD_LIBRARY_PATH) is " + KindOf(st.st_mode) +
             ", not a library file";
      return false;
    }
    i = j + 1;
  }
  return true;
}

}  // namespace gpscope::common
