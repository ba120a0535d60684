// tools/gpscope/paths.h: small file-system and clock helpers shared by the
// launcher's commands.
// Thread model: any thread (no shared state).
#ifndef GPSCOPE_TOOLS_GPSCOPE_PATHS_H_
#define GPSCOPE_TOOLS_GPSCOPE_PATHS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace gpscope::launcher {

std::string Dirname(const std::string& path);
std::string Basename(const std::string& path);
// `path` made absolute against the current directory.
std::string Absolute(const std::string& path);
bool IsFile(const std::string& path);
// Opens (creating what is missing) one of the launcher's output
// directories with the collector's checks against other users
// (common/safe_path.h): mode 0750, ours or root's, never through another
// user's link. *absolute: its absolute path. False with one line.
bool OpenOwnDir(const std::string& path, std::string* absolute, std::string* error);
// Creates (or truncates) the file `path` in a directory OpenOwnDir checked:
// never through a link, never another user's file; permission bits 0640.
// The fd, or -1 with one line in *error.
int CreateOwnFile(const std::string& path, std::string* error);
// User-supplied text shown in a message line (a path, a value, a reply
// read from a socket): one line, no control characters (common/safe_text.h).
std::string Shown(const std::string& text);
// "<prefix>-20261129-115901", then "-2", "-3"... when taken. Not created.
std::string FreshDir(const std::string& prefix);
// The running executable (/proc/self/exe), or "".
std::string SelfPath();
// The size of a file, or 0 when it cannot be stat()ed.
uint64_t FileSize(const std::string& path);
uint64_t MsSince(std::chrono::steady_clock::time_point t0);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_PATHS_H_
