// The collector's CUPTI path inside the real injected library, without a
// GPU: a forked child dlopens libgpscope_inject.so, calls
// InitializeInjection with GPSCOPE_CUPTI_PATH naming the stand-in libcupti
// (tests/inject/fake_cupti.cc), starts the fake's "device" workload and exits
// (or is killed); the test reads the trace back with tools/reader and checks
// it against what the fake produced: kernels, copies, memsets, syncs, API
// calls and NVTX ranges field by field, the activity kinds and call ids
// enabled, periodic and forced flushes, and every kind of loss accounting.
//
// The last three cases are regression tests for collector bugs this fake
// found (drops after the last buffer, giving up on CUPTI without releasing
// it, two lines for one problem).
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/control/control_channel.h"
#include "inject/api_cbids.h"
#include "tests/inject/collector_child.h"

namespace gpscope {
namespace {

using namespace collector_test;  // NOLINT: the fixture and its helpers

TEST_F(CollectorCuptiTest, KernelsRoundTripWithNamesShapesStreamsAndTimestamps) {
  // 600 kernels (+ their launch calls) fill several 64 KiB buffers.
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "600"}}));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  const uint64_t t0 = s.N("t0");
  EXPECT_GE(t0, start_ns_);
  EXPECT_LE(t0, end_ns_);
  EXPECT_GE(s.N("first_delivered"), 3u) << "the workload should span several buffers";
  EXPECT_EQ(s.N("kernels_delivered"), 600u);
  EXPECT_EQ(s.N("nonzero_buffers"), 0u);
  EXPECT_EQ(s.N("misaligned_buffers"), 0u);
  ASSERT_NO_FATAL_FAILURE(ExpectKernelPrefix(t, 600, t0));
  // Buffer order is launch order.
  for (size_t i = 1; i < t.kernels.size(); ++i) {
    EXPECT_EQ(t.kernels[i].correlation_id, t.kernels[i - 1].correlation_id + 1);
  }
  // Names are interned once each.
  std::set<std::string> names;
  for (const auto& [id, name] : t.strings) EXPECT_TRUE(names.insert(name).second) << name;

  // One launch call per kernel, same correlation id, on the launching thread
  // (system thread ids: the child's main thread); cudaGetLastError, not in
  // gpscope's call list, is absent.
  ASSERT_EQ(t.api_calls.size(), 600u);
  for (size_t i = 0; i < t.api_calls.size(); ++i) {
    const format::ApiCallEvent& a = t.api_calls[i];
    SCOPED_TRACE("api call " + std::to_string(i));
    EXPECT_EQ(a.domain, static_cast<uint32_t>(proto::API_RUNTIME));
    EXPECT_EQ(a.cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
    EXPECT_EQ(t.Str(a.api_name_id), "cudaLaunchKernel_v7000");
    EXPECT_EQ(a.correlation_id, kFirstCorrelation + i);
    EXPECT_EQ(a.start_ns, t0 + 10000 * i - 5000);
    EXPECT_EQ(a.end_ns, t0 + 10000 * i - 2000);
    EXPECT_EQ(a.thread_id, child_pid_);
    EXPECT_EQ(a.return_value, 0u);
    if (HasFailure()) break;
  }
  EXPECT_TRUE(t.drops.empty());
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->events_dropped(), 0u);
  EXPECT_EQ(t.header->cupti_api_version(), static_cast<uint32_t>(CUPTI_API_VERSION));
  EXPECT_EQ(t.header->pid(), child_pid_);
  EXPECT_TRUE(StderrLines().empty()) << Stderr();
}

TEST_F(CollectorCuptiTest, CopiesMemsetsSyncsApiCallsMarkersAndOverheadsConvertWithTheirFields) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_MIXED", "1"}}));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  const uint64_t t0 = s.N("t0");
  const uint32_t tid = child_pid_;

  ASSERT_EQ(t.devices.size(), 1u);
  const proto::DeviceInfo& d = t.devices[0];
  EXPECT_EQ(d.device_id(), 0u);
  EXPECT_EQ(d.name(), "Fake H200");
  EXPECT_EQ(d.uuid(), "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  EXPECT_EQ(d.compute_capability_major(), 9u);
  EXPECT_EQ(d.compute_capability_minor(), 0u);
  EXPECT_EQ(d.sm_count(), 132u);
  EXPECT_EQ(d.global_memory_bytes(), 150754820096ull);
  EXPECT_EQ(d.global_memory_bandwidth_kbps(), 4800000000ull);
  EXPECT_EQ(d.core_clock_khz(), 1980000u);
  EXPECT_EQ(d.max_threads_per_sm(), 2048u);
  EXPECT_EQ(d.max_blocks_per_sm(), 32u);
  EXPECT_EQ(d.max_registers_per_sm(), 65536u);
  EXPECT_EQ(d.max_shared_memory_per_sm_bytes(), 233472u);
  EXPECT_EQ(d.l2_cache_bytes(), 52428800u);
  ASSERT_EQ(t.contexts.size(), 1u);
  EXPECT_EQ(t.contexts[0].context_id(), 1u);
  EXPECT_EQ(t.contexts[0].device_id(), 0u);
  EXPECT_EQ(t.contexts[0].null_stream_id(), 7u);

  ASSERT_EQ(t.memcpys.size(), 3u);
  const format::MemcpyEvent& h2d = t.memcpys[0];
  EXPECT_EQ(h2d.start_ns, t0 + 2000);
  EXPECT_EQ(h2d.end_ns, t0 + 8000);
  EXPECT_EQ(h2d.bytes, 1048576u);
  EXPECT_EQ(h2d.copy_kind, static_cast<uint32_t>(proto::MEMCPY_HTOD));
  EXPECT_EQ(h2d.src_kind, static_cast<uint32_t>(proto::MEMORY_PAGEABLE));
  EXPECT_EQ(h2d.dst_kind, static_cast<uint32_t>(proto::MEMORY_DEVICE));
  EXPECT_EQ(h2d.flags, 0u);
  EXPECT_EQ(h2d.stream_id, 7u);
  EXPECT_EQ(h2d.context_id, 1u);
  EXPECT_EQ(h2d.correlation_id, 2000u);
  EXPECT_EQ(h2d.dst_device_id, 0u);
  const format::MemcpyEvent& d2h = t.memcpys[1];
  EXPECT_EQ(d2h.start_ns, t0 + 12000);
  EXPECT_EQ(d2h.end_ns, t0 + 13000);
  EXPECT_EQ(d2h.bytes, 4096u);
  EXPECT_EQ(d2h.copy_kind, static_cast<uint32_t>(proto::MEMCPY_DTOH));
  EXPECT_EQ(d2h.src_kind, static_cast<uint32_t>(proto::MEMORY_DEVICE));
  EXPECT_EQ(d2h.dst_kind, static_cast<uint32_t>(proto::MEMORY_PINNED));
  EXPECT_EQ(d2h.flags, 1u);  // async
  EXPECT_EQ(d2h.stream_id, 13u);
  EXPECT_EQ(d2h.correlation_id, 2101u) << "the runtime call's correlation id";
  const format::MemcpyEvent& p2p = t.memcpys[2];
  EXPECT_EQ(p2p.start_ns, t0 + 14000);
  EXPECT_EQ(p2p.end_ns, t0 + 20000);
  EXPECT_EQ(p2p.bytes, 8388608u);
  EXPECT_EQ(p2p.copy_kind, static_cast<uint32_t>(proto::MEMCPY_PTOP));
  EXPECT_EQ(p2p.device_id, 0u);
  EXPECT_EQ(p2p.dst_device_id, 1u);
  EXPECT_EQ(p2p.stream_id, 13u);
  EXPECT_EQ(p2p.correlation_id, 2200u);
  EXPECT_EQ(p2p.flags, 1u);

  ASSERT_EQ(t.memsets.size(), 1u);
  const format::MemsetEvent& ms = t.memsets[0];
  EXPECT_EQ(ms.start_ns, t0 + 21000);
  EXPECT_EQ(ms.end_ns, t0 + 22000);
  EXPECT_EQ(ms.bytes, 65536u);
  EXPECT_EQ(ms.value, 0xabu);
  EXPECT_EQ(ms.memory_kind, static_cast<uint32_t>(proto::MEMORY_DEVICE));
  EXPECT_EQ(ms.flags, 1u);
  EXPECT_EQ(ms.stream_id, 7u);
  EXPECT_EQ(ms.correlation_id, 2300u);

  ASSERT_EQ(t.syncs.size(), 2u);
  EXPECT_EQ(t.syncs[0].sync_kind, static_cast<uint32_t>(proto::SYNC_STREAM_SYNCHRONIZE));
  EXPECT_EQ(t.syncs[0].start_ns, t0 + 23500);
  EXPECT_EQ(t.syncs[0].end_ns, t0 + 29500);
  EXPECT_EQ(t.syncs[0].stream_id, 7u);
  EXPECT_EQ(t.syncs[0].event_id, 0xffffffffu);
  EXPECT_EQ(t.syncs[0].context_id, 1u);
  EXPECT_EQ(t.syncs[0].correlation_id, 2400u);
  EXPECT_EQ(t.syncs[1].sync_kind, static_cast<uint32_t>(proto::SYNC_EVENT_SYNCHRONIZE));
  EXPECT_EQ(t.syncs[1].start_ns, t0 + 31000);
  EXPECT_EQ(t.syncs[1].stream_id, 0xffffffffu);
  EXPECT_EQ(t.syncs[1].event_id, 42u);
  EXPECT_EQ(t.syncs[1].correlation_id, 2401u);

  // The selected calls only: cuCtxGetCurrent and cudaGetDevice are not.
  struct Call {
    uint32_t domain, cbid, corr;
    uint64_t start, end;
    const char* name;
  };
  const Call want[] = {
      {proto::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 2000, 1000, 9000,
       "cudaMemcpy_v3020"},
      {proto::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 2101, 10000, 11000,
       "cudaMemcpyAsync_v3020"},
      {proto::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 2400, 23000,
       30000, "cudaStreamSynchronize_v3020"},
      {proto::API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 2500, 33000, 34000,
       "cuLaunchKernel"},
  };
  ASSERT_EQ(t.api_calls.size(), std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(t.api_calls[i].domain, want[i].domain);
    EXPECT_EQ(t.api_calls[i].cbid, want[i].cbid);
    EXPECT_EQ(t.api_calls[i].correlation_id, want[i].corr);
    EXPECT_EQ(t.api_calls[i].start_ns, t0 + want[i].start);
    EXPECT_EQ(t.api_calls[i].end_ns, t0 + want[i].end);
    EXPECT_EQ(t.api_calls[i].thread_id, tid);
    EXPECT_EQ(t.Str(t.api_calls[i].api_name_id), want[i].name);
  }

  // NVTX: start/end pairs become ranges (in the order they close), the
  // instantaneous marker a mark; the default domain is "".
  ASSERT_EQ(t.ranges.size(), 2u);
  EXPECT_EQ(t.Str(t.ranges[0].name_id), "ncclAllReduce");
  EXPECT_EQ(t.Str(t.ranges[0].domain_id), "NCCL");
  EXPECT_EQ(t.ranges[0].start_ns, t0 + 15000);
  EXPECT_EQ(t.ranges[0].end_ns, t0 + 19000);
  EXPECT_EQ(t.ranges[0].thread_id, tid);
  EXPECT_EQ(t.Str(t.ranges[1].name_id), "train_step");
  EXPECT_EQ(t.ranges[1].domain_id, 0u);
  EXPECT_EQ(t.ranges[1].start_ns, t0 + 500);
  EXPECT_EQ(t.ranges[1].end_ns, t0 + 35000);
  EXPECT_EQ(t.ranges[1].thread_id, tid);
  ASSERT_EQ(t.marks.size(), 1u);
  EXPECT_EQ(t.Str(t.marks[0].name_id), "checkpoint");
  EXPECT_EQ(t.Str(t.marks[0].domain_id), "app");
  EXPECT_EQ(t.marks[0].timestamp_ns, t0 + 20500);
  EXPECT_EQ(t.marks[0].thread_id, tid);

  ASSERT_EQ(t.overheads.size(), 2u);
  EXPECT_EQ(t.overheads[0].overhead_kind,
            static_cast<uint32_t>(proto::OVERHEAD_CUPTI_BUFFER_FLUSH));
  EXPECT_EQ(t.overheads[0].start_ns, t0 + 36000);
  EXPECT_EQ(t.overheads[0].end_ns, t0 + 36500);
  EXPECT_EQ(t.overheads[0].thread_id, tid);
  EXPECT_EQ(t.overheads[1].overhead_kind,
            static_cast<uint32_t>(proto::OVERHEAD_DRIVER_COMPILER));
  EXPECT_EQ(t.overheads[1].thread_id, 0u);
  EXPECT_EQ(t.overheads[1].device_id, 0u);
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_TRUE(t.drops.empty());
}

// The activity kinds on while gpscope traces with its defaults.
const std::set<uint32_t> kTracingKinds = {
    CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_DEVICE,   CUPTI_ACTIVITY_KIND_CONTEXT,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MARKER,
    CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

TEST_F(CollectorCuptiTest, EnablesConcurrentKernelAndTheSelectedCallsBeforeTheApplicationRuns) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "1"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  // CONCURRENT_KERNEL, not KERNEL (which serializes kernels); no whole
  // RUNTIME/DRIVER kind (~8 records per kernel in PyTorch).
  const std::set<uint32_t>& kinds = kTracingKinds;
  EXPECT_EQ(s.Set("kinds"), kinds) << "at exit";
  // ... and already so when the application's first CUDA work ran (the
  // workload start): replay the call log up to there.
  std::set<uint32_t> at_start;
  for (const FakeStats::Call& c : s.calls) {
    if (c.op == "start") break;
    if (c.op == "enable_kind" && c.value == 1) at_start.insert(c.arg);
    if (c.op == "disable_kind") at_start.erase(c.arg);
  }
  EXPECT_EQ(at_start, kinds) << "at the first CUDA work";

  // The call ids gpscope lists, each enabled through the right domain's function.
  const std::set<uint32_t> runtime(std::begin(inject::kRuntimeCbids),
                                   std::end(inject::kRuntimeCbids));
  const std::set<uint32_t> driver(std::begin(inject::kDriverCbids),
                                  std::end(inject::kDriverCbids));
  EXPECT_EQ(s.Set("runtime_cbids"), runtime);
  EXPECT_EQ(s.Set("driver_cbids"), driver);
  // ... and that list covers what the analyses need and skips the chatter.
  for (uint32_t id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                      CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020}) {
    EXPECT_EQ(runtime.count(id), 1u) << "runtime cbid " << id;
  }
  for (uint32_t id : {CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
                      CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020}) {
    EXPECT_EQ(runtime.count(id), 0u) << "runtime cbid " << id;
  }
  // Driver-API programs (JAX/XLA) launch, copy, set, allocate and sync there.
  for (uint32_t id : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                      CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                      CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
                      CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
                      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                      CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
                      CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent}) {
    EXPECT_EQ(driver.count(id), 1u) << "driver cbid " << id;
  }
  EXPECT_EQ(driver.count(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent), 0u);
  EXPECT_EQ(driver.count(CUPTI_DRIVER_TRACE_CBID_cuEventRecord), 0u);
  // A selection, not the whole kinds (~520 runtime and ~800 driver ids).
  EXPECT_LE(runtime.size() + driver.size(), 128u);

  // All of it inside InitializeInjection, before the application's first
  // CUDA work (the workload start): attributes only apply before the first
  // context, and late enabling stalls (kineto#542).
  const auto start = s.Calls("start");
  ASSERT_EQ(start.size(), 1u);
  for (const char* op : {"enable_kind", "disable_kind", "runtime_api", "driver_api", "attribute",
                         "register", "thread_id_type", "subscribe_v2"}) {
    const auto calls = s.Calls(op);
    if (std::string(op) != "disable_kind") {
      EXPECT_FALSE(calls.empty()) << op;
    }
    for (const auto& c : calls) EXPECT_LT(c.seq, start[0].seq) << op << " " << c.arg;
  }
  EXPECT_TRUE(s.Calls("subscribe").empty()) << "cuptiSubscribe_v2 succeeded; no fallback";
  EXPECT_EQ(s.Text("subscriber_name"), "gpscope");
  EXPECT_EQ(s.N("subscribers"), 1u);
  EXPECT_EQ(s.N("thread_id_type"), static_cast<uint64_t>(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  EXPECT_EQ(s.N("zeroed_attr"), 1u);
  // CUPTI's NVTX handler is the library that was loaded.
  EXPECT_EQ(ReadFile(dir_ + "/child.txt"), std::string("nvtx=") + GPSCOPE_FAKE_CUPTI + "\n");
}

// bench/overhead.py --env-variant attributes the per-launch cost kind by
// kind: in the diagnosis build, GPSCOPE_DIAG_OFF leaves the named optional
// kinds off, names an unknown one in one line, and changes nothing else.
TEST_F(CollectorCuptiTest, DiagOffLeavesTheNamedOptionalKindsOff) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"@diag", "1"},
                                     {"FAKE_CUPTI_KERNELS", "3"},
                                     {"GPSCOPE_DIAG_OFF", "sync,overhead,bogus"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  std::set<uint32_t> kinds = kTracingKinds;
  kinds.erase(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  kinds.erase(CUPTI_ACTIVITY_KIND_OVERHEAD);
  EXPECT_EQ(s.Set("kinds"), kinds);
  EXPECT_FALSE(s.Set("runtime_cbids").empty());
  const std::string err = Stderr();
  EXPECT_NE(err.find("GPSCOPE_DIAG_OFF: unknown kind(s) bogus"), std::string::npos) << err;
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.kernels.size(), 3u);
}

// GPSCOPE_SYNC=0 (the shipped library): CUPTI's SYNCHRONIZATION kind stays
// off, in a window too; the API records of the sync calls stay, and the
// header says the setting.
TEST_F(CollectorCuptiTest, SyncZeroLeavesTheSynchronizationKindOff) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "3"}, {"GPSCOPE_SYNC", "0"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  std::set<uint32_t> kinds = kTracingKinds;
  kinds.erase(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  EXPECT_EQ(s.Set("kinds"), kinds);
  for (const FakeStats::Call& c : s.calls) {
    EXPECT_FALSE(c.op == "enable_kind" && c.arg == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION && c.value == 1);
  }
  EXPECT_FALSE(s.Set("runtime_cbids").empty());
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.kernels.size(), 3u);
}

// The shipped library reads no diagnosis switch: every kind is on, no line
// names them, and the window is not gated.
TEST_F(CollectorCuptiTest, ShippedLibraryIgnoresTheDiagnosisSwitches) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "3"},
                                     {"GPSCOPE_DIAG_OFF", "sync,overhead,bogus"},
                                     {"GPSCOPE_DIAG_GATE_KERNELS", "1"},
                                     {"GPSCOPE_DIAG_STACK_NO_LAUNCH", "1"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.Set("kinds"), kTracingKinds);
  const std::string err = Stderr();
  EXPECT_EQ(err.find("GPSCOPE_DIAG"), std::string::npos) << err;
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.kernels.size(), 3u);
}

// Not even the names: the switches' code is compiled out of the shipped
// library, and into the diagnosis build.
TEST(CollectorBuildTest, OnlyTheDiagnosisBuildHoldsTheDiagnosisSwitchesNames) {
  auto contains = [](const char* path, const std::string& needle) {
    FILE* f = fopen(path, "rb");
    EXPECT_NE(f, nullptr) << path;
    if (f == nullptr) return false;
    std::string bytes;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
    fclose(f);
    return bytes.find(needle) != std::string::npos;
  };
  for (const char* name : {"GPSCOPE_DIAG_OFF", "GPSCOPE_DIAG_GATE_KERNELS",
                           "GPSCOPE_DIAG_STACK_RING", "GPSCOPE_DIAG_STACK_NO_LAUNCH",
                           "GPSCOPE_DIAG_API_ROW_RING"}) {
    EXPECT_FALSE(contains(GPSCOPE_INJECT_LIB, name)) << name;
    EXPECT_TRUE(contains(GPSCOPE_INJECT_DIAG_LIB, name)) << name;
  }
}

TEST_F(CollectorCuptiTest, ApiAndNvtxOffEnableNeitherCallRecordsNorMarkers) {
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_MIXED", "1"}, {"GPSCOPE_API", "0"}, {"GPSCOPE_NVTX", "0"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_TRUE(s.Set("runtime_cbids").empty());
  EXPECT_TRUE(s.Set("driver_cbids").empty());
  EXPECT_EQ(s.Set("kinds").count(CUPTI_ACTIVITY_KIND_MARKER), 0u);
  EXPECT_EQ(s.Set("kinds").count(CUPTI_ACTIVITY_KIND_RUNTIME), 0u);
  EXPECT_EQ(ReadFile(dir_ + "/child.txt"), "nvtx=\n");
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_TRUE(t.api_calls.empty());
  EXPECT_TRUE(t.ranges.empty());
  EXPECT_TRUE(t.marks.empty());
  EXPECT_EQ(t.memcpys.size(), 3u);
  EXPECT_EQ(t.syncs.size(), 2u);
}

TEST_F(CollectorCuptiTest, PeriodicFlushWritesEventsWhileRunningAndSigkillLeavesAReadableFile) {
  RunPeriodicFlushThenSigkill({});
}

// Was a bug (H200, e2e SIGKILL case: 3 kernels in the file after 12 s): when
// cuptiActivityFlushAll(0) returns no partly filled buffer, a slow
// application's records waited in one until exit. Two flush intervals
// without a buffer back now force one out.
TEST_F(CollectorCuptiTest, PartlyFilledBuffersAreForcedOutWhenFlushZeroReturnsNone) {
  RunPeriodicFlushThenSigkill({{"FAKE_CUPTI_FLUSH", "full-only"}});
}


TEST_F(CollectorCuptiTest, CleanExitWritesTheEndChunkWithItsCounts) {
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "50"}, {"FAKE_CUPTI_MIXED", "1"}}));
  Trace t;
  reader::TraceIndex index;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t, &index));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->reason(), proto::END_EXIT);
  EXPECT_EQ(t.end->signal(), 0);
  EXPECT_EQ(t.end->chunks_written(), t.chunks);
  EXPECT_EQ(t.end->events_written(), t.events);
  // 50 kernels + 50 launches + the mixed script's 15 events.
  EXPECT_EQ(t.events, 115u);
  EXPECT_EQ(t.end->events_dropped(), 0u);
  EXPECT_FALSE(t.end->flush_timed_out());
  EXPECT_GE(t.end->end_ns(), s.N("t0"));
  EXPECT_LE(t.end->end_ns(), end_ns_);
  EXPECT_EQ(t.end->clock().cupti_ns(), t.end->end_ns());
  EXPECT_EQ(index.processes[0].lost_chunks, 0u);
  EXPECT_EQ(s.N("forced_flushes"), 1u);
}

TEST_F(CollectorCuptiTest, ForcedFlushAtExitDeliversTheBufferARunningKernelHeldBack) {
  // The last kernel never finishes: cuptiActivityFlushAll(0) keeps its buffer,
  // only a forced flush hands it over (the periodic one after two intervals
  // without a buffer back, or the one at exit); that kernel and 3 without
  // timestamps (device buffer full) are counted, not written.
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "20"},
                                     {"FAKE_CUPTI_INCOMPLETE", "3"},
                                     {"FAKE_CUPTI_IN_FLIGHT", "1"}},
                                    Then::kExitAfterFlushes));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_GE(s.N("flushes"), 2u);
  EXPECT_GE(s.N("forced_flushes"), 1u);
  EXPECT_EQ(s.N("kernels_delivered"), 24u);
  ASSERT_NO_FATAL_FAILURE(ExpectKernelPrefix(t, 20, s.N("t0")));
  EXPECT_EQ(t.Dropped(proto::DROP_CUPTI_INCOMPLETE_RECORD), 4u);
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->events_dropped(), 4u);
}

TEST_F(CollectorCuptiTest, CuptiReportedDropsBecomeADropNoticeWithTheCount) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_DROPPED", "37"}}));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("dropped_reported"), 37u);
  EXPECT_EQ(t.Dropped(proto::DROP_CUPTI_REPORTED), 37u);
  EXPECT_EQ(t.DropNotices(proto::DROP_CUPTI_REPORTED), 1);
  for (const auto& d : t.drops) EXPECT_FALSE(d.detail().empty());
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->events_dropped(), 37u);
  EXPECT_EQ(t.kernels.size(), 10u);
}

TEST_F(CollectorCuptiTest, BusySubscriberGivesOneWarningAndANoticeAndTracingContinues) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "10"},
                                     {"FAKE_CUPTI_SUBSCRIBE", "busy"},
                                     {"FAKE_CUPTI_HOLDER", "CUPTI for torch.profiler"}}));
  std::vector<std::string> lines = StderrLines();
  ASSERT_EQ(lines.size(), 1u) << Stderr();
  EXPECT_NE(lines[0].find("CUPTI for torch.profiler"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), std::string::npos)
      << lines[0];
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  auto notices = t.Unavailable("cupti_subscriber");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0]->reason().find("CUPTI for torch.profiler"), std::string::npos);
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.Calls("subscribe_v2").size(), 1u);
  EXPECT_TRUE(s.Calls("subscribe").empty()) << "the v2 answer is final";
  ASSERT_NO_FATAL_FAILURE(ExpectKernelPrefix(t, 10, s.N("t0")));
  ASSERT_TRUE(t.end.has_value());
}

TEST_F(CollectorCuptiTest, BusySubscriberOnCuptiWithoutSubscribeV2FallsBackAndSaysAnotherClient) {
  ASSERT_NO_FATAL_FAILURE(Start({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_SUBSCRIBE", "busy"}},
                                Then::kExit, GPSCOPE_FAKE_CUPTI_NO_V2));
  int status = Wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << Stderr();
  std::vector<std::string> lines = StderrLines();
  ASSERT_EQ(lines.size(), 1u) << Stderr();
  EXPECT_NE(lines[0].find("another client"), std::string::npos) << lines[0];
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.Calls("subscribe").size(), 1u);
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.Unavailable("cupti_subscriber").size(), 1u);
  EXPECT_EQ(t.kernels.size(), 10u);
}

TEST_F(CollectorCuptiTest, OldCuptiIsOneErrorLineAndTheApplicationRunsUntraced) {
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_VERSION", "120000"}}));
  std::vector<std::string> lines = StderrLines();
  ASSERT_EQ(lines.size(), 1u) << Stderr();
  EXPECT_NE(lines[0].find("120000"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(std::to_string(CUPTI_API_VERSION)), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("GPSCOPE_CUPTI_PATH"), std::string::npos) << lines[0];
  EXPECT_TRUE(TraceFiles().empty());
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  // CUPTI was left alone: nothing subscribed, registered or enabled.
  for (const char* op : {"subscribe", "subscribe_v2", "register", "enable_kind", "runtime_api"}) {
    EXPECT_TRUE(s.Calls(op).empty()) << op;
  }
  EXPECT_EQ(s.N("requests"), 0u);
}

TEST_F(CollectorCuptiTest, LibraryWithoutTheEntryPointsIsOneErrorLine) {
  // The injected library itself is no libcupti: no cuptiGetVersion.
  ASSERT_NO_FATAL_FAILURE(Start({}, Then::kExit, GPSCOPE_INJECT_LIB));
  int status = Wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::vector<std::string> lines = StderrLines();
  ASSERT_EQ(lines.size(), 1u) << Stderr();
  EXPECT_NE(lines[0].find("no cuptiGetVersion"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("GPSCOPE_CUPTI_PATH"), std::string::npos) << lines[0];
  EXPECT_TRUE(TraceFiles().empty());
}

TEST_F(CollectorCuptiTest, OptionalKindRefusedIsOneWarningAndTracingContinues) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "10"},
                                     {"FAKE_CUPTI_MIXED", "1"},
                                     {"FAKE_CUPTI_UNSUPPORTED", "38"}}));
  std::vector<std::string> lines = StderrLines();
  ASSERT_EQ(lines.size(), 1u) << Stderr();
  EXPECT_NE(lines[0].find("activity kind 38 unavailable"), std::string::npos) << lines[0];
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_TRUE(t.syncs.empty());
  EXPECT_EQ(t.memcpys.size(), 3u);
  EXPECT_EQ(t.kernels.size(), 10u);
  ASSERT_TRUE(t.end.has_value());
}

TEST_F(CollectorCuptiTest, KernelKindRefusedNamesTheErrorLeavesANoticeAndTracesNothing) {
  // (That it takes two lines, and that the notice omits the CUPTI error, is
  // in collector_cupti_bug_test.)
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_UNSUPPORTED", "10"}}));
  const std::string err = Stderr();
  EXPECT_NE(err.find("CUPTI_ERROR_NOT_COMPATIBLE"), std::string::npos) << err;
  EXPECT_NE(err.find("the application runs untraced"), std::string::npos) << err;
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.Unavailable("cupti").size(), 1u);
  EXPECT_TRUE(t.kernels.empty());
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("kernels_written"), 0u);
  EXPECT_EQ(s.N("requests"), 0u);
}

TEST_F(CollectorCuptiTest, BuffersStolenByAnotherClientAreCountedAtExit) {
  // After kernel 300 another client registers its own buffer callbacks: the
  // buffer CUPTI is filling (ours) goes to it and never comes back.
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "600"}, {"FAKE_CUPTI_STEAL", "300"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("stolen"), 1u);
  EXPECT_GE(s.N("other_delivered"), 2u);
  const uint64_t delivered = s.N("kernels_delivered");
  EXPECT_LT(delivered, 300u);
  EXPECT_GT(delivered, 0u);
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  ASSERT_NO_FATAL_FAILURE(ExpectKernelPrefix(t, delivered, s.N("t0")));
  EXPECT_EQ(t.Dropped(proto::DROP_BUFFER_STOLEN), 1u);
  EXPECT_EQ(t.DropNotices(proto::DROP_BUFFER_STOLEN), 1);
  ASSERT_TRUE(t.end.has_value());
}

TEST_F(CollectorCuptiTest, PoolLimitRefusesBuffersCountsThemAndBoundsMemory) {
  // 4 MiB of 64 KiB buffers = 64; 100 threads that each keep a buffer (as
  // CUPTI's per-thread buffers do) need more. (A single fast producer no
  // longer exhausts the pool: the writer is woken by every completed
  // buffer.)
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_THREADS", "100"},
                                     {"FAKE_CUPTI_THREAD_KERNELS", "100"},
                                     {"GPSCOPE_MAX_BUFFER_MB", "4"},
                                     {"GPSCOPE_API", "0"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const uint64_t refused = s.N("refused");
  EXPECT_GT(refused, 0u) << "the pool never ran dry";
  EXPECT_EQ(t.Dropped(proto::DROP_CUPTI_BUFFER_POOL_EMPTY), refused);
  EXPECT_EQ(s.N("kernels_written") + s.N("records_dropped"), 10000u);
  EXPECT_EQ(t.kernels.size(), s.N("kernels_delivered"));
  EXPECT_EQ(s.N("kernels_delivered"), s.N("kernels_written"));
  EXPECT_EQ(t.Dropped(proto::DROP_CUPTI_REPORTED), s.N("dropped_reported"));
  // Bounded: never more than 64 distinct buffers, all inside one 4 MiB region,
  // each handed out zeroed again.
  EXPECT_LE(s.N("distinct_buffers"), 64u);
  EXPECT_LE(s.N("buffer_hi") - s.N("buffer_lo"), 4u << 20);
  EXPECT_EQ(s.N("nonzero_buffers"), 0u);
  std::set<uint32_t> seen;
  for (const auto& k : t.kernels) EXPECT_TRUE(seen.insert(k.correlation_id).second);
  ASSERT_TRUE(t.end.has_value());
}

TEST_F(CollectorCuptiTest, SigtermDuringActivityEndsTheTraceAndTheProcessDiesOfSigterm) {
  ASSERT_NO_FATAL_FAILURE(Start(
      {{"FAKE_CUPTI_KERNELS", "forever"}, {"FAKE_CUPTI_RATE", "20000"}}, Then::kStay));
  Trace live;
  ASSERT_TRUE(WaitForKernels(1, 5000, &live)) << "no kernels within 5 s";
  ASSERT_EQ(kill(child_, SIGTERM), 0);
  int status = Wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->reason(), proto::END_SIGNAL);
  EXPECT_EQ(t.end->signal(), SIGTERM);
  EXPECT_EQ(t.end->chunks_written(), t.chunks);
  // Everything up to the forced flush: a gap-free prefix of the launches.
  ASSERT_GE(t.kernels.size(), live.kernels.size());
  std::set<uint32_t> corr;
  for (const auto& k : t.kernels) corr.insert(k.correlation_id);
  EXPECT_EQ(corr.size(), t.kernels.size());
  EXPECT_EQ(*corr.begin(), kFirstCorrelation);
  EXPECT_EQ(*corr.rbegin(), kFirstCorrelation + corr.size() - 1);
}

// ---- capture windows and attach (common/control wired into the collector) ----

// A time window (delay + duration): kernels are traced only inside it, the
// time outside is recorded as LostInterval(TRACING_DISABLED); the kernel
// kind is on from the start (switched on late, it would record nothing).
TEST_F(CollectorCuptiTest, DelayAndDurationWindowTracesOnlyInsideIt) {
  RunDelayWindow({});
}

// With GPSCOPE_DIAG_GATE_KERNELS=1 (the diagnosis build) the kernel kind is
// on from the start and the records are gated: the window is complete even
// where kernel activity switched on in a running process records nothing
// (older CUPTI; the fake models it with FAKE_CUPTI_LATE_KERNELS=dead).
TEST_F(CollectorCuptiTest, GatedKernelsFillTheWindowWhereLateEnablingRecordsNothing) {
  RunDelayWindow({{"@diag", "1"},
                  {"FAKE_CUPTI_LATE_KERNELS", "dead"},
                  {"GPSCOPE_DIAG_GATE_KERNELS", "1"}});
}



// The forced flush that closes a window hands back the work still queued
// on the device, without timestamps (on the H200: ~24 kernels per window of
// a PyTorch loop, which made every `gpscope attach` trace read INCOMPLETE).
// Launched after the window closed, that work is outside it, not lost;
// launched inside it and still queued then, it is lost and counted.
TEST_F(CollectorCuptiTest, WorkQueuedWhenAWindowClosesIsNotALossIfLaunchedAfter) {
  Trace after;
  ASSERT_NO_FATAL_FAILURE(DelayWindowTrace({{"FAKE_CUPTI_QUEUED", "5"}}, &after));
  EXPECT_GT(after.kernels.size(), 100u);
  EXPECT_EQ(after.Dropped(proto::DROP_CUPTI_INCOMPLETE_RECORD), 0u);
  ASSERT_TRUE(after.end.has_value());
  EXPECT_EQ(after.end->events_dropped(), 0u);
}

// Launches 300 kernels (0.15 s) back: inside the 0.3 s window when it
// closes, after it at exit (the final forced flush queues 5 more).
TEST_F(CollectorCuptiTest, WorkQueuedWhenAWindowClosesIsALossIfLaunchedInside) {
  Trace inside;
  ASSERT_NO_FATAL_FAILURE(DelayWindowTrace(
      {{"FAKE_CUPTI_QUEUED", "5"}, {"FAKE_CUPTI_QUEUED_LAG", "300"}}, &inside));
  EXPECT_EQ(inside.Dropped(proto::DROP_CUPTI_INCOMPLETE_RECORD), 5u);
  ASSERT_TRUE(inside.end.has_value());
  EXPECT_EQ(inside.end->events_dropped(), 5u);
}

// Where CUPTI refuses the API kinds when a window opens mid-run, the window
// still has its kernels, and one line says the API records are missing.
TEST_F(CollectorCuptiTest, WindowWithoutApiKindsKeepsItsKernelsAndSaysSoOnce) {
  Trace t;
  ASSERT_NO_FATAL_FAILURE(DelayWindowTrace({{"FAKE_CUPTI_UNSUPPORTED", "4,5"}}, &t));  // DRIVER, RUNTIME
  EXPECT_GT(t.kernels.size(), 100u);
  EXPECT_TRUE(t.api_calls.empty());
  const std::string err = Stderr();
  const std::string line = "CUDA API records unavailable in this window";
  const size_t at = err.find(line);
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find(line, at + 1), std::string::npos) << "said once: " << err;
  // ... and the trace says it, for the analysis ("unavailable: ...").
  bool recorded = false;
  for (const auto& c : t.capabilities) {
    if (c.component() == "cupti.api_records" && !c.available()) recorded = true;
  }
  EXPECT_TRUE(recorded);
}


// Standby + attach through the control socket, as `gpscope attach` does:
// nothing is traced until `start`, then exactly the requested window, in
// the file while the process still runs (forced out at the window's end).
TEST_F(CollectorCuptiTest, StandbyProcessTracesOnlyTheAttachedWindow) {
  // A 2 s flush interval: the window must be on disk long before the next
  // periodic flush.
  ASSERT_NO_FATAL_FAILURE(Start({{"FAKE_CUPTI_KERNELS", "forever"},
                                 {"FAKE_CUPTI_RATE", "2000"},
                                 {"GPSCOPE_FLUSH_INTERVAL_MS", "2000"},
                                 {"GPSCOPE_STANDBY", "1"}},
                                Then::kStay));
  const std::string socket = control::ControlSocketPath(control_dir_, child_);
  control::ControlClient client;
  std::string error, reply;
  const uint64_t deadline = MonotonicMs() + 5000;
  while (client.Connect(socket, &error) != control::ClientError::kOk) {
    ASSERT_LT(MonotonicMs(), deadline) << "no control socket at " << socket << ": " << error;
    SleepMs(10);
  }
  ASSERT_EQ(client.Request("status", 2000, &reply, &error), control::ClientError::kOk) << error;
  EXPECT_NE(reply.find("state=standby tracing=0"), std::string::npos) << reply;
  EXPECT_NE(reply.find(" windows_written=0 "), std::string::npos) << reply;
  SleepMs(300);  // standby: nothing traced
  const uint64_t asked_ns = RealtimeNs();
  ASSERT_EQ(client.Request("start 400", 2000, &reply, &error), control::ClientError::kOk) << error;
  EXPECT_EQ(reply.rfind("ok", 0), 0u) << reply;
  ASSERT_EQ(client.Request("start 400", 2000, &reply, &error), control::ClientError::kOk);
  EXPECT_EQ(reply.rfind("error", 0), 0u) << "a second attach while tracing: " << reply;
  SleepMs(900);
  ASSERT_EQ(client.Request("status", 2000, &reply, &error), control::ClientError::kOk) << error;
  EXPECT_NE(reply.find("state=standby tracing=0"), std::string::npos) << reply;
  // The collector says when the window is in the file (`gpscope attach`
  // waits for this instead of a flush interval); it is, at once.
  EXPECT_NE(reply.find(" windows_written=1 "), std::string::npos) << reply;
  client.Close();
  Trace running;
  EXPECT_TRUE(WaitForKernels(200, 0, &running))
      << "the window's kernels are in the file while the process runs: "
      << running.kernels.size();
  ASSERT_EQ(kill(child_, SIGTERM), 0);
  int status = Wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status << Stderr();

  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  std::vector<proto::LostInterval> off;
  for (const auto& l : t.lost) {
    if (l.reason() == proto::LOST_TRACING_DISABLED) off.push_back(l);
  }
  ASSERT_EQ(off.size(), 2u);
  const uint64_t window_start = off[0].end_ns(), window_end = off[1].start_ns();
  EXPECT_GE(window_start, asked_ns);
  EXPECT_LT(window_start - asked_ns, 100'000'000u);  // the writer applies it within a tick
  EXPECT_NEAR(static_cast<double>(window_end - window_start), 0.4e9, 0.1e9);
  ASSERT_GT(t.kernels.size(), 200u);  // 2,000 per second for 0.4 s
  for (const auto& k : t.kernels) {
    ASSERT_GE(k.start_ns, window_start);
    ASSERT_LT(k.start_ns, window_end);
  }
  ExpectOneLaunchRecordPerKernel(t);
}

// ---- detaching from CUPTI between windows (GPSCOPE_DETACH, issue 24) ----

// The application: a launch (cudaLaunchKernel through the fake's API
// callbacks, with its kernel) every millisecond for 1.9 s.
void LaunchEveryMs(void* fake) {
  using CallFn = uint32_t (*)(uint32_t, uint32_t, uint32_t, uint32_t);
  using KernelFn = int (*)(uint32_t);
  auto call = reinterpret_cast<CallFn>(dlsym(fake, "fake_cupti_api_call"));
  auto kernel = reinterpret_cast<KernelFn>(dlsym(fake, "fake_cupti_kernel_for"));
  if (call == nullptr || kernel == nullptr) _exit(40);
  const uint64_t end = MonotonicMs() + 1900;
  while (MonotonicMs() < end) {
    kernel(call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, 0));
    SleepMs(1);
  }
}

// The windows of a trace: the ends and starts of its TRACING_DISABLED intervals.
std::vector<std::pair<uint64_t, uint64_t>> Windows(const Trace& t) {
  std::vector<proto::LostInterval> off;
  for (const auto& l : t.lost) {
    if (l.reason() == proto::LOST_TRACING_DISABLED) off.push_back(l);
  }
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  for (size_t i = 0; i + 1 < off.size(); ++i) windows.emplace_back(off[i].end_ns(), off[i + 1].start_ns());
  return windows;
}

// A duty cycle of 0.2 s every 0.5 s: after each window's close the next
// call's exit detaches CUPTI (cuptiFinalize), the next window subscribes
// again and has every kernel with its launch record; while detached the
// collector calls nothing else of CUPTI's (real CUPTI would attach again).
TEST_F(CollectorCuptiTest, DutyCycleDetachesCuptiBetweenWindowsAndAttachesAgain) {
  g_child_workload = LaunchEveryMs;
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"GPSCOPE_DUTY", "200ms/500ms"}}, Then::kWorkload));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const auto windows = Windows(t);
  ASSERT_GE(windows.size(), 3u) << Stderr();  // at 0.5, 1.0 and 1.5 s
  // Detached after every window (the last one's close may come after the
  // last call), subscribed again for every window but the first.
  EXPECT_GE(s.N("finalizes"), windows.size() - 1);
  EXPECT_LE(s.N("finalizes"), windows.size());
  EXPECT_EQ(s.Calls("subscribe_v2").size(), windows.size());
  EXPECT_EQ(s.N("calls_while_detached"), 0u);
  for (const auto& [start, end] : windows) {
    size_t in = 0;
    for (const auto& k : t.kernels) in += k.start_ns >= start && k.start_ns < end;
    EXPECT_GT(in, 100u) << "a window of 0.2 s has its kernels";
  }
  for (const auto& k : t.kernels) {
    bool inside = false;
    for (const auto& [start, end] : windows) inside |= k.start_ns >= start && k.start_ns < end;
    ASSERT_TRUE(inside) << k.start_ns;
  }
  ExpectOneLaunchRecordPerKernel(t);
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->events_dropped(), 0u);
}

// GPSCOPE_DETACH=0: CUPTI stays attached, the windows are the same.
TEST_F(CollectorCuptiTest, DetachZeroKeepsCuptiAttachedBetweenWindows) {
  g_child_workload = LaunchEveryMs;
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"GPSCOPE_DUTY", "200ms/500ms"}, {"GPSCOPE_DETACH", "0"}}, Then::kWorkload));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("finalizes"), 0u);
  EXPECT_TRUE(s.Calls("enable_domain").empty());
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  ASSERT_GE(Windows(t).size(), 3u);
  ExpectOneLaunchRecordPerKernel(t);
}

// No CUDA call between windows (kernels only from the fake's device
// thread): the detach never happens, the next window cancels it (the
// domains' callbacks off again) and traces as before.
TEST_F(CollectorCuptiTest, PendingDetachIsCancelledByTheNextWindow) {
  ASSERT_NO_FATAL_FAILURE(RunToExit({{"FAKE_CUPTI_KERNELS", "2800"},  // 1.4 s
                                     {"FAKE_CUPTI_RATE", "2000"},
                                     {"GPSCOPE_DUTY", "200ms/500ms"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("finalizes"), 0u);
  size_t on = 0, off = 0;
  for (const auto& c : s.Calls("enable_domain")) (c.value ? on : off) += 1;
  EXPECT_GE(on, 2u);
  EXPECT_GE(off, 2u) << "cancelled at the next window";
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  const auto windows = Windows(t);
  ASSERT_GE(windows.size(), 2u);
  for (const auto& [start, end] : windows) {
    size_t in = 0;
    for (const auto& k : t.kernels) in += k.start_ns >= start && k.start_ns < end;
    EXPECT_GT(in, 200u);
  }
}

// ---- regression tests for bugs found with this fake (fixed) ----

// Was a bug: cuptiActivityGetNumDroppedRecords is read only inside BufferCompleted.
// Records CUPTI drops after the last buffer it hands back (e.g. refused
// requests while our pool is empty at the end of a burst: CUPTI then holds no
// buffer, so even the forced flush at exit completes none) are never read,
// so the trace and the end chunk say 0 dropped although CUPTI counted them.
TEST_F(CollectorCuptiTest, DropsCountedAfterTheLastCompletedBufferStillReachTheTrace) {
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_DROPPED_AT_END", "11"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("records_dropped"), 11u);
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_EQ(t.kernels.size(), 10u);
  EXPECT_EQ(s.N("dropped_reported"), 11u)
      << "the collector never asked CUPTI after the last buffer";
  EXPECT_EQ(t.Dropped(proto::DROP_CUPTI_REPORTED), 11u);
  ASSERT_TRUE(t.end.has_value());
  EXPECT_EQ(t.end->events_dropped(), 11u);
}

// Was a bug: when enabling CONCURRENT_KERNEL fails, the problem takes two stderr
// lines (SetTracing logs "enabling kernel activity failed: <error>", then
// Start logs "enabling kernel activity failed; the application runs
// untraced"), and the "cupti" capability notice in the trace drops the CUPTI
// error ("enabling kernel activity failed" only).
TEST_F(CollectorCuptiTest, KernelKindRefusedIsOneLineAndTheNoticeNamesTheError) {
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_UNSUPPORTED", "10"}}));
  std::vector<std::string> lines = StderrLines();
  EXPECT_EQ(lines.size(), 1u) << Stderr();
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  auto notices = t.Unavailable("cupti");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0]->reason().find("CUPTI_ERROR_NOT_COMPATIBLE"), std::string::npos)
      << notices[0]->reason();
}

// Was a bug: when enabling CONCURRENT_KERNEL fails, Start() says "the application
// runs untraced" but keeps the CUPTI subscriber and the activity callbacks it
// registered, so the application's own profiler still cannot subscribe; and
// the trace it leaves has no end chunk (it reads as a killed process).
TEST_F(CollectorCuptiTest, GivingUpOnCuptiReleasesTheSubscriber) {
  ASSERT_NO_FATAL_FAILURE(
      RunToExit({{"FAKE_CUPTI_KERNELS", "10"}, {"FAKE_CUPTI_UNSUPPORTED", "10"}}));
  FakeStats s;
  ASSERT_NO_FATAL_FAILURE(ReadStats(&s));
  EXPECT_EQ(s.N("subscribers"), 0u) << "gpscope still holds the CUPTI subscriber";
  EXPECT_EQ(s.Calls("unsubscribe").size(), 1u);
  Trace t;
  ASSERT_NO_FATAL_FAILURE(ReadTrace(&t));
  EXPECT_TRUE(t.end.has_value()) << "the untraced process's trace reads as killed";
}

}  // namespace
}  // namespace gpscope
