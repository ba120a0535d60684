// inject/cupti_hooks.cc: see cupti_hooks.h.
#include "inject/cupti_hooks.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/posix.h"

namespace gpscope::inject {
namespace {

enum Api : int { kSubscribe = 0, kSubscribeV2 = 1, kRegister = 2, kApis = 3 };
constexpr const char* kApiNames[kApis] = {"cuptiSubscribe", "cuptiSubscribe_v2",
                                          "cuptiActivityRegisterCallbacks"};

std::atomic<decltype(&::cuptiSubscribe)> g_real_subscribe{nullptr};
std::atomic<decltype(&::cuptiSubscribe_v2)> g_real_subscribe_v2{nullptr};
std::atomic<decltype(&::cuptiActivityRegisterCallbacks)> g_real_register{nullptr};
std::atomic<bool> g_holding{false};
std::atomic<size_t> g_patched{0};

// Set once by InstallCuptiHooks, then read-only (start-up / writer thread).
bool g_installed = false;
uintptr_t g_self_base = 0;   // our own library: never patched
uintptr_t g_cupti_base = 0;  // libcupti itself: never patched
char g_cupti_name[256];      // its file name, as DT_NEEDED lists it
unsigned long long g_last_adds = ~0ull;

// ---- the refusals the wrappers note (lock-free, fixed) ----

struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being claimed, 2 ready
  std::atomic<uintptr_t> pc{0};
  std::atomic<int> api{0};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> first_ns{0};
  std::atomic<uint64_t> last_ns{0};
  std::atomic<uint32_t> result{0};
  uint64_t reported = 0;  // the collecting thread only
};
constexpr int kSlots = 16;
Slot g_slots[kSlots];
// Calls from a 17th call site: counted per API without a caller.
std::atomic<uint64_t> g_overflow[kApis];
std::atomic<uint64_t> g_overflow_last_ns[kApis];
uint64_t g_overflow_reported[kApis];

void Hit(Slot& s, uint64_t now, uint32_t result) {
  s.result.store(result, std::memory_order_relaxed);
  s.last_ns.store(now, std::memory_order_relaxed);
  s.count.fetch_add(1, std::memory_order_release);
}

// Application thread, inside a wrapper: no lock, no allocation.
void Note(int api, uintptr_t pc, uint32_t result) {
  const uint64_t now = common::ClockNs(CLOCK_REALTIME);
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    int state = s.state.load(std::memory_order_acquire);
    while (state == 1) state = s.state.load(std::memory_order_acquire);  // a few stores away
    if (state == 2) {
      if (s.pc.load(std::memory_order_relaxed) == pc &&
          s.api.load(std::memory_order_relaxed) == api) {
        Hit(s, now, result);
        return;
      }
      continue;
    }
    int expected = 0;
    if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      s.pc.store(pc, std::memory_order_relaxed);
      s.api.store(api, std::memory_order_relaxed);
      s.first_ns.store(now, std::memory_order_relaxed);
      s.state.store(2, std::memory_order_release);
      Hit(s, now, result);
      return;
    }
    --i;  // claimed by another thread meanwhile: look at it again
  }
  g_overflow_last_ns[api].store(now, std::memory_order_relaxed);
  g_overflow[api].fetch_add(1, std::memory_order_release);
}

// ---- the wrappers the patched GOT slots point at ----

__attribute__((noinline)) CUptiResult CUPTIAPI HookSubscribe(CUpti_SubscriberHandle* subscriber,
                                                             CUpti_CallbackFunc callback,
                                                             void* userdata) {
  auto real = g_real_subscribe.load(std::memory_order_acquire);
  const CUptiResult r =
      real != nullptr ? real(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED &&
      g_holding.load(std::memory_order_acquire)) {
    Note(kSubscribe, reinterpret_cast<uintptr_t>(__builtin_return_address(0)), r);
  }
  return r;
}

__attribute__((noinline)) CUptiResult CUPTIAPI HookSubscribeV2(CUpti_SubscriberHandle* subscriber,
                                                               CUpti_CallbackFunc callback,
                                                               void* userdata,
                                                               CUpti_SubscriberParams* params) {
  auto real = g_real_subscribe_v2.load(std::memory_order_acquire);
  const CUptiResult r = real != nullptr ? real(subscriber, callback, userdata, params)
                                        : CUPTI_ERROR_NOT_INITIALIZED;
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED &&
      g_holding.load(std::memory_order_acquire)) {
    Note(kSubscribeV2, reinterpret_cast<uintptr_t>(__builtin_return_address(0)), r);
  }
  return r;
}

