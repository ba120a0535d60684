// tests/tools/symbolize_test.cc: offline symbolization of native frames
// (tools/model/symbolizer.h, elf_symbols.h; issue 20). symbolize_target (a
// -g program, DWARF 5 and DWARF 4 builds) prints what the collector records
// for its static function's call site: module path, offset and build id.
// The expected line is the source line with the marker comment, found
// here. Traces written with TraceBuilder carry that frame; summary must
// show "symbolize_target.cc:NN (Step(int))". Mismatched build ids are never
// used; --symbols DIR finds a moved binary and a debug file by build id;
// hostile ELF bytes (truncated, bad offsets, flipped bytes, crafted line
// programs) give no crash and no made-up answer. The exports (Chrome
// stackFrames, Perfetto's interned frames) and the report's flame view name
// the frame with summary's text, and Perfetto's frame keeps the module, its
// build id and the offset.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/testing/trace_builder.h"
#include "tools/analyses/sites.h"
#include "tools/analyze/cli.h"
#include "tools/analyze/summary.h"
#include "tools/render/json_writer.h"
#include "tools/model/elf_symbols.h"
#include "tools/model/symbolizer.h"

namespace gpscope {
namespace {

using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 2'000'000'000;
constexpr uint32_t kMain = 100;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "symbolize_test." + std::to_string(getpid()) +
                          "." + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// What the program printed about its frame.
struct Recorded {
  std::string module;
  uint64_t offset = 0;
  std::string build_id;
};

Recorded RunProgram(const std::string& program) {
  Recorded r;
  FILE* p = popen(program.c_str(), "r");
  if (p == nullptr) return r;
  char path[4096] = {}, id[256] = {};
  unsigned long offset = 0;
  if (fscanf(p, "%4095s %lx %255s", path, &offset, id) == 3) {
    r.module = path;
    r.offset = offset;
    r.build_id = id;
  }
  pclose(p);
  return r;
}

// The 1-based line of the marker comment in the program's source.
uint32_t MarkerLine() {
  std::ifstream in(GPSCOPE_SYMBOLIZE_SOURCE);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    if (line.find("// SYMBOLIZE-MARKER") != std::string::npos) return n;
  }
  return 0;
}

// A process whose only stack is the program's frame, blocked in a sync
// after its kernels every step, then 10 ms of host code: the sync site
// costs GPU time, and host-sync / host-bound cite it.
std::string WriteTrace(const std::string& path, const std::string& module, uint64_t offset,
                       const std::string& build_id) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x5157, 77);
  p.WriteHeader();
  const uint32_t frame = p.AddNativeFrame(module, offset);
  proto::EventBatch& b = p.batch();
  b.mutable_stack_frames(b.stack_frames_size() - 1)->set_build_id_id(p.Intern(build_id));
  const uint32_t stack = p.AddStack({frame});
  uint64_t t = kT0;
  uint32_t corr = 1000;
  for (int step = 0; step < 40; ++step) {
    uint64_t free = 0;
    for (int k = 0; k < 3; ++k) {
      const uint32_t c = corr++;
      p.Add(format::ApiCallEvent{t, t + 8 * kUs, proto::API_RUNTIME, 211, kMain, c, 0,
                                 p.Intern("cudaLaunchKernel_v7000")});
      format::KernelEvent e{};
      e.start_ns = std::max(free + 2 * kUs, t + 9 * kUs);
      e.end_ns = e.start_ns + 2 * kMs;
      e.name_id = p.Intern("gemm");
      e.context_id = 1;
      e.stream_id = 7;
      e.correlation_id = c;
      p.Add(e);
      free = e.end_ns;
      t += 10 * kUs;
    }
    const uint32_t c = corr++;
    p.AddStackSample(t, kMain, c, stack, proto::STACK_SYNC);
    const uint64_t end = free + 4 * kUs;
    p.Add(format::ApiCallEvent{t, end, proto::API_RUNTIME, 0, kMain, c, 0,
                               p.Intern("cudaStreamSynchronize_v3020")});
    t = end + 10 * kMs;
    if (step % 10 == 9) p.Flush();
  }
  p.WriteEnd();
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

