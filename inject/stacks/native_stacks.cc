// inject/stacks/native_stacks.cc: see native_stacks.h. Built with
// -fno-omit-frame-pointer (inject/stacks/CMakeLists.txt) so the
// frame-pointer walk can start from its own frame.
#include "inject/stacks/native_stacks.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "inject/stacks/fast_unwind.h"

namespace gpscope::inject::stacks {
namespace {

struct UnwindState {
  FrameRef* out;
  int max;
  int skip;  // frames still to skip (our own first)
  int depth;
  bool truncated;
};

_Unwind_Reason_Code OnFrame(_Unwind_Context* ctx, void* arg) {
  auto* s = static_cast<UnwindState*>(arg);
  const uint64_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (s->skip > 0) {
    --s->skip;
    return _URC_NO_REASON;
  }
  if (s->depth >= s->max) {
    s->truncated = true;
    return _URC_END_OF_STACK;
  }
  s->out[s->depth++] = FrameRef{ip, 0, 0};
  return _URC_NO_REASON;
}

}  // namespace

bool CurrentThreadStackBounds(StackBounds* out) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
  void* addr = nullptr;
  size_t size = 0;
  const int r = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (r != 0 || addr == nullptr || size == 0) return false;
  out->lo = reinterpret_cast<uint64_t>(addr);
  out->hi = out->lo + size;
  return true;
}

__attribute__((noinline)) NativeCaptureResult CaptureNativeStackUnwind(FrameRef* out, int max_frames,
                                                                       int skip) {
  // The first frame _Unwind_Backtrace reports is this function's own.
  UnwindState s{out, max_frames, skip + 1, 0, false};
  _Unwind_Backtrace(OnFrame, &s);
  NativeCaptureResult r;
  r.depth = s.depth;
  r.truncated = s.truncated;
  asm volatile("" ::: "memory");  // keeps the call above from becoming a tail call
  return r;
}

// The walk reads saved frame pointers and return addresses of other
// functions' frames: not ASan-instrumented (those slots are no variable's).
__attribute__((noinline, no_sanitize_address)) NativeCaptureResult CaptureNativeStackFramePointers(
    FrameRef* out, int max_frames, int skip, const StackBounds& bounds) {
  NativeCaptureResult r;
  uint64_t fp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  // Our own frame address is a lower bound of everything live above us.
  const StackBounds live{std::max(bounds.lo, fp), bounds.hi};
  while (live.Contains(fp, 16) && (fp & 7) == 0) {
    const uint64_t* frame = reinterpret_cast<const uint64_t*>(fp);  // saved fp, return address
    if (frame[1] == 0) break;
    if (skip > 0) {
      --skip;
    } else if (r.depth >= max_frames) {
      r.truncated = true;
      break;
    } else {
      out[r.depth++] = FrameRef{frame[1], 0, 0};
    }
    if (frame[0] <= fp) break;  // frames grow towards higher addresses
    fp = frame[0];
  }
  return r;
}

__attribute__((noinline)) NativeCaptureResult CaptureNativeStack(FrameRef* out, int max_frames, int skip,
                                                                 const StackBounds& bounds) {
  NativeCaptureResult r;
  if (bounds.hi > bounds.lo) {
    const FastUnwindResult f = FastUnwind(out, max_frames, skip + 1, bounds);  // + this function
    if (f.ok) {
      r.depth = f.depth;
      r.truncated = f.truncated;
      return r;
    }
  }
  r = CaptureNativeStackUnwind(out, max_frames, skip + 1);  // + this function's frame
  r.slow_path = bounds.hi > bounds.lo;
  asm volatile("" ::: "memory");
  return r;
}

std::string BuildIdFromNotes(const void* phdrs, int phnum, uint64_t bias) {
  static const char kHex[] = "0123456789abcdef";
  const auto* ph = static_cast<const ElfW(Phdr)*>(phdrs);
  for (int i = 0; i < phnum; ++i) {
    if (ph[i].p_type != PT_NOTE) continue;
    const uint64_t align = ph[i].p_align == 8 ? 8 : 4;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(bias + ph[i].p_vaddr);
    const uint8_t* end = p + ph[i].p_memsz;
    auto up = [align](uint64_t n) { return (n + align - 1) & ~(align - 1); };
    while (end - p >= static_cast<long>(sizeof(ElfW(Nhdr)))) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p, sizeof n);
      const uint8_t* name = p + sizeof n;
      if (static_cast<uint64_t>(end - name) < up(n.n_namesz)) break;
      const uint8_t* desc = name + up(n.n_namesz);
      if (static_cast<uint64_t>(end - desc) < n.n_descsz) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          n.n_descsz > 0 && n.n_descsz <= 64) {
        std::string hex;
        for (uint32_t j = 0; j < n.n_descsz; ++j) {
          hex.push_back(kHex[desc[j] >> 4]);
          hex.push_back(kHex[desc[j] & 15]);
        }
        return hex;
      }
      if (static_cast<uint64_t>(end - desc) < up(n.n_descsz)) break;
      p = desc + up(n.n_descsz);
    }
  }
  return "";
}

void ModuleMap::Refresh() {
  std::vector<std::unique_ptr<NativeModule>> fresh;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) -> int {
        auto* list = static_cast<std::vector<std::unique_ptr<NativeModule>>*>(arg);
        auto m = std::make_unique<NativeModule>();
        m->bias = info->dlpi_addr;
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
          hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (hi == 0) return 0;  // nothing executable
        m->start = lo;
        m->end = hi;
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          m->path = info->dlpi_name;
        } else if (list->empty()) {  // the first object without a name is the program
          char exe[PATH_MAX];
          const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
          if (n > 0) m->path.assign(exe, static_cast<size_t>(n));
        }
        m->build_id = BuildIdFromNotes(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr);
        list->push_back(std::move(m));
        return 0;
      },
      &fresh);
  std::sort(fresh.begin(), fresh.end(),
            [](const auto& a, const auto& b) { return a->start < b->start; });
  // Keep the objects that did not change, so pointers handed out stay valid.
  for (auto& f : fresh) {
    for (auto& old : modules_) {
      if (old && old->start == f->start && old->bias == f->bias && old->path == f->path &&
          old->build_id == f->build_id) {
        f = std::move(old);
        break;
      }
    }
  }
  for (auto& old : modules_) {
    if (old) retired_.push_back(std::move(old));
  }
  modules_ = std::move(fresh);
}

const NativeModule* ModuleMap::Lookup(uint64_t addr) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), addr,
                             [](uint64_t a, const auto& m) { return a < m->start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return addr < (*it)->end ? it->get() : nullptr;
}

const NativeModule* ModuleMap::Find(uint64_t addr) {
  if (const NativeModule* m = Lookup(addr)) return m;
  Refresh();
  return Lookup(addr);
}

NativeFrameInfo NativeSymbolizer::Symbolize(uint64_t return_address) {
  auto it = cache_.find(return_address);
  if (it != cache_.end()) return it->second;
  NativeFrameInfo f;
  const uint64_t at = return_address - 1;  // inside the call instruction
  f.module = modules_.Find(at);
  if (f.module != nullptr) {
    f.module_offset = at - f.module->bias;
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(at), &info) != 0 && info.dli_sname != nullptr &&
        info.dli_saddr != nullptr) {
      f.function = info.dli_sname;
      f.function_offset = at - reinterpret_cast<uint64_t>(info.dli_saddr);
    }
  }
  cache_.emplace(return_address, f);
  return f;
}

}  // namespace gpscope::inject::stacks
