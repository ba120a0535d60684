// inject/stacks/fast_unwind.cc: see fast_unwind.h. Written from the DWARF
// call-frame information spec (DWARF 4 section 6.4), the LSB's .eh_frame /
// .eh_frame_hdr description and the x86-64 psABI register numbering (6 rbp,
// 7 rsp, 16 return address).
#include "inject/stacks/fast_unwind.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "inject/stacks/native_stacks.h"

namespace gpscope::inject::stacks {
namespace {

// glibc's struct dl_find_object (<dlfcn.h>, 2.35+), mirrored so this
// builds against older headers; the reserved tail is larger than glibc's.
struct FindObject {
  unsigned long long flags;
  void* map_start;
  void* map_end;
  void* link_map;
  void* eh_frame;
  unsigned long long reserved[16];
};
using FindObjectFn = int (*)(void*, FindObject*);
std::atomic<FindObjectFn> g_find_object{nullptr};

constexpr int kRegRbp = 6;
constexpr int kRegRsp = 7;
constexpr int kRegRa = 16;

// Bounded little-endian reads of module data.
struct Bytes {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool Has(size_t n) {
    if (!ok || static_cast<size_t>(end - p) < n) ok = false;
    return ok;
  }
  template <typename T>
  T Fixed() {
    T v{};
    if (!Has(sizeof v)) return v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; Has(1); shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      if (shift > 63) ok = false;
    }
    return 0;
  }
  int64_t Sleb() {
    int64_t v = 0;
    int shift = 0;
    while (Has(1)) {
      const uint8_t b = *p++;
      if (shift < 64) v |= static_cast<int64_t>(static_cast<uint64_t>(b & 0x7f) << shift);
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= -(int64_t{1} << shift);
        return v;
      }
      if (shift > 70) ok = false;
    }
    return 0;
  }
  // The value part of a DW_EH_PE encoding (low nibble).
  bool Value(uint8_t enc, uint64_t* out) {
    switch (enc & 0x0f) {
      case 0x00:  // absptr
      case 0x04:  // udata8
      case 0x0c:  // sdata8
        *out = Fixed<uint64_t>();
        break;
      case 0x01:
        *out = Uleb();
        break;
      case 0x02:
        *out = Fixed<uint16_t>();
        break;
      case 0x03:
        *out = Fixed<uint32_t>();
        break;
      case 0x09:
        *out = static_cast<uint64_t>(Sleb());
        break;
      case 0x0a:
        *out = static_cast<uint64_t>(static_cast<int64_t>(Fixed<int16_t>()));
        break;
      case 0x0b:
        *out = static_cast<uint64_t>(static_cast<int64_t>(Fixed<int32_t>()));
        break;
      default:
        return ok = false;
    }
    return ok;
  }
  // A whole encoded pointer: pc-relative or relative to `datarel`; no
  // indirection (only personality pointers use it, and those are skipped).
  bool Pointer(uint8_t enc, uint64_t datarel, uint64_t* out) {
    if (enc == 0xff || (enc & 0x80)) return ok = false;  // omit / indirect
    const uint64_t field = reinterpret_cast<uint64_t>(p);
    uint64_t v = 0;
    if (!Value(enc, &v)) return false;
    switch (enc & 0x70) {
      case 0x00:
        break;
      case 0x10:
        v += field;
        break;
      case 0x30:
        v += datarel;
        break;
      default:
        return ok = false;
    }
    *out = v;
    return true;
  }
  // Skips an encoded pointer of any application (the 'P' augmentation).
  bool SkipPointer(uint8_t enc) {
    uint64_t v = 0;
    return Value(enc & 0x0f, &v);
  }
};

// Where a register's value in the caller is, as the CFA program says.
struct RegRule {
  enum Kind : uint8_t { kSame, kUndefined, kOffset, kOther } kind = kSame;
  int64_t offset = 0;  // kOffset: at CFA + offset
};