std::string Summary(const std::vector<std::string>& args, int* code = nullptr) {
  std::ostringstream out, err;
  const int rc = analyze::Run(args, out, err);
  if (code != nullptr) *code = rc;
  EXPECT_TRUE(code != nullptr || rc == analyze::kExitOk) << err.str();
  return out.str();
}

class SymbolizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rec_ = RunProgram(GPSCOPE_SYMBOLIZE_TARGET);
    line_ = MarkerLine();
    ASSERT_FALSE(rec_.module.empty()) << "symbolize_target printed nothing";
    ASSERT_EQ(rec_.build_id.size(), 40u) << rec_.build_id;  // sha1: ld's --build-id default
    ASSERT_GT(line_, 0u);
    model::SetSymbolDirs({});
  }
  std::string Label() const {
    return "symbolize_target.cc:" + std::to_string(line_) + " (Step(int))";
  }
  Recorded rec_;
  uint32_t line_ = 0;
};

// ------------------------------------------------------------ the parser --

void ExpectLine(const std::string& program) {
  const Recorded rec = RunProgram(program);
  ASSERT_FALSE(rec.module.empty());
  const std::string bytes = Slurp(rec.module);
  absl::StatusOr<model::ElfSymbols> elf = model::ElfSymbols::Parse(bytes);
  ASSERT_TRUE(elf.ok()) << elf.status();
  EXPECT_EQ(elf->build_id(), rec.build_id);
  EXPECT_TRUE(elf->has_symbols());
  EXPECT_TRUE(elf->has_line_table());
  model::ElfSymbols::Damage damage;
  const auto r = elf->Lookup({rec.offset}, &damage);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].function, "_ZL4Stepi");  // static: internal linkage, not exported
  EXPECT_NE(r[0].file.find("symbolize_target.cc"), std::string::npos) << r[0].file;
  EXPECT_EQ(r[0].line, MarkerLine());
  EXPECT_EQ(damage.bad_units, 0u);
  EXPECT_EQ(damage.bad_symbols, 0u);
  // binutils' addr2line, where installed, reads the same line.
  char cmd[4200];
  std::snprintf(cmd, sizeof cmd, "addr2line -e '%s' 0x%lx 2>/dev/null", rec.module.c_str(),
                static_cast<unsigned long>(rec.offset));
  if (FILE* p = popen(cmd, "r")) {
    char out[4096] = {};
    if (fgets(out, sizeof out, p) != nullptr) {
      const std::string a2l(out);
      EXPECT_NE(a2l.find("symbolize_target.cc:" + std::to_string(r[0].line)), std::string::npos)
          << a2l;
    }
    pclose(p);
  }
}

TEST_F(SymbolizeTest, Dwarf5LineTableGivesTheMarkedLine) { ExpectLine(GPSCOPE_SYMBOLIZE_TARGET); }
TEST_F(SymbolizeTest, Dwarf4LineTableGivesTheMarkedLine) { ExpectLine(GPSCOPE_SYMBOLIZE_TARGET4); }

TEST_F(SymbolizeTest, AddressesOutsideAnyFunctionGetNothing) {
  const std::string bytes = Slurp(rec_.module);
  auto elf = model::ElfSymbols::Parse(bytes);
  ASSERT_TRUE(elf.ok());
  const auto r = elf->Lookup({0, 1, rec_.offset, ~uint64_t{0} - 1});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].function.empty());
  EXPECT_EQ(r[0].line, 0u);
  EXPECT_TRUE(r[3].function.empty());
  EXPECT_EQ(r[3].line, 0u);
  EXPECT_EQ(r[2].function, "_ZL4Stepi");
}

// ----------------------------------------------------------- end to end --

