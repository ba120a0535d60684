// tests/inject/stacks/python_walker_test.cc: the frame walk over fake
// thread states and frame chains built in memory to each layout table:
// the happy path, every validation (wrong type pointers, misaligned and
// non-canonical pointers, owners, instructions, cycles), the frames CPython
// hides, the depth bound, and that the process-wide capture turns Python
// stacks off on the first inconsistency and stays off.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "inject/stacks/python_stacks.h"
#include "inject/stacks/python_walker.h"
#include "tests/inject/stacks/fake_chain.h"

namespace gpscope::inject::stacks {
namespace {

WalkResult Walk(const FakeChain& c, FrameRef* out, int max = kMaxStackDepth) {
  return WalkPythonFrames(c.target(), DirectLoads{}, c.tstate(), out, max);
}

class PythonWalkerTest : public testing::TestWithParam<int> {
 protected:
  const PythonLayout& layout() const { return *FindPythonLayout(3, GetParam()); }
};

TEST_P(PythonWalkerTest, WalksTheChainInnermostFirst) {
  FakeChain c(layout());
  uint8_t* a = c.Code(10);
  uint8_t* b = c.Code(20);
  uint8_t* d = c.Code(30);
  c.Push(a, 3);
  c.Push(b, 7);
  c.Push(d, 11);
  FrameRef out[kMaxStackDepth];
  const WalkResult r = Walk(c, out);
  ASSERT_EQ(r.status, WalkStatus::kComplete) << WalkFaultName(r.fault);
  ASSERT_EQ(r.depth, 3);
  EXPECT_EQ(out[0].addr, FakeChain::Addr(d));
  EXPECT_EQ(out[0].offset, 22);  // byte offset of code unit 11
  EXPECT_EQ(out[0].check, 30);
  EXPECT_EQ(out[1].addr, FakeChain::Addr(b));
  EXPECT_EQ(out[1].offset, 14);
  EXPECT_EQ(out[2].addr, FakeChain::Addr(a));
  EXPECT_EQ(out[2].offset, 6);
  EXPECT_EQ(out[2].check, 10);
}

TEST_P(PythonWalkerTest, AnEmptyChainIsCompleteWithNoFrames) {
  FakeChain c(layout());
  FrameRef out[4];
  const WalkResult r = Walk(c, out);
  EXPECT_EQ(r.status, WalkStatus::kComplete);
  EXPECT_EQ(r.depth, 0);
}

TEST_P(PythonWalkerTest, StopsAtTheBoundKeepingTheInnermostFrames) {
  FakeChain c(layout());
  std::vector<uint8_t*> codes;
  for (int i = 0; i < 200; ++i) {
    codes.push_back(c.Code(i + 1));
    c.Push(codes.back(), 1);
  }
  FrameRef out[kMaxStackDepth];
  const WalkResult r = Walk(c, out, kMaxStackDepth);
  EXPECT_EQ(r.status, WalkStatus::kTruncated);
  ASSERT_EQ(r.depth, kMaxStackDepth);
  EXPECT_EQ(out[0].check, 200);
  EXPECT_EQ(out[kMaxStackDepth - 1].check, 200 - kMaxStackDepth + 1);
}

TEST_P(PythonWalkerTest, AWrongCodeTypeStopsTheWalkWithTheFramesBeforeIt) {
  FakeChain c(layout());
  c.Push(c.Code(1), 1);
  uint8_t* bad = c.Code(2);
  c.Push(bad, 1);
  c.Push(c.Code(3), 1);
  FakeChain::Put<uint64_t>(bad, layout().ob_type, 0x1000);  // not PyCode_Type
  FrameRef out[kMaxStackDepth];
  const WalkResult r = Walk(c, out);
  EXPECT_EQ(r.status, WalkStatus::kInconsistent);
  EXPECT_EQ(r.fault, WalkFault::kBadCodeType);
  ASSERT_EQ(r.depth, 1);
  EXPECT_EQ(out[0].check, 3);
}

TEST_P(PythonWalkerTest, MisalignedOrNonCanonicalPointersAreNotFollowed) {
  for (uint64_t bogus : {uint64_t{0x1001}, uint64_t{0xffff800000001000}, uint64_t{1} << 47}) {
    FakeChain c(layout());
    uint8_t* f = c.Push(c.Code(1), 1);
    c.SetPrevious(f, bogus);
    FrameRef out[kMaxStackDepth];
    WalkResult r = Walk(c, out);
    EXPECT_EQ(r.fault, WalkFault::kBadFramePointer) << std::hex << bogus;
    EXPECT_EQ(r.depth, 1);
    c.SetPrevious(f, 0);
    c.SetCode(f, bogus);
    r = Walk(c, out);
    EXPECT_EQ(r.fault, WalkFault::kBadCodePointer) << std::hex << bogus;
    EXPECT_EQ(r.depth, 0);
  }
}

TEST_P(PythonWalkerTest, ALoopInTheChainIsACycle) {
  for (int length : {1, 2, 3, 7, 30}) {
    FakeChain c(layout());
    std::vector<uint8_t*> frames;
    for (int i = 0; i < length; ++i) frames.push_back(c.Push(c.Code(i + 1), 1));
    c.SetPrevious(frames.front(), FakeChain::Addr(frames.back()));  // outermost -> innermost
    FrameRef out[kMaxStackDepth];
    const WalkResult r = Walk(c, out);
    EXPECT_EQ(r.status, WalkStatus::kInconsistent) << length;
    EXPECT_EQ(r.fault, WalkFault::kCycle) << length;
  }
}

TEST_P(PythonWalkerTest, AnInstructionOutsideTheCodeIsInconsistent) {
  FakeChain c(layout());
  c.Push(c.Code(1, /*units=*/10), /*unit=*/11);
  FrameRef out[kMaxStackDepth];
  const WalkResult r = Walk(c, out);
  EXPECT_EQ(r.fault, WalkFault::kBadInstruction);
}

TEST_P(PythonWalkerTest, ThreadStateChecks) {
  FakeChain c(layout());
  FrameRef out[4];
  EXPECT_EQ(WalkPythonFrames(c.target(), DirectLoads{}, 0, out, 4).fault, WalkFault::kBadThreadState);
  EXPECT_EQ(WalkPythonFrames(c.target(), DirectLoads{}, c.tstate() + 4, out, 4).fault,
            WalkFault::kBadThreadState);
  if (layout().tstate_cframe >= 0) {  // 3.11/3.12: a bad _PyCFrame pointer
    FakeChain::Put<uint64_t>(reinterpret_cast<void*>(c.tstate()), layout().tstate_cframe, 0x13);
    EXPECT_EQ(Walk(c, out).fault, WalkFault::kBadThreadState);
  }
}

INSTANTIATE_TEST_SUITE_P(CPython, PythonWalkerTest, testing::Values(9, 10, 11, 12, 13),
                         [](const testing::TestParamInfo<int>& i) {
                           return "3_" + std::to_string(i.param);
                         });

TEST(PythonWalkerTest, FrameObjectsOfAnotherTypeAreInconsistent) {
  for (int minor : {9, 10}) {
    const PythonLayout& l = *FindPythonLayout(3, minor);
    FakeChain c(l);
    c.Push(c.Code(1), 1);
    uint8_t* f = c.Push(c.Code(2), 1);
    FakeChain::Put<uint64_t>(f, l.ob_type, 0x2000);
    FrameRef out[4];
    const WalkResult r = Walk(c, out);
    EXPECT_EQ(r.fault, WalkFault::kBadFrameType) << minor;
    EXPECT_EQ(r.depth, 0) << minor;
  }
}

TEST(PythonWalkerTest, Lasti310IsInCodeUnitsAnd39InBytes) {
  for (int minor : {9, 10}) {
    FakeChain c(*FindPythonLayout(3, minor));
    c.Push(c.Code(1), 5);  // Push stores unit 5 the way each version does
    FrameRef out[4];
    ASSERT_EQ(Walk(c, out).depth, 1);
    EXPECT_EQ(out[0].offset, 10) << minor;
  }
}

TEST(PythonWalkerTest, SkipsCStackShimsAndIncompleteFramesLikeCPython) {
  for (int minor : {11, 12, 13}) {
    const PythonLayout& l = *FindPythonLayout(3, minor);
    FakeChain c(l);
    c.Push(c.Code(1), 4);
    if (l.owner_cstack >= 0) {
      // 3.13's shim has f_executable = None: not even a code object.
      uint8_t* shim = c.Push(c.Code(99), 0, l.owner_cstack);
      c.SetCode(shim, 0x7000);
    }
    c.Push(c.Code(2, 100, /*first_traceable=*/3), /*unit=*/1, /*owner=*/0);  // still setting up
    c.Push(c.Code(3, 100, /*first_traceable=*/3), /*unit=*/1, l.owner_generator);  // generators never are
    FrameRef out[8];
    const WalkResult r = Walk(c, out);
    ASSERT_EQ(r.status, WalkStatus::kComplete) << minor << " " << WalkFaultName(r.fault);
    ASSERT_EQ(r.depth, 2) << minor;
    EXPECT_EQ(out[0].check, 3);
    EXPECT_EQ(out[1].check, 1);
  }
}

TEST(PythonWalkerTest, AnOwnerOutsideTheEnumIsInconsistent) {
  for (int minor : {11, 12, 13}) {
    const PythonLayout& l = *FindPythonLayout(3, minor);
    FakeChain c(l);
    c.Push(c.Code(1), 1, l.owner_max + 1);
    FrameRef out[4];
    EXPECT_EQ(Walk(c, out).fault, WalkFault::kBadOwner) << minor;
  }
}

TEST(PythonWalkerTest, CheckedReadsOfUnmappedMemoryFailWithoutFaulting) {
  const PythonLayout& l = *FindPythonLayout(3, 12);
  FakeChain c(l);
  uint8_t* f = c.Push(c.Code(1), 1);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(munmap(page, 4096), 0);
  c.SetPrevious(f, FakeChain::Addr(page));  // aligned, canonical, unmapped
  SelfMemoryReader mem;
  FrameRef out[4];
  const WalkResult r = WalkPythonFrames(c.target(), CheckedLoads{&mem}, c.tstate(), out, 4);
  EXPECT_EQ(r.fault, WalkFault::kUnreadable);
  EXPECT_EQ(r.depth, 1);
}

// The process-wide capture over a fake interpreter.
FakeChain* g_chain = nullptr;
void* FakeThreadState() { return reinterpret_cast<void*>(g_chain->tstate()); }
void* NoThreadState() { return nullptr; }

TEST(PythonStacksTest, TheFirstInconsistencyTurnsPythonStacksOffForGood) {
  const PythonLayout& l = *FindPythonLayout(3, 12);
  FakeChain c(l);
  g_chain = &c;
  c.Push(c.Code(1), 1);
  uint8_t* middle = c.Code(2);
  c.Push(middle, 1);
  c.Push(c.Code(3), 1);
  InstallPythonRuntimeForTest(c.target(), FakeThreadState);
  ASSERT_TRUE(PythonStacksEnabled());
  EXPECT_FALSE(PythonLayoutVerified());
  FrameRef out[kMaxStackDepth];
  PyCaptureResult r = CapturePythonStack(out, kMaxStackDepth);  // checked reads
  EXPECT_EQ(r.status, PyCaptureStatus::kOk);
  EXPECT_EQ(r.depth, 3);
  EXPECT_TRUE(PythonLayoutVerified());
  r = CapturePythonStack(out, kMaxStackDepth);  // plain loads
  EXPECT_EQ(r.status, PyCaptureStatus::kOk);
  EXPECT_EQ(r.depth, 3);

  FakeChain::Put<uint64_t>(middle, l.ob_type, 0xdead0);  // a wrong type pointer
  r = CapturePythonStack(out, kMaxStackDepth);
  EXPECT_EQ(r.status, PyCaptureStatus::kInconsistent);
  EXPECT_EQ(r.depth, 1);  // what it had before the bad frame
  EXPECT_FALSE(PythonStacksEnabled());
  EXPECT_EQ(PythonStacksFault(), WalkFault::kBadCodeType);

  FakeChain::Put<uint64_t>(middle, l.ob_type, c.target().code_type);  // repaired: stays off
  r = CapturePythonStack(out, kMaxStackDepth);
  EXPECT_EQ(r.status, PyCaptureStatus::kOff);
  EXPECT_EQ(r.depth, 0);
  g_chain = nullptr;
}

TEST(PythonStacksTest, TheFirstWalkUsesCheckedReadsAndAnUnmappedFrameTurnsStacksOff) {
  const PythonLayout& l = *FindPythonLayout(3, 11);
  FakeChain c(l);
  g_chain = &c;
  uint8_t* f = c.Push(c.Code(1), 1);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(munmap(page, 4096), 0);
  c.SetPrevious(f, FakeChain::Addr(page));  // would fault with plain loads
  InstallPythonRuntimeForTest(c.target(), FakeThreadState);
  FrameRef out[kMaxStackDepth];
  const PyCaptureResult r = CapturePythonStack(out, kMaxStackDepth);
  EXPECT_EQ(r.status, PyCaptureStatus::kInconsistent);
  EXPECT_EQ(r.depth, 1);
  EXPECT_EQ(PythonStacksFault(), WalkFault::kUnreadable);
  EXPECT_FALSE(PythonStacksEnabled());
  EXPECT_FALSE(PythonLayoutVerified());
  g_chain = nullptr;
}

int g_finalizing = 0;
int FakeIsFinalizing() { return g_finalizing; }

TEST(PythonStacksTest, NoWalkStartsOnceTheInterpreterIsFinalizing) {
  const PythonLayout& l = *FindPythonLayout(3, 12);
  FakeChain c(l);
  g_chain = &c;
  c.Push(c.Code(1), 1);
  g_finalizing = 0;
  InstallPythonRuntimeForTest(c.target(), FakeThreadState, FakeIsFinalizing);
  FrameRef out[4];
  EXPECT_EQ(CapturePythonStack(out, 4).status, PyCaptureStatus::kOk);
  g_finalizing = 1;
  // Py_FinalizeEx frees other threads' frames: the chain must not be read.
  c.SetTop(reinterpret_cast<void*>(0x10));
  const PyCaptureResult r = CapturePythonStack(out, 4);
  EXPECT_EQ(r.status, PyCaptureStatus::kFinalizing);
  EXPECT_EQ(r.depth, 0);
  EXPECT_TRUE(PythonStacksEnabled());  // not an inconsistency
  g_finalizing = 0;
  g_chain = nullptr;
}

// A get_tstate that holds its capture inside the walk until released.
std::atomic<int> g_held{0};      // 1 while a capture waits in it
std::atomic<bool> g_release{false};
void* HeldThreadState() {
  g_held.store(1);
  while (!g_release.load()) std::this_thread::yield();
  return reinterpret_cast<void*>(g_chain->tstate());
}

// What the atexit hook does before Py_FinalizeEx frees thread states: no
// walk starts after it, and it returns only once the walk in flight ended.
TEST(PythonStacksTest, TheExitHookWaitsForTheWalkInFlightAndStopsNewOnes) {
  const PythonLayout& l = *FindPythonLayout(3, 12);
  FakeChain c(l);
  g_chain = &c;
  c.Push(c.Code(1), 1);
  c.Push(c.Code(2), 1);
  g_held.store(0);
  g_release.store(false);
  InstallPythonRuntimeForTest(c.target(), HeldThreadState);
  ASSERT_TRUE(PythonExitHookRegistered());
  PyCaptureResult in_flight;
  std::thread walker([&] {
    FrameRef out[8];
    in_flight = CapturePythonStack(out, 8);
  });
  while (g_held.load() == 0) std::this_thread::yield();
  std::atomic<bool> stopped{false};
  std::thread exit_hook([&] {
    StopPythonWalksForTest();
    stopped.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(stopped.load()) << "the hook returned while a walk was in flight";
  g_release.store(true);
  walker.join();
  exit_hook.join();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(in_flight.status, PyCaptureStatus::kOk);  // the walk that began finished
  EXPECT_EQ(in_flight.depth, 2);
  FrameRef out[8];
  const PyCaptureResult after = CapturePythonStack(out, 8);
  EXPECT_EQ(after.status, PyCaptureStatus::kFinalizing);
  EXPECT_EQ(after.depth, 0);
  EXPECT_EQ(CaptureMainThreadPythonStack(out, 8).status, PyCaptureStatus::kFinalizing);
  EXPECT_TRUE(PythonStacksEnabled());  // stopped, not faulted
  g_chain = nullptr;
}

TEST(PythonStacksTest, AThreadWithoutAThreadStateIsReportedSo) {
  const PythonLayout& l = *FindPythonLayout(3, 13);
  FakeChain c(l);
  InstallPythonRuntimeForTest(c.target(), NoThreadState);
  FrameRef out[4];
  EXPECT_EQ(CapturePythonStack(out, 4).status, PyCaptureStatus::kNoThreadState);
  EXPECT_TRUE(PythonStacksEnabled());
}

// The main thread's stack read from a thread without Python (JAX: an XLA
// thread syncs while the main thread waits in `float(loss)`): the oldest
// thread state of the list, walked with checked reads; a broken list or a
// chain that changes under the walk is a race, and Python stacks stay on.
uint8_t* g_list_head = nullptr;
void* FakeListHead() { return g_list_head; }

class MainThreadStackTest : public testing::TestWithParam<int> {};

TEST_P(MainThreadStackTest, TakesTheOldestThreadStatesFramesAndARaceLeavesStacksOn) {
  const PythonLayout& l = *FindPythonLayout(3, GetParam());
  FakeChain main_thread(l);
  uint8_t* outer = main_thread.Code(10);
  main_thread.Push(outer, 1);
  main_thread.Push(main_thread.Code(20), 2);
  uint8_t* inner_code = main_thread.Code(30);
  uint8_t* inner = main_thread.Push(inner_code, 3);
  // Two newer thread states ahead of it in the list (their own chains are
  // never read: the first has none at all).
  uint8_t* newest = main_thread.Block(256);
  uint8_t* newer = main_thread.Block(256);
  FakeChain::Put<uint64_t>(newest, 8, FakeChain::Addr(newer));
  FakeChain::Put<uint64_t>(newer, 8, main_thread.tstate());
  g_list_head = newest;
  InstallPythonRuntimeForTest(main_thread.target(), NoThreadState, nullptr, FakeListHead);

  FrameRef out[kMaxStackDepth];
  EXPECT_EQ(CapturePythonStack(out, kMaxStackDepth).status, PyCaptureStatus::kNoThreadState);
  PyCaptureResult r = CaptureMainThreadPythonStack(out, kMaxStackDepth);
  ASSERT_EQ(r.status, PyCaptureStatus::kOk);
  ASSERT_EQ(r.depth, 3);
  EXPECT_EQ(out[0].addr, FakeChain::Addr(inner_code));
  EXPECT_EQ(out[2].addr, FakeChain::Addr(outer));
  EXPECT_EQ(CaptureMainThreadPythonStack(out, 2).status, PyCaptureStatus::kTruncated);

  // The main thread popped a frame mid-walk (its code pointer now junk):
  // reported, not fatal, and plain-load captures are not affected.
  main_thread.SetCode(inner, 0xdead0);
  r = CaptureMainThreadPythonStack(out, kMaxStackDepth);
  EXPECT_EQ(r.status, PyCaptureStatus::kInconsistent);
  EXPECT_TRUE(PythonStacksEnabled());
  EXPECT_EQ(PythonStacksFault(), WalkFault::kNone);
  main_thread.SetCode(inner, FakeChain::Addr(inner_code));

  // A link into unmapped memory (a thread state being freed): checked reads.
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(munmap(page, 4096), 0);
  FakeChain::Put<uint64_t>(newer, 8, FakeChain::Addr(page));
  EXPECT_EQ(CaptureMainThreadPythonStack(out, kMaxStackDepth).status, PyCaptureStatus::kInconsistent);
  // A list that loops is cut at kMaxThreadStates.
  FakeChain::Put<uint64_t>(newer, 8, FakeChain::Addr(newest));
  EXPECT_EQ(CaptureMainThreadPythonStack(out, kMaxStackDepth).status, PyCaptureStatus::kInconsistent);
  EXPECT_TRUE(PythonStacksEnabled());
  FakeChain::Put<uint64_t>(newer, 8, main_thread.tstate());
  EXPECT_EQ(CaptureMainThreadPythonStack(out, kMaxStackDepth).depth, 3);

  g_list_head = nullptr;  // no interpreter state yet
  EXPECT_EQ(CaptureMainThreadPythonStack(out, kMaxStackDepth).status, PyCaptureStatus::kNoThreadState);
}

TEST_P(MainThreadStackTest, AMarkSaysWhereTheMainThreadIsAndChangesWhenItMoves) {
  const PythonLayout& l = *FindPythonLayout(3, GetParam());
  FakeChain main_thread(l);
  main_thread.Push(main_thread.Code(10), 1);
  uint8_t* inner_code = main_thread.Code(30);
  uint8_t* inner = main_thread.Push(inner_code, 3);
  g_list_head = reinterpret_cast<uint8_t*>(main_thread.tstate());
  InstallPythonRuntimeForTest(main_thread.target(), NoThreadState, nullptr, FakeListHead);

  FrameRef out[kMaxStackDepth];
  MainThreadMark walked;
  ASSERT_EQ(CaptureMainThreadPythonStack(out, kMaxStackDepth, &walked).depth, 2);
  EXPECT_EQ(walked.tstate, main_thread.tstate());
  EXPECT_EQ(walked.frame, FakeChain::Addr(inner));
  EXPECT_EQ(walked.code, FakeChain::Addr(inner_code));
  EXPECT_EQ(walked.offset, out[0].offset);
  MainThreadMark now;
  ASSERT_TRUE(PeekMainThread(&now));
  EXPECT_TRUE(now == walked);  // it has not moved

  main_thread.SetUnit(inner, inner_code, 4);  // the next instruction
  ASSERT_TRUE(PeekMainThread(&now));
  EXPECT_FALSE(now == walked);
  EXPECT_EQ(now.frame, walked.frame);
  main_thread.SetUnit(inner, inner_code, 3);
  ASSERT_TRUE(PeekMainThread(&now));
  EXPECT_TRUE(now == walked);

  uint8_t* callee = main_thread.Push(inner_code, 3);  // a call deeper (same code, even)
  ASSERT_TRUE(PeekMainThread(&now));
  EXPECT_EQ(now.frame, FakeChain::Addr(callee));
  EXPECT_FALSE(now == walked);

  main_thread.SetCode(callee, 0xdead0);  // a frame being popped: a race, no mark
  EXPECT_FALSE(PeekMainThread(&now));
  EXPECT_TRUE(now == MainThreadMark{});
  EXPECT_TRUE(PythonStacksEnabled());
  g_list_head = nullptr;
  EXPECT_FALSE(PeekMainThread(&now));
}

INSTANTIATE_TEST_SUITE_P(Layouts, MainThreadStackTest, testing::Values(9, 10, 11, 12, 13));

TEST(BlockReaderTest, ServesReadsFromCachedBlocksAndNeverCrossesIntoAnUnmappedPage) {
  // Two pages, the second unmapped: a block from near the end of the first
  // stops at the page boundary.
  void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* bytes = static_cast<uint8_t*>(p);
  for (int i = 0; i < 4096; ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(munmap(bytes + 4096, 4096), 0);
  SelfMemoryReader self;
  BlockReader r(&self);
  const uint64_t base = FakeChain::Addr(bytes);
  uint64_t v = 0, want = 0;
  ASSERT_TRUE(r.Read(base + 16, &v, 8));
  std::memcpy(&want, bytes + 16, 8);
  EXPECT_EQ(v, want);
  ASSERT_TRUE(r.Read(base + 200, &v, 8));  // inside the first block
  std::memcpy(&want, bytes + 200, 8);
  EXPECT_EQ(v, want);
  EXPECT_EQ(r.fetches(), 1u);
  ASSERT_TRUE(r.Read(base + 4088, &v, 8));  // the page's last 8 bytes
  std::memcpy(&want, bytes + 4088, 8);
  EXPECT_EQ(v, want);
  EXPECT_FALSE(r.Read(base + 4092, &v, 8));  // crosses into the unmapped page
  EXPECT_FALSE(r.Read(base + 4096, &v, 8));
  bytes[16] = 0;  // a cached block is a snapshot: later reads see what was read
  ASSERT_TRUE(r.Read(base + 16, &v, 8));
  std::memcpy(&want, bytes + 16, 8);
  EXPECT_NE(v, want);
  ASSERT_EQ(munmap(bytes, 4096), 0);
}

TEST(PythonStacksTest, InitWithoutPythonInTheProcessSaysSo) {
  // This test binary does not load libpython.
  const PythonInfo info = InitPythonStacks();
  EXPECT_FALSE(info.enabled);
  EXPECT_EQ(info.reason, "no CPython in this process");
  EXPECT_FALSE(PythonStacksEnabled());
  FrameRef out[4];
  EXPECT_EQ(CapturePythonStack(out, 4).status, PyCaptureStatus::kOff);
}

TEST(PythonStacksTest, ParsesPyGetVersionText) {
  int a = 0, b = 0, c = 0;
  EXPECT_TRUE(ParsePythonVersion("3.9.18 (main, May  9 2026) [GCC 12.2.0]", &a, &b, &c));
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 9);
  EXPECT_EQ(c, 18);
  EXPECT_TRUE(ParsePythonVersion("3.10.0rc1 (x)", &a, &b, &c));
  EXPECT_EQ(b, 10);
  EXPECT_EQ(c, 0);
  EXPECT_TRUE(ParsePythonVersion("3.13", &a, &b, &c));
  EXPECT_EQ(c, 0);
  EXPECT_FALSE(ParsePythonVersion("", &a, &b, &c));
  EXPECT_FALSE(ParsePythonVersion("3", &a, &b, &c));
  EXPECT_FALSE(ParsePythonVersion("PyPy 7.3", &a, &b, &c));
  EXPECT_FALSE(ParsePythonVersion(nullptr, &a, &b, &c));
}

}  // namespace
}  // namespace gpscope::inject::stacks
