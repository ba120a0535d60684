// tests/inject/stacks/python_layout_test.cc: the compiled-in CPython layout
// tables (inject/stacks/python_layout.cc) against each installed
// interpreter's own headers, via python_offsets_probe.c built per version.
#include "inject/stacks/python_layout.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace gpscope::inject::stacks {
namespace {

// "3.9=/path/probe,3.10=,..." -> version -> probe path ("" when not built).
std::map<std::string, std::string> Probes() {
  std::map<std::string, std::string> m;
  std::string all = GPSCOPE_PY_PROBES;
  size_t start = 0;
  while (start < all.size()) {
    size_t comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    const std::string item = all.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) m[item.substr(0, eq)] = item.substr(eq + 1);
    start = comma + 1;
  }
  return m;
}

bool SkipListed(const std::string& version) {
  const char* v = std::getenv("GPSCOPE_SKIP_PYTHON");
  if (v == nullptr) return false;
  const std::string list = std::string(",") + v + ",";
  return list.find("," + version + ",") != std::string::npos ||
         list.find(",all,") != std::string::npos;
}

// What the probe must print for layout `l`, by the probe's names.
std::map<std::string, long long> Expected(const PythonLayout& l) {
  std::map<std::string, long long> e;
  e["version_minor"] = l.minor;
  e["object.ob_type"] = l.ob_type;
  e["varobject.ob_size"] = l.ob_size;
  e["type.tp_basicsize"] = l.tp_basicsize;
  e["type.tp_name"] = l.tp_name;
  if (l.minor >= 13) {
    e["tstate.current_frame"] = l.tstate_frame;
  } else if (l.minor >= 11) {
    e["tstate.cframe"] = l.tstate_cframe;
    e["cframe.current_frame"] = l.tstate_frame;
  } else {
    e["tstate.frame"] = l.tstate_frame;
  }
  e["frame.previous"] = l.frame_previous;
  e["frame.code"] = l.frame_code;
  e["frame.instr"] = l.frame_instr;
  if (l.minor >= 11) {
    e["frame.owner"] = l.frame_owner;
    e["owner.generator"] = l.owner_generator;
    e["owner.max"] = l.owner_max;
    if (l.minor >= 12) e["owner.cstack"] = l.owner_cstack;
    e["code.qualname"] = l.code_qualname;
    e["code.code_adaptive"] = l.code_adaptive;
    e["code.firsttraceable"] = l.code_firsttraceable;
  } else {
    e["frame.basicsize"] = l.frame_basicsize;
    e["code.code"] = l.code_code;
  }
  e["code.basicsize"] = l.code_basicsize;
  e["code.filename"] = l.code_filename;
  e["code.name"] = l.code_name;
  e["code.firstlineno"] = l.code_firstlineno;
  e["code.linetable"] = l.code_linetable;
  e["bytes.ob_sval"] = l.bytes_sval;
  e["bytes.basicsize"] = l.bytes_basicsize;
  e["unicode.basicsize"] = l.unicode_basicsize;
  e["unicode.length"] = l.unicode_length;
  e["unicode.state"] = l.unicode_state;
  e["unicode.ascii_size"] = l.unicode_ascii_size;
  e["unicode.compact_size"] = l.unicode_compact_size;
  e["unicode.utf8_length"] = l.unicode_utf8_length;
  e["unicode.utf8"] = l.unicode_utf8;
  e["unicode.kind_shift"] = l.unicode_kind_shift;
  e["unicode.compact_bit"] = l.unicode_compact_bit;
  e["unicode.ascii_bit"] = l.unicode_ascii_bit;
  if (const DebugOffsetsLayout* d = FindDebugOffsetsLayout(l.minor)) {
    e["debug.cookie"] = d->cookie;
    e["debug.version"] = d->version;
    e["debug.free_threaded"] = d->free_threaded;
    e["debug.tstate_current_frame"] = d->tstate_current_frame;
    e["debug.frame_previous"] = d->frame_previous;
    e["debug.frame_executable"] = d->frame_executable;
    e["debug.frame_instr_ptr"] = d->frame_instr_ptr;
    e["debug.frame_owner"] = d->frame_owner;
    e["debug.code_filename"] = d->code_filename;
    e["debug.code_name"] = d->code_name;
    e["debug.code_qualname"] = d->code_qualname;
    e["debug.code_linetable"] = d->code_linetable;
    e["debug.code_firstlineno"] = d->code_firstlineno;
    e["debug.code_adaptive"] = d->code_adaptive;
    e["debug.ob_type"] = d->ob_type;
    e["debug.bytes_sval"] = d->bytes_sval;
    e["debug.unicode_ascii_size"] = d->unicode_ascii_size;
  }
  return e;
}

class PythonLayoutTest : public testing::TestWithParam<int> {};

TEST_P(PythonLayoutTest, TableMatchesTheInterpretersHeaders) {
  const int minor = GetParam();
  const std::string version = "3." + std::to_string(minor);
  const PythonLayout* l = FindPythonLayout(3, minor);
  ASSERT_NE(l, nullptr) << "no table for CPython " << version;
  const std::string probe = Probes()[version];
  if (probe.empty()) {
    if (SkipListed(version)) GTEST_SKIP() << "CPython " << version << " skipped (GPSCOPE_SKIP_PYTHON)";
    FAIL() << "CPython " << version << " headers not found under " << GPSCOPE_PYTHON_ROOT << "/"
           << version << ".*/include or /usr/include/python" << version << ": install it (pyenv install "
           << version << ") and re-run cmake, or set GPSCOPE_SKIP_PYTHON=" << version << " to skip it";
  }
  FILE* p = popen(probe.c_str(), "r");
  ASSERT_NE(p, nullptr) << probe;
  std::map<std::string, long long> got;
  char name[128];
  long long value = 0;
  while (std::fscanf(p, "%127s %lld", name, &value) == 2) got[name] = value;
  ASSERT_EQ(pclose(p), 0) << probe;
  const std::map<std::string, long long> want = Expected(*l);
  for (const auto& [key, v] : got) {
    auto it = want.find(key);
    if (it == want.end()) {
      ADD_FAILURE() << version << ": the probe prints " << key << " but the test has no table value";
    } else {
      EXPECT_EQ(it->second, v) << version << " " << key << ": table " << it->second << ", headers " << v;
    }
  }
  for (const auto& [key, v] : want) {
    EXPECT_TRUE(got.count(key)) << version << ": the probe did not print " << key;
  }
}

INSTANTIATE_TEST_SUITE_P(CPython, PythonLayoutTest, testing::Values(9, 10, 11, 12, 13),
                         [](const testing::TestParamInfo<int>& i) {
                           return "3_" + std::to_string(i.param);
                         });

TEST(PythonLayoutTest, UnsupportedVersionsHaveNoTable) {
  EXPECT_EQ(FindPythonLayout(3, 8), nullptr);
  EXPECT_EQ(FindPythonLayout(3, 14), nullptr);
  EXPECT_EQ(FindPythonLayout(2, 7), nullptr);
  int n = 0;
  const PythonLayout* const* all = AllPythonLayouts(&n);
  ASSERT_EQ(n, 5);
  for (int i = 0; i < n; ++i) EXPECT_EQ(all[i]->minor, 9 + i);
}

}  // namespace
}  // namespace gpscope::inject::stacks
