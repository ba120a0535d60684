// tests/testing/synth.h: synthetic workloads for analyzer tests, written
// with TraceBuilder: Synth is one process whose GPU stream behaves like a real
// one (an op starts when the stream is free and its launch call has
// returned), with launch/copy/sync API records and NVTX steps; HealthyLoop()
// is a compute-bound training loop that no rule should flag.
//
//   TraceBuilder trace;
//   Synth s(trace);
//   HealthyLoop(s, {});
//   s.p().WriteEnd();
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TESTS_TESTING_SYNTH_H_
#define GPSCOPE_TESTS_TESTING_SYNTH_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpscope/trace.pb.h"
#include "proto/events.h"
#include "tests/testing/trace_builder.h"

namespace gpscope::testing {

inline constexpr uint64_t kSynthUs = 1'000;
inline constexpr uint64_t kSynthMs = 1'000'000;
inline constexpr uint32_t kSynthThread = 4242;  // the thread of every API call and step

// A process whose GPU stream behaves like a real one: an op starts when the
// stream is free and its launch call has returned (plus a little latency).
class Synth {
 public:
  // `edit_header` may change the header (rank, clocks) before it is written.
  explicit Synth(TraceBuilder& trace, uint64_t uid = 0x5157, uint32_t pid = 4242,
                 const std::vector<std::string>& cmdline = {},
                 const std::function<void(proto::ProcessHeader&)>& edit_header = nullptr)
      : p_(trace.AddProcess(uid, pid)) {
    if (!cmdline.empty()) {
      p_.header().clear_cmdline();
      for (const std::string& arg : cmdline) p_.header().add_cmdline(arg);
    }
    if (edit_header) edit_header(p_.header());
    p_.WriteHeader();
    AddConfig(1, 264);  // two blocks per SM of the 132-SM DefaultHeader device
    AddConfig(2, 8);    // far too few blocks
  }

  TraceBuilder::Process& p() { return p_; }

  void AddConfig(uint32_t id, uint32_t grid_x) {
    proto::LaunchConfig* c = p_.batch().add_launch_configs();
    c->set_id(id);
    c->set_grid_x(grid_x);
    c->set_grid_y(1);
    c->set_grid_z(1);
    c->set_block_x(256);
    c->set_block_y(1);
    c->set_block_z(1);
  }

  // Launches a kernel at host time `host_ns`; returns when the call returns.
  uint64_t Kernel(uint64_t host_ns, uint64_t duration_ns, std::string_view name,
                  uint32_t config = 1, uint64_t call_ns = 8 * kSynthUs, uint32_t stream = 7) {
    const uint32_t corr = next_correlation_++;
    Api(host_ns, call_ns, "cudaLaunchKernel_v7000", 211, corr);
    format::KernelEvent k{};
    k.start_ns = GpuStart(stream, host_ns + call_ns);
    k.end_ns = k.start_ns + duration_ns;
    k.name_id = p_.Intern(name);
    k.launch_config_id = config;
    k.context_id = 1;
    k.stream_id = stream;
    k.correlation_id = corr;
    p_.Add(k);
    free_ns_[stream] = k.end_ns;
    MaybeFlush();
    return host_ns + call_ns;
  }

  // A copy; for a synchronous-looking call (`blocking`) the call returns
  // when the copy ends. Returns when the call returns.
  uint64_t Copy(uint64_t host_ns, uint64_t duration_ns, uint64_t bytes, uint32_t copy_kind,
                uint32_t host_kind, bool blocking = false, uint32_t stream = 7) {
    const uint32_t corr = next_correlation_++;
    format::MemcpyEvent c{};
    c.start_ns = GpuStart(stream, host_ns + 5 * kSynthUs);
    c.end_ns = c.start_ns + duration_ns;
    c.bytes = bytes;
    c.copy_kind = copy_kind;
    const bool to_device = copy_kind == proto::MEMCPY_HTOD;
    const uint32_t device_kind = proto::MEMORY_DEVICE;
    c.src_kind = to_device ? host_kind : device_kind;
    c.dst_kind = to_device ? device_kind : host_kind;
    c.context_id = 1;
    c.stream_id = stream;
    c.correlation_id = corr;
    c.flags = 1;  // cudaMemcpyAsync
    c.dst_device_id = 0;
    p_.Add(c);
    free_ns_[stream] = c.end_ns;
    const uint64_t returns = blocking ? c.end_ns + 3 * kSynthUs : host_ns + 5 * kSynthUs;
    Api(host_ns, returns - host_ns, "cudaMemcpyAsync_v3020", 41, corr);
    MaybeFlush();
    return returns;
  }