__attribute__((noinline)) CUptiResult CUPTIAPI HookRegister(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  if (g_holding.load(std::memory_order_acquire)) {
    // Two clients' buffer callbacks cannot both work: ours would be replaced
    // and our in-flight buffers handed to the other (measured on the H200:
    // both traces ended empty). We hold CUPTI: the other is refused.
    Note(kRegister, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
         CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  auto real = g_real_register.load(std::memory_order_acquire);
  return real != nullptr ? real(request, complete) : CUPTI_ERROR_NOT_INITIALIZED;
}

// ---- GOT patching ----

struct Target {
  const char* name;
  void* real;
  void* hook;
};

// The protection /proc/self/maps shows for the page at `addr` (PROT_*), or
// -1 when it cannot tell. No allocation: a stack buffer, line by line.
int PageProtection(uintptr_t addr) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[8192];
  size_t have = 0;
  int prot = -1;
  for (bool eof = false; prot < 0 && !eof;) {
    const ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
    if (n <= 0) eof = true;
    if (n > 0) have += static_cast<size_t>(n);
    buf[have] = '\0';
    char* line = buf;
    for (char* nl; prot < 0 && (nl = strchr(line, '\n')) != nullptr; line = nl + 1) {
      *nl = '\0';
      char* end = nullptr;
      const unsigned long long lo = strtoull(line, &end, 16);
      if (end == nullptr || *end != '-') continue;
      const unsigned long long hi = strtoull(end + 1, &end, 16);
      if (end == nullptr || *end != ' ' || addr < lo || addr >= hi) continue;
      const char* perms = end + 1;
      prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
             (perms[2] == 'x' ? PROT_EXEC : 0);
    }
    // Keep the unfinished line for the next read.
    const size_t rest = have - static_cast<size_t>(line - buf);
    memmove(buf, line, rest);
    have = rest;
    if (have == sizeof(buf) - 1) have = 0;  // a line longer than the buffer: skip it
  }
  close(fd);
  return prot;
}

// Writes `value` into the 8-byte slot, making its page writable for the
// store if it is not, and restoring exactly the protection it had.
bool WriteSlot(void** slot, void* value) {
  const long page_size = sysconf(_SC_PAGESIZE);
  const uintptr_t page =
      reinterpret_cast<uintptr_t>(slot) & ~static_cast<uintptr_t>(page_size - 1);
  const int prot = PageProtection(page);
  if (prot < 0 || (prot & PROT_READ) == 0) return false;
  if (prot & PROT_WRITE) {
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return true;
  }
  void* const page_ptr = reinterpret_cast<void*>(page);
  if (mprotect(page_ptr, static_cast<size_t>(page_size), prot | PROT_WRITE) != 0) return false;
  void* const old = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (mprotect(page_ptr, static_cast<size_t>(page_size), prot) != 0) {
    // Cannot give the page its protection back: undo the store and try again.
    __atomic_store_n(slot, old, __ATOMIC_RELEASE);
    mprotect(page_ptr, static_cast<size_t>(page_size), prot);
    return false;
  }
  return true;
}

struct Object {
  uintptr_t base = 0;
  const ElfW(Phdr)* phdr = nullptr;
  size_t phnum = 0;
  // Inside one of the object's PT_LOAD segments (as mapped).
  bool Contains(uintptr_t addr, size_t bytes) const {
    for (size_t i = 0; i < phnum; ++i) {
      if (phdr[i].p_type != PT_LOAD) continue;
      const uintptr_t lo = base + phdr[i].p_vaddr;
      const uintptr_t hi = lo + phdr[i].p_memsz;
      if (addr >= lo && addr <= hi && bytes <= hi - addr) return true;
    }
    return false;
  }
};

struct Dynamic {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  uintptr_t jmprel = 0, pltrelsz = 0, pltrel = 0;
  uintptr_t rela = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
  bool needs_our_cupti = false;
};

// glibc relocates the d_ptr entries in place; other loaders may not.
uintptr_t Ptr(const Object& o, uintptr_t v) { return v != 0 && v < o.base ? v + o.base : v; }

bool ReadDynamic(const Object& o, const ElfW(Phdr)& dyn_ph, Dynamic* d) {
  const uintptr_t dyn_addr = o.base + dyn_ph.p_vaddr;
  const size_t count = dyn_ph.p_memsz / sizeof(ElfW(Dyn));
  if (count == 0 || !o.Contains(dyn_addr, count * sizeof(ElfW(Dyn)))) return false;
  const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(dyn_addr);
  size_t needed[64];
  size_t needed_n = 0;
  for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; ++i) {
    const uintptr_t v = dyn[i].d_un.d_ptr;
    switch (dyn[i].d_tag) {
      case DT_SYMTAB: d->symtab = reinterpret_cast<const ElfW(Sym)*>(Ptr(o, v)); break;
      case DT_STRTAB: d->strtab = reinterpret_cast<const char*>(Ptr(o, v)); break;
      case DT_STRSZ: d->strsz = dyn[i].d_un.d_val; break;
      case DT_JMPREL: d->jmprel = Ptr(o, v); break;
      case DT_PLTRELSZ: d->pltrelsz = dyn[i].d_un.d_val; break;
      case DT_PLTREL: d->pltrel = dyn[i].d_un.d_val; break;
      case DT_RELA: d->rela = Ptr(o, v); break;
      case DT_RELASZ: d->relasz = dyn[i].d_un.d_val; break;
      case DT_RELAENT: d->relaent = dyn[i].d_un.d_val; break;
      case DT_NEEDED:
        if (needed_n < 64) needed[needed_n++] = dyn[i].d_un.d_val;
        break;
      default: break;
    }
  }
  if (d->symtab == nullptr || d->strtab == nullptr || d->strsz == 0 ||
      !o.Contains(reinterpret_cast<uintptr_t>(d->strtab), d->strsz) ||
      !o.Contains(reinterpret_cast<uintptr_t>(d->symtab), sizeof(ElfW(Sym))) ||
      d->strtab[d->strsz - 1] != '\0') {
    return false;
  }
  for (size_t i = 0; i < needed_n; ++i) {
    if (needed[i] < d->strsz && g_cupti_name[0] != '\0' &&
        strcmp(d->strtab + needed[i], g_cupti_name) == 0) {
      d->needs_our_cupti = true;
    }
  }
  return true;
}