struct CfaState {
  int cfa_reg = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  RegRule rbp;
  RegRule ra;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint8_t fde_encoding = 0;  // absptr
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

// An entry's extent: [start of its id field, end).
bool EntryExtent(const uint8_t* at, const uint8_t** body, const uint8_t** end) {
  Bytes b{at, at + 12};
  uint64_t length = b.Fixed<uint32_t>();
  if (length == 0xffffffffu) length = b.Fixed<uint64_t>();
  if (!b.ok || length == 0 || length > (1u << 30)) return false;
  *body = b.p;
  *end = b.p + length;
  return true;
}

bool ParseCie(const uint8_t* at, Cie* cie) {
  const uint8_t* body = nullptr;
  const uint8_t* end = nullptr;
  if (!EntryExtent(at, &body, &end)) return false;
  Bytes b{body, end};
  if (b.Fixed<uint32_t>() != 0) return false;  // .eh_frame CIEs have id 0
  const uint8_t version = b.Fixed<uint8_t>();
  if (version != 1 && version != 3 && version != 4) return false;
  const char* aug = reinterpret_cast<const char*>(b.p);
  const void* nul = b.ok ? std::memchr(b.p, 0, static_cast<size_t>(end - b.p)) : nullptr;
  if (nul == nullptr) return false;
  b.p = static_cast<const uint8_t*>(nul) + 1;
  if (version == 4) {
    if (b.Fixed<uint8_t>() != 8 || b.Fixed<uint8_t>() != 0) return false;  // address, segment size
  }
  cie->code_align = b.Uleb();
  cie->data_align = b.Sleb();
  const uint64_t ra = version == 1 ? b.Fixed<uint8_t>() : b.Uleb();
  if (!b.ok || ra != kRegRa) return false;
  if (aug[0] == 'z') {
    cie->has_augmentation_data = true;
    const uint64_t n = b.Uleb();
    if (!b.Has(n)) return false;
    const uint8_t* data_end = b.p + n;
    for (const char* a = aug + 1; *a != '\0'; ++a) {
      if (*a == 'R') {
        cie->fde_encoding = b.Fixed<uint8_t>();
      } else if (*a == 'P') {
        if (!b.SkipPointer(b.Fixed<uint8_t>())) return false;
      } else if (*a == 'L') {
        b.Fixed<uint8_t>();
      } else if (*a == 'S') {
        cie->signal_frame = true;
      } else {
        break;  // unknown letters: the length lets us skip the rest
      }
    }
    b.p = data_end;
  } else if (aug[0] != '\0') {
    return false;
  }
  cie->instructions = b.p;
  cie->end = end;
  return b.ok;
}

void SetRule(CfaState* s, uint64_t reg, RegRule rule) {
  if (reg == kRegRbp) s->rbp = rule;
  if (reg == kRegRa) s->ra = rule;
}

// Runs a CFA program until the row that covers `pc` (loc starts at `loc`).
// False on an opcode this unwinder does not know.
bool RunCfa(Bytes b, const Cie& cie, uint64_t pc, uint64_t loc, const CfaState& initial,
            CfaState* s) {
  CfaState stack[8];
  int depth = 0;
  auto advance = [&](uint64_t delta) {
    loc += delta * cie.code_align;
    return loc <= pc;
  };
  while (b.p < b.end && b.ok) {
    const uint8_t op = b.Fixed<uint8_t>();
    const uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40:
        if (!advance(low)) return true;
        continue;
      case 0x80:
        SetRule(s, low, {RegRule::kOffset, static_cast<int64_t>(b.Uleb()) * cie.data_align});
        continue;
      case 0xc0:
        SetRule(s, low, low == kRegRbp ? initial.rbp : initial.ra);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:  // nop
        break;
      case 0x01: {  // set_loc
        uint64_t to = 0;
        if (!b.Pointer(cie.fde_encoding, 0, &to)) return false;
        if (to > pc) return true;
        loc = to;
        break;
      }
      case 0x02:
        if (!advance(b.Fixed<uint8_t>())) return true;
        break;
      case 0x03:
        if (!advance(b.Fixed<uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(b.Fixed<uint32_t>())) return true;
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = b.Uleb();
        SetRule(s, reg, {RegRule::kOffset, static_cast<int64_t>(b.Uleb()) * cie.data_align});
        break;
      }
      case 0x06: {  // restore_extended
        const uint64_t reg = b.Uleb();
        if (reg == kRegRbp) s->rbp = initial.rbp;
        if (reg == kRegRa) s->ra = initial.ra;
        break;
      }
      case 0x07:  // undefined
        SetRule(s, b.Uleb(), {RegRule::kUndefined, 0});
        break;
      case 0x08:  // same_value
        SetRule(s, b.Uleb(), {RegRule::kSame, 0});
        break;
      case 0x09: {  // register
        const uint64_t reg = b.Uleb();
        b.Uleb();
        SetRule(s, reg, {RegRule::kOther, 0});
        break;
      }
      case 0x0a:  // remember_state
        if (depth == 8) return false;
        stack[depth++] = *s;
        break;
      case 0x0b:  // restore_state (the CFA rule included, as GCC emits it)
        if (depth == 0) return false;
        *s = stack[--depth];
        break;
      case 0x0c:  // def_cfa
        s->cfa_reg = static_cast<int>(b.Uleb());
        s->cfa_offset = static_cast<int64_t>(b.Uleb());
        s->cfa_expression = false;
        break;
      case 0x0d:  // def_cfa_register
        s->cfa_reg = static_cast<int>(b.Uleb());
        break;
      case 0x0e:  // def_cfa_offset
        s->cfa_offset = static_cast<int64_t>(b.Uleb());
        break;
      case 0x0f: {  // def_cfa_expression
        const uint64_t n = b.Uleb();
        if (!b.Has(n)) return false;
        b.p += n;
        s->cfa_expression = true;
        break;
      }
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const uint64_t reg = b.Uleb();
        const uint64_t n = b.Uleb();
        if (!b.Has(n)) return false;
        b.p += n;
        SetRule(s, reg, {RegRule::kOther, 0});
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = b.Uleb();
        SetRule(s, reg, {RegRule::kOffset, b.Sleb() * cie.data_align});
        break;
      }
      case 0x12:  // def_cfa_sf
        s->cfa_reg = static_cast<int>(b.Uleb());
        s->cfa_offset = b.Sleb() * cie.data_align;
        s->cfa_expression = false;
        break;
      case 0x13:  // def_cfa_offset_sf
        s->cfa_offset = b.Sleb() * cie.data_align;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = b.Uleb();
        if (op == 0x14) {
          b.Uleb();
        } else {
          b.Sleb();
        }
        SetRule(s, reg, {RegRule::kOther, 0});
        break;
      }
      case 0x2e:  // GNU_args_size
        b.Uleb();
        break;
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = b.Uleb();
        SetRule(s, reg, {RegRule::kOffset, -static_cast<int64_t>(b.Uleb()) * cie.data_align});
        break;
      }
      default:
        return false;
    }
  }
  return b.ok;
}