TEST_F(SymbolizeTest, SummaryShowsFileLineAndFunctionOfAStaticFunction) {
  const std::string dir = TempDir("summary");
  const std::string trace = WriteTrace(dir + "/t.gpscope", rec_.module, rec_.offset, rec_.build_id);
  const std::string text = Summary({"summary", trace});
  EXPECT_NE(text.find("1. " + Label()), std::string::npos) << text;
  // The stack line: the full source path, the function, the module and offset.
  char where[64];
  std::snprintf(where, sizeof where, "symbolize_target.cc:%u Step(int) (symbolize_target+0x%lx)",
                line_, static_cast<unsigned long>(rec_.offset));
  std::string flat;  // the text's runs of spaces and newlines as one space (lines wrap)
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!(space && !flat.empty() && flat.back() == ' ')) flat.push_back(space ? ' ' : c);
  }
  EXPECT_NE(flat.find(where), std::string::npos) << text;
  EXPECT_EQ(text.find("symbols: "), std::string::npos) << text;
  // The findings cite the site by file:line (function).
  auto r = analyze::ComputeSummaryResult({trace}, model::ModelOptions{}, analyses::ReportOptions{});
  ASSERT_FALSE(r->report.sites.rows.empty());
  const analyses::SiteRow& top = r->report.sites.rows.front();
  EXPECT_EQ(top.label, Label());
  EXPECT_TRUE(top.user);
  EXPECT_EQ(top.frame.line, line_);
  EXPECT_EQ(top.frame.module, rec_.module);
  EXPECT_EQ(r->model.processes[0].stacks.frames_symbolized, 1u);
  bool cited = false;
  for (const analyses::Finding& f : r->findings) {
    for (const auto& c : f.sites) {
      if (c.label != Label()) continue;
      cited = true;
      EXPECT_NE(f.summary.find(Label()), std::string::npos) << f.summary;
    }
  }
  EXPECT_TRUE(cited);
  const std::string json = Summary({"summary", "--format", "json", trace});
  EXPECT_NE(json.find("\"frames_symbolized\": 1"), std::string::npos) << json.substr(0, 4000);
  std::filesystem::remove_all(dir);
}

