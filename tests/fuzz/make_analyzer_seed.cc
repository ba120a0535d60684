// tests/fuzz/make_analyzer_seed.cc: writes analyzer_fuzz's seed input
// (analyzer_seed.h; with call-stack tables) as a chunk list, the fuzzer's
// input format (u32 little-endian length, then a serialized Chunk):
//   build/tests/tools/make_analyzer_seed tests/fuzz/analyzer_corpus/stack_tables.chunks
#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/fuzz/analyzer_seed.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_analyzer_seed OUT.chunks\n");
    return 2;
  }
  std::string out;
  for (const gpscope::proto::Chunk& c : gpscope::fuzz::AnalyzerSeed()) {
    std::string bytes;
    c.SerializeToString(&bytes);
    const uint32_t n = static_cast<uint32_t>(bytes.size());
    out.append(reinterpret_cast<const char*>(&n), 4);  // little-endian on x86-64
    out += bytes;
  }
  FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr || std::fwrite(out.data(), 1, out.size(), f) != out.size() ||
      std::fclose(f) != 0) {
    std::fprintf(stderr, "make_analyzer_seed: %s: cannot write\n", argv[1]);
    return 1;
  }
  return 0;
}
