// inject/stacks/memory_reader.cc: see memory_reader.h.
#include "inject/stacks/memory_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace gpscope::inject::stacks {

SelfMemoryReader::~SelfMemoryReader() {
  const int fd = mem_fd_.load(std::memory_order_relaxed);
  if (fd >= 0) close(fd);
}

bool SelfMemoryReader::Read(uint64_t addr, void* out, size_t size) {
  if (size == 0) return true;
  if (addr == 0 || addr + size < addr) return false;
  if (mode_.load(std::memory_order_relaxed) == 0) {
    iovec local{out, size};
    iovec remote{reinterpret_cast<void*>(addr), size};
    const ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n == static_cast<ssize_t>(size)) return true;
    // EFAULT / a short read: that memory is not (all) mapped. Anything else
    // (ENOSYS, EPERM under seccomp) means the call itself is unavailable.
    if (n >= 0 || errno == EFAULT || errno == ESRCH || errno == ENOMEM) return false;
    mode_.store(1, std::memory_order_relaxed);
  }
  if (mode_.load(std::memory_order_relaxed) == 1) return ReadProcMem(addr, out, size);
  return false;
}

bool SelfMemoryReader::ReadProcMem(uint64_t addr, void* out, size_t size) {
  int fd = mem_fd_.load(std::memory_order_acquire);
  if (fd < 0) {
    const int opened = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    if (opened < 0) {
      mode_.store(2, std::memory_order_relaxed);
      return false;
    }
    int expected = -1;
    if (mem_fd_.compare_exchange_strong(expected, opened, std::memory_order_acq_rel)) {
      fd = opened;
    } else {
      close(opened);
      fd = expected;
    }
  }
  if (addr > static_cast<uint64_t>(INT64_MAX)) return false;
  const ssize_t n = pread(fd, out, size, static_cast<off_t>(addr));
  return n == static_cast<ssize_t>(size);
}

bool BlockReader::Read(uint64_t addr, void* out, size_t size) {
  if (size == 0) return true;
  if (addr + size < addr) return false;
  for (const Block& b : blocks_) {
    if (b.len != 0 && addr >= b.addr && addr + size <= b.addr + b.len) {
      std::memcpy(out, b.data + (addr - b.addr), size);
      return true;
    }
  }
  // A new block from `addr` to the end of its 4 KiB page (at most
  // kBlockBytes): a read that would cross into the next page is fetched
  // on its own instead.
  const uint64_t page_end = (addr | 4095) + 1;
  const size_t len = static_cast<size_t>(
      page_end - addr < kBlockBytes ? page_end - addr : kBlockBytes);
  if (size > len) {
    ++fetches_;
    return inner_->Read(addr, out, size);
  }
  Block& b = blocks_[next_];
  next_ = (next_ + 1) % kBlocks;
  ++fetches_;
  if (!inner_->Read(addr, b.data, len)) {  // the page (mappings are page-granular) is not mapped
    b.len = 0;
    return false;
  }
  b.addr = addr;
  b.len = static_cast<uint32_t>(len);
  std::memcpy(out, b.data, size);
  return true;
}

const char* SelfMemoryReader::method() const {
  switch (mode_.load(std::memory_order_relaxed)) {
    case 0:
      return "process_vm_readv";
    case 1:
      return "/proc/self/mem";
    default:
      return "none";
  }
}

}  // namespace gpscope::inject::stacks
