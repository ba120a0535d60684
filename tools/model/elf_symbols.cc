#include "tools/model/elf_symbols.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpscope::model {
namespace {

constexpr uint32_t kShtSymtab = 2, kShtNote = 7, kShtNobits = 8, kShtDynsym = 11;
constexpr uint64_t kShfCompressed = 0x800;
constexpr uint32_t kPtNote = 4;
constexpr uint32_t kNtGnuBuildId = 3;
constexpr uint8_t kSttFunc = 2, kSttGnuIfunc = 10;
constexpr size_t kEhdrBytes = 64, kShdrBytes = 64, kPhdrBytes = 56, kSymBytes = 24;
constexpr size_t kMaxBuildIdBytes = 64;
// DWARF forms and line-table content types (DWARF 5, 7.5.6 and 6.2.4.1).
enum : uint64_t {
  kFormBlock2 = 0x03, kFormBlock4 = 0x04, kFormData2 = 0x05, kFormData4 = 0x06,
  kFormData8 = 0x07, kFormString = 0x08, kFormBlock = 0x09, kFormBlock1 = 0x0a,
  kFormData1 = 0x0b, kFormSdata = 0x0d, kFormStrp = 0x0e, kFormUdata = 0x0f,
  kFormStrx = 0x1a, kFormData16 = 0x1e, kFormLineStrp = 0x1f, kFormStrx1 = 0x25,
  kFormStrx2 = 0x26, kFormStrx3 = 0x27, kFormStrx4 = 0x28,
};
constexpr uint64_t kLnctPath = 1, kLnctDirectoryIndex = 2;

// A bounds-checked little-endian reader over bytes: a read past the end
// returns 0 and sets failed(), and every later read fails too.
class Cursor {
 public:
  explicit Cursor(std::string_view b, size_t pos = 0) : b_(b), pos_(pos) {
    if (pos_ > b_.size()) fail_ = true;
  }
  bool failed() const { return fail_; }
  size_t pos() const { return pos_; }
  size_t left() const { return fail_ ? 0 : b_.size() - pos_; }
  uint64_t Fixed(size_t n) {  // n <= 8
    if (fail_ || n > 8 || left() < n) {
      fail_ = true;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b_[pos_ + i])} << (8 * i);
    pos_ += n;
    return v;
  }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Fixed(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t byte = U8();
      if (fail_) return 0;
      if (shift < 64) v |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return v;
      if (shift >= 63) {  // more than 10 bytes: longer than any 64-bit value, hostile
        fail_ = true;
        return 0;
      }
    }
  }
  int64_t Sleb() {
    uint64_t v = 0;
    int shift = 0;
    uint8_t byte = 0;
    do {
      byte = U8();
      if (fail_) return 0;
      if (shift < 64) v |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
      if ((byte & 0x80) && shift >= 70) {
        fail_ = true;
        return 0;
      }
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  void Skip(uint64_t n) {
    if (fail_ || n > left()) {
      fail_ = true;
      return;
    }
    pos_ += static_cast<size_t>(n);
  }
  // A NUL-terminated string; fails without a NUL.
  std::string_view CString() {
    if (fail_) return {};
    const size_t end = b_.find('\0', pos_);
    if (end == std::string_view::npos) {
      fail_ = true;
      return {};
    }
    std::string_view s = b_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

 private:
  std::string_view b_;
  size_t pos_;
  bool fail_ = false;
};

// The NUL-terminated string at `offset` of a string section; "" when out of
// bounds, unterminated or too long.
std::string_view StringAt(std::string_view section, uint64_t offset) {
  if (offset >= section.size()) return {};
  const size_t end = section.find('\0', static_cast<size_t>(offset));
  if (end == std::string_view::npos || end - offset > ElfSymbols::kMaxNameBytes) return {};
  return section.substr(static_cast<size_t>(offset), end - static_cast<size_t>(offset));
}

// [offset, offset + size) of `bytes`, or nullopt-like failure (false).
bool Slice(std::string_view bytes, uint64_t offset, uint64_t size, std::string_view* out) {
  if (offset > bytes.size() || size > bytes.size() - offset) return false;
  *out = bytes.substr(static_cast<size_t>(offset), static_cast<size_t>(size));
  return true;
}

// The GNU build id in a run of notes, "" none.
std::string BuildIdInNotes(std::string_view notes, uint64_t align) {
  static const char kHex[] = "0123456789abcdef";
  if (align != 8) align = 4;
  Cursor c(notes);
  while (c.left() >= 12) {
    const uint32_t namesz = c.U32(), descsz = c.U32(), type = c.U32();
    const size_t name_at = c.pos();
    c.Skip((uint64_t{namesz} + align - 1) & ~(align - 1));
    const size_t desc_at = c.pos();
    if (c.failed() || descsz > c.left()) return "";
    if (type == kNtGnuBuildId && namesz == 4 && notes.substr(name_at, 4) == std::string_view("GNU\0", 4) &&
        descsz > 0 && descsz <= kMaxBuildIdBytes) {
      std::string hex;
      for (uint32_t i = 0; i < descsz; ++i) {
        const auto b = static_cast<uint8_t>(notes[desc_at + i]);
        hex.push_back(kHex[b >> 4]);
        hex.push_back(kHex[b & 15]);
      }
      return hex;
    }
    c.Skip(std::min<uint64_t>((uint64_t{descsz} + align - 1) & ~(align - 1), c.left()));
  }
  return "";
}

// Finds, for each range [lo, hi) offered, the addresses in it (sorted
// `addresses`) and hands them to `take(index)`.
template <typename F>
void ForAddressesIn(const std::vector<uint64_t>& addresses, uint64_t lo, uint64_t hi, F take) {
  if (hi <= lo) return;
  for (auto it = std::lower_bound(addresses.begin(), addresses.end(), lo);
       it != addresses.end() && *it < hi; ++it) {
    take(static_cast<size_t>(it - addresses.begin()));
  }
}

}  // namespace

absl::StatusOr<ElfSymbols> ElfSymbols::Parse(std::string_view bytes) {
  if (bytes.size() < kEhdrBytes || bytes.substr(0, 4) != "\x7f" "ELF") {
    return absl::InvalidArgumentError("not an ELF file");
  }
  if (bytes[4] != 2 || bytes[5] != 1) {
    return absl::InvalidArgumentError("not a 64-bit little-endian ELF file");
  }
  Cursor h(bytes, 0x20);
  const uint64_t phoff = h.U64(), shoff = h.U64();
  h.Skip(4 + 2);  // e_flags, e_ehsize
  const uint16_t phentsize = h.U16(), phnum = h.U16(), shentsize = h.U16();
  uint64_t shnum = h.U16();
  uint32_t shstrndx = h.U16();
  ElfSymbols elf;
  // Sections. e_shnum 0 with a table: the count is in section 0's sh_size;
  // e_shstrndx SHN_XINDEX: the index is in its sh_link.
  struct Section {
    uint32_t name = 0, type = 0, link = 0;
    uint64_t flags = 0, offset = 0, size = 0, align = 0, entsize = 0;
  };
  std::vector<Section> sections;
  if (shoff != 0) {
    if (shentsize != kShdrBytes) return absl::InvalidArgumentError("bad section header size");
    auto read = [&](uint64_t i, Section* s) {
      Cursor c(bytes);
      if (shoff > bytes.size()) return false;
      c.Skip(shoff);
      if (i > c.left() / kShdrBytes) return false;
      c.Skip(i * kShdrBytes);
      s->name = c.U32();
      s->type = c.U32();
      s->flags = c.U64();
      c.U64();  // sh_addr
      s->offset = c.U64();
      s->size = c.U64();
      s->link = c.U32();
      c.U32();  // sh_info
      s->align = c.U64();
      s->entsize = c.U64();
      return !c.failed();
    };
    Section first;
    if (!read(0, &first)) return absl::InvalidArgumentError("section headers outside the file");
    if (shnum == 0) shnum = first.size;
    if (shstrndx == 0xffff) shstrndx = first.link;
    if (shnum > (bytes.size() - std::min<uint64_t>(shoff, bytes.size())) / kShdrBytes) {
      return absl::InvalidArgumentError("section headers outside the file");
    }
    sections.resize(static_cast<size_t>(shnum));
    for (uint64_t i = 0; i < shnum; ++i) {
      if (!read(i, &sections[i])) return absl::InvalidArgumentError("section headers outside the file");
    }
  }
  std::string_view shstr;
  if (shstrndx < sections.size() && sections[shstrndx].type != kShtNobits) {
    if (!Slice(bytes, sections[shstrndx].offset, sections[shstrndx].size, &shstr)) shstr = {};
  }
  std::vector<Table> dynsyms;
  for (const Section& s : sections) {
    std::string_view data;
    if (s.type == kShtNobits || !Slice(bytes, s.offset, s.size, &data)) continue;
    const std::string_view name = StringAt(shstr, s.name);
    if (s.type == kShtNote && elf.build_id_.empty()) elf.build_id_ = BuildIdInNotes(data, s.align);
    if ((s.type == kShtSymtab || s.type == kShtDynsym) &&
        (s.entsize == kSymBytes || s.entsize == 0) && s.link < sections.size()) {
      const Section& strs = sections[s.link];
      Table t;
      if (strs.type == kShtNobits || !Slice(bytes, strs.offset, strs.size, &t.strings)) continue;
      t.symbols = data;
      (s.type == kShtSymtab ? elf.symtabs_ : dynsyms).push_back(t);
    }
    const bool compressed = (s.flags & kShfCompressed) != 0;
    if (name == ".debug_line" || name == ".zdebug_line") {
      if (compressed || name[1] == 'z') {
        elf.line_compressed_ = true;
      } else if (elf.debug_line_.empty()) {
        elf.debug_line_ = data;
      }
    } else if (name == ".debug_line_str" && !compressed) {
      elf.debug_line_str_ = data;
    } else if (name == ".debug_str" && !compressed) {
      elf.debug_str_ = data;
    }
  }
  elf.symtabs_.insert(elf.symtabs_.end(), dynsyms.begin(), dynsyms.end());
  if (elf.build_id_.empty() && phoff != 0 && phentsize == kPhdrBytes) {  // no sections: the notes segment
    for (uint64_t i = 0; i < phnum; ++i) {
      Cursor c(bytes);
      if (phoff > bytes.size()) break;
      c.Skip(phoff);
      c.Skip(i * kPhdrBytes);
      const uint32_t type = c.U32();
      c.U32();  // p_flags
      const uint64_t offset = c.U64();
      c.Skip(16);  // p_vaddr, p_paddr
      const uint64_t filesz = c.U64();
      c.U64();  // p_memsz
      const uint64_t align = c.U64();
      std::string_view data;
      if (c.failed()) break;
      if (type != kPtNote || !Slice(bytes, offset, filesz, &data)) continue;
      elf.build_id_ = BuildIdInNotes(data, align);
      if (!elf.build_id_.empty()) break;
    }
  }
  return elf;
}

std::vector<ElfSymbols::Result> ElfSymbols::Lookup(const std::vector<uint64_t>& addresses,
                                                   Damage* damage) const {
  std::vector<Result> out(addresses.size());
  Damage local;
  if (damage == nullptr) damage = &local;
  if (addresses.empty()) return out;
  LookupSymbols(addresses, &out, damage);
  LookupLines(addresses, &out, damage);
  return out;
}

void ElfSymbols::LookupSymbols(const std::vector<uint64_t>& addresses, std::vector<Result>* out,
                               Damage* damage) const {
  std::vector<uint64_t> best(addresses.size(), std::numeric_limits<uint64_t>::max());
  for (const Table& t : symtabs_) {
    const size_t n = t.symbols.size() / kSymBytes;
    for (size_t i = 1; i < n; ++i) {  // symbol 0 is the null symbol
      Cursor c(t.symbols, i * kSymBytes);
      const uint32_t name = c.U32();
      const uint8_t info = c.U8();
      c.U8();  // st_other
      const uint16_t shndx = c.U16();
      const uint64_t value = c.U64(), size = c.U64();
      const uint8_t type = info & 0xf;
      if ((type != kSttFunc && type != kSttGnuIfunc) || shndx == 0 || size == 0) continue;
      const uint64_t end = value + size < value ? std::numeric_limits<uint64_t>::max() : value + size;
      bool named = false;
      std::string_view text;
      ForAddressesIn(addresses, value, end, [&](size_t k) {
        if (size >= best[k]) return;  // a smaller (or the first equal) symbol holds it
        if (!named) {
          text = StringAt(t.strings, name);
          named = true;
          if (text.empty()) ++damage->bad_symbols;
        }
        if (text.empty()) return;
        best[k] = size;
        (*out)[k].function = std::string(text);
      });
    }
  }
}

void ElfSymbols::LookupLines(const std::vector<uint64_t>& addresses, std::vector<Result>* out,
                             Damage* damage) const {
  std::vector<bool> found(addresses.size(), false);
  size_t unit_at = 0;
  while (unit_at < debug_line_.size()) {
    Cursor c(debug_line_, unit_at);
    uint64_t length = c.U32();
    bool dwarf64 = false;
    if (length == 0xffffffff) {
      dwarf64 = true;
      length = c.U64();
    } else if (length >= 0xfffffff0) {
      ++damage->bad_units;
      return;  // reserved: nothing after it can be found
    }
    if (c.failed() || length > c.left()) {
      ++damage->bad_units;
      return;
    }
    const size_t unit_end = c.pos() + static_cast<size_t>(length);
    unit_at = unit_end;
    // The unit alone: reads past its end fail.
    Cursor u(debug_line_.substr(0, unit_end), c.pos());
    const uint16_t version = u.U16();
    if (version < 2 || version > 5) {
      ++damage->bad_units;
      continue;
    }
    uint8_t address_size = 8;
    if (version >= 5) {
      address_size = u.U8();
      u.U8();  // segment selector size
    }
    const uint64_t header_length = dwarf64 ? u.U64() : u.U32();
    if (u.failed() || header_length > u.left()) {
      ++damage->bad_units;
      continue;
    }
    const size_t program_at = u.pos() + static_cast<size_t>(header_length);
    const uint8_t min_inst = u.U8();
    if (version >= 4) u.U8();  // maximum_operations_per_instruction (VLIW; 1 elsewhere)
    const bool default_is_stmt = u.U8() != 0;
    const auto line_base = static_cast<int8_t>(u.U8());
    const uint8_t line_range = u.U8();
    const uint8_t opcode_base = u.U8();
    if (u.failed() || line_range == 0 || opcode_base == 0) {
      ++damage->bad_units;
      continue;
    }
    std::vector<uint8_t> opcode_lengths(opcode_base, 0);
    for (int i = 1; i < opcode_base; ++i) opcode_lengths[i] = u.U8();
    // Directories and files: paths as views into the sections.
    std::vector<std::string_view> dirs;
    struct File {
      std::string_view name;
      uint64_t dir = 0;
    };
    std::vector<File> files;
    bool bad = u.failed();
    if (version <= 4) {
      dirs.push_back({});  // 0: the compilation directory (in .debug_info: not read)
      while (!bad) {
        const std::string_view d = u.CString();
        if (u.failed()) bad = true;
        if (bad || d.empty()) break;
        dirs.push_back(d);
      }
      files.push_back({});  // file numbers start at 1
      while (!bad) {
        const std::string_view f = u.CString();
        if (u.failed()) bad = true;
        if (bad || f.empty()) break;
        File file{f, u.Uleb()};
        u.Uleb();  // mtime
        u.Uleb();  // length
        if (u.failed()) bad = true;
        files.push_back(file);
      }
    } else {
      // Entry formats: (content type, form) pairs, then the entries.
      auto read_entries = [&](bool is_dir) {
        const uint8_t format_count = u.U8();
        std::vector<std::pair<uint64_t, uint64_t>> format;
        for (int i = 0; i < format_count && !u.failed(); ++i) {
          const uint64_t type = u.Uleb();
          format.emplace_back(type, u.Uleb());
        }
        const uint64_t count = u.Uleb();
        // Every entry takes at least one byte (zero-width forms are
        // refused below), so the count is bounded by the bytes left.
        if (u.failed() || (count > 0 && format.empty()) || count > u.left()) return false;
        for (uint64_t i = 0; i < count; ++i) {
          File e;
          const size_t entry_at = u.pos();
          for (const auto& [type, form] : format) {
            std::string_view text;
            uint64_t value = 0;
            switch (form) {
              case kFormString: text = u.CString(); break;
              case kFormLineStrp: text = StringAt(debug_line_str_, dwarf64 ? u.U64() : u.U32()); break;
              case kFormStrp: text = StringAt(debug_str_, dwarf64 ? u.U64() : u.U32()); break;
              case kFormUdata: value = u.Uleb(); break;
              case kFormSdata: u.Sleb(); break;
              case kFormData1: value = u.U8(); break;
              case kFormData2: value = u.U16(); break;
              case kFormData4: value = u.U32(); break;
              case kFormData8: value = u.U64(); break;
              case kFormData16: u.Skip(16); break;
              case kFormBlock: u.Skip(u.Uleb()); break;
              case kFormBlock1: u.Skip(u.U8()); break;
              case kFormBlock2: u.Skip(u.U16()); break;
              case kFormBlock4: u.Skip(u.U32()); break;
              case kFormStrx: u.Uleb(); break;  // .debug_str_offsets (not read): no text
              case kFormStrx1: u.Skip(1); break;
              case kFormStrx2: u.Skip(2); break;
              case kFormStrx3: u.Skip(3); break;
              case kFormStrx4: u.Skip(4); break;
              default: return false;  // a form we cannot size: the rest is unreadable
            }
            if (type == kLnctPath) e.name = text;
            if (type == kLnctDirectoryIndex) e.dir = value;
          }
          if (u.failed() || u.pos() == entry_at) return false;
          if (is_dir) dirs.push_back(e.name);
          else files.push_back(e);
        }
        return true;
      };
      bad = !read_entries(true) || !read_entries(false);
    }
    if (bad || u.failed() || program_at > unit_end) {
      ++damage->bad_units;
      continue;
    }
    // The path of file `index`, "" unknown.
    auto path_of = [&](uint64_t index) {
      if (index >= files.size() || files[index].name.empty()) return std::string();
      const File& f = files[index];
      if (f.name[0] == '/' || f.dir >= dirs.size() || dirs[f.dir].empty()) return std::string(f.name);
      std::string_view d = dirs[f.dir];
      std::string path;
      if (version >= 5 && f.dir != 0 && d[0] != '/' && !dirs[0].empty()) {  // relative to the
        path = std::string(dirs[0]);                                           // compilation dir
        if (path.back() != '/') path.push_back('/');
      }
      path.append(d);
      if (path.back() != '/') path.push_back('/');
      path.append(f.name);
      return std::filesystem::path(path).lexically_normal().string();  // "a/../b" -> "b"; no I/O
    };
    // The line program (DWARF 5, 6.2.5). A row's range ends at the next
    // row's address; a range holding an address asked gives it its line.
    Cursor p(debug_line_.substr(0, unit_end), program_at);
    uint64_t address = 0, file = 1, line = 1;
    bool is_stmt = default_is_stmt;
    bool have_row = false;
    uint64_t row_address = 0, row_file = 0, row_line = 0;
    auto emit = [&](bool end_sequence) {
      if (have_row) {
        ForAddressesIn(addresses, row_address, address, [&](size_t k) {
          if (found[k] || row_line == 0 || row_line > std::numeric_limits<uint32_t>::max()) return;
          std::string path = path_of(row_file);
          if (path.empty() || path.size() > kMaxNameBytes) return;
          found[k] = true;
          (*out)[k].file = std::move(path);
          (*out)[k].line = static_cast<uint32_t>(row_line);
        });
      }
      have_row = !end_sequence;
      row_address = address;
      row_file = file;
      row_line = line;
    };
    (void)is_stmt;
    while (p.left() > 0) {
      const uint8_t op = p.U8();
      if (op >= opcode_base) {  // special opcode
        const uint8_t adjusted = op - opcode_base;
        address += uint64_t{min_inst} * (adjusted / line_range);
        line += static_cast<uint64_t>(static_cast<int64_t>(line_base) + adjusted % line_range);
        emit(false);
        continue;
      }
      switch (op) {
        case 0: {  // extended
          const uint64_t len = p.Uleb();
          if (p.failed() || len == 0 || len > p.left()) {
            p.Skip(p.left() + 1);  // fails: the unit ends
            break;
          }
          const size_t next = p.pos() + static_cast<size_t>(len);
          const uint8_t sub = p.U8();
          if (sub == 1) {  // end_sequence
            emit(true);
            address = 0;
            file = 1;
            line = 1;
            is_stmt = default_is_stmt;
          } else if (sub == 2) {  // set_address
            const uint64_t n = len - 1;
            address = n >= 1 && n <= 8 ? p.Fixed(static_cast<size_t>(n)) : 0;
            (void)address_size;
          }
          // define_file (3), set_discriminator (4), vendor ones: skipped by length.
          p = Cursor(debug_line_.substr(0, unit_end), next);
          break;
        }
        case 1: emit(false); break;  // copy
        case 2: address += uint64_t{min_inst} * p.Uleb(); break;
        case 3: line += static_cast<uint64_t>(p.Sleb()); break;
        case 4: file = p.Uleb(); break;
        case 5: p.Uleb(); break;  // column
        case 6: is_stmt = !is_stmt; break;
        case 7: break;  // basic_block
        case 8: address += uint64_t{min_inst} * ((255 - opcode_base) / line_range); break;
        case 9: address += p.U16(); break;
        case 10: case 11: break;  // prologue_end, epilogue_begin
        case 12: p.Uleb(); break;  // isa
        default:  // a standard opcode this reader does not know: skip its operands
          for (int i = 0; i < opcode_lengths[op] && !p.failed(); ++i) p.Uleb();
      }
      if (p.failed()) {
        ++damage->bad_units;
        break;
      }
    }
  }
}

}  // namespace gpscope::model