struct ScanState {
  const Target* targets;
  size_t target_count;
  bool first = true;
};

// The relocations of one table that bind one of our targets: their slots.
void PatchTable(const Object& o, const Dynamic& d, uintptr_t table, size_t bytes, size_t entry,
                const ScanState& scan) {
  if (table == 0 || bytes == 0 || entry < sizeof(ElfW(Rel)) || !o.Contains(table, bytes)) return;
  for (size_t off = 0; off + entry <= bytes; off += entry) {
    const auto* r = reinterpret_cast<const ElfW(Rel)*>(table + off);
    const uint64_t type = ELF64_R_TYPE(r->r_info);
    const uint64_t sym = ELF64_R_SYM(r->r_info);
#if defined(__x86_64__)
    const bool binds = type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
    const bool binds = type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT;
#else
    const bool binds = false;
#endif
    if (!binds || sym == 0) continue;
    const ElfW(Sym)* s = d.symtab + sym;
    if (!o.Contains(reinterpret_cast<uintptr_t>(s), sizeof(*s)) || s->st_name >= d.strsz) continue;
    const char* name = d.strtab + s->st_name;
    for (size_t t = 0; t < scan.target_count; ++t) {
      const Target& target = scan.targets[t];
      if (target.real == nullptr || strcmp(name, target.name) != 0) continue;
      const uintptr_t slot_addr = o.base + r->r_offset;
      if (slot_addr % sizeof(void*) != 0 || !o.Contains(slot_addr, sizeof(void*))) break;
      void** slot = reinterpret_cast<void**>(slot_addr);
      void* const current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      if (current == target.hook) break;  // done before
      // Resolved to our libcupti, or a lazy PLT stub of an object that
      // links it; anything else (another copy of CUPTI, an interposer) stays.
      const bool resolved = current == target.real;
      const bool lazy = d.needs_our_cupti &&
                        o.Contains(reinterpret_cast<uintptr_t>(current), 1);
      if ((resolved || lazy) && WriteSlot(slot, target.hook)) {
        g_patched.fetch_add(1, std::memory_order_relaxed);
      }
      break;
    }
  }
}