UnwindRule Unsupported() {
  UnwindRule r;
  r.kind = UnwindRule::kUnsupported;
  return r;
}

UnwindRule Outermost() {
  UnwindRule r;
  r.kind = UnwindRule::kOutermost;
  return r;
}

// ---- the rule cache ----------------------------------------------------

constexpr int kSlotBits = 14;
constexpr uint64_t kSlots = uint64_t{1} << kSlotBits;
constexpr int kProbes = 16;
std::atomic<uint64_t> g_keys[kSlots];    // return address - 1 (0: free)
std::atomic<uint64_t> g_values[kSlots];  // packed rule (0: being written)
std::atomic<uint64_t> g_cached{0};
std::atomic<uint64_t> g_full{0};

// kind 2 bits | cfa_from_rbp 1 | rbp kind 2 | cfa_offset 27 (signed) |
// rbp_offset 16 | ra_offset 16. Never 0: kind is at least 1.
uint64_t Pack(const UnwindRule& r) {
  return static_cast<uint64_t>(r.kind) | (static_cast<uint64_t>(r.cfa_from_rbp) << 2) |
         (static_cast<uint64_t>(r.rbp) << 3) |
         ((static_cast<uint64_t>(static_cast<uint32_t>(r.cfa_offset)) & 0x7ffffff) << 5) |
         (static_cast<uint64_t>(static_cast<uint16_t>(r.rbp_offset)) << 32) |
         (static_cast<uint64_t>(static_cast<uint16_t>(r.ra_offset)) << 48);
}

UnwindRule Unpack(uint64_t v) {
  UnwindRule r;
  r.kind = static_cast<UnwindRule::Kind>(v & 3);
  r.cfa_from_rbp = (v >> 2) & 1;
  r.rbp = static_cast<UnwindRule::RbpKind>((v >> 3) & 3);
  int32_t off = static_cast<int32_t>((v >> 5) & 0x7ffffff);
  if (off & 0x4000000) off -= 0x8000000;  // sign-extend 27 bits
  r.cfa_offset = off;
  r.rbp_offset = static_cast<int16_t>(v >> 32);
  r.ra_offset = static_cast<int16_t>(v >> 48);
  return r;
}

