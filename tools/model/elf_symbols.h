// tools/model/elf_symbols.h: reads function names and source lines out of
// an ELF file's bytes, for offline symbolization of native stack frames
// (symbolizer.h; issue 20). Parses the ELF itself: the section headers, the
// GNU build id note (NT_GNU_BUILD_ID, from SHT_NOTE sections or PT_NOTE
// segments), the symbol tables (.symtab, .dynsym) and the DWARF line
// programs (.debug_line, versions 2 to 5, with .debug_line_str and
// .debug_str for DWARF 5 paths).
//
//   auto elf = ElfSymbols::Parse(bytes);          // bytes outlive `elf`
//   if (elf.ok() && elf->build_id() == "ab12...") {
//     std::vector<uint64_t> at = {0x1139};        // sorted, unique
//     std::vector<ElfSymbols::Result> r = elf->Lookup(at);
//   }
//
// Addresses are ELF virtual addresses (st_value space): the collector's
// module_offset (return address - 1 - load bias). Only 64-bit little-endian
// files (x86-64, aarch64: what the collector runs on).
//
// Hostile input: the bytes can be anything. Every offset, size, count and
// index read from them is checked against the bytes before use; a bad
// section, symbol or line-program unit is skipped (counted in
// `Lookup`'s notes), never trusted. Every loop consumes input or is bounded
// by a count checked against the bytes left, so time is linear in the
// bytes (plus log of the addresses asked) and memory is bounded by the
// answers. Compressed debug sections (SHF_COMPRESSED, .zdebug_*) are not
// read: line_table_compressed() says so.
//
// Thread model: immutable after Parse; Lookup is const.
#ifndef GPSCOPE_TOOLS_MODEL_ELF_SYMBOLS_H_
#define GPSCOPE_TOOLS_MODEL_ELF_SYMBOLS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpscope::model {

class ElfSymbols {
 public:
  // Longest symbol name or path kept (longer ones are left out).
  static constexpr size_t kMaxNameBytes = 64 * 1024;

  struct Result {
    std::string function;  // the symbol (mangled), "" none
    std::string file;      // the source file, as the line table names it; "" none
    uint32_t line = 0;     // 0: none
  };

  // Fails on bytes that are not a 64-bit little-endian ELF file, or whose
  // header or section table lies outside them.
  static absl::StatusOr<ElfSymbols> Parse(std::string_view bytes);

  // Lowercase hex, "" when the file has no GNU build id note.
  const std::string& build_id() const { return build_id_; }
  bool has_symbols() const { return !symtabs_.empty(); }
  bool has_line_table() const { return !debug_line_.empty(); }
  // The line table is there but compressed (not read).
  bool line_table_compressed() const { return line_compressed_; }
  // Sections or line-program units skipped as malformed, by Lookup.
  struct Damage {
    uint64_t bad_symbols = 0;
    uint64_t bad_units = 0;
  };

  // `addresses` sorted ascending, unique; one result each. Symbols: the
  // smallest function symbol (STT_FUNC / STT_GNU_IFUNC, non-zero size)
  // containing the address. Lines: the line-table row whose range [its
  // address, the next row's) holds it.
  std::vector<Result> Lookup(const std::vector<uint64_t>& addresses, Damage* damage = nullptr) const;

 private:
  struct Table {
    std::string_view symbols;
    std::string_view strings;
  };
  ElfSymbols() = default;
  void LookupSymbols(const std::vector<uint64_t>& addresses, std::vector<Result>* out,
                     Damage* damage) const;
  void LookupLines(const std::vector<uint64_t>& addresses, std::vector<Result>* out,
                   Damage* damage) const;

  std::string build_id_;
  std::vector<Table> symtabs_;  // .symtab first, then .dynsym
  std::string_view debug_line_, debug_line_str_, debug_str_;
  bool line_compressed_ = false;
};

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_ELF_SYMBOLS_H_
