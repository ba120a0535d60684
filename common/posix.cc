// common/posix.cc: see posix.h.
#include "common/posix.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

namespace gpscope::common {

void SleepMs(uint32_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);  // EINTR: return early, the caller looks again
}

uint64_t RandomUid() {
  uint64_t uid = 0;
  if (getrandom(&uid, sizeof(uid), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(uid)) ||
      uid == 0) {
    uid = ClockNs(CLOCK_REALTIME) ^ (static_cast<uint64_t>(getpid()) << 32) ^
          ClockNs(CLOCK_MONOTONIC) ^ 0x9e3779b97f4a7c15ull;
  }
  return uid == 0 ? 1 : uid;
}

std::string ReadFileText(const char* path, size_t max_bytes) {
  std::string out;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[8192];
  while (out.size() < max_bytes) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const size_t room = max_bytes - out.size();
    out.append(buf, static_cast<size_t>(n) < room ? static_cast<size_t>(n) : room);
  }
  close(fd);
  return out;
}

std::map<std::string, std::string> ParseEnvironBlock(std::string_view block) {
  std::map<std::string, std::string> env;
  for (size_t pos = 0; pos < block.size();) {
    size_t nul = block.find('\0', pos);
    if (nul == std::string_view::npos) nul = block.size();
    const std::string_view entry = block.substr(pos, nul - pos);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos) env[std::string(entry.substr(0, eq))] = entry.substr(eq + 1);
    pos = nul + 1;
  }
  return env;
}

}  // namespace gpscope::common