UnwindRule CachedRule(uint64_t pc) {
  const uint64_t h = (pc * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits);
  for (int i = 0; i < kProbes; ++i) {
    const uint64_t slot = (h + i) & (kSlots - 1);
    uint64_t key = g_keys[slot].load(std::memory_order_acquire);
    if (key == pc) {
      const uint64_t v = g_values[slot].load(std::memory_order_acquire);
      return v != 0 ? Unpack(v) : ComputeUnwindRule(pc);  // another thread is storing it
    }
    if (key == 0) {
      const UnwindRule rule = ComputeUnwindRule(pc);
      if (g_keys[slot].compare_exchange_strong(key, pc, std::memory_order_acq_rel)) {
        g_values[slot].store(Pack(rule), std::memory_order_release);
        g_cached.fetch_add(1, std::memory_order_relaxed);
        return rule;
      }
      if (key == pc) return rule;  // the same address, stored by another thread
      // Another address took the slot: probe on, with the rule in hand.
      for (++i; i < kProbes; ++i) {
        const uint64_t s2 = (h + i) & (kSlots - 1);
        uint64_t k2 = g_keys[s2].load(std::memory_order_acquire);
        if (k2 == pc) return rule;
        if (k2 == 0 && g_keys[s2].compare_exchange_strong(k2, pc, std::memory_order_acq_rel)) {
          g_values[s2].store(Pack(rule), std::memory_order_release);
          g_cached.fetch_add(1, std::memory_order_relaxed);
          return rule;
        }
      }
      g_full.fetch_add(1, std::memory_order_relaxed);
      return rule;
    }
  }
  g_full.fetch_add(1, std::memory_order_relaxed);
  return ComputeUnwindRule(pc);
}

}  // namespace

bool InitFastUnwind(std::string* why) {
#if defined(__x86_64__)
  auto fn = reinterpret_cast<FindObjectFn>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  if (fn == nullptr) {
    *why = "glibc has no _dl_find_object (needs 2.35+): native stacks use _Unwind_Backtrace";
    return false;
  }
  g_find_object.store(fn, std::memory_order_release);
  return true;
#else
  *why = "the fast unwinder is x86-64 only: native stacks use _Unwind_Backtrace";
  return false;
#endif
}

UnwindRule ComputeUnwindRule(uint64_t pc) {
  const FindObjectFn find = g_find_object.load(std::memory_order_acquire);
  if (find == nullptr) return Unsupported();
  FindObject obj;
  if (find(reinterpret_cast<void*>(pc), &obj) != 0) return Outermost();  // no module: the end
  const auto* hdr = static_cast<const uint8_t*>(obj.eh_frame);
  if (hdr == nullptr) return Outermost();  // no unwind information, as libgcc stops too
  const uint64_t base = reinterpret_cast<uint64_t>(hdr);
  if (hdr[0] != 1) return Unsupported();
  const uint8_t ptr_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
  Bytes b{hdr + 4, hdr + 4 + 32};
  uint64_t eh_frame = 0, count = 0;
  if (!b.Pointer(ptr_enc, base, &eh_frame) || !b.Pointer(count_enc, base, &count)) {
    return Unsupported();
  }
  if (table_enc != 0x3b || count == 0 || count > (1u << 26)) return Unsupported();  // datarel|sdata4
  // The sorted table of (initial location, FDE), both relative to hdr.
  const auto* table = b.p;
  auto entry = [table](uint64_t i, int which) {
    int32_t v;
    std::memcpy(&v, table + 8 * i + 4 * which, 4);
    return v;
  };
  const int64_t target = static_cast<int64_t>(pc - base);
  uint64_t lo = 0, hi = count;  // the last entry with initial location <= target
  if (entry(0, 0) > target) return Outermost();
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry(mid, 0) <= target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const uint8_t* fde = hdr + entry(lo, 1);
  const uint8_t* body = nullptr;
  const uint8_t* end = nullptr;
  if (!EntryExtent(fde, &body, &end)) return Unsupported();
  Bytes f{body, end};
  const uint32_t cie_offset = f.Fixed<uint32_t>();
  if (!f.ok || cie_offset == 0) return Unsupported();
  Cie cie;
  if (!ParseCie(body - cie_offset, &cie)) return Unsupported();
  if (cie.signal_frame) return Unsupported();
  uint64_t pc_begin = 0, pc_range = 0;
  if (!f.Pointer(cie.fde_encoding, base, &pc_begin) || !f.Value(cie.fde_encoding, &pc_range)) {
    return Unsupported();
  }
  if (pc < pc_begin || pc - pc_begin >= pc_range) return Outermost();  // in no function's range
  if (cie.has_augmentation_data) {
    const uint64_t n = f.Uleb();
    if (!f.Has(n)) return Unsupported();
    f.p += n;
  }
  CfaState state;
  state.ra = {RegRule::kSame, 0};
  if (!RunCfa(Bytes{cie.instructions, cie.end}, cie, UINT64_MAX, pc_begin, state, &state)) {
    return Unsupported();
  }
  const CfaState initial = state;
  if (!RunCfa(f, cie, pc, pc_begin, initial, &state)) return Unsupported();

  if (state.ra.kind == RegRule::kUndefined) return Outermost();
  if (state.cfa_expression || (state.cfa_reg != kRegRsp && state.cfa_reg != kRegRbp) ||
      state.ra.kind != RegRule::kOffset || state.rbp.kind == RegRule::kOther ||
      state.cfa_offset < -(1 << 26) || state.cfa_offset >= (1 << 26) || state.ra.offset < -32768 ||
      state.ra.offset > 32767 || state.rbp.offset < -32768 || state.rbp.offset > 32767) {
    return Unsupported();
  }
  UnwindRule r;
  r.kind = UnwindRule::kFrame;
  r.cfa_from_rbp = state.cfa_reg == kRegRbp;
  r.cfa_offset = static_cast<int32_t>(state.cfa_offset);
  r.ra_offset = static_cast<int16_t>(state.ra.offset);
  r.rbp = state.rbp.kind == RegRule::kOffset      ? UnwindRule::kRbpSaved
          : state.rbp.kind == RegRule::kUndefined ? UnwindRule::kRbpUndefined
                                                  : UnwindRule::kRbpSame;
  r.rbp_offset = static_cast<int16_t>(state.rbp.offset);
  return r;
}

