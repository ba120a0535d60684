// inject/stacks/memory_reader.h: reads of this process's memory that return
// false instead of faulting, for everything off the hot path that follows
// pointers which may have gone stale (a code object freed since capture) or
// that come from a layout not yet trusted (the start-up checks).
//
//   SelfMemoryReader mem;
//   uint64_t type = 0;
//   if (mem.Read(code + 8, &type, sizeof type) && type == code_type) ...
//
// SelfMemoryReader uses process_vm_readv(2) on our own pid: the kernel
// copies and answers EFAULT for an unmapped address. Reading our own thread
// group needs no ptrace permission (the kernel checks same_thread_group
// before Yama or capabilities). Where a seccomp filter refuses the call
// (ENOSYS/EPERM) it falls back to pread(2) on /proc/self/mem, opened once.
// memory_image.h provides a reader over a recorded image instead.
//
// BlockReader caches what a SelfMemoryReader read in blocks of up to
// kBlockBytes (never across a 4 KiB page, so one unmapped page fails only
// the reads inside it): walking another thread's Python frames reads
// several fields within a few hundred bytes of each frame and code object,
// ~2 syscalls per frame instead of ~7 (python_stacks.h,
// CaptureMainThreadPythonStack).
//
// Thread model: Read() may be called from any thread; SelfMemoryReader is
// not for the hot path (one syscall per call). Allocates nothing per read.
#ifndef GPSCOPE_INJECT_STACKS_MEMORY_READER_H_
#define GPSCOPE_INJECT_STACKS_MEMORY_READER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpscope::inject::stacks {

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies `size` bytes at `addr` into `out`; false (and `out` unspecified)
  // when any of them cannot be read.
  virtual bool Read(uint64_t addr, void* out, size_t size) = 0;

  template <typename T>
  bool ReadValue(uint64_t addr, T* out) {
    return Read(addr, out, sizeof(T));
  }
};

class SelfMemoryReader : public MemoryReader {
 public:
  SelfMemoryReader() = default;
  ~SelfMemoryReader() override;
  SelfMemoryReader(const SelfMemoryReader&) = delete;
  SelfMemoryReader& operator=(const SelfMemoryReader&) = delete;

  bool Read(uint64_t addr, void* out, size_t size) override;

  // Which mechanism answered the last read (for the start-up info line).
  const char* method() const;

 private:
  bool ReadProcMem(uint64_t addr, void* out, size_t size);
  std::atomic<int> mode_{0};  // 0 process_vm_readv, 1 /proc/self/mem, 2 neither works
  std::atomic<int> mem_fd_{-1};
};

// Not thread-safe: one per walk (it lives on the caller's stack; no heap).
class BlockReader : public MemoryReader {
 public:
  static constexpr size_t kBlockBytes = 256;
  static constexpr int kBlocks = 4;
  explicit BlockReader(MemoryReader* inner) : inner_(inner) {}
  bool Read(uint64_t addr, void* out, size_t size) override;
  uint32_t fetches() const { return fetches_; }  // reads `inner` answered

 private:
  struct Block {
    uint64_t addr = 0;
    uint32_t len = 0;  // 0: empty
    uint8_t data[kBlockBytes];
  };
  MemoryReader* inner_;
  Block blocks_[kBlocks];
  int next_ = 0;  // round-robin victim
  uint32_t fetches_ = 0;
};

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_MEMORY_READER_H_
