// tests/inject/stacks/stack_table_test.cc: the writer's frame and stack
// interning, with a fake resolver that maps addresses to names and lines.
#include "inject/stacks/stack_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace gpscope::inject::stacks {
namespace {

// Python: code address -> "file<addr>.py" / "fn<addr>", line = offset / 10
// (so offsets 20..29 share a line). Native: addr -> "sym<addr>" unless the
// address is odd (then unresolved). Counts calls.
class FakeResolver : public FrameResolver {
 public:
  ResolvedFrame Resolve(StackKind kind, const FrameRef& ref) override {
    ++calls;
    ResolvedFrame f;
    if (kind == StackKind::kPython) {
      f.kind = FrameKind::kPython;
      f.file = "file" + std::to_string(ref.addr) + ".py";
      f.function = "fn" + std::to_string(ref.addr);
      f.line = ref.offset / 10;
      f.resolved = true;
    } else {
      f.kind = FrameKind::kNative;
      f.module_offset = ref.addr;
      if (ref.addr % 2 == 0) {
        f.file = "/lib/libx.so";
        f.build_id = "abcd";
        f.function = "sym" + std::to_string(ref.addr);
        f.resolved = true;
      }
    }
    return f;
  }
  int calls = 0;
};

StackCapture Py(std::initializer_list<std::pair<uint64_t, int>> frames, uint8_t flags = 0) {
  StackCapture c{};
  int n = 0;
  for (const auto& [addr, offset] : frames) c.frames[n++] = FrameRef{addr, offset, 1};
  c.Set(StackKind::kPython, n, flags);
  return c;
}

StackCapture Native(std::initializer_list<uint64_t> pcs) {
  StackCapture c{};
  int n = 0;
  for (uint64_t pc : pcs) c.frames[n++] = FrameRef{pc, 0, 0};
  c.Set(StackKind::kNative, n, 0);
  return c;
}

TEST(StackTableTest, ARepeatedCaptureGetsTheSameIdAndIsResolvedOnce) {
  FakeResolver r;
  StackTable t(&r);
  const uint32_t a = t.Intern(Py({{100, 20}, {200, 40}}));
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(r.calls, 2);
  EXPECT_EQ(t.Intern(Py({{100, 20}, {200, 40}})), a);
  EXPECT_EQ(r.calls, 2);
  EXPECT_EQ(t.stacks(), 1u);
  EXPECT_EQ(t.frames(), 2u);
}

TEST(StackTableTest, OffsetsOnTheSameLinesShareAStackButAreNotConfused) {
  FakeResolver r;
  StackTable t(&r);
  const uint32_t a = t.Intern(Py({{100, 20}, {200, 40}}));
  const uint32_t b = t.Intern(Py({{100, 24}, {200, 46}}));  // same lines 2 and 4
  const uint32_t c = t.Intern(Py({{100, 30}, {200, 40}}));  // line 3 in the innermost
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(t.raw_stacks(), 3u);
  EXPECT_EQ(t.stacks(), 2u);
  EXPECT_EQ(t.frames(), 3u);  // the outer frame is shared
}

TEST(StackTableTest, TruncationKindAndOrderMakeDifferentStacks) {
  FakeResolver r;
  StackTable t(&r);
  const uint32_t a = t.Intern(Py({{100, 20}, {200, 40}}));
  EXPECT_NE(t.Intern(Py({{100, 20}, {200, 40}}, kStackTruncated)), a);
  EXPECT_NE(t.Intern(Py({{200, 40}, {100, 20}})), a);
  EXPECT_NE(t.Intern(Native({100, 200})), a);
  EXPECT_EQ(t.stacks(), 4u);
}

TEST(StackTableTest, EmptyCapturesHaveNoStack) {
  FakeResolver r;
  StackTable t(&r);
  StackCapture c{};
  EXPECT_EQ(t.Intern(c), 0u);
  c.Set(StackKind::kPython, 0, 0);
  EXPECT_EQ(t.Intern(c), 0u);
  EXPECT_EQ(r.calls, 0);
}

TEST(StackTableTest, TakeNewHandsOutEachRowOnceFramesBeforeStacks) {
  FakeResolver r;
  StackTable t(&r);
  t.Intern(Py({{100, 20}, {200, 40}}));
  std::vector<StackFrameEntry> frames;
  std::vector<StackEntry> stacks;
  t.TakeNew(&frames, &stacks);
  ASSERT_EQ(frames.size(), 2u);
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(frames[0].id, 1u);
  EXPECT_EQ(frames[0].frame.file, "file100.py");
  EXPECT_EQ(frames[0].frame.line, 2);
  EXPECT_EQ(frames[1].frame.function, "fn200");
  EXPECT_EQ(stacks[0].id, 1u);
  EXPECT_EQ(stacks[0].frame_ids, (std::vector<uint32_t>{1, 2}));
  EXPECT_FALSE(stacks[0].truncated);

  frames.clear();
  stacks.clear();
  t.Intern(Py({{100, 20}, {200, 40}}));
  t.TakeNew(&frames, &stacks);
  EXPECT_TRUE(frames.empty());
  EXPECT_TRUE(stacks.empty());

  t.Intern(Py({{300, 10}, {200, 40}}));
  t.TakeNew(&frames, &stacks);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].id, 3u);
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0].frame_ids, (std::vector<uint32_t>{3, 2}));

  frames.clear();
  stacks.clear();
  t.ResendAll();
  t.TakeNew(&frames, &stacks);
  EXPECT_EQ(frames.size(), 3u);
  EXPECT_EQ(stacks.size(), 2u);
}