__attribute__((noinline, no_sanitize_address)) FastUnwindResult FastUnwind(FrameRef* out, int max_frames,
                                                                           int skip,
                                                                           const StackBounds& bounds) {
  FastUnwindResult result;
#if defined(__x86_64__)
  if (g_find_object.load(std::memory_order_acquire) == nullptr) return result;
  uint64_t rbp, rsp, rip;
  // rbp first: the compiler may hand rbp out as one of the outputs.
  asm volatile(
      "mov %%rbp, %0\n\t"
      "mov %%rsp, %1\n\t"
      "lea 0(%%rip), %2"
      : "=&r"(rbp), "=&r"(rsp), "=&r"(rip));
  const StackBounds live{std::max(bounds.lo, rsp), bounds.hi};
  if (!live.Contains(rsp, 8)) return result;  // not running on the given stack
  bool rbp_known = true;
  bool is_return = false;  // rip is an instruction, later pcs are return addresses
  uint64_t pc = rip;
  const int limit = max_frames + skip + 1;
  for (int step = 0; step < limit; ++step) {
    const UnwindRule rule = CachedRule(is_return ? pc - 1 : pc);
    if (rule.kind == UnwindRule::kOutermost) break;
    if (rule.kind != UnwindRule::kFrame) return FastUnwindResult{};
    if (rule.cfa_from_rbp && !rbp_known) return FastUnwindResult{};
    const uint64_t cfa = (rule.cfa_from_rbp ? rbp : rsp) + static_cast<int64_t>(rule.cfa_offset);
    const uint64_t ra_at = cfa + static_cast<int64_t>(rule.ra_offset);
    if (cfa < rsp + 8 || (ra_at & 7) != 0 || !live.Contains(ra_at, 8)) return FastUnwindResult{};
    const uint64_t ra = *reinterpret_cast<const uint64_t*>(ra_at);
    if (rule.rbp == UnwindRule::kRbpSaved) {
      const uint64_t rbp_at = cfa + static_cast<int64_t>(rule.rbp_offset);
      if ((rbp_at & 7) != 0 || !live.Contains(rbp_at, 8)) return FastUnwindResult{};
      rbp = *reinterpret_cast<const uint64_t*>(rbp_at);
      rbp_known = true;
    } else if (rule.rbp == UnwindRule::kRbpUndefined) {
      rbp_known = false;
    }
    rsp = cfa;
    if (ra == 0) break;
    if (skip > 0) {
      --skip;
    } else if (result.depth >= max_frames) {
      result.truncated = true;
      break;
    } else {
      out[result.depth++] = FrameRef{ra, 0, 0};
    }
    pc = ra;
    is_return = true;
  }
  result.ok = true;
#else
  (void)out;
  (void)max_frames;
  (void)skip;
  (void)bounds;
#endif
  return result;
}

FastUnwindStats GetFastUnwindStats() {
  return {g_cached.load(std::memory_order_relaxed), g_full.load(std::memory_order_relaxed)};
}

}  // namespace gpscope::inject::stacks
