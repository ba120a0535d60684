// tests/tools/make_stacks_trace.cc: writes tests/data/stacks/item_then_host.gpscope, a
// synthetic trace with call stacks (issue 20) shaped like a PyTorch loop on
// an H200: each step launches its forward/backward kernels from train.py:37
// (under torch's module call), reads the loss with loss.item() at train.py:42
// (cudaMemcpyAsync D2H + cudaStreamSynchronize under torch/_tensor.py), then
// runs 24 ms of Python bookkeeping before the next step (the host spends
// ~250 us per launch in the model code); a pin-memory thread
// syncs now and then; launches are sampled once per ms like the collector's
// GPSCOPE_STACK_SAMPLE_MS=1. Regenerate with
//   build/tests/tools/make_stacks_trace tests/data/stacks/item_then_host.gpscope
// (tests/tools/stacks_traces_test.py checks what it shows).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/testing/trace_builder.h"

namespace {

using gpscope::testing::TraceBuilder;
namespace format = gpscope::format;
namespace proto = gpscope::proto;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kMain = 31337;
constexpr uint32_t kPin = 31340;

class Writer {
 public:
  explicit Writer(TraceBuilder::Process& p) : p_(p) {}
  uint64_t Launch(uint64_t t, uint64_t dur, const char* name, uint32_t stack,
                  proto::StackTrigger trigger) {
    const uint32_t corr = corr_++;
    const uint64_t end = t + 6 * kUs;
    if (stack != 0) p_.AddStackSample(t, kMain, corr, stack, trigger);
    p_.Add(format::ApiCallEvent{t, end, proto::API_RUNTIME, 211, kMain, corr, 0,
                                p_.Intern("cudaLaunchKernel_v7000")});
    format::KernelEvent k{};
    k.start_ns = std::max(free_ + 2 * kUs, end + 3 * kUs);
    k.end_ns = k.start_ns + dur;
    k.name_id = p_.Intern(name);
    k.context_id = 1;
    k.stream_id = 7;
    k.correlation_id = corr;
    p_.Add(k);
    free_ = k.end_ns;
    return end;
  }
  // loss.item(): a 4-byte D2H copy, then the stream sync.
  uint64_t Item(uint64_t t, uint32_t copy_stack, uint32_t sync_stack) {
    uint32_t corr = corr_++;
    p_.AddStackSample(t, kMain, corr, copy_stack, proto::STACK_SYNC);
    const uint64_t copy_end = t + 7 * kUs;
    p_.Add(format::ApiCallEvent{t, copy_end, proto::API_RUNTIME, 41, kMain, corr, 0,
                                p_.Intern("cudaMemcpyAsync_v3020")});
    format::MemcpyEvent c{};
    c.start_ns = std::max(free_ + 2 * kUs, t + 5 * kUs);
    c.end_ns = c.start_ns + 3 * kUs;
    c.bytes = 4;
    c.copy_kind = proto::MEMCPY_DTOH;
    c.src_kind = proto::MEMORY_DEVICE;
    c.dst_kind = proto::MEMORY_PINNED;
    c.context_id = 1;
    c.stream_id = 7;
    c.correlation_id = corr;
    c.flags = 1;
    p_.Add(c);
    free_ = c.end_ns;
    corr = corr_++;
    const uint64_t s = copy_end + 2 * kUs;
    p_.AddStackSample(s, kMain, corr, sync_stack, proto::STACK_SYNC);
    const uint64_t end = std::max(s, free_) + 5 * kUs;
    p_.Add(format::ApiCallEvent{s, end, proto::API_RUNTIME, 131, kMain, corr, 0,
                                p_.Intern("cudaStreamSynchronize_v3020")});
    return end;
  }
  uint64_t PinSync(uint64_t t, uint32_t stack) {
    const uint32_t corr = corr_++;
    p_.AddStackSample(t, kPin, corr, stack, proto::STACK_SYNC);
    p_.Add(format::ApiCallEvent{t, t + 40 * kUs, proto::API_RUNTIME, 126, kPin, corr, 0,
                                p_.Intern("cudaEventSynchronize_v3020")});
    return t + 40 * kUs;
  }