TEST_F(SymbolizeTest, MismatchedBuildIdIsNeverUsedAndSaidOnce) {
  const std::string dir = TempDir("mismatch");
  std::string other = rec_.build_id;
  other[0] = other[0] == '0' ? '1' : '0';
  const std::string trace = WriteTrace(dir + "/t.gpscope", rec_.module, rec_.offset, other);
  const std::string text = Summary({"summary", trace});
  EXPECT_EQ(text.find(Label()), std::string::npos) << text;
  EXPECT_EQ(text.find("Step"), std::string::npos) << text;
  char hex[32];
  std::snprintf(hex, sizeof hex, "symbolize_target+0x%lx", static_cast<unsigned long>(rec_.offset));
  EXPECT_NE(text.find(hex), std::string::npos) << text;
  // The note may wrap: compare with runs of whitespace as one space.
  const std::string flat = std::regex_replace(text, std::regex("\\s+"), " ");
  const size_t note = flat.find("differs from the trace's");
  ASSERT_NE(note, std::string::npos) << text;
  EXPECT_EQ(flat.find("differs from the trace's", note + 1), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST_F(SymbolizeTest, SymbolsDirFindsAMovedBinaryByName) {
  const std::string dir = TempDir("moved");
  std::filesystem::create_directories(dir + "/syms/deep/er");
  std::filesystem::copy_file(rec_.module, dir + "/syms/deep/er/symbolize_target");
  const std::string trace =
      WriteTrace(dir + "/t.gpscope", "/nonexistent/build/symbolize_target", rec_.offset,
                 rec_.build_id);
  EXPECT_EQ(Summary({"summary", trace}).find(Label()), std::string::npos);
  const std::string text = Summary({"summary", "--symbols", dir + "/syms", trace});
  EXPECT_NE(text.find(Label()), std::string::npos) << text;
  int code = 0;
  Summary({"summary", "--symbols", dir + "/none", trace}, &code);
  EXPECT_EQ(code, analyze::kExitUsage);
  std::filesystem::remove_all(dir);
}

TEST_F(SymbolizeTest, SymbolsDirFindsADebugFileByBuildId) {
  const std::string dir = TempDir("buildid");
  const std::string sub = dir + "/syms/.build-id/" + rec_.build_id.substr(0, 2);
  std::filesystem::create_directories(sub);
  std::filesystem::copy_file(rec_.module, sub + "/" + rec_.build_id.substr(2) + ".debug");
  // Another name, not on this machine: only the build id finds it.
  const std::string trace =
      WriteTrace(dir + "/t.gpscope", "/opt/app/bin/renamed_app", rec_.offset, rec_.build_id);
  const std::string text = Summary({"summary", "--symbols=" + dir + "/syms", trace});
  EXPECT_NE(text.find(Label()), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

// The Debian way: a stripped binary at the recorded path (no .symtab, no
// line table) and its debug file made by objcopy --only-keep-debug (its
// .text is NOBITS) under DIR/.build-id.
TEST_F(SymbolizeTest, StrippedBinaryUsesItsSplitDebugFile) {
  if (system("command -v objcopy >/dev/null 2>&1") != 0) GTEST_SKIP() << "no objcopy";
  const std::string dir = TempDir("split");
  const std::string sub = dir + "/syms/.build-id/" + rec_.build_id.substr(0, 2);
  std::filesystem::create_directories(sub);
  const std::string debug = sub + "/" + rec_.build_id.substr(2) + ".debug";
  const std::string stripped = dir + "/symbolize_target";
  ASSERT_EQ(system(("objcopy --only-keep-debug '" + rec_.module + "' '" + debug + "'").c_str()), 0);
  ASSERT_EQ(system(("objcopy --strip-all '" + rec_.module + "' '" + stripped + "'").c_str()), 0);
  const std::string stripped_bytes = Slurp(stripped);
  auto elf = model::ElfSymbols::Parse(stripped_bytes);
  ASSERT_TRUE(elf.ok());
  EXPECT_EQ(elf->build_id(), rec_.build_id);
  EXPECT_FALSE(elf->has_line_table());
  const std::string trace = WriteTrace(dir + "/t.gpscope", stripped, rec_.offset, rec_.build_id);
  EXPECT_EQ(Summary({"summary", trace}).find(Label()), std::string::npos);
  const std::string text = Summary({"summary", "--symbols", dir + "/syms", trace});
  EXPECT_NE(text.find(Label()), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

// The exports and the report name the frame as summary does
// ("<source>:NN Step(int) (symbolize_target+0x...)"), not as module+offset.
TEST_F(SymbolizeTest, ExportsAndReportNameTheFrameAsSummaryDoes) {
  const std::string dir = TempDir("export");
  const std::string trace = WriteTrace(dir + "/t.gpscope", rec_.module, rec_.offset, rec_.build_id);
  auto r = analyze::ComputeSummaryResult({trace}, model::ModelOptions{}, analyses::ReportOptions{});
  ASSERT_FALSE(r->report.sites.rows.empty());
  ASSERT_FALSE(r->report.sites.rows.front().stack.empty());
  const analyses::SiteFrame& frame = r->report.sites.rows.front().stack.front();
  char where[64];
  std::snprintf(where, sizeof where, "symbolize_target.cc:%u Step(int) (symbolize_target+0x%lx)",
                line_, static_cast<unsigned long>(rec_.offset));
  ASSERT_NE(frame.text.find(where), std::string::npos) << frame.text;
  const std::string quoted = render::JsonWriter::Quote(frame.text);
  char unsymbolized[64];
  std::snprintf(unsymbolized, sizeof unsymbolized, "\"symbolize_target+0x%lx\"",
                static_cast<unsigned long>(rec_.offset));

  // Chrome: the stackFrames node of the sync's stack.
  const std::string chrome = Summary({"export", trace});
  EXPECT_NE(chrome.find("\"name\":" + quoted), std::string::npos)
      << chrome.substr(std::min(chrome.size(), chrome.find("stackFrames")));
  const std::string chrome_path = dir + "/t.json";
  std::ofstream(chrome_path) << chrome;
  EXPECT_EQ(chrome.find(unsymbolized), std::string::npos);

  // The report's flame view (its data: stacks.nodes.name).
  const std::string data = Summary({"report", "--data-only", "--no-compress", "-o", "-", trace});
  const size_t names = data.find("\"stacks\":{\"nodes\":{\"name\":[");
  ASSERT_NE(names, std::string::npos);
  const std::string node_names = data.substr(names, data.find(']', names) - names);
  EXPECT_NE(node_names.find(quoted), std::string::npos) << node_names;

  // Perfetto: the frame's function name; the module, its build id (raw
  // bytes) and the offset in its mapping and rel_pc; the source file and
  // line. check_perfetto.py decodes it with protoc, resolves every stack
  // through the interned tables, compares them with the Chrome export's and
  // prints each frame: name, mapping path, build id, rel_pc, source, line.
  const std::string perfetto = Summary({"export", "--format", "perfetto", trace});
  EXPECT_NE(perfetto.find(frame.text), std::string::npos);
  const std::string cmd = "python3 " GPSCOPE_SOURCE_DIR "/tests/export/check_perfetto.py " +
                          std::string(GPSCOPE_ANALYZE_BINARY) + " " GPSCOPE_SOURCE_DIR " --stacks " +
                          trace + " " + chrome_path;
  std::string printed;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  while (fgets(buf, sizeof buf, p) != nullptr) printed += buf;
  EXPECT_EQ(pclose(p), 0) << printed;
  char rel_pc[32];
  std::snprintf(rel_pc, sizeof rel_pc, "%#lx", static_cast<unsigned long>(rec_.offset));
  const std::string want = "frame\t" + frame.text + "\t" + rec_.module + "\t" + rec_.build_id +
                           "\t" + rel_pc + "\t" + frame.path + "\t" + std::to_string(line_) + "\n";
  EXPECT_NE(printed.find(want), std::string::npos) << "want " << want << "got\n" << printed;
  std::filesystem::remove_all(dir);
}

// --------------------------------------------------------- hostile ELF --

void Poke(std::string* b, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n && at + i < b->size(); ++i) (*b)[at + i] = static_cast<char>(v >> (8 * i));
}

void LookupSurvives(const std::string& bytes, uint64_t offset) {
  auto elf = model::ElfSymbols::Parse(bytes);
  if (!elf.ok()) return;
  model::ElfSymbols::Damage damage;
  const auto r = elf->Lookup({0, offset, offset + 1}, &damage);
  EXPECT_EQ(r.size(), 3u);
  for (const auto& x : r) {
    EXPECT_LE(x.function.size(), model::ElfSymbols::kMaxNameBytes);
    EXPECT_LE(x.file.size(), model::ElfSymbols::kMaxNameBytes);
  }
}

TEST_F(SymbolizeTest, TruncatedFilesNeverCrash) {
  const std::string bytes = Slurp(rec_.module);
  ASSERT_GT(bytes.size(), 4096u);
  EXPECT_FALSE(model::ElfSymbols::Parse("").ok());
  EXPECT_FALSE(model::ElfSymbols::Parse(bytes.substr(0, 63)).ok());
  EXPECT_FALSE(model::ElfSymbols::Parse("\x7f" "ELF\x01\x01").ok());
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 64) LookupSurvives(bytes.substr(0, n), rec_.offset);
  // Without its section table (at the end) the file still has its notes
  // segment: the build id, but no symbols.
  auto cut = model::ElfSymbols::Parse(bytes.substr(0, bytes.size() / 2));
  if (cut.ok()) {
    EXPECT_FALSE(cut->has_symbols());
  }
}

TEST_F(SymbolizeTest, BadOffsetsAndCountsAreRefusedOrSkipped) {
  const std::string bytes = Slurp(rec_.module);
  std::vector<std::pair<size_t, size_t>> fields = {
      {0x20, 8}, {0x28, 8}, {0x36, 2}, {0x38, 2}, {0x3a, 2}, {0x3c, 2}, {0x3e, 2}};
  for (const auto& [at, n] : fields) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0xffff}, ~uint64_t{0},
                       uint64_t{bytes.size()}, uint64_t{bytes.size() - 1}}) {
      std::string b = bytes;
      Poke(&b, at, v, n);
      LookupSurvives(b, rec_.offset);
    }
  }
  // Every section header's offset, size, link and entsize made hostile.
  uint64_t shoff = 0;
  uint16_t shnum = 0;
  std::memcpy(&shoff, bytes.data() + 0x28, 8);
  std::memcpy(&shnum, bytes.data() + 0x3c, 2);
  ASSERT_LT(shoff + shnum * 64ull, bytes.size() + 1);
  for (uint16_t s = 0; s < shnum; ++s) {
    for (size_t field : {0x00, 0x18, 0x20, 0x28, 0x38}) {
      for (uint64_t v : {~uint64_t{0}, uint64_t{bytes.size()}, uint64_t{0x7fffffff}}) {
        std::string b = bytes;
        Poke(&b, shoff + s * 64ull + field, v, field == 0x00 || field == 0x28 ? 4 : 8);
        LookupSurvives(b, rec_.offset);
      }
    }
  }
}

