// tests/fuzz/elf_fuzz.cc: libFuzzer target for the ELF and DWARF line-table
// parser of offline symbolization (tools/model/elf_symbols.h): the input is
// a module file's bytes, as hostile as a file named by a trace can be.
// Parse() must refuse or accept it without a sanitizer report; Lookup()
// of addresses taken from the input's last 32 bytes (and a few fixed ones,
// so a seed's functions are hit) must return one bounded result each.
//
//   build-fuzz/tests/fuzz/elf_fuzz -max_total_time=60 /tmp/elf tests/fuzz/elf_corpus
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "tools/model/elf_symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpscope::model::ElfSymbols> elf = gpscope::model::ElfSymbols::Parse(bytes);
  if (!elf.ok()) return 0;
  std::vector<uint64_t> at = {0, 1, 0x10, 0x40, 0x1000, 0x1139, ~uint64_t{0}};
  for (size_t i = size >= 32 ? size - 32 : size; i + 8 <= size; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    at.push_back(v);
    at.push_back(v & 0xffff);
  }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  gpscope::model::ElfSymbols::Damage damage;
  const auto r = elf->Lookup(at, &damage);
  if (r.size() != at.size()) abort();
  for (const auto& x : r) {
    if (x.function.size() > gpscope::model::ElfSymbols::kMaxNameBytes ||
        x.file.size() > gpscope::model::ElfSymbols::kMaxNameBytes || (x.line == 0) != x.file.empty()) {
      abort();
    }
  }
  return 0;
}