 private:
  TraceBuilder::Process& p_;
  uint32_t corr_ = 5000;
  uint64_t free_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_stacks_trace OUT.gpscope\n");
    return 2;
  }
  TraceBuilder trace(19);
  TraceBuilder::Process& p = trace.AddProcess(0x5a17c0de, 31337);
  p.header().clear_cmdline();
  for (const char* a : {"python3", "train.py", "--steps", "120"}) p.header().add_cmdline(a);
  p.WriteHeader();
  const std::string torch = "/opt/venv/lib/python3.12/site-packages/torch/";
  const std::string cudart = "/opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/"
                             "libcudart.so.12";
  const uint32_t f_sync = p.AddNativeFrame(cudart, 0x4f2a0, "cudaStreamSynchronize");
  const uint32_t f_copy = p.AddNativeFrame(cudart, 0x61b10, "cudaMemcpyAsync");
  const uint32_t f_launch = p.AddNativeFrame(cudart, 0x72c40, "cudaLaunchKernel");
  const uint32_t f_ev = p.AddNativeFrame(cudart, 0x4e880, "cudaEventSynchronize");
  const uint32_t f_aten = p.AddNativeFrame(torch + "lib/libtorch_cuda.so", 0x1c0ffee,
                                           "_ZN2at6native13_local_scalarERKNS_6TensorE");
  const uint32_t f_item = p.AddPythonFrame(torch + "_tensor.py", 1012, "item");
  const uint32_t f_call = p.AddPythonFrame(torch + "nn/modules/module.py", 1762, "_call_impl");
  const uint32_t f_linear = p.AddPythonFrame(torch + "nn/modules/linear.py", 125, "forward");
  const uint32_t f_bwd = p.AddPythonFrame(torch + "autograd/graph.py", 824, "_engine_run_backward");
  const uint32_t f_37 = p.AddPythonFrame("/home/user/proj/train.py", 37, "train_step");
  const uint32_t f_39 = p.AddPythonFrame("/home/user/proj/train.py", 39, "train_step");
  const uint32_t f_42 = p.AddPythonFrame("/home/user/proj/train.py", 42, "train_step");
  const uint32_t f_70 = p.AddPythonFrame("/home/user/proj/train.py", 70, "main");
  const uint32_t f_mod = p.AddPythonFrame("/home/user/proj/train.py", 74, "<module>");
  const uint32_t f_pin = p.AddPythonFrame(torch + "utils/data/_utils/pin_memory.py", 55, "_pin_memory_loop");
  const uint32_t f_run = p.AddPythonFrame("/usr/lib/python3.12/threading.py", 1012, "run");
  const uint32_t s_fwd = p.AddStack({f_launch, f_linear, f_call, f_37, f_70, f_mod});
  const uint32_t s_bwd = p.AddStack({f_launch, f_bwd, f_39, f_70, f_mod});
  const uint32_t s_copy = p.AddStack({f_copy, f_aten, f_item, f_42, f_70, f_mod});
  const uint32_t s_sync = p.AddStack({f_sync, f_aten, f_item, f_42, f_70, f_mod});
  const uint32_t s_pin = p.AddStack({f_ev, f_pin, f_run});
  Writer w(p);
  uint64_t t = 2'000'000'000;  // CUPTI ns (DefaultHeader's clocks)
  uint64_t last_sample = 0;
  auto trigger = [&](uint64_t at, bool first) {
    if (first) return proto::STACK_AFTER_IDLE;
    if (at >= last_sample + kMs) {
      last_sample = at;
      return proto::STACK_SAMPLED;
    }
    return proto::STACK_TRIGGER_UNKNOWN;
  };
  for (int step = 0; step < 120; ++step) {
    for (int k = 0; k < 24; ++k) {  // forward: 24 GEMMs of 180 us
      const proto::StackTrigger tr = trigger(t, k == 0);
      t = w.Launch(t + 240 * kUs, 180 * kUs, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                   tr == proto::STACK_TRIGGER_UNKNOWN ? 0 : s_fwd, tr);
    }
    for (int k = 0; k < 24; ++k) {  // backward: 24 of 360 us
      const proto::StackTrigger tr = trigger(t, false);
      t = w.Launch(t + 240 * kUs, 360 * kUs, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64",
                   tr == proto::STACK_TRIGGER_UNKNOWN ? 0 : s_bwd, tr);
    }
    t = w.Item(t + 10 * kUs, s_copy, s_sync);
    if (step % 8 == 3) w.PinSync(t + 3 * kMs, s_pin);
    t += 24 * kMs;  // logging, metrics, the optimizer's bookkeeping in Python
    if (step % 10 == 9) p.Flush();
  }
  p.WriteEnd();
  if (!trace.WriteFile(argv[1])) {
    std::fprintf(stderr, "make_stacks_trace: %s: cannot write\n", argv[1]);
    return 1;
  }
  return 0;
}