TEST_F(SymbolizeTest, FlippedBytesNeverCrash) {
  const std::string bytes = Slurp(rec_.module);
  std::mt19937_64 rng(20);
  for (int i = 0; i < 300; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 16; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    LookupSurvives(b, rec_.offset);
  }
}

// A minimal ELF: one .debug_line section (and its name table), bytes as given.
std::string ElfWithDebugLine(const std::string& line_program) {
  const std::string names = std::string("\0.shstrtab\0.debug_line\0", 23);
  std::string b(64, '\0');
  b.replace(0, 6, "\x7f" "ELF\x02\x01");
  const size_t names_at = b.size();
  b += names;
  const size_t line_at = b.size();
  b += line_program;
  while (b.size() % 8) b.push_back('\0');
  const size_t shoff = b.size();
  b.append(3 * 64, '\0');
  auto section = [&](int i, uint32_t name, uint32_t type, size_t off, size_t size) {
    Poke(&b, shoff + i * 64 + 0x00, name, 4);
    Poke(&b, shoff + i * 64 + 0x04, type, 4);
    Poke(&b, shoff + i * 64 + 0x18, off, 8);
    Poke(&b, shoff + i * 64 + 0x20, size, 8);
  };
  section(1, 1, 3, names_at, names.size());
  section(2, 11, 1, line_at, line_program.size());
  Poke(&b, 0x28, shoff, 8);
  Poke(&b, 0x3a, 64, 2);
  Poke(&b, 0x3c, 3, 2);
  Poke(&b, 0x3e, 1, 2);
  return b;
}

