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
// mkdir -p; true when `path` is a directory afterwards.
bool MakeDirs(const std::string& path);
// "<prefix>-20261129-115901", then "-2", "-3"... when taken. Not created.
std::string FreshDir(const std::string& prefix);
// The running executable (/proc/self/exe), or "".
std::string SelfPath();
// The size of a file, or 0 when it cannot be stat()ed.
uint64_t FileSize(const std::string& path);
uint64_t MsSince(std::chrono::steady_clock::time_point t0);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_PATHS_H_
