// tests/tools/symbolize/symbolize_target.cc: a plain C++ program built with
// -g for symbolize_test (tools/model/symbolizer.h). Its static function
// Step() calls Record() on the line marked below; Record() prints what the
// collector records for that frame (inject/stacks/native_stacks.cc): the
// module's path, return address - 1 - load bias, and the module's GNU build
// id read from its PT_NOTE segment in memory. Nothing here is exported or
// named by dladdr: Step is static, as in a user's main.cc loop.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

struct Found {
  uintptr_t at = 0;
  uintptr_t bias = 0;
  char build_id[129] = {};
  bool found = false;
};

int FindModule(dl_phdr_info* info, size_t, void* arg) {
  auto* f = static_cast<Found*>(arg);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (f->at < lo || f->at >= lo + ph.p_memsz) continue;
    f->found = true;
    f->bias = info->dlpi_addr;
    for (int j = 0; j < info->dlpi_phnum; ++j) {
      const ElfW(Phdr)& n = info->dlpi_phdr[j];
      if (n.p_type != PT_NOTE) continue;
      const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + n.p_vaddr);
      const uint8_t* end = p + n.p_memsz;
      while (end - p >= static_cast<long>(sizeof(ElfW(Nhdr)))) {
        ElfW(Nhdr) h;
        std::memcpy(&h, p, sizeof h);
        const uint8_t* name = p + sizeof h;
        const uint8_t* desc = name + ((h.n_namesz + 3) & ~3u);
        if (desc + h.n_descsz > end) break;
        if (h.n_type == NT_GNU_BUILD_ID && h.n_descsz <= 64) {
          for (uint32_t k = 0; k < h.n_descsz; ++k) {
            std::snprintf(f->build_id + 2 * k, 3, "%02x", desc[k]);
          }
          return 1;
        }
        p = desc + ((h.n_descsz + 3) & ~3u);
      }
    }
    return 1;
  }
  return 0;
}

}  // namespace

// Prints "<module path> <offset hex> <build id>" for its caller's frame.
extern "C" __attribute__((noinline)) int Record() {
  Found f;
  f.at = reinterpret_cast<uintptr_t>(__builtin_return_address(0)) - 1;
  dl_iterate_phdr(FindModule, &f);
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (!f.found || n <= 0) return 1;
  std::printf("%s %lx %s\n", exe, static_cast<unsigned long>(f.at - f.bias), f.build_id);
  return 0;
}

static __attribute__((noinline)) int Step(int i) {
  volatile int x = i;
  const int rc = Record();  // SYMBOLIZE-MARKER: the call site
  x = x + rc;
  return x;
}

int main() { return Step(0) == 0 ? 0 : 1; }