// A DWARF 4 unit: one file "a.cc", rows at 0x1000 (line 10) and 0x1010
// (line 12), then `extra` bytes of program before end_sequence at 0x1020.
std::string Dwarf4Unit(const std::string& extra, uint8_t line_range = 14) {
  std::string h;
  h += '\x01';                                // min_inst_length
  h += '\x01';                                // max_ops
  h += '\x01';                                // default_is_stmt
  h += static_cast<char>(-5);                 // line_base
  h += static_cast<char>(line_range);
  h += '\x0d';                                // opcode_base
  h += std::string("\x00\x01\x01\x01\x01\x00\x00\x00\x01\x00\x00\x01", 12);
  h += '\0';                                  // no include directories
  h += std::string("a.cc\0\0\0\0", 8);        // file 1, then the end of the list
  h += '\0';
  std::string prog;
  prog += std::string("\x00\x09\x02", 3);     // set_address 0x1000
  prog += std::string("\x00\x10\x00\x00\x00\x00\x00\x00", 8);
  prog += std::string("\x03\x09", 2);         // advance_line 9 -> 10
  prog += '\x01';                             // copy
  prog += std::string("\x02\x10", 2);         // advance_pc 16
  prog += std::string("\x03\x02", 2);         // advance_line 2 -> 12
  prog += '\x01';                             // copy
  prog += extra;
  prog += std::string("\x02\x10", 2);         // advance_pc 16
  prog += std::string("\x00\x01\x01", 3);     // end_sequence
  std::string unit;
  unit += std::string("\x04\x00", 2);         // version 4
  std::string hl(4, '\0');
  Poke(&hl, 0, h.size(), 4);
  unit += hl + h + prog;
  std::string len(4, '\0');
  Poke(&len, 0, unit.size(), 4);
  return len + unit;
}