TEST(StackTableTest, NativeFramesKeepModuleOffsetAndCountUnresolved) {
  FakeResolver r;
  StackTable t(&r);
  EXPECT_EQ(t.Intern(Native({1000, 1001, 1002})), 1u);
  std::vector<StackFrameEntry> frames;
  std::vector<StackEntry> stacks;
  t.TakeNew(&frames, &stacks);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].frame.function, "sym1000");
  EXPECT_EQ(frames[0].frame.build_id, "abcd");
  EXPECT_FALSE(frames[1].frame.resolved);
  EXPECT_EQ(frames[1].frame.module_offset, 1001u);
  EXPECT_EQ(t.unresolved_frames(), 1u);
}

// Resolves native addresses < 100 into the collector, < 200 into CUPTI,
// the rest into the application.
class ModuleResolver : public FrameResolver {
 public:
  ResolvedFrame Resolve(StackKind, const FrameRef& ref) override {
    ResolvedFrame f;
    f.kind = FrameKind::kNative;
    f.file = ref.addr < 100   ? "/opt/gpscope/lib/libgpscope_inject.so"
             : ref.addr < 200 ? "/usr/local/cuda/lib64/libcupti.so.13"
                              : "/home/u/app";
    f.module_offset = ref.addr;
    f.resolved = true;
    return f;
  }
};

TEST(StackTableTest, LeadingFramesInTheCollectorAndCuptiAreDropped) {
  ModuleResolver r;
  StackTable::Limits limits;
  limits.drop_leading_native_modules = {"libgpscope_inject", "libcupti"};
  StackTable t(&r, limits);
  ASSERT_EQ(t.Intern(Native({10, 20, 150, 300, 120, 310})), 1u);
  std::vector<StackFrameEntry> frames;
  std::vector<StackEntry> stacks;
  t.TakeNew(&frames, &stacks);
  ASSERT_EQ(stacks.size(), 1u);
  ASSERT_EQ(stacks[0].frame_ids.size(), 3u);  // 300, then 120 (not leading: kept), 310
  EXPECT_EQ(frames[stacks[0].frame_ids[0] - 1].frame.module_offset, 300u);
  EXPECT_EQ(frames[stacks[0].frame_ids[1] - 1].frame.module_offset, 120u);
  // A stack entirely inside them keeps its last frame.
  const uint32_t only = t.Intern(Native({10, 150}));
  ASSERT_NE(only, 0u);
  frames.clear();
  stacks.clear();
  t.TakeNew(&frames, &stacks);
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0].frame_ids.size(), 1u);
  // Without the option nothing is dropped.
  StackTable plain(&r);
  plain.Intern(Native({10, 20, 150, 300}));
  EXPECT_EQ(plain.frames(), 4u);
}

TEST(StackTableTest, LimitsGiveIdZeroAndCount) {
  FakeResolver r;
  StackTable::Limits limits;
  limits.max_stacks = 2;
  StackTable t(&r, limits);
  EXPECT_EQ(t.Intern(Py({{1, 0}})), 1u);
  EXPECT_EQ(t.Intern(Py({{2, 0}})), 2u);
  EXPECT_EQ(t.Intern(Py({{3, 0}})), 0u);
  EXPECT_EQ(t.dropped(), 1u);
  EXPECT_EQ(t.Intern(Py({{1, 0}})), 1u);  // known ones still resolve
  limits.max_stacks = 100;
  limits.max_frames = 3;
  StackTable f(&r, limits);
  EXPECT_EQ(f.Intern(Py({{1, 0}, {2, 0}, {3, 0}})), 1u);
  EXPECT_EQ(f.Intern(Py({{4, 0}})), 0u);
  EXPECT_EQ(f.dropped(), 1u);
}

TEST(StackTableTest, ManyRandomStacksMapConsistently) {
  FakeResolver r;
  StackTable t(&r);
  std::mt19937_64 rng(7);
  std::map<std::vector<uint64_t>, uint32_t> seen;
  for (int i = 0; i < 20000; ++i) {
    const int depth = 1 + static_cast<int>(rng() % 30);
    StackCapture c{};
    std::vector<uint64_t> key;
    for (int d = 0; d < depth; ++d) {
      const uint64_t addr = 8 * (1 + rng() % 50);  // few code objects: many collisions of parts
      const int offset = static_cast<int>(rng() % 4) * 10;
      c.frames[d] = FrameRef{addr, offset, 1};
      key.push_back(addr);
      key.push_back(static_cast<uint64_t>(offset / 10));  // what the fake resolves to
    }
    c.Set(StackKind::kPython, depth, 0);
    const uint32_t id = t.Intern(c);
    ASSERT_NE(id, 0u);
    auto [it, fresh] = seen.emplace(key, id);
    ASSERT_EQ(it->second, id) << "resolved-equal stacks got different ids";
    if (fresh) {
      ASSERT_EQ(id, seen.size()) << "ids are not dense";
    }
    ASSERT_EQ(t.Intern(c), id);
  }
  EXPECT_EQ(t.stacks(), seen.size());
  EXPECT_GT(t.bytes(), 0u);
}

TEST(StackTableTest, HashDependsOnEveryField) {
  StackCapture a = Py({{100, 20}, {200, 40}});
  const uint64_t h = HashCapture(a);
  StackCapture b = a;
  b.frames[1].check = 2;
  EXPECT_NE(HashCapture(b), h);
  b = a;
  b.frames[0].offset = 21;
  EXPECT_NE(HashCapture(b), h);
  b = a;
  b.flags = kStackTruncated;
  EXPECT_NE(HashCapture(b), h);
  b = a;
  b.correlation_id = 99;  // not part of the stack
  EXPECT_EQ(HashCapture(b), h);
}

}  // namespace
}  // namespace gpscope::inject::stacks
