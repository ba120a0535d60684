// The record converter on its own: synthetic CUPTI activity records built in
// memory (the layouts of the CUPTI headers the collector is built with), fed
// to RecordConverter, written by a real ChunkWriter and read back with the
// reader, field by field. No libcupti, no injected library.
#include "inject/record_converter.h"

#include <cupti.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/control/capture_window.h"
#include "inject/capture_gate.h"
#include "proto/chunk_writer.h"
#include "proto/enums.h"
#include "proto/framing.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::inject {
namespace {

using format::ChunkWriter;

constexpr uint64_t kT0 = 1'700'000'000'000'000'000ull;  // a CUPTI timestamp

// Everything the trace holds, decoded.
struct Readback : reader::ChunkVisitor {
  std::map<uint32_t, std::string> strings;
  std::vector<proto::LaunchConfig> launches;
  std::vector<proto::DeviceInfo> devices;
  std::vector<proto::ContextInfo> contexts;
  std::vector<proto::LostInterval> lost;
  std::vector<proto::CapabilityNotice> capabilities;
  reader::DecodedBatch events;
  size_t event_count = 0;
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
    if (!c.has_batch()) return absl::OkStatus();
    const proto::EventBatch& b = c.batch();
    for (const auto& s : b.strings()) strings[s.id()] = s.value();
    launches.insert(launches.end(), b.launch_configs().begin(), b.launch_configs().end());
    devices.insert(devices.end(), b.devices().begin(), b.devices().end());
    contexts.insert(contexts.end(), b.contexts().begin(), b.contexts().end());
    lost.insert(lost.end(), b.lost_intervals().begin(), b.lost_intervals().end());
    capabilities.insert(capabilities.end(), b.capabilities().begin(), b.capabilities().end());
    reader::DecodedBatch d;
    absl::Status st = reader::DecodeBatch(b, &d);
    if (!st.ok()) return st;
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(events.kernels, d.kernels);
    append(events.memcpys, d.memcpys);
    append(events.memsets, d.memsets);
    append(events.syncs, d.syncs);
    append(events.api_calls, d.api_calls);
    append(events.nvtx_ranges, d.nvtx_ranges);
    append(events.nvtx_marks, d.nvtx_marks);
    append(events.overheads, d.overheads);
    event_count += d.event_count();
    return absl::OkStatus();
  }
  const std::string& Name(uint32_t id) { return strings[id]; }
};

// CUPTI's callback names, as a table; counts the look-ups.
struct TableApiNames : RecordConverter::ApiNames {
  std::map<std::pair<uint32_t, uint32_t>, const char*> names;
  int lookups = 0;
  const char* ApiName(uint32_t domain, uint32_t cbid) override {
    ++lookups;
    auto it = names.find({domain, cbid});
    return it != names.end() ? it->second : nullptr;
  }
};

// The gate's side effects, recorded; a clock the test moves.
struct FakeActions : CaptureGate::Actions {
  uint64_t now_ns = kT0;
  std::vector<bool> tracing;  // SetTracing calls, in order
  int forced_flushes = 0;
  int windows_written = 0;
  uint64_t NowNs() override { return now_ns; }
  bool SetTracing(bool on, std::string*) override {
    tracing.push_back(on);
    return true;
  }
  void FlushForced() override { ++forced_flushes; }
  void WindowWritten() override { ++windows_written; }
};

template <typename R>
const CUpti_Activity* Rec(const R& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

CUpti_ActivityKernel10 Kernel(uint64_t start, uint64_t end, uint32_t correlation) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.correlationId = correlation;
  k.name = "_Z6kernelv";
  k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
  return k;
}

class RecordConverterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/record_converter_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".gpscope";
    unlink(path_.c_str());
    char err[256];
    fd_ = format::OpenForAppend(path_.c_str(), err, sizeof(err));
    ASSERT_GE(fd_, 0) << err;
    writer_ = std::make_unique<ChunkWriter>(fd_, 0xfeed, 4321, ChunkWriter::Options{});
    ASSERT_TRUE(writer_->ok());
    format::ProcessHeaderRecord h{};
    h.format_version = format::kFormatVersion;
    h.hostname = format::MakeStringRef("test-host");
    h.pid = 4321;
    h.identity.rank = h.identity.local_rank = h.identity.node_rank = -1;
    ASSERT_TRUE(writer_->WriteHeader(h));
    UseWindow(nullptr);
  }
  void TearDown() override { unlink(path_.c_str()); }

  // A fresh gate (null: no window, every record kept) and converter.
  void UseWindow(const control::CaptureConfig* capture) {
    converter_.reset();
    gate_ = std::make_unique<CaptureGate>(capture, writer_.get(), &actions_);
    converter_ = std::make_unique<RecordConverter>(writer_.get(), gate_.get(), &names_, &devices_);
  }

  void Convert(const CUpti_Activity* record) { converter_->Convert(record); }

  // Ends the trace and reads it back.
  void Finish(Readback* out) {
    format::ProcessEndRecord end{};
    end.reason = wire::END_EXIT;
    ASSERT_TRUE(writer_->WriteEnd(end));
    close(fd_);
    fd_ = -1;
    auto index = reader::ReadTraces({path_}, *out);
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_TRUE(index->warnings.empty());
  }

  std::string path_;
  int fd_ = -1;
  std::unique_ptr<ChunkWriter> writer_;
  FakeActions actions_;
  TableApiNames names_;
  std::atomic<uint64_t> devices_{0};
  std::unique_ptr<CaptureGate> gate_;
  std::unique_ptr<RecordConverter> converter_;
};

TEST_F(RecordConverterTest, KernelRecordBecomesAKernelWithItsNameAndLaunchShape) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = kT0 + 100;
  k.end = kT0 + 350;
  k.name = "_Z4gemmPfS_";
  k.gridX = 80;
  k.gridY = 2;
  k.gridZ = 3;
  k.blockX = 256;
  k.blockY = 4;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 49152;
  k.localMemoryPerThread = 16;
  k.clusterX = 2;
  k.clusterY = 1;
  k.clusterZ = 1;
  k.deviceId = 3;
  k.contextId = 5;
  k.streamId = 7;
  k.correlationId = 99;
  k.graphId = 11;
  k.graphNodeId = 0x123456789ull;
  Convert(Rec(k));
  // The serializing KERNEL kind has the same layout.
  CUpti_ActivityKernel10 serial = Kernel(kT0 + 400, kT0 + 500, 100);
  serial.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  Convert(Rec(serial));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.kernels.size(), 2u);
  const format::KernelEvent& e = r.events.kernels[0];
  EXPECT_EQ(e.start_ns, kT0 + 100);
  EXPECT_EQ(e.end_ns, kT0 + 350);
  EXPECT_EQ(r.Name(e.name_id), "_Z4gemmPfS_");
  EXPECT_EQ(e.device_id, 3u);
  EXPECT_EQ(e.context_id, 5u);
  EXPECT_EQ(e.stream_id, 7u);
  EXPECT_EQ(e.correlation_id, 99u);
  EXPECT_EQ(e.graph_id, 11u);
  EXPECT_EQ(e.graph_node_id, 0x123456789ull);
  EXPECT_EQ(r.Name(r.events.kernels[1].name_id), "_Z6kernelv");
  EXPECT_EQ(r.events.kernels[1].correlation_id, 100u);

  ASSERT_EQ(r.launches.size(), 2u);
  const proto::LaunchConfig& l = r.launches[0];
  EXPECT_EQ(l.id(), e.launch_config_id);
  EXPECT_EQ(l.grid_x(), 80u);
  EXPECT_EQ(l.grid_y(), 2u);
  EXPECT_EQ(l.grid_z(), 3u);
  EXPECT_EQ(l.block_x(), 256u);
  EXPECT_EQ(l.block_y(), 4u);
  EXPECT_EQ(l.block_z(), 1u);
  EXPECT_EQ(l.registers_per_thread(), 40u);
  EXPECT_EQ(l.static_shared_memory_bytes(), 1024u);
  EXPECT_EQ(l.dynamic_shared_memory_bytes(), 49152u);
  EXPECT_EQ(l.local_memory_per_thread_bytes(), 16u);
  EXPECT_EQ(l.cluster_x(), 2u);
  EXPECT_EQ(l.cluster_y(), 1u);
  EXPECT_EQ(l.cluster_z(), 1u);
  EXPECT_EQ(converter_->kernel_records(), 2u);
  EXPECT_EQ(converter_->first_kernel_ns(), kT0 + 100);
  EXPECT_EQ(converter_->last_kernel_ns(), kT0 + 400);
  EXPECT_EQ(converter_->last_event_ns(), kT0 + 500);
}

TEST_F(RecordConverterTest, KernelWithoutANameGetsTheEmptyName) {
  CUpti_ActivityKernel10 k = Kernel(kT0 + 1, kT0 + 2, 1);
  k.name = nullptr;
  Convert(Rec(k));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.events.kernels.size(), 1u);
  EXPECT_EQ(r.events.kernels[0].name_id, 0u);
}

TEST_F(RecordConverterTest, MemcpyCarriesTheRuntimeCallsCorrelationIdWhenItHasOne) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 1 << 20;
  m.start = kT0 + 10;
  m.end = kT0 + 90;
  m.deviceId = 2;
  m.contextId = 4;
  m.streamId = 13;
  m.correlationId = 500;        // the driver call's
  m.runtimeCorrelationId = 42;  // the runtime call's: the one the API record has
  m.graphId = 6;
  Convert(Rec(m));
  m.runtimeCorrelationId = 0;  // launched through the driver API
  m.correlationId = 501;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.flags = 0;
  Convert(Rec(m));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.memcpys.size(), 2u);
  const format::MemcpyEvent& a = r.events.memcpys[0];
  EXPECT_EQ(a.start_ns, kT0 + 10);
  EXPECT_EQ(a.end_ns, kT0 + 90);
  EXPECT_EQ(a.bytes, 1u << 20);
  EXPECT_EQ(a.copy_kind, static_cast<uint32_t>(wire::MEMCPY_HTOD));
  EXPECT_EQ(a.src_kind, static_cast<uint32_t>(wire::MEMORY_PINNED));
  EXPECT_EQ(a.dst_kind, static_cast<uint32_t>(wire::MEMORY_DEVICE));
  EXPECT_EQ(a.flags, static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC));
  EXPECT_EQ(a.device_id, 2u);
  EXPECT_EQ(a.dst_device_id, 2u) << "a copy within one device names it twice";
  EXPECT_EQ(a.context_id, 4u);
  EXPECT_EQ(a.stream_id, 13u);
  EXPECT_EQ(a.correlation_id, 42u);
  EXPECT_EQ(a.graph_id, 6u);
  const format::MemcpyEvent& b = r.events.memcpys[1];
  EXPECT_EQ(b.correlation_id, 501u);
  EXPECT_EQ(b.copy_kind, static_cast<uint32_t>(wire::MEMCPY_DTOH));
  EXPECT_EQ(b.src_kind, static_cast<uint32_t>(wire::MEMORY_DEVICE));
  EXPECT_EQ(b.dst_kind, static_cast<uint32_t>(wire::MEMORY_PAGEABLE));
  EXPECT_EQ(b.flags, 0u);
}

TEST_F(RecordConverterTest, PeerCopyNamesTheSourceAndTheDestinationDevice) {
  CUpti_ActivityMemcpyPtoP4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 4096;
  m.start = kT0 + 5;
  m.end = kT0 + 6;
  m.deviceId = 9;  // the device that ran it: not what the event names
  m.srcDeviceId = 1;
  m.dstDeviceId = 6;
  m.contextId = 3;
  m.streamId = 8;
  m.correlationId = 77;
  m.graphId = 2;
  Convert(Rec(m));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.memcpys.size(), 1u);
  const format::MemcpyEvent& e = r.events.memcpys[0];
  EXPECT_EQ(e.start_ns, kT0 + 5);
  EXPECT_EQ(e.end_ns, kT0 + 6);
  EXPECT_EQ(e.bytes, 4096u);
  EXPECT_EQ(e.copy_kind, static_cast<uint32_t>(wire::MEMCPY_PTOP));
  EXPECT_EQ(e.src_kind, static_cast<uint32_t>(wire::MEMORY_DEVICE));
  EXPECT_EQ(e.dst_kind, static_cast<uint32_t>(wire::MEMORY_DEVICE));
  EXPECT_EQ(e.device_id, 1u);
  EXPECT_EQ(e.dst_device_id, 6u);
  EXPECT_EQ(e.context_id, 3u);
  EXPECT_EQ(e.stream_id, 8u);
  EXPECT_EQ(e.correlation_id, 77u);
  EXPECT_EQ(e.flags, static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC));
  EXPECT_EQ(e.graph_id, 2u);
}

TEST_F(RecordConverterTest, MemsetKeepsItsValueAndMemoryKind) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0xab;
  m.bytes = 123456;
  m.start = kT0 + 20;
  m.end = kT0 + 21;
  m.deviceId = 1;
  m.contextId = 2;
  m.streamId = 3;
  m.correlationId = 4;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  m.graphId = 5;
  Convert(Rec(m));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.memsets.size(), 1u);
  const format::MemsetEvent& e = r.events.memsets[0];
  EXPECT_EQ(e.start_ns, kT0 + 20);
  EXPECT_EQ(e.end_ns, kT0 + 21);
  EXPECT_EQ(e.bytes, 123456u);
  EXPECT_EQ(e.value, 0xabu);
  EXPECT_EQ(e.memory_kind, static_cast<uint32_t>(wire::MEMORY_MANAGED));
  EXPECT_EQ(e.device_id, 1u);
  EXPECT_EQ(e.context_id, 2u);
  EXPECT_EQ(e.stream_id, 3u);
  EXPECT_EQ(e.correlation_id, 4u);
  EXPECT_EQ(e.flags, static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC));
  EXPECT_EQ(e.graph_id, 5u);
  EXPECT_TRUE(r.events.memcpys.empty());
}

TEST_F(RecordConverterTest, SynchronizationBecomesASyncWithItsKindStreamAndEvent) {
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  s.start = kT0 + 1000;
  s.end = kT0 + 5000;
  s.correlationId = 31;
  s.contextId = 1;
  s.streamId = 0xffffffffu;
  s.cudaEventId = 17;
  Convert(Rec(s));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.syncs.size(), 1u);
  const format::SyncEvent& e = r.events.syncs[0];
  EXPECT_EQ(e.start_ns, kT0 + 1000);
  EXPECT_EQ(e.end_ns, kT0 + 5000);
  EXPECT_EQ(e.sync_kind, static_cast<uint32_t>(wire::SYNC_EVENT_SYNCHRONIZE));
  EXPECT_EQ(e.context_id, 1u);
  EXPECT_EQ(e.stream_id, 0xffffffffu);
  EXPECT_EQ(e.event_id, 17u);
  EXPECT_EQ(e.correlation_id, 31u);
}

CUpti_ActivityAPI ApiRecord(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start,
                            uint64_t end, uint32_t thread_id, uint32_t correlation,
                            uint32_t result) {
  CUpti_ActivityAPI a{};
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.threadId = thread_id;
  a.correlationId = correlation;
  a.returnValue = result;
  return a;
}

TEST_F(RecordConverterTest, ApiRecordsOfTheListedCallsKeepTheirNameOthersAreDropped) {
  names_.names[{wire::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}] =
      "cudaLaunchKernel_v7000";
  names_.names[{wire::API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2}] = "cuMemAlloc_v2";
  CUpti_ActivityAPI a = ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, kT0 + 1,
                                  kT0 + 4, 1234, 8, 0);
  Convert(Rec(a));
  a.start = kT0 + 5;
  a.end = kT0 + 7;
  a.correlationId = 9;
  Convert(Rec(a));  // the same call again: its name is looked up once
  // Not among api_cbids.h's calls (the whole kind on: a window opened mid-run).
  CUpti_ActivityAPI other = a;
  other.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020;
  other.correlationId = 10;
  Convert(Rec(other));
  // CUDA_ERROR_OUT_OF_MEMORY (2).
  Convert(Rec(ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                        kT0 + 10, kT0 + 30, 1235, 11, 2)));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.api_calls.size(), 3u);
  const format::ApiCallEvent& e = r.events.api_calls[0];
  EXPECT_EQ(e.start_ns, kT0 + 1);
  EXPECT_EQ(e.end_ns, kT0 + 4);
  EXPECT_EQ(e.domain, static_cast<uint32_t>(wire::API_RUNTIME));
  EXPECT_EQ(e.cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_EQ(e.thread_id, 1234u);
  EXPECT_EQ(e.correlation_id, 8u);
  EXPECT_EQ(e.return_value, 0u);
  EXPECT_EQ(r.Name(e.api_name_id), "cudaLaunchKernel_v7000");
  EXPECT_EQ(r.events.api_calls[1].correlation_id, 9u);
  EXPECT_EQ(r.events.api_calls[1].api_name_id, e.api_name_id);
  const format::ApiCallEvent& f = r.events.api_calls[2];
  EXPECT_EQ(f.domain, static_cast<uint32_t>(wire::API_DRIVER));
  EXPECT_EQ(f.cbid, static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
  EXPECT_EQ(f.thread_id, 1235u);
  EXPECT_EQ(f.return_value, 2u);
  EXPECT_EQ(r.Name(f.api_name_id), "cuMemAlloc_v2");
  EXPECT_EQ(names_.lookups, 2) << "one look-up per call id";
}

TEST_F(RecordConverterTest, ApiCallWhoseNameCuptiDoesNotKnowGetsTheEmptyName) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  a.start = kT0 + 1;
  a.end = kT0 + 2;
  a.correlationId = 3;
  Convert(Rec(a));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.events.api_calls.size(), 1u);
  EXPECT_EQ(r.events.api_calls[0].api_name_id, 0u);
}

// GPSCOPE_API_SOURCE=callback: a call from the callbacks becomes the event
// its API record would; CUPTI's callback domains (driver 1, runtime 2) are
// the schema's the other way round (runtime 1, driver 2).
TEST_F(RecordConverterTest, ApiCallsFromTheCallbacksBecomeTheEventsTheirRecordsWould) {
  names_.names[{wire::API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020}] =
      "cudaMemcpy_v3020";
  names_.names[{wire::API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2}] = "cuMemcpyHtoD_v2";
  converter_->ConvertApiCall(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
                             kT0 + 2, kT0 + 3, 4321, 21, 0);
  converter_->ConvertApiCall(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                             kT0 + 1, kT0 + 5, 4321, 20, 11);
  // The same call as an activity record: the same event.
  Convert(Rec(ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                        kT0 + 1, kT0 + 5, 4321, 20, 11)));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.events.api_calls.size(), 3u);
  const format::ApiCallEvent& inner = r.events.api_calls[0];
  EXPECT_EQ(inner.domain, static_cast<uint32_t>(wire::API_DRIVER));
  EXPECT_EQ(inner.cbid, static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2));
  EXPECT_EQ(inner.correlation_id, 21u);
  EXPECT_EQ(r.Name(inner.api_name_id), "cuMemcpyHtoD_v2");
  const format::ApiCallEvent& outer = r.events.api_calls[1];
  EXPECT_EQ(outer.domain, static_cast<uint32_t>(wire::API_RUNTIME));
  EXPECT_EQ(outer.start_ns, kT0 + 1);
  EXPECT_EQ(outer.end_ns, kT0 + 5);
  EXPECT_EQ(outer.thread_id, 4321u);
  EXPECT_EQ(outer.correlation_id, 20u);
  EXPECT_EQ(outer.return_value, 11u);
  EXPECT_EQ(r.Name(outer.api_name_id), "cudaMemcpy_v3020");
  const format::ApiCallEvent& record = r.events.api_calls[2];
  EXPECT_EQ(record.domain, outer.domain);
  EXPECT_EQ(record.cbid, outer.cbid);
  EXPECT_EQ(record.api_name_id, outer.api_name_id) << "one interned name for both sources";
  EXPECT_EQ(record.return_value, outer.return_value);
  EXPECT_EQ(names_.lookups, 2);
}

// ... and is kept only inside the capture window, like the records.
TEST_F(RecordConverterTest, ApiCallsFromTheCallbacksOutsideTheWindowAreCountedNotWritten) {
  control::CaptureConfig capture;
  capture.standby = true;
  UseWindow(&capture);
  std::string error;
  ASSERT_EQ(gate_->Start(&error), CaptureGate::StartOutcome::kWaiting);
  converter_->ConvertApiCall(CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, kT0 + 10, kT0 + 20,
                             1, 5, 0);
  actions_.now_ns = kT0 + 1000;
  ASSERT_EQ(gate_->Attach(60000).outcome, control::AttachOutcome::kOk);
  gate_->Tick();
  converter_->ConvertApiCall(CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, kT0 + 1001,
                             kT0 + 1020, 1, 6, 0);
  EXPECT_EQ(converter_->outside_window(), 1u);
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.events.api_calls.size(), 1u);
  EXPECT_EQ(r.events.api_calls[0].correlation_id, 6u);
}

CUpti_ActivityMarker2 Marker(CUpti_ActivityFlag flags, uint32_t id, uint64_t ts,
                             const char* name, const char* domain = nullptr) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.timestamp = ts;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 4321;
  m.objectId.pt.threadId = 777;
  m.name = name;
  m.domain = domain;
  return m;
}

TEST_F(RecordConverterTest, NvtxRangeIsWrittenAtItsEndAndAMarkAtOnce) {
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, kT0 + 100, "forward", "torch")));
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, kT0 + 110, "inner")));
  EXPECT_EQ(converter_->open_ranges(), 2u);
  CUpti_ActivityMarker2 mark =
      Marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, kT0 + 120, "checkpoint", "app");
  mark.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;  // not a thread: no thread id
  mark.objectId.dcs.deviceId = 5;
  Convert(Rec(mark));
  // End records carry neither name nor domain: the start's are used.
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, kT0 + 150, nullptr)));
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, kT0 + 300, nullptr)));
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 9, kT0 + 310, nullptr)));  // never started
  EXPECT_EQ(converter_->open_ranges(), 0u);
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.nvtx_ranges.size(), 2u);
  const format::NvtxRangeEvent& inner = r.events.nvtx_ranges[0];
  EXPECT_EQ(inner.start_ns, kT0 + 110);
  EXPECT_EQ(inner.end_ns, kT0 + 150);
  EXPECT_EQ(r.Name(inner.name_id), "inner");
  EXPECT_EQ(inner.domain_id, 0u);
  EXPECT_EQ(inner.thread_id, 777u);
  const format::NvtxRangeEvent& outer = r.events.nvtx_ranges[1];
  EXPECT_EQ(outer.start_ns, kT0 + 100);
  EXPECT_EQ(outer.end_ns, kT0 + 300);
  EXPECT_EQ(r.Name(outer.name_id), "forward");
  EXPECT_EQ(r.Name(outer.domain_id), "torch");
  ASSERT_EQ(r.events.nvtx_marks.size(), 1u);
  const format::NvtxMarkEvent& m = r.events.nvtx_marks[0];
  EXPECT_EQ(m.timestamp_ns, kT0 + 120);
  EXPECT_EQ(r.Name(m.name_id), "checkpoint");
  EXPECT_EQ(r.Name(m.domain_id), "app");
  EXPECT_EQ(m.thread_id, 0u);
}

TEST_F(RecordConverterTest, OverheadKindsAreRenumberedToTheSchemas) {
  CUpti_ActivityOverhead3 o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.threadId = 4242;
  o.start = kT0 + 1;
  o.end = kT0 + 2;
  Convert(Rec(o));
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
  o.objectId.dcs.deviceId = 6;
  Convert(Rec(o));
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT;
  Convert(Rec(o));
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_UNKNOWN;
  Convert(Rec(o));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.overheads.size(), 4u);
  EXPECT_EQ(r.events.overheads[0].overhead_kind,
            static_cast<uint32_t>(wire::OVERHEAD_CUPTI_BUFFER_FLUSH));
  EXPECT_EQ(r.events.overheads[0].thread_id, 4242u);
  EXPECT_EQ(r.events.overheads[0].device_id, 0u);
  EXPECT_EQ(r.events.overheads[0].start_ns, kT0 + 1);
  EXPECT_EQ(r.events.overheads[0].end_ns, kT0 + 2);
  EXPECT_EQ(r.events.overheads[1].overhead_kind,
            static_cast<uint32_t>(wire::OVERHEAD_DRIVER_COMPILER));
  EXPECT_EQ(r.events.overheads[1].device_id, 6u);
  EXPECT_EQ(r.events.overheads[1].thread_id, 0u);
  EXPECT_EQ(r.events.overheads[2].overhead_kind,
            static_cast<uint32_t>(wire::OVERHEAD_UVM_ACTIVITY_INIT));
  EXPECT_EQ(r.events.overheads[3].overhead_kind, static_cast<uint32_t>(wire::OVERHEAD_UNKNOWN));
}

TEST_F(RecordConverterTest, DeviceRecordBecomesADeviceWithItsUuidAndLimits) {
  CUpti_ActivityDevice5 d{};
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = 1;
  d.name = "NVIDIA H200";
  const unsigned char uuid[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                  0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
  memcpy(d.uuid.bytes, uuid, sizeof(uuid));
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.numMultiprocessors = 132;
  d.globalMemorySize = 150'000'000'000ull;
  d.globalMemoryBandwidth = 4'800'000'000ull;
  d.coreClockRate = 1'980'000;
  d.maxWarpsPerMultiprocessor = 64;
  d.numThreadsPerWarp = 32;
  d.maxBlocksPerMultiprocessor = 32;
  d.maxRegistersPerMultiprocessor = 65536;
  d.maxSharedMemoryPerMultiprocessor = 233472;
  d.l2CacheSize = 50 << 20;
  Convert(Rec(d));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.devices.size(), 1u);
  const proto::DeviceInfo& g = r.devices[0];
  EXPECT_EQ(g.device_id(), 1u);
  EXPECT_EQ(g.name(), "NVIDIA H200");
  EXPECT_EQ(g.uuid(), "GPU-01234567-89ab-cdef-fedc-ba9876543210");
  EXPECT_EQ(g.compute_capability_major(), 9u);
  EXPECT_EQ(g.compute_capability_minor(), 0u);
  EXPECT_EQ(g.sm_count(), 132u);
  EXPECT_EQ(g.global_memory_bytes(), 150'000'000'000ull);
  EXPECT_EQ(g.global_memory_bandwidth_kbps(), 4'800'000'000ull);
  EXPECT_EQ(g.core_clock_khz(), 1'980'000u);
  EXPECT_EQ(g.max_threads_per_sm(), 64u * 32u);
  EXPECT_EQ(g.max_blocks_per_sm(), 32u);
  EXPECT_EQ(g.max_registers_per_sm(), 65536u);
  EXPECT_EQ(g.max_shared_memory_per_sm_bytes(), 233472u);
  EXPECT_EQ(g.l2_cache_bytes(), 50u << 20);
  EXPECT_EQ(r.event_count, 0u) << "a device is a record, not an event";
}

TEST_F(RecordConverterTest, ContextRecordIsWrittenAndSetsItsDevicesBit) {
  CUpti_ActivityContext3 c{};
  c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  c.contextId = 12;
  c.deviceId = 3;
  c.nullStreamId = 7;
  Convert(Rec(c));
  EXPECT_EQ(devices_.load(), uint64_t{1} << 3);
  c.deviceId = 70;  // beyond the word: every bit (the device cannot be told apart)
  Convert(Rec(c));
  EXPECT_EQ(devices_.load(), ~uint64_t{0});
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.contexts.size(), 2u);
  EXPECT_EQ(r.contexts[0].context_id(), 12u);
  EXPECT_EQ(r.contexts[0].device_id(), 3u);
  EXPECT_EQ(r.contexts[0].null_stream_id(), 7u);
}

TEST_F(RecordConverterTest, KindsItDoesNotHandleWriteNothing) {
  CUpti_ActivityKernel10 k = Kernel(kT0 + 1, kT0 + 2, 1);
  k.kind = CUPTI_ACTIVITY_KIND_NAME;
  Convert(Rec(k));
  k.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  Convert(Rec(k));
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  EXPECT_EQ(r.event_count, 0u);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.contexts.empty());
  EXPECT_EQ(converter_->incomplete_records() + converter_->outside_window(), 0u);
}

// Still queued or running at a forced flush, or CUPTI's device buffer full:
// a start or end of 0, or an end before the start.
TEST_F(RecordConverterTest, RecordsWithoutTimestampsAreCountedAsIncompleteNotWritten) {
  Convert(Rec(Kernel(0, kT0 + 5, 1)));
  Convert(Rec(Kernel(kT0 + 5, 0, 2)));
  Convert(Rec(Kernel(kT0 + 9, kT0 + 5, 3)));
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.start = kT0 + 1;
  m.correlationId = 4;
  Convert(Rec(m));
  Convert(Rec(Kernel(kT0 + 10, kT0 + 20, 5)));
  EXPECT_EQ(converter_->incomplete_records(), 4u);
  EXPECT_EQ(converter_->outside_window(), 0u);
  EXPECT_EQ(converter_->kernel_records(), 4u) << "counted before the gate";
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));
  ASSERT_EQ(r.events.kernels.size(), 1u);
  EXPECT_EQ(r.events.kernels[0].correlation_id, 5u);
  EXPECT_TRUE(r.events.memsets.empty());
}

// A forced flush while no window is open: untimed work launched after the
// window's last kept record is outside it, not lost; launched before, lost.
TEST_F(RecordConverterTest, UntimedRecordsOfAFlushOutsideAWindowAreLostOnlyIfLaunchedInside) {
  Convert(Rec(Kernel(kT0 + 10, kT0 + 20, 100)));  // kept: the highest correlation id
  converter_->BeginFlush(/*defer_untimed=*/true);
  Convert(Rec(Kernel(0, 0, 99)));   // launched inside the window, never finished
  Convert(Rec(Kernel(0, 0, 101)));  // launched after it
  Convert(Rec(Kernel(0, 0, 102)));
  CUpti_ActivityOverhead3 o{};      // no correlation id: cannot be placed
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  Convert(Rec(o));
  EXPECT_EQ(converter_->incomplete_records(), 1u) << "only what has no id, until the flush ends";
  converter_->EndFlush();
  EXPECT_EQ(converter_->incomplete_records(), 2u);
  EXPECT_EQ(converter_->outside_window(), 2u);
  // The next flush does not defer.
  converter_->BeginFlush(false);
  Convert(Rec(Kernel(0, 0, 200)));
  converter_->EndFlush();
  EXPECT_EQ(converter_->incomplete_records(), 3u);
  EXPECT_EQ(converter_->outside_window(), 2u);
}

// Standby, then an attach window: only records starting inside it are
// written; the time outside is a LostInterval(TRACING_DISABLED).
TEST_F(RecordConverterTest, RecordsStartingOutsideTheWindowAreCountedNotWritten) {
  control::CaptureConfig capture;
  capture.standby = true;
  UseWindow(&capture);
  std::string error;
  ASSERT_EQ(gate_->Start(&error), CaptureGate::StartOutcome::kWaiting);
  EXPECT_TRUE(actions_.tracing.empty()) << "standby leaves the kinds off";
  Convert(Rec(Kernel(kT0 + 500, kT0 + 600, 1)));  // before any window

  actions_.now_ns = kT0 + 1000;
  ASSERT_EQ(gate_->Attach(60000).outcome, control::AttachOutcome::kOk);
  gate_->Tick();  // the writer applies what the control thread queued
  ASSERT_EQ(actions_.tracing, std::vector<bool>{true});
  Convert(Rec(Kernel(kT0 + 999, kT0 + 1500, 2)));   // started just before: outside
  Convert(Rec(Kernel(kT0 + 1000, kT0 + 1500, 3)));  // kept
  Convert(Rec(Kernel(kT0 + 1800, kT0 + 2600, 4)));  // kept: ends after the stop

  actions_.now_ns = kT0 + 2000;
  ASSERT_EQ(gate_->Stop().outcome, control::AttachOutcome::kOk);
  gate_->Tick();
  Convert(Rec(Kernel(kT0 + 2000, kT0 + 2100, 5)));  // outside: the gate shut at the stop
  EXPECT_EQ(actions_.forced_flushes, 0) << "the kinds stay on through the close's grace";
  EXPECT_EQ(converter_->outside_window(), 3u);
  EXPECT_EQ(converter_->incomplete_records(), 0u);
  gate_->EndAtExit();
  EXPECT_EQ(gate_->windows_written(), 1u);
  gate_->CloseOutsideWindow(kT0 + 3000);
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.kernels.size(), 2u);
  EXPECT_EQ(r.events.kernels[0].correlation_id, 3u);
  EXPECT_EQ(r.events.kernels[1].correlation_id, 4u);
  ASSERT_EQ(r.lost.size(), 2u);
  EXPECT_EQ(r.lost[0].reason(), proto::LOST_TRACING_DISABLED);
  EXPECT_EQ(r.lost[0].start_ns(), kT0);
  EXPECT_EQ(r.lost[0].end_ns(), kT0 + 1000);
  EXPECT_EQ(r.lost[1].start_ns(), kT0 + 2000);
  EXPECT_EQ(r.lost[1].end_ns(), kT0 + 3000);
}

// GPSCOPE_CAPTURE_RANGE=nvtx:train: the kinds are on from the start, the
// window is the range, cut at its records' timestamps.
TEST_F(RecordConverterTest, AnNvtxRangeOpensAndClosesTheWindowAtItsTimestamps) {
  control::CaptureConfig capture;
  capture.range_name = "train";
  UseWindow(&capture);
  ASSERT_TRUE(gate_->uses_nvtx());
  std::string error;
  ASSERT_EQ(gate_->Start(&error), CaptureGate::StartOutcome::kTracing);
  ASSERT_EQ(actions_.tracing, std::vector<bool>{true});
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, kT0 + 50, "warmup")));
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, kT0 + 90, nullptr)));
  Convert(Rec(Kernel(kT0 + 80, kT0 + 120, 1)));  // before the range
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, kT0 + 100, "train")));
  Convert(Rec(Kernel(kT0 + 100, kT0 + 150, 2)));
  Convert(Rec(Kernel(kT0 + 190, kT0 + 260, 3)));
  Convert(Rec(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, kT0 + 200, nullptr)));
  Convert(Rec(Kernel(kT0 + 200, kT0 + 210, 4)));  // after it
  EXPECT_EQ(converter_->outside_window(), 2u);
  Readback r;
  ASSERT_NO_FATAL_FAILURE(Finish(&r));

  ASSERT_EQ(r.events.kernels.size(), 2u);
  EXPECT_EQ(r.events.kernels[0].correlation_id, 2u);
  EXPECT_EQ(r.events.kernels[1].correlation_id, 3u);
  ASSERT_EQ(r.events.nvtx_ranges.size(), 1u) << "the warm-up range is outside";
  EXPECT_EQ(r.Name(r.events.nvtx_ranges[0].name_id), "train");
  EXPECT_EQ(r.events.nvtx_ranges[0].start_ns, kT0 + 100);
  EXPECT_EQ(r.events.nvtx_ranges[0].end_ns, kT0 + 200);
}

}  // namespace
}  // namespace gpscope::inject