TEST_F(SymbolizeTest, CraftedLineProgramsAreReadOrSkipped) {
  {  // a well-formed unit: the rows' ranges
    const std::string elf_bytes = ElfWithDebugLine(Dwarf4Unit(""));  // outlives elf
    auto elf = model::ElfSymbols::Parse(elf_bytes);
    ASSERT_TRUE(elf.ok()) << elf.status();
    ASSERT_TRUE(elf->has_line_table());
    model::ElfSymbols::Damage d;
    const auto r = elf->Lookup({0xfff, 0x1000, 0x100f, 0x1010, 0x101f, 0x1020}, &d);
    EXPECT_EQ(r[0].line, 0u);
    EXPECT_EQ(r[1].line, 10u);
    EXPECT_EQ(r[1].file, "a.cc");
    EXPECT_EQ(r[2].line, 10u);
    EXPECT_EQ(r[3].line, 12u);
    EXPECT_EQ(r[4].line, 12u);
    EXPECT_EQ(r[5].line, 0u);  // past the end of the sequence
    EXPECT_EQ(d.bad_units, 0u);
  }
  {  // line_range 0 (a division by zero): the unit is skipped
    model::ElfSymbols::Damage d;
    const std::string elf_bytes = ElfWithDebugLine(Dwarf4Unit("", 0));  // outlives elf
    auto elf = model::ElfSymbols::Parse(elf_bytes);
    ASSERT_TRUE(elf.ok());
    EXPECT_EQ(elf->Lookup({0x1000}, &d)[0].line, 0u);
    EXPECT_EQ(d.bad_units, 1u);
  }
  {  // an extended opcode longer than the unit; an overlong LEB128
    for (const std::string& extra : {std::string("\x00\xff\xff\x0f\x02", 5),
                                     std::string("\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 13)}) {
      model::ElfSymbols::Damage d;
      const std::string elf_bytes = ElfWithDebugLine(Dwarf4Unit(extra));  // outlives elf
      auto elf = model::ElfSymbols::Parse(elf_bytes);
      ASSERT_TRUE(elf.ok());
      elf->Lookup({0x1000}, &d);
      EXPECT_EQ(d.bad_units, 1u);
    }
  }
  {  // a unit length past the section, a DWARF 5 header with a huge file count
    std::string u = Dwarf4Unit("");
    Poke(&u, 0, 0x7ffffff0, 4);
    model::ElfSymbols::Damage d;
    const std::string elf_bytes = ElfWithDebugLine(u);  // outlives elf
    auto elf = model::ElfSymbols::Parse(elf_bytes);
    ASSERT_TRUE(elf.ok());
    EXPECT_EQ(elf->Lookup({0x1000}, &d)[0].line, 0u);
    EXPECT_EQ(d.bad_units, 1u);
    std::string v5;
    v5 += std::string("\x05\x00\x08\x00", 4);   // version 5, address size 8
    v5 += std::string("\x20\x00\x00\x00", 4);   // header_length
    v5 += std::string("\x01\x01\x01\xfb\x0e\x0d", 6);
    v5 += std::string("\x00\x01\x01\x01\x01\x00\x00\x00\x01\x00\x00\x01", 12);
    v5 += std::string("\x01\x01\x08", 3);        // dir format: path, string
    v5 += std::string("\xff\xff\xff\xff\x0f", 5);  // 4 G directories
    std::string len(4, '\0');
    Poke(&len, 0, v5.size(), 4);
    model::ElfSymbols::Damage d5;
    const std::string elf5_bytes = ElfWithDebugLine(len + v5);  // outlives elf5
    auto elf5 = model::ElfSymbols::Parse(elf5_bytes);
    ASSERT_TRUE(elf5.ok());
    EXPECT_EQ(elf5->Lookup({0x1000}, &d5)[0].line, 0u);
    EXPECT_EQ(d5.bad_units, 1u);
  }
}

TEST_F(SymbolizeTest, HostileModuleFilesAreNotOpened) {
  // A FIFO and a directory named as modules: never opened for reading
  // (a FIFO would block the analysis).
  const std::string dir = TempDir("fifo");
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  std::vector<model::StackFrameText> frames(2);
  for (auto& f : frames) {
    f.defined = true;
    f.kind = proto::FRAME_NATIVE;
    f.build_id = rec_.build_id;
    f.module_offset = rec_.offset;
  }
  frames[0].file = dir + "/fifo";
  frames[1].file = dir;
  std::vector<model::SymbolNote> notes;
  EXPECT_EQ(model::SymbolizeFrames(&frames, &notes, {}), 0u);
  EXPECT_TRUE(frames[0].symbol.empty());
  std::filesystem::remove_all(dir);
}

// One file named under many build ids: bounded work and notes.
TEST_F(SymbolizeTest, ManyBuildIdsForOneFileAreBounded) {
  std::vector<model::StackFrameText> frames(model::kMaxModules + 500);
  for (size_t i = 0; i < frames.size(); ++i) {
    model::StackFrameText& f = frames[i];
    f.defined = true;
    f.kind = proto::FRAME_NATIVE;
    f.file = rec_.module;
    char id[41];
    std::snprintf(id, sizeof id, "%040zx", i + 1);
    f.build_id = id;
    f.module_offset = rec_.offset;
  }
  std::vector<model::SymbolNote> notes;
  model::SymbolizeFrames(&frames, &notes, {});
  EXPECT_EQ(notes.size(), model::kMaxSymbolNotes + 1);
  EXPECT_NE(notes.back().text.find("more modules not looked for"), std::string::npos);
  EXPECT_TRUE(notes.back().module.empty());
}

// The table keeps a long label's file:line visible.
TEST_F(SymbolizeTest, LongSiteLabelsKeepTheirLine) {
  const std::string dir = TempDir("long");
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0x5157, 77);
  p.WriteHeader();
  const std::string file =
      "/home/u/project/a_training_loop_module_with_a_very_long_descriptive_name.py";
  const uint32_t frame = p.AddPythonFrame(file, 4321, "a_rather_long_function_name_too");
  const uint32_t stack = p.AddStack({frame});
  uint64_t t = kT0;
  for (uint32_t c = 1000; c < 1040; c += 2) {
    p.Add(format::ApiCallEvent{t, t + 8 * kUs, proto::API_RUNTIME, 211, kMain, c, 0,
                               p.Intern("cudaLaunchKernel_v7000")});
    format::KernelEvent e{};
    e.start_ns = t + 9 * kUs;
    e.end_ns = e.start_ns + 2 * kMs;
    e.name_id = p.Intern("gemm");
    e.context_id = 1;
    e.stream_id = 7;
    e.correlation_id = c;
    p.Add(e);
    p.AddStackSample(t + 20 * kUs, kMain, c + 1, stack, proto::STACK_SYNC);
    p.Add(format::ApiCallEvent{t + 20 * kUs, e.end_ns + 4 * kUs, proto::API_RUNTIME, 0, kMain,
                               c + 1, 0, p.Intern("cudaStreamSynchronize_v3020")});
    t = e.end_ns + 10 * kMs;
  }
  p.WriteEnd();
  ASSERT_TRUE(trace.WriteFile(dir + "/t.gpscope"));
  const std::string text = Summary({"summary", dir + "/t.gpscope"});
  bool row = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  1. ", 0) != 0) continue;
    row = true;
    EXPECT_NE(line.find("_descriptive_name.py:4321"), std::string::npos) << line;
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_TRUE(row) << text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpscope
