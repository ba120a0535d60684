// common/safe_path.h: where gpscope writes, checked against the other users
// of the machine (docs/security.md). Used by the collector (inside the
// traced process), the node monitor and the launcher.
//
// The policy, for the euid `uid` gpscope runs as:
//   * An output directory is opened one component at a time (openat from
//     "/" or the working directory), missing components created with the
//     directory mode (0750 for the default file mode 0640). A symbolic link
//     among them is followed only when it belongs to `uid` or root and sits
//     in a directory no other user may write to (or a sticky one), so a link
//     another user planted (gpscope-out -> /root/private) is refused.
//   * The directory itself (the one files are created in) must belong to
//     `uid` or root and may be writable by others only when it is sticky
//     (/tmp-like); then every file in it must belong to `uid`.
//   * A trace file is opened with O_NOFOLLOW and without blocking
//     (format::OpenForAppendAt) and must be a regular file that belongs to
//     `uid` (or to root when the directory is not sticky) and that others
//     may not write to. A file that fails is "foreign": the caller refuses
//     it with one line and writes to a private name beside it instead
//     (PrivateTraceName), never into the foreign file.
//   * Files are created with mode 0640 (GPSCOPE_FILE_PERMISSIONS), which the
//     umask can only narrow: the trace holds the command line and the
//     allow-listed environment.
// All checks run on opened descriptors (fstat/fstatat on the directory fd),
// so a name swapped after the check cannot redirect the write.
//
//   OutputDir dir;
//   std::string error;
//   if (!OpenOutputDir("./gpscope-out", DirModeFor(0640), geteuid(), &dir, &error)) ...
//   bool foreign = false;
//   int fd = OpenTraceFileIn(dir, "job_host.gpscope", 0640, geteuid(), &foreign, &error);
//
// Thread model: cold paths, any one thread; allocate; no locks.
#ifndef GPSCOPE_COMMON_SAFE_PATH_H_
#define GPSCOPE_COMMON_SAFE_PATH_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace gpscope::common {

// 0640 -> 0750, 0600 -> 0700, 0660 -> 0770: a directory others may read
// the files of only when they may read the files.
mode_t DirModeFor(mode_t file_mode);

// An opened output directory. Movable, closes its descriptor.
class OutputDir {
 public:
  OutputDir() = default;
  ~OutputDir();
  OutputDir(OutputDir&& o) noexcept;
  OutputDir& operator=(OutputDir&& o) noexcept;
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  int fd() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }
  // Absolute, as the kernel names the opened directory (symbolic links
  // resolved); the path given when /proc cannot tell.
  const std::string& path() const { return path_; }
  // Writable by others with the sticky bit (/tmp-like): files in it must
  // belong to us.
  bool shared() const { return shared_; }
  void Close();

 private:
  friend bool OpenOutputDir(const std::string&, mode_t, uid_t, OutputDir*, std::string*);
  int fd_ = -1;
  std::string path_;
  bool shared_ = false;
};

// Opens (creating what is missing, mode `dir_mode` before the umask) the
// directory `path`, checked as above. False with one line in *error that
// names the path, what is wrong and what to do.
bool OpenOutputDir(const std::string& path, mode_t dir_mode, uid_t uid, OutputDir* out,
                   std::string* error);

// True when the opened file `st` may receive gpscope's frames in `dir`;
// otherwise false with the reason ("belongs to uid 1000", "writable by
// every user", ...).
bool TrustedFile(const struct stat& st, const OutputDir& dir, uid_t uid, std::string* why);

// Opens or creates the trace file `name` in `dir` (format::OpenForAppendAt,
// then TrustedFile). -1 with *error on failure; *foreign is set when the
// name is taken by something gpscope must not write to (a symbolic link, a
// FIFO or other non-file, another user's file, a file others may write):
// then the caller falls back to PrivateTraceName.
int OpenTraceFileIn(const OutputDir& dir, const std::string& name, mode_t mode, uid_t uid,
                    bool* foreign, std::string* error);

// "job_host.gpscope" -> "job_host.u<uid>-<pid>-<8 random hex>.gpscope":
// unguessable, so nobody can have planted it.
std::string PrivateTraceName(const std::string& name, uid_t uid, pid_t pid);

// Creates `name` in `dir` for writing (O_CREAT|O_TRUNC|O_NOFOLLOW, mode),
// refusing a link, a non-file or a foreign file as above. -1 with *error.
int CreateFileIn(const OutputDir& dir, const std::string& name, mode_t mode, uid_t uid,
                 std::string* error);

// A path the caller is about to dlopen or read: it must name a regular
// file (stat follows links: a library's soname link is fine). Never blocks,
// never opens it: a FIFO or a device there would block the open (inside
// cuInit, or with the loader lock held). False with the reason.
bool IsRegularFile(const std::string& path, std::string* why);

// Before dlopen of a bare library name ("libcupti.so.13"): false with the
// reason when a directory of LD_LIBRARY_PATH holds that name as something
// other than a regular file (the loader would open, and block on, a FIFO).
bool SearchPathIsSafe(const std::string& soname, std::string* why);

}  // namespace gpscope::common

#endif  // GPSCOPE_COMMON_SAFE_PATH_H_