  // A launch that returns only after its kernel ended (CUDA_LAUNCH_BLOCKING=1):
  // returns when the call returns.
  uint64_t BlockingKernel(uint64_t host_ns, uint64_t duration_ns, std::string_view name,
                          uint32_t config = 1, uint32_t stream = 7) {
    const uint32_t corr = next_correlation_++;
    format::KernelEvent k{};
    k.start_ns = GpuStart(stream, host_ns + 4 * kSynthUs);
    k.end_ns = k.start_ns + duration_ns;
    k.name_id = p_.Intern(name);
    k.launch_config_id = config;
    k.context_id = 1;
    k.stream_id = stream;
    k.correlation_id = corr;
    p_.Add(k);
    free_ns_[stream] = k.end_ns;
    const uint64_t returns = k.end_ns + 3 * kSynthUs;
    Api(host_ns, returns - host_ns, "cudaLaunchKernel_v7000", 211, corr);
    MaybeFlush();
    return returns;
  }

  // Any other API call (cudaMalloc_v3020, cudaFree_v3020...) from host_ns
  // for duration_ns; returns when it returns.
  uint64_t Call(uint64_t host_ns, uint64_t duration_ns, std::string_view name, uint32_t cbid = 0) {
    Api(host_ns, duration_ns, name, cbid, next_correlation_++);
    MaybeFlush();
    return host_ns + duration_ns;
  }

  // cudaStreamSynchronize from host_ns until the stream is idle.
  uint64_t Sync(uint64_t host_ns, uint32_t stream = 7) {
    const uint64_t end = std::max(host_ns, free_ns_[stream]) + 4 * kSynthUs;
    Api(host_ns, end - host_ns, "cudaStreamSynchronize_v3020", 131, next_correlation_++);
    return end;
  }

  void Step(uint64_t start_ns, uint64_t end_ns, uint64_t index) {
    p_.Add(format::NvtxRangeEvent{start_ns, end_ns, p_.Intern("step " + std::to_string(index)), 0,
                                  kSynthThread, 0});
  }

  uint64_t gpu_free_ns(uint32_t stream = 7) { return free_ns_[stream]; }
  // The correlation id of the latest call written (to join a stack to it).
  uint32_t last_correlation() const { return next_correlation_ - 1; }

 private:
  void Api(uint64_t start, uint64_t duration, std::string_view name, uint32_t cbid,
           uint32_t corr) {
    p_.Add(format::ApiCallEvent{start, start + duration, proto::API_RUNTIME, cbid, kSynthThread, corr,
                                0, p_.Intern(name)});
  }
  uint64_t GpuStart(uint32_t stream, uint64_t ready_ns) {
    const uint64_t free = free_ns_[stream];
    return std::max(free == 0 ? 0 : free + 2 * kSynthUs, ready_ns + 1 * kSynthUs);
  }
  void MaybeFlush() {
    if (p_.open_events() >= 3000) p_.Flush();
  }

  TraceBuilder::Process& p_;
  uint32_t next_correlation_ = 1000;
  std::map<uint32_t, uint64_t> free_ns_;
};

struct LoopOptions {
  int steps = 50;
  uint64_t step_ns = 19 * kSynthMs;  // host time per step: the GPU work is a bit longer
  int kernels = 10;
  uint64_t kernel_ns = 1'900 * kSynthUs;
  uint32_t config = 1;
  uint64_t copy_ns = 20 * kSynthUs;  // pinned H2D input copy
  uint64_t copy_bytes = 1 << 20;
  uint64_t pageable_ns = 0;     // an extra pageable H2D copy per step
  bool emit_steps = true;       // NVTX step ranges (else the caller writes them)
};

// A compute-bound training loop: the host launches each step's copy and
// kernels well ahead of the GPU, which is never starved.
void HealthyLoop(Synth& s, const LoopOptions& o, uint64_t t0 = 2'000'000'000);

// A host-bound loop: each step launches 4 kernels of 500 us, then the host
// runs 20 ms of its own code (no data moves): the GPU idles most of the
// time (rules.h host-bound, critical). Returns when the last step ends.
uint64_t HostBoundLoop(Synth& s, uint64_t t0 = 2'000'000'000, int steps = 50);

}  // namespace gpscope::testing

#endif  // GPSCOPE_TESTS_TESTING_SYNTH_H_