int PatchObject(dl_phdr_info* info, size_t size, void* data) {
  auto* scan = static_cast<ScanState*>(data);
  if (scan->first) {
    scan->first = false;
    // Nothing loaded or unloaded since the last scan: stop here.
    if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
      const unsigned long long adds = info->dlpi_adds + (info->dlpi_subs << 32);
      if (adds == g_last_adds) return 1;
      g_last_adds = adds;
    }
  }
  Object o;
  o.base = info->dlpi_addr;
  o.phdr = info->dlpi_phdr;
  o.phnum = info->dlpi_phnum;
  if (o.phdr == nullptr || o.phnum == 0 || o.base == g_self_base || o.base == g_cupti_base) {
    return 0;
  }
  const ElfW(Phdr)* dyn_ph = nullptr;
  for (size_t i = 0; i < o.phnum; ++i) {
    if (o.phdr[i].p_type == PT_DYNAMIC) dyn_ph = &o.phdr[i];
  }
  Dynamic d;
  if (dyn_ph == nullptr || !ReadDynamic(o, *dyn_ph, &d)) return 0;
  const size_t plt_entry = d.pltrel == DT_RELA ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
  PatchTable(o, d, d.jmprel, d.pltrelsz, plt_entry, *scan);
  PatchTable(o, d, d.rela, d.relasz, d.relaent, *scan);
  return 0;
}

void Scan() {
  const Target targets[] = {
      {kApiNames[kSubscribe], reinterpret_cast<void*>(g_real_subscribe.load()),
       reinterpret_cast<void*>(&HookSubscribe)},
      {kApiNames[kSubscribeV2], reinterpret_cast<void*>(g_real_subscribe_v2.load()),
       reinterpret_cast<void*>(&HookSubscribeV2)},
      {kApiNames[kRegister], reinterpret_cast<void*>(g_real_register.load()),
       reinterpret_cast<void*>(&HookRegister)},
  };
  ScanState scan{targets, sizeof(targets) / sizeof(targets[0])};
  dl_iterate_phdr(PatchObject, &scan);
}

uintptr_t BaseOf(const void* addr) {
  Dl_info info;
  return dladdr(addr, &info) != 0 ? reinterpret_cast<uintptr_t>(info.dli_fbase) : 0;
}

}  // namespace

void InstallCuptiHooks(const CuptiHookTargets& t) {
  if (g_installed || t.subscribe == nullptr) return;
  g_installed = true;
  g_real_subscribe.store(t.subscribe, std::memory_order_release);
  g_real_subscribe_v2.store(t.subscribe_v2, std::memory_order_release);
  g_real_register.store(t.register_callbacks, std::memory_order_release);
  g_self_base = BaseOf(reinterpret_cast<const void*>(&InstallCuptiHooks));
  g_cupti_base = BaseOf(reinterpret_cast<const void*>(t.subscribe));
  const size_t slash = t.cupti_path.rfind('/');
  const std::string name =
      slash == std::string::npos ? t.cupti_path : t.cupti_path.substr(slash + 1);
  snprintf(g_cupti_name, sizeof(g_cupti_name), "%s", name.c_str());
  Scan();
}

void RescanCuptiHooks() {
  if (g_installed) Scan();
}

void SetHoldingCupti(bool holding) { g_holding.store(holding, std::memory_order_release); }

size_t PatchedCuptiSlots() { return g_patched.load(std::memory_order_relaxed); }

size_t CollectCuptiRefusals(CuptiRefusal* out, size_t cap) {
  size_t n = 0;
  for (Slot& s : g_slots) {
    if (n == cap) break;
    if (s.state.load(std::memory_order_acquire) != 2) continue;
    const uint64_t count = s.count.load(std::memory_order_acquire);
    if (count == s.reported) continue;
    s.reported = count;
    out[n++] = {kApiNames[s.api.load(std::memory_order_relaxed)],
                s.pc.load(std::memory_order_relaxed), count,
                s.first_ns.load(std::memory_order_relaxed),
                s.last_ns.load(std::memory_order_relaxed),
                s.result.load(std::memory_order_relaxed)};
  }
  for (int api = 0; api < kApis && n < cap; ++api) {
    const uint64_t count = g_overflow[api].load(std::memory_order_acquire);
    if (count == g_overflow_reported[api]) continue;
    g_overflow_reported[api] = count;
    const uint64_t last = g_overflow_last_ns[api].load(std::memory_order_relaxed);
    out[n++] = {kApiNames[api], 0, count, last, last,
                CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED};
  }
  return n;
}

}  // namespace gpscope::inject
