// tests/tools/sites_test.cc: call-site attribution (issue 20): stacks read
// from synthetic traces written with TraceBuilder (StackFrame, Stack,
// StackSamples), joined to their API calls, host blocked time, GPU idle
// and sampled kernel time attributed to source sites; findings citing the
// site; the source-lines section as text, JSON and CSV; hostile tables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyses/rules.h"
#include "tools/analyses/site_findings.h"
#include "tools/analyses/sites.h"
#include "tools/analyze/export.h"
#include "tools/analyze/summary.h"
#include "tools/model/stack_builder.h"
#include "tools/model/trace_model.h"
#include "tools/reader/limits.h"

namespace gpscope {
namespace {

using analyses::Finding;
using analyses::SiteRow;
using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 2'000'000'000;
constexpr uint32_t kMain = 100;
constexpr uint32_t kOther = 200;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "sites_test." + std::to_string(getpid()) + "." + name +
         ".gpscope";
}

std::unique_ptr<analyze::SummaryResult> Analyze(TraceBuilder& trace, const std::string& name,
                                                const model::ModelOptions& options = {}) {
  const std::string path = TempPath(name);
  EXPECT_TRUE(trace.WriteFile(path));
  auto r = analyze::ComputeSummaryResult({path}, options, analyses::ReportOptions{});
  if (getenv("SITES_TEST_KEEP") == nullptr) unlink(path.c_str());
  return r;
}

// One process on one GPU stream; every call may carry a stack (a sample
// written just before the call, in the same batch, as the collector does).
class Proc {
 public:
  explicit Proc(TraceBuilder& trace, uint64_t uid = 0x5157, uint32_t pid = 77)
      : p_(trace.AddProcess(uid, pid)) {
    p_.WriteHeader();
  }
  TraceBuilder::Process& p() { return p_; }

  // A kernel launch at host time t on `thread`; the kernel runs `dur` as
  // soon as the stream is free and the call returned. Returns the call's end.
  uint64_t Launch(uint32_t thread, uint64_t t, uint64_t dur, uint32_t stack = 0,
                  proto::StackTrigger trigger = proto::STACK_AFTER_IDLE,
                  std::string_view name = "gemm") {
    const uint32_t corr = corr_++;
    const uint64_t end = t + 8 * kUs;
    Sample(t, thread, corr, stack, trigger);
    p_.Add(format::ApiCallEvent{t, end, proto::API_RUNTIME, 211, thread, corr, 0,
                                p_.Intern("cudaLaunchKernel_v7000")});
    format::KernelEvent k{};
    k.start_ns = std::max(free_ == 0 ? 0 : free_ + 2 * kUs, end + 1 * kUs);
    k.end_ns = k.start_ns + dur;
    k.name_id = p_.Intern(name);
    k.context_id = 1;
    k.stream_id = 7;
    k.correlation_id = corr;
    p_.Add(k);
    free_ = k.end_ns;
    kernel_ns_ += dur;
    return end;
  }
  // An H2D copy of `bytes` from pinned memory (cudaMemcpyAsync).
  uint64_t Copy(uint32_t thread, uint64_t t, uint64_t dur, uint64_t bytes, uint32_t stack = 0) {
    return AddCopy(thread, t, dur, bytes, stack, proto::STACK_AFTER_IDLE, proto::API_RUNTIME, 41,
                   "cudaMemcpyAsync_v3020", proto::MEMCPY_HTOD, proto::MEMORY_PINNED,
                   proto::MEMORY_DEVICE);
  }
  // A D2H copy of `bytes` to pinned memory (cuMemcpyDtoHAsync) that runs
  // when the stream is free: a read-back nothing synchronizes with.
  uint64_t ReadBack(uint32_t thread, uint64_t t, uint64_t dur, uint64_t bytes, uint32_t stack,
                    proto::StackTrigger trigger) {
    return AddCopy(thread, t, dur, bytes, stack, trigger, proto::API_DRIVER, 281,
                   "cuMemcpyDtoHAsync_v2", proto::MEMCPY_DTOH, proto::MEMORY_DEVICE,
                   proto::MEMORY_PINNED);
  }
  // A blocking call (cudaStreamSynchronize, cudaFree...) from t to `end`
  // (at least until the stream is free for a sync).
  uint64_t Block(uint32_t thread, uint64_t t, uint64_t end, std::string_view api,
                 uint32_t stack = 0, proto::StackTrigger trigger = proto::STACK_SYNC) {
    const uint32_t corr = corr_++;
    Sample(t, thread, corr, stack, trigger);
    p_.Add(format::ApiCallEvent{t, end, proto::API_RUNTIME, 0, thread, corr, 0, p_.Intern(api)});
    return end;
  }
  uint64_t Sync(uint32_t thread, uint64_t t, uint32_t stack = 0) {
    return Block(thread, t, std::max(t, free_) + 4 * kUs, "cudaStreamSynchronize_v3020", stack);
  }
  uint64_t gpu_free() const { return free_; }
  uint64_t kernel_ns() const { return kernel_ns_; }
  uint32_t next_correlation() const { return corr_; }
  void Sample(uint64_t t, uint32_t thread, uint32_t corr, uint32_t stack,
              proto::StackTrigger trigger) {
    if (stack != 0) p_.AddStackSample(t, thread, corr, stack, trigger);
  }

 private:
  // An async copy call at t and its copy, which runs when the stream is free.
  uint64_t AddCopy(uint32_t thread, uint64_t t, uint64_t dur, uint64_t bytes, uint32_t stack,
                   proto::StackTrigger trigger, proto::ApiDomain domain, uint32_t cbid,
                   std::string_view api, proto::MemcpyKind kind, proto::MemoryKind src,
                   proto::MemoryKind dst) {
    const uint32_t corr = corr_++;
    const uint64_t end = t + 5 * kUs;
    Sample(t, thread, corr, stack, trigger);
    p_.Add(format::ApiCallEvent{t, end, static_cast<uint32_t>(domain), cbid, thread, corr, 0,
                                p_.Intern(api)});
    format::MemcpyEvent c{};
    c.start_ns = std::max(free_ == 0 ? 0 : free_ + 2 * kUs, t + 6 * kUs);
    c.end_ns = c.start_ns + dur;
    c.bytes = bytes;
    c.copy_kind = kind;
    c.src_kind = src;
    c.dst_kind = dst;
    c.context_id = 1;
    c.stream_id = 7;
    c.correlation_id = corr;
    c.flags = 1;
    p_.Add(c);
    free_ = c.end_ns;
    return end;
  }

  TraceBuilder::Process& p_;
  uint32_t corr_ = 1000;
  uint64_t free_ = 0;
  uint64_t kernel_ns_ = 0;
};

// The frames of a PyTorch training script: train.py calls into torch.
struct TorchFrames {
  explicit TorchFrames(TraceBuilder::Process& p) {
    cudart = p.AddNativeFrame("/usr/local/cuda/lib64/libcudart.so.13", 0x1234, "cudaStreamSynchronize");
    item = p.AddPythonFrame("/usr/lib/python3/dist-packages/torch/_tensor.py", 1000, "item");
    module = p.AddPythonFrame("/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
                              1370, "_call_impl");
    free = p.AddPythonFrame("/opt/venv/lib/python3.12/site-packages/torch/cuda/memory.py", 192,
                            "empty_cache");
    to = p.AddPythonFrame("/opt/venv/lib/python3.12/site-packages/torch/_tensor.py", 1100, "to");
    line35 = p.AddPythonFrame("/home/u/train.py", 35, "train_step");
    line37 = p.AddPythonFrame("/home/u/train.py", 37, "train_step");
    line42 = p.AddPythonFrame("/home/u/train.py", 42, "train_step");
    line50 = p.AddPythonFrame("/home/u/train.py", 50, "train_step");
    line60 = p.AddPythonFrame("/home/u/train.py", 60, "<module>");
    thread_run = p.AddPythonFrame("/usr/lib/python3.12/threading.py", 1010, "run");
    sync_stack = p.AddStack({cudart, item, line42, line60});
    launch_stack = p.AddStack({module, line37, line60});
    free_stack = p.AddStack({free, line50, line60});
    copy_stack = p.AddStack({to, line35, line60});
    library_only = p.AddStack({cudart, thread_run});
  }
  uint32_t cudart, item, module, free, to, line35, line37, line42, line50, line60, thread_run;
  uint32_t sync_stack, launch_stack, free_stack, copy_stack, library_only;
};

// The frames of a JAX training script: line 83 dispatches the step, line
// 84 reads the loss back (float(loss) in jax/_src/array.py).
struct JaxFrames {
  explicit JaxFrames(TraceBuilder::Process& p) {
    const uint32_t jax =
        p.AddPythonFrame("/opt/venv/lib/python3.12/site-packages/jax/_src/array.py", 300, "__float__");
    const uint32_t line83 = p.AddPythonFrame("/home/u/jax_train.py", 83, "train");
    const uint32_t line84 = p.AddPythonFrame("/home/u/jax_train.py", 84, "train");
    const uint32_t line90 = p.AddPythonFrame("/home/u/jax_train.py", 90, "<module>");
    waiting = p.AddStack({jax, line84, line90});
    dispatch = p.AddStack({line83, line90});
  }
  uint32_t waiting, dispatch;
};

// The text with every run of spaces and newlines as one space: phrases
// are found across the renderer's line wrapping.
std::string Flat(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out.push_back(space ? ' ' : c);
  }
  return out;
}

// Runs `script` with python3 on `json` (its stdin, parsed as `d`): true
// when every assert in it holds.
bool PythonChecks(const std::string& json, const std::string& script) {
  const std::string path = TempPath("json");
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  fwrite(json.data(), 1, json.size(), f);
  fclose(f);
  const std::string py = TempPath("check") + ".py";
  f = fopen(py.c_str(), "w");
  if (f == nullptr) return false;
  const std::string body = "import json,sys\nd=json.load(open(sys.argv[1]))\n" + script + "\n";
  fwrite(body.data(), 1, body.size(), f);
  fclose(f);
  const int rc = system(("python3 " + py + " " + path).c_str());
  unlink(path.c_str());
  unlink(py.c_str());
  return rc == 0;
}

const SiteRow* SiteNamed(const analyses::SiteReport& s, const std::string& label) {
  for (const SiteRow& r : s.rows) {
    if (r.label == label) return &r;
  }
  return nullptr;
}

const Finding* FindRule(const std::vector<Finding>& findings, const std::string& rule) {
  for (const Finding& f : findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

// The part of [a, b) inside the window.
uint64_t Inside(uint64_t a, uint64_t b, const analyses::Window& w) {
  const uint64_t lo = std::max(a, w.start_ns), hi = std::min(b, w.end_ns);
  return hi > lo ? hi - lo : 0;
}
bool StartsInside(uint64_t t, const analyses::Window& w) { return t >= w.start_ns && t < w.end_ns; }

// As the findings print a time: "8.2 ms", "1.44 s", "94.2 us".
std::string Printed(double ns) {
  if (ns < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (ns < 1e6) return absl::StrFormat("%.3g us", ns / 1e3);
  if (ns < 1e9) return absl::StrFormat("%.3g ms", ns / 1e6);
  return absl::StrFormat("%.3g s", ns / 1e9);
}

// Device idle of every gap part a site can be given (host, sync and
// implicit waits, gaps at and below the threshold), over the whole run.
double AttributableIdle(const model::GpuModel& g) {
  double sum = 0;
  for (int f : {model::kGapHostNs, model::kGapSyncNs, model::kGapImplicitNs, model::kShortGapHostNs,
                model::kShortGapSyncNs, model::kShortGapImplicitNs}) {
    sum += g.timeline.Total(f);
  }
  return sum;
}

// --------------------------------------------------------- attribution --

// loss.item() every step, then 24 ms of Python before the next step's
// first launch: the sync site gets the sync wait and the host code after
// it, the next launch is named, and host-bound cites the line.
TEST(SitesTest, ItemEveryStepThenHostCode) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  uint64_t t = kT0;
  uint64_t blocked = 0;
  constexpr int kSteps = 50;
  // Each gap's host part: from the 0.5 ms relaunch allowance after the
  // sync (the sync part, model::kSyncRelaunchNs) to the next kernel.
  std::vector<std::pair<uint64_t, uint64_t>> host_parts;
  for (int step = 0; step < kSteps; ++step) {
    if (step > 0) host_parts.back().second = t + 9 * kUs;  // the kernel starts 1 us after the call
    uint64_t h = s.Launch(kMain, t, 2 * kMs, fr.launch_stack);
    h = s.Launch(kMain, h + 2 * kUs, 2 * kMs);  // not sampled: no stack
    h = s.Launch(kMain, h + 2 * kUs, 2 * kMs);
    const uint64_t sync_start = h + 10 * kUs;
    const uint64_t gap_start = s.gpu_free();
    const uint64_t sync_end = s.Sync(kMain, sync_start, fr.sync_stack);
    blocked += sync_end - sync_start;
    host_parts.push_back({gap_start + model::kSyncRelaunchNs + 4 * kUs, 0});
    t = sync_end + 24 * kMs;  // the host's own Python code
    if (step % 10 == 9) s.p().Flush();
  }
  host_parts.pop_back();  // no launch after the last sync
  s.p().WriteEnd();
  auto r = Analyze(trace, "item");
  const analyses::SiteReport& sites = r->report.sites;
  ASSERT_TRUE(sites.present);
  ASSERT_FALSE(sites.rows.empty());
  const SiteRow& top = sites.rows.front();
  EXPECT_EQ(top.label, "train.py:42 (train_step)");
  EXPECT_TRUE(top.user);
  EXPECT_EQ(top.frame.path, "/home/u/train.py");
  EXPECT_EQ(top.w.sync_calls, uint64_t{kSteps});
  EXPECT_EQ(top.w.sync_blocked_ns, blocked);
  // Every gap follows a sync: all the GPU's attributable idle is this site's.
  const model::GpuModel& g = r->model.gpus.at(0);
  const double idle = AttributableIdle(g);
  EXPECT_GT(idle, 49 * 24.0 * kMs);
  EXPECT_NEAR(static_cast<double>(top.gpu_lost_ns), idle, 1.0);
  EXPECT_EQ(r->model.processes[0].stacks.gpu_idle_unattributed_ns, 0u);
  // Each gap: 0.5 ms allowed for the relaunch after the sync returned
  // (model::kSyncRelaunchNs) counts as sync wait, the rest is host code.
  // (The sync returns 4 us after the GPU ran dry.)
  EXPECT_EQ(top.w.gpu_sync_idle_ns, 49 * (model::kSyncRelaunchNs + 4 * kUs));
  EXPECT_EQ(top.w.gpu_host_after_ns + top.w.gpu_sync_idle_ns, top.gpu_lost_ns);
  EXPECT_EQ(top.next_label, "train.py:37 (train_step)");
  EXPECT_EQ(top.next_gaps, 49u);
  EXPECT_DOUBLE_EQ(top.next_host_ns, 24.0 * kMs);
  ASSERT_EQ(top.stack.size(), 4u);
  EXPECT_EQ(top.stack[0].text, "cudaStreamSynchronize (libcudart.so.13+0x1234)");
  EXPECT_FALSE(top.stack[0].user);
  EXPECT_EQ(top.stack[1].text, "/usr/lib/python3/dist-packages/torch/_tensor.py:1000 item");
  EXPECT_FALSE(top.stack[1].user);
  EXPECT_EQ(top.stack[3].text, "/home/u/train.py:60 <module>");
  // The launch site was only a "next" site: it cost nothing itself.
  const SiteRow* launch = SiteNamed(sites, "train.py:37 (train_step)");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->gpu_lost_ns, 0u);
  EXPECT_EQ(launch->w.launches, uint64_t{kSteps});

  // The finding cites the host code over its steady window: the share of
  // each gap's host part inside it.
  const analyses::Window& window = r->report.gpus.at(0).window;
  uint64_t in_window = 0;
  for (const auto& [a, b] : host_parts) in_window += Inside(a, b, window);
  EXPECT_LT(in_window, top.w.gpu_host_after_ns - 20 * kMs);  // the window leaves a gap out
  const Finding* f = FindRule(r->findings, "host-bound");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites.front().label, "train.py:42 (train_step)");
  EXPECT_EQ(f->sites.front().value_ns, in_window);
  EXPECT_EQ(f->sites.front().site, 0u);  // the whole-run table's row
  EXPECT_NE(f->summary.find(absl::StrCat("Call stacks (steady window): after train.py:42 "
                                         "(train_step) returned, the GPU waited ",
                                         Printed(static_cast<double>(in_window)))),
            std::string::npos)
      << f->summary;
  EXPECT_NE(f->summary.find("(24 ms per gap, mean) before train.py:37 (train_step) launched"),
            std::string::npos)
      << f->summary;
  ASSERT_FALSE(f->fixes.empty());
  EXPECT_NE(f->fixes.front().find("between train.py:42 (train_step) and train.py:37 (train_step)"),
            std::string::npos)
      << f->fixes.front();
  EXPECT_EQ(f->fixes.front().find("py-spy"), std::string::npos);

  // The section in all three formats.
  const std::string text = analyze::RenderSummaryText(*r);
  const std::string flat = Flat(text);
  EXPECT_NE(text.find("\nSOURCE LINES (call stacks; 2 sites, GPU time lost first; whole run; "
                      "csv: --table lines)\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n  1. train.py:42 (train_step)                   1.18 s    299 ms      50"),
            std::string::npos)
      << text;
  EXPECT_NE(flat.find("GPU idle: 24.7 ms in its syncs, 1.15 s in host code after them"),
            std::string::npos);
  EXPECT_NE(flat.find("next launch: train.py:37 (train_step), 24 ms of host time later (mean of "
                      "49 gaps)"),
            std::string::npos)
      << text;
  EXPECT_NE(flat.find("stack: cudaStreamSynchronize (libcudart.so.13+0x1234) <- "
                      "/usr/lib/python3/dist-packages/torch/_tensor.py:1000 item <- "
                      "/home/u/train.py:42 train_step <- /home/u/train.py:60 <module>"),
            std::string::npos);
  EXPECT_NE(text.find(absl::StrCat("\n     at        train.py:42 (train_step) (",
                                   Printed(static_cast<double>(in_window)), ")\n")),
            std::string::npos)
      << text;
  for (size_t at = 0, nl; at < text.size(); at = nl + 1) {
    nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    EXPECT_LE(nl - at, 100u) << text.substr(at, nl - at);
  }
  EXPECT_TRUE(PythonChecks(analyze::RenderSummaryJson(*r), absl::StrCat("in_window = ", in_window,
                                                                       R"(
sl = d['source_lines']
p = sl['processes'][0]
assert p['process'] == 0 and p['pid'] == 77 and p['joined'] == 100, p
assert p['gpu_idle_unattributed_ns'] == 0 and p['sampled_launches'] == 0, p
s = sl['sites'][0]
assert s['label'] == 'train.py:42 (train_step)' and s['kind'] == 'python', s
assert s['file'] == '/home/u/train.py' and s['line'] == 42 and s['user'] is True, s
assert s['sync_calls'] == 50 and s['kernel'] is None and s['prev'] is None, s
assert s['next'] == {'site': 'train.py:37 (train_step)', 'gaps': 49, 'host_ns_mean': 24000000,
                     'gpu_host_ns': s['gpu_host_after_ns']}, s['next']
assert s['gpu_lost_ns'] == s['gpu_sync_idle_ns'] + s['gpu_host_after_ns'], s
assert s['stack'][0] == 'cudaStreamSynchronize (libcudart.so.13+0x1234)', s['stack']
f = [f for f in d['findings'] if f['rule'] == 'host-bound'][0]
assert f['sites'] == [{'site': 0, 'label': 'train.py:42 (train_step)', 'role': 'host-code',
                       'value_ns': in_window}], f['sites']
assert in_window < s['gpu_host_after_ns'], s
assert all('sites' not in f for f in d['findings'] if f['rule'] != 'host-bound')
)")));
  const std::string csv = analyze::RenderSummaryCsv(*r, "lines");
  EXPECT_EQ(csv.rfind("gpu,rank,pid,site,kind,file,line,function,user,gpu_lost_ns,", 0), 0u);
  EXPECT_NE(csv.find("\n0,-1,77,train.py:42 (train_step),python,/home/u/train.py,42,train_step,1,"),
            std::string::npos)
      << csv;
  EXPECT_TRUE(analyze::IsSummaryCsvTable("lines"));
}

// torch.cuda.empty_cache() every step: the implicit-sync finding names
// the line instead of sending the user to grep a dump.
TEST(SitesTest, EmptyCacheEveryStepCitesItsLine) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  uint64_t t = kT0;
  std::vector<uint64_t> frees;  // the calls' starts
  for (int step = 0; step < 40; ++step) {
    uint64_t h = s.Launch(kMain, t, 3 * kMs, fr.launch_stack);
    h = s.Launch(kMain, h + 2 * kUs, 3 * kMs);
    // cudaFree waits for the device, then releases memory for 8 ms.
    frees.push_back(h + 5 * kUs);
    const uint64_t end = s.Block(kMain, h + 5 * kUs, s.gpu_free() + 8 * kMs, "cudaFree_v3020",
                                 fr.free_stack);
    t = end + 20 * kUs;
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "empty_cache");
  const SiteRow* site = SiteNamed(r->report.sites, "train.py:50 (train_step)");
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->w.implicit_calls, 40u);
  EXPECT_GT(site->w.gpu_implicit_idle_ns, 39 * 7 * kMs);
  EXPECT_EQ(r->report.sites.rows.front().label, "train.py:50 (train_step)");
  const Finding* f = FindRule(r->findings, "implicit-sync");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites.front().label, "train.py:50 (train_step)");
  // The calls of the steady window (counted by their start), not the run's 40.
  const analyses::Window& window = r->report.gpus.at(0).window;
  const auto in_window = std::count_if(frees.begin(), frees.end(),
                                       [&](uint64_t t0) { return StartsInside(t0, window); });
  EXPECT_LT(in_window, 40);
  EXPECT_NE(f->summary.find(absl::StrCat("Call stacks (steady window): train.py:50 (train_step) "
                                         "made ", in_window, " implicitly synchronizing calls")),
            std::string::npos)
      << f->summary;
  EXPECT_NE(f->fixes.back().find("Start at train.py:50 (train_step) (stack: "), std::string::npos)
      << f->fixes.back();
  for (const std::string& fix : f->fixes) EXPECT_EQ(fix.find("| grep"), std::string::npos) << fix;
}

// A starved loop: the GPU waits before each step's input copy, which
// ends the gap (the copy's stack, not a kernel's).
TEST(SitesTest, StarvedLoopCitesTheLineThatWaitedForData) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  uint64_t t = kT0;
  std::vector<uint64_t> gap_starts;  // the GPU ran dry, then the loader ran
  for (int step = 0; step < 40; ++step) {
    if (step > 0) gap_starts.push_back(s.gpu_free());
    uint64_t h = s.Copy(kMain, t, 40 * kUs, 2 << 20, fr.copy_stack);
    for (int k = 0; k < 4; ++k) h = s.Launch(kMain, h + 2 * kUs, 500 * kUs);
    t = std::max(h, s.gpu_free()) + 20 * kMs;  // the loader
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "starved");
  const SiteRow& top = r->report.sites.rows.front();
  EXPECT_EQ(top.label, "train.py:35 (train_step)");
  EXPECT_NEAR(static_cast<double>(top.w.gpu_host_before_ns), AttributableIdle(r->model.gpus[0]),
              1.0);
  EXPECT_EQ(top.w.gaps, 39u);
  const Finding* f = FindRule(r->findings, "data-starvation");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites.front().label, "train.py:35 (train_step)");
  // The gaps of the steady window (counted by their start), not the run's 39.
  const analyses::Window& window = r->report.gpus.at(0).window;
  const auto in_window = std::count_if(gap_starts.begin(), gap_starts.end(),
                                       [&](uint64_t t0) { return StartsInside(t0, window); });
  EXPECT_LT(in_window, 39);
  EXPECT_NE(f->summary.find(absl::StrCat("before train.py:35 (train_step) launched the next work (",
                                         in_window, " gaps")),
            std::string::npos)
      << f->summary;
  EXPECT_NE(f->fixes[3].find("The loop waits before train.py:35 (train_step)"), std::string::npos);
}

// Two threads: a gap is delimited by the launching thread's own previous
// call, not by a later call of another thread.
TEST(SitesTest, PreviousCallIsTheLaunchingThreads) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  const uint32_t other_stack = s.p().AddStack({fr.thread_run});  // no user frame
  uint64_t t = kT0;
  for (int step = 0; step < 20; ++step) {
    uint64_t h = s.Launch(kMain, t, 3 * kMs, fr.launch_stack, proto::STACK_SAMPLED);
    // The other thread syncs while the GPU is still busy (it returns
    // before the GPU runs dry, so no gap begins in it).
    s.Block(kOther, h + 100 * kUs, h + 200 * kUs, "cudaEventSynchronize_v3020", other_stack);
    t = h + 10 * kMs;
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "threads");
  const SiteRow* launch = SiteNamed(r->report.sites, "train.py:37 (train_step)");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->w.gaps, 19u);
  EXPECT_EQ(launch->prev_label, "train.py:37 (train_step)");  // its own previous launch
  EXPECT_DOUBLE_EQ(launch->prev_host_ns, 10.0 * kMs);
  EXPECT_EQ(launch->w.gpu_host_before_ns, launch->gpu_lost_ns);
  // The other thread's syncs are a site with blocked time but no GPU idle,
  // shown at its innermost Python frame (not a user frame).
  const SiteRow* other = SiteNamed(r->report.sites, "threading.py:1010 (run)");
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->user);
  EXPECT_EQ(other->w.sync_calls, 20u);
  EXPECT_EQ(other->w.sync_blocked_ns, 20 * 100 * kUs);
  EXPECT_EQ(other->gpu_lost_ns, 0u);
}

// A gap that began in a sync without a stack, while another thread's
// stacked sync ran inside it: that sync did not cause the gap, so neither
// the sync wait nor the host code after it are its; the host code goes to
// the launch that ended the gap.
TEST(SitesTest, OverlappingSyncOfAnotherThreadIsNotTheCause) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  uint64_t t = kT0;
  for (int step = 0; step < 10; ++step) {
    const uint64_t h = s.Launch(kMain, t, 3 * kMs, fr.launch_stack);
    const uint64_t end = s.Sync(kMain, h + 10 * kUs);  // no stack
    s.Block(kOther, end + 1 * kMs, end + 3 * kMs, "cudaEventSynchronize_v3020", fr.sync_stack);
    t = end + 20 * kMs;
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "overlap");
  const SiteRow* other = SiteNamed(r->report.sites, "train.py:42 (train_step)");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->w.sync_calls, 10u);
  EXPECT_EQ(other->gpu_lost_ns, 0u);
  const SiteRow* launch = SiteNamed(r->report.sites, "train.py:37 (train_step)");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->w.gaps, 9u);
  EXPECT_GT(launch->w.gpu_host_before_ns, 9 * 19 * kMs);
  // The sync wait of the unstacked sync: not attributed.
  EXPECT_EQ(r->model.processes[0].stacks.gpu_idle_unattributed_ns,
            9 * (model::kSyncRelaunchNs + 4 * kUs));
}

// JAX: an XLA thread (no Python) launches and synchronizes while the
// main thread waits in float(loss); the collector gives those syncs the
// main thread's stack (STACK_SYNC_MAIN_THREAD). The sync time goes to the
// main thread's line and the site says who made the calls.
TEST(SitesTest, SyncsOfAThreadWithoutPythonGoToTheMainThreadsLine) {
  TraceBuilder trace;
  Proc s(trace);
  const uint32_t jax = s.p().AddPythonFrame("/opt/venv/lib/python3.12/site-packages/jax/_src/array.py",
                                            300, "__float__");
  const uint32_t line84 = s.p().AddPythonFrame("/home/u/jax_train.py", 84, "train");
  const uint32_t line90 = s.p().AddPythonFrame("/home/u/jax_train.py", 90, "<module>");
  const uint32_t waiting = s.p().AddStack({jax, line84, line90});
  constexpr uint32_t kXla = 4242;
  uint64_t t = kT0;
  for (int step = 0; step < 10; ++step) {
    const uint64_t h = s.Launch(kXla, t, 3 * kMs);
    const uint64_t end = std::max(h, s.gpu_free()) + 4 * kUs;
    s.Block(kXla, h + 10 * kUs, end, "cuStreamSynchronize", waiting, proto::STACK_SYNC_MAIN_THREAD);
    t = end + 2 * kMs;
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "xla");
  const SiteRow* site = SiteNamed(r->report.sites, "jax_train.py:84 (train)");
  ASSERT_NE(site, nullptr);
  EXPECT_TRUE(site->user);
  EXPECT_EQ(site->w.sync_calls, 10u);
  EXPECT_EQ(site->w.main_thread_syncs, 10u);
  EXPECT_GT(site->w.sync_blocked_ns, 10 * 2 * kMs);
  EXPECT_TRUE(PythonChecks(analyze::RenderSummaryJson(*r), R"(
s=[x for x in d['source_lines']['sites'] if x['label']=='jax_train.py:84 (train)'][0]
assert s['main_thread_syncs']==10, s)"));
}

// JAX's float(loss): the main thread dispatches a step (:83), an XLA
// thread copies the loss to pinned memory carrying the waiting main
// thread's stack (:84), and the main thread waits on a futex, not in CUDA:
// no sync anywhere. Then 3 ms of host code before the next dispatch. The
// gaps follow a read-back: the copy's line gets them (host code after it),
// not the dispatch that ended them, and host-bound sees them as after a sync.
TEST(SitesTest, GapsThatBeginWhenACopyToTheHostEndsGoToTheCopysLine) {
  TraceBuilder trace;
  Proc s(trace);
  const JaxFrames fr(s.p());
  const uint32_t waiting = fr.waiting, dispatch = fr.dispatch;
  constexpr uint32_t kXla = 4242;
  constexpr int kSteps = 20;
  uint64_t t = kT0;
  for (int step = 0; step < kSteps; ++step) {
    const uint64_t h = s.Launch(kMain, t, 200 * kUs, dispatch);
    s.ReadBack(kXla, h + 20 * kUs, 2 * kUs, 4, waiting, proto::STACK_SYNC_MAIN_THREAD);
    t = s.gpu_free() + 3 * kMs;  // the main thread's Python after float()
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "readback");
  const SiteRow* copy = SiteNamed(r->report.sites, "jax_train.py:84 (train)");
  ASSERT_NE(copy, nullptr);
  // Every gap but the trace's first edge: 3 ms of host code minus the
  // launch call's 8 us and its kernel's start after it.
  EXPECT_EQ(copy->w.gaps, uint64_t{kSteps - 1});
  EXPECT_GT(copy->w.gpu_host_after_ns, (kSteps - 1) * 2.9 * kMs);
  EXPECT_EQ(copy->w.gpu_host_before_ns, 0u);
  EXPECT_EQ(copy->w.sync_calls, 0u);  // a copy, not a sync
  EXPECT_EQ(copy->next_label, "jax_train.py:83 (train)");
  const SiteRow* launch = SiteNamed(r->report.sites, "jax_train.py:83 (train)");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->w.gpu_host_before_ns, 0u);
  ASSERT_FALSE(r->report.sites.rows.empty());
  EXPECT_EQ(r->report.sites.rows.front().label, "jax_train.py:84 (train)");
  const Finding* f = FindRule(r->findings, "host-bound");
  ASSERT_NE(f, nullptr) << analyze::RenderSummaryText(*r);
  EXPECT_NE(f->summary.find("follows a sync or a read-back"), std::string::npos) << f->summary;
  EXPECT_EQ(copy->w.readback_gaps, uint64_t{kSteps - 1});
  // The JSON and the `--table lines` CSV carry it (sites_render.h).
  EXPECT_TRUE(PythonChecks(analyze::RenderSummaryJson(*r), R"(
s = {s['label']: s for s in d['source_lines']['sites']}
assert s['jax_train.py:84 (train)']['readback_gaps'] == 19, s['jax_train.py:84 (train)']
assert s['jax_train.py:84 (train)']['gaps'] == 19
assert s['jax_train.py:83 (train)']['readback_gaps'] == 0, s['jax_train.py:83 (train)']
)"));
  {
    std::istringstream csv(analyze::RenderSummaryCsv(*r, "lines"));
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));
    std::vector<std::string> header = absl::StrSplit(line, ',');
    const auto col = std::find(header.begin(), header.end(), "readback_gaps");
    ASSERT_NE(col, header.end()) << line;
    bool seen = false;
    while (std::getline(csv, line)) {
      if (line.find(",jax_train.py:84 (train),") == std::string::npos) continue;
      std::vector<std::string> fields = absl::StrSplit(line, ',');
      ASSERT_GT(fields.size(), static_cast<size_t>(col - header.begin())) << line;
      EXPECT_EQ(fields[static_cast<size_t>(col - header.begin())], "19") << line;
      seen = true;
    }
    EXPECT_TRUE(seen);
  }
  EXPECT_NE(f->summary.find("after the copy to the host at jax_train.py:84 (train) ended, the GPU "
                            "waited"),
            std::string::npos)
      << f->summary;
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites.front().label, "jax_train.py:84 (train)");
  // Its fix names the stack from the library call the user's line made.
  bool stack_fix = false;
  for (const std::string& fix : f->fixes) {
    stack_fix |= fix.find("(stack: /opt/venv/lib/python3.12/site-packages/jax/_src/array.py:300 "
                          "__float__ <- /home/u/jax_train.py:84 train <- /home/u/jax_train.py:90 "
                          "<module>)") != std::string::npos;
  }
  EXPECT_TRUE(stack_fix) << f->fixes.front();
}

// ------------------------------------------------------ the steady window --

// A JAX-like run: a warm-up step whose two 400 ms compiles delay line 83's
// dispatch, then 100 steps that each wait 6 ms for the host's code after
// line 84's read of the loss (and, every tenth step, 8 ms before a second
// dispatch at line 83). Over the whole run line 83 cost more (800 ms of
// compiles); in the steady window the host-bound finding measures, line 84
// cost nearly all of it: the finding cites line 84 first with its window
// numbers, and line 83 after it with only its share inside the window.
TEST(SitesTest, AFindingCitesTheSitesOfItsSteadyWindow) {
  TraceBuilder trace;
  Proc s(trace);
  const JaxFrames fr(s.p());
  const uint32_t waiting = fr.waiting, dispatch = fr.dispatch;
  // The host parts [a, b) of the gaps: before line 83 launched (the whole
  // gap: no sync began it), after line 84's sync (from the 0.5 ms relaunch
  // allowance, model::kSyncRelaunchNs, to the next kernel, which starts
  // 9 us after its launch call does).
  std::vector<std::pair<uint64_t, uint64_t>> before83, after84;
  std::vector<uint64_t> step_starts;
  constexpr int kSteps = 100;
  uint64_t t = kT0;
  for (int step = 0; step <= kSteps; ++step) {
    step_starts.push_back(t);
    if (!after84.empty()) after84.back().second = t + 9 * kUs;
    uint64_t h = s.Launch(kMain, t, 2 * kMs, dispatch);
    // Step 0 compiles twice, 400 ms each; every tenth step waits 8 ms.
    const int waits = step == 0 ? 2 : step % 10 == 0 ? 1 : 0;
    for (int k = 0; k < waits; ++k) {
      const uint64_t a = s.gpu_free();
      const uint64_t at = a + (step == 0 ? 400 : 8) * kMs;
      before83.push_back({a, at + 9 * kUs});
      h = s.Launch(kMain, at, 2 * kMs, dispatch);
    }
    const uint64_t a = s.gpu_free();
    const uint64_t sync_end = s.Sync(kMain, h + 10 * kUs, waiting);  // float(loss)
    after84.push_back({a + model::kSyncRelaunchNs + 4 * kUs, 0});
    t = sync_end + 6 * kMs;  // the host's own code
    s.p().Add(format::NvtxRangeEvent{step_starts.back(), t,
                                     s.p().Intern(absl::StrCat("ProfilerStep#", step)), 0, kMain, 0});
    if (step % 10 == 9) s.p().Flush();
  }
  after84.pop_back();  // nothing launched after the last sync
  s.p().WriteEnd();
  auto r = Analyze(trace, "window");
  // The window: from the second step's start to the last's (gpu_report.h).
  const analyses::Window& window = r->report.gpus.at(0).window;
  ASSERT_EQ(window.start_ns, step_starts[1]) << window.basis;
  ASSERT_EQ(window.end_ns, step_starts.back());
  uint64_t y_run = 0, y_window = 0, x_run = 0, x_window = 0;
  for (const auto& [a, b] : after84) {
    y_run += b - a;
    y_window += Inside(a, b, window);
  }
  for (const auto& [a, b] : before83) {
    x_run += b - a;
    x_window += Inside(a, b, window);
  }
  EXPECT_EQ(x_window, 9 * (8 * kMs + 9 * kUs));  // steps 10 to 90
  // The whole-run table is as before: line 83 first, by its compiles.
  const SiteRow* x = SiteNamed(r->report.sites, "jax_train.py:83 (train)");
  const SiteRow* y = SiteNamed(r->report.sites, "jax_train.py:84 (train)");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(x->w.gpu_host_before_ns, x_run);
  EXPECT_EQ(y->w.gpu_host_after_ns, y_run);
  EXPECT_GT(x_run, y_run + 300 * kMs);
  EXPECT_EQ(r->report.sites.rows.front().label, "jax_train.py:83 (train)");

  const Finding* f = FindRule(r->findings, "host-bound");
  ASSERT_NE(f, nullptr) << analyze::RenderSummaryText(*r);
  ASSERT_EQ(f->sites.size(), 2u) << f->summary;
  EXPECT_EQ(f->sites[0].label, "jax_train.py:84 (train)");
  EXPECT_EQ(f->sites[0].value_ns, y_window);
  EXPECT_EQ(r->report.sites.rows.at(f->sites[0].site).label, "jax_train.py:84 (train)");
  EXPECT_EQ(f->sites[1].label, "jax_train.py:83 (train)");
  EXPECT_EQ(f->sites[1].value_ns, x_window);
  EXPECT_EQ(r->report.sites.rows.at(f->sites[1].site).label, "jax_train.py:83 (train)");
  EXPECT_NE(f->summary.find(absl::StrCat(
                "Call stacks (steady window): after jax_train.py:84 (train) returned, the GPU "
                "waited ", Printed(static_cast<double>(y_window)),
                " for the host's code (6 ms per gap, mean) before jax_train.py:83 (train) "
                "launched; the GPU waited ", Printed(static_cast<double>(x_window)),
                " for the host code before jax_train.py:83 (train) launched")),
            std::string::npos)
      << f->summary;
  EXPECT_EQ(f->summary.find("whole run"), std::string::npos) << f->summary;
  ASSERT_FALSE(f->fixes.empty());
  EXPECT_NE(f->fixes.front().find("between jax_train.py:84 (train) and jax_train.py:83 (train)"),
            std::string::npos)
      << f->fixes.front();
}

// Past the limit of timed charges (ModelOptions::max_stack_charges) a
// finding cites the whole run's sites and says so.
TEST(SitesTest, PastTheChargeLimitAFindingCitesTheWholeRun) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  uint64_t t = kT0;
  constexpr int kSteps = 50;
  for (int step = 0; step < kSteps; ++step) {  // as ItemEveryStepThenHostCode's
    uint64_t h = s.Launch(kMain, t, 2 * kMs, fr.launch_stack);
    h = s.Launch(kMain, h + 2 * kUs, 2 * kMs);
    h = s.Launch(kMain, h + 2 * kUs, 2 * kMs);
    t = s.Sync(kMain, h + 10 * kUs, fr.sync_stack) + 24 * kMs;
  }
  s.p().WriteEnd();
  model::ModelOptions options;
  options.max_stack_charges = 10;
  auto r = Analyze(trace, "cap", options);
  // Charges: 50 syncs, and the sync and host parts of the 49 gaps after them.
  const model::StackModel& sm = r->model.processes.at(0).stacks;
  EXPECT_EQ(sm.charges.size(), 10u);
  EXPECT_EQ(sm.charges_dropped, uint64_t{kSteps + 2 * (kSteps - 1) - 10});
  const SiteRow* top = SiteNamed(r->report.sites, "train.py:42 (train_step)");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->w.sync_calls, uint64_t{kSteps});  // the whole-run weights are all there
  const Finding* f = FindRule(r->findings, "host-bound");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites.front().value_ns, top->w.gpu_host_after_ns);
  EXPECT_NE(f->summary.find("Call stacks (whole run, not the steady window: the analyzer keeps "
                            "the times of 10 stack costs per process and this one had 138 more): "
                            "after train.py:42 (train_step) returned"),
            std::string::npos)
      << f->summary;
  // With the default limit the same trace is judged over its window.
  auto windowed = Analyze(trace, "cap_default");
  const Finding* g = FindRule(windowed->findings, "host-bound");
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->summary.find("Call stacks (steady window): "), std::string::npos) << g->summary;
  EXPECT_LT(g->sites.front().value_ns, top->w.gpu_host_after_ns);
}

// The fixes' stack line starts at the library call the user's line made.
TEST(SitesTest, AFixsStackLineStartsAtTheCallTheUsersLineMade) {
  SiteRow s;
  for (int i = 0; i < 6; ++i) {
    analyses::SiteFrame f;
    f.text = absl::StrCat("lib.py:", i, " inner", i);
    s.stack.push_back(f);
  }
  auto user = [](std::string text) {
    analyses::SiteFrame f;
    f.text = std::move(text);
    f.user = true;
    return f;
  };
  s.stack.push_back(user("train.py:42 step"));
  s.stack.push_back(user("train.py:60 <module>"));
  EXPECT_EQ(analyses::StackLine(s, 3),
            "... <- lib.py:5 inner5 <- train.py:42 step <- train.py:60 <module>");
  EXPECT_EQ(analyses::StackLine(s, 2), "... <- lib.py:5 inner5 <- train.py:42 step <- ...");
  s.stack.resize(6);  // no user frame: from the innermost
  EXPECT_EQ(analyses::StackLine(s, 2), "lib.py:0 inner0 <- lib.py:1 inner1 <- ...");
}

// The same copies with a sync after each (PyTorch's .item()): the sync's
// line keeps the gaps, the copy's gets none.
TEST(SitesTest, ACopyToTheHostFollowedByASyncLeavesTheGapToTheSync) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  const uint32_t copy_frame = s.p().AddPythonFrame("/home/u/train.py", 41, "train_step");
  const uint32_t copy_stack = s.p().AddStack({copy_frame});
  uint64_t t = kT0;
  for (int step = 0; step < 10; ++step) {
    uint64_t h = s.Launch(kMain, t, 1 * kMs, fr.launch_stack);
    h = s.ReadBack(kMain, h + 2 * kUs, 2 * kUs, 4, copy_stack, proto::STACK_SYNC);
    const uint64_t end = s.Sync(kMain, h + 2 * kUs, fr.sync_stack);
    t = end + 5 * kMs;
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "readback_sync");
  const SiteRow* sync = SiteNamed(r->report.sites, "train.py:42 (train_step)");
  ASSERT_NE(sync, nullptr);
  EXPECT_GT(sync->w.gpu_host_after_ns, 9 * 4.0 * kMs);
  const SiteRow* copy = SiteNamed(r->report.sites, "train.py:41 (train_step)");
  if (copy != nullptr) {
    EXPECT_EQ(copy->gpu_lost_ns, 0u);
  }
}

// At the trace's edges: the first launch has no earlier call; a sync at
// the end has no gap after it; a sample that arrives a batch early joins;
// calls without stacks are counted, not attributed.
TEST(SitesTest, EdgesAndMissingStacks) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  // A sample in one batch, its call in the next.
  const uint32_t first = s.next_correlation();
  s.p().AddStackSample(kT0, kMain, first, fr.launch_stack, proto::STACK_AFTER_IDLE);
  s.p().Flush();
  uint64_t h = s.Launch(kMain, kT0, 1 * kMs);  // corr `first`, its stack above
  // A gap after an unstacked sync, ended by an unstacked launch.
  h = s.Sync(kMain, h + 10 * kUs);
  h = s.Launch(kMain, h + 20 * kMs, 1 * kMs);
  // A gap ended by a stacked launch whose previous call had no stack.
  h = s.Launch(kMain, std::max(h, s.gpu_free()) + 30 * kMs, 1 * kMs, fr.launch_stack);
  // The last call: a stacked sync with nothing after it.
  const uint64_t sync_start = h + 10 * kUs;
  const uint64_t sync_end = s.Sync(kMain, sync_start, fr.sync_stack);
  s.p().WriteEnd();
  auto r = Analyze(trace, "edges");
  const model::StackModel& sm = r->model.processes[0].stacks;
  EXPECT_EQ(sm.stack_samples, 3u);
  EXPECT_EQ(sm.joined, 3u);
  EXPECT_EQ(sm.unjoined, 0u);
  EXPECT_EQ(sm.sync_calls_unstacked, 1u);
  const SiteRow* sync = SiteNamed(r->report.sites, "train.py:42 (train_step)");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->w.sync_calls, 1u);
  EXPECT_EQ(sync->w.sync_blocked_ns, sync_end - sync_start);
  EXPECT_EQ(sync->gpu_lost_ns, 0u);
  EXPECT_TRUE(sync->next_label.empty());
  const SiteRow* launch = SiteNamed(r->report.sites, "train.py:37 (train_step)");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->w.launches, 2u);
  EXPECT_EQ(launch->w.gaps, 1u);
  EXPECT_GT(launch->w.gpu_host_before_ns, 29 * kMs);
  EXPECT_TRUE(launch->prev_label.empty());  // the call before it had no stack
  // The first gap (after an unstacked sync, before an unstacked launch):
  // not attributed, and counted.
  EXPECT_GT(sm.gpu_idle_unattributed_ns, 19 * kMs);
  EXPECT_NEAR(static_cast<double>(sm.gpu_idle_attributed_ns + sm.gpu_idle_unattributed_ns),
              AttributableIdle(r->model.gpus[0]), 1.0);
}

// Kernel time by source line from sampled launches: the ratio estimate
// and its 95% interval, computed here from the launches themselves.
TEST(SitesTest, KernelTimeFromSampledLaunches) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  const uint32_t fwd = s.p().AddStack({fr.module, fr.line37, fr.line60});
  const uint32_t bwd = s.p().AddStack({fr.line42, fr.line60});
  uint64_t t = kT0;
  std::vector<double> x, y;  // per sampled launch: kernel time, and at fwd
  for (int i = 0; i < 200; ++i) {
    const bool is_fwd = i % 2 == 0;
    const uint64_t dur = is_fwd ? 3 * kMs : (i % 4 == 1 ? 1 * kMs : 2 * kMs);
    t = s.Launch(kMain, t, dur, is_fwd ? fwd : bwd, proto::STACK_SAMPLED);
    x.push_back(static_cast<double>(dur));
    y.push_back(is_fwd ? static_cast<double>(dur) : 0);
    for (int k = 0; k < 3; ++k) t = s.Launch(kMain, t + 2 * kUs, 100 * kUs);  // unsampled
    t += 1 * kMs;
  }
  s.p().WriteEnd();
  auto r = Analyze(trace, "kernels");
  const model::StackModel& sm = r->model.processes[0].stacks;
  EXPECT_EQ(sm.samples, 200u);
  double sx = 0, sy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
  }
  const double R = sy / sx;
  double ss = 0;
  for (size_t i = 0; i < x.size(); ++i) ss += (y[i] - R * x[i]) * (y[i] - R * x[i]);
  const double n = static_cast<double>(x.size());
  const double se = std::sqrt(ss / (n * (n - 1))) / (sx / n);
  const double total = static_cast<double>(s.kernel_ns());
  EXPECT_EQ(r->model.gpus[0].kernel_ns, s.kernel_ns());
  const SiteRow* f = SiteNamed(r->report.sites, "train.py:37 (train_step)");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->has_kernel_estimate);
  EXPECT_EQ(f->w.samples, 100u);
  EXPECT_NEAR(f->kernel_share, R, 1e-12);
  EXPECT_NEAR(f->kernel_ns, R * total, 1e-3 * total * 1e-6);
  EXPECT_NEAR(f->kernel_error_ns, 1.96 * se * total, 1e-6 * total);
  EXPECT_GT(f->kernel_error_ns, 0);
  const SiteRow* b = SiteNamed(r->report.sites, "train.py:42 (train_step)");
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->kernel_share, 1 - R, 1e-12);
  // The section states the sample and the interval.
  const std::string text = Flat(analyze::RenderSummaryText(*r));
  EXPECT_NE(text.find("kernel time by line from 200 sampled launches, +- the 95% interval"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kernel time: 100 of 200 sampled launches"), std::string::npos);
  EXPECT_NE(text.find("1. train.py:37 (train_step) 0 ns 0 ns 0 340 ms +- 32.4 ms"),
            std::string::npos)
      << text;
}

// -------------------------------------------------------------- hostile --

TEST(SitesTest, HostileTablesAreBoundedAndCounted) {
  TraceBuilder trace;
  Proc s(trace);
  TraceBuilder::Process& p = s.p();
  const uint32_t good = p.AddPythonFrame("/home/u/x.py", 3, "f");
  // Frames: id 0 and ids past the bound are dropped by the reader.
  for (uint32_t id : {0u, reader::kMaxStackFrameId + 1, 0xffffffffu}) {
    proto::StackFrame* f = p.batch().add_stack_frames();
    f->set_id(id);
    f->set_kind(proto::FRAME_PYTHON);
    f->set_file_id(0xfffffff0u);  // an undefined string
  }
  // A frame with an out-of-range kind and undefined strings.
  proto::StackFrame* odd = p.batch().add_stack_frames();
  odd->set_id(9);
  odd->set_kind(static_cast<proto::FrameKind>(77));
  odd->set_function_id(123456);
  // A stack naming undefined frames (777, 0xffffffff) and the odd one.
  const uint32_t unknown = p.AddStack({777, 0xffffffffu, 9, good});
  // A huge stack: kept at its innermost kMaxFramesPerStack frames.
  std::vector<uint32_t> huge(100'000, good);
  const uint32_t big = p.AddStack(huge);
  // Stack ids 0 and past the bound.
  for (uint32_t id : {0u, reader::kMaxStackId + 1, 0xffffffffu}) {
    proto::Stack* st = p.batch().add_stacks();
    st->set_id(id);
    st->add_frame_ids(good);
  }
  uint64_t t = kT0;
  t = s.Sync(kMain, s.Launch(kMain, t, 1 * kMs) + 10 * kUs, unknown);
  t = s.Sync(kMain, s.Launch(kMain, t + 20 * kMs, 1 * kMs) + 10 * kUs, big);
  t = s.Sync(kMain, s.Launch(kMain, t + 20 * kMs, 1 * kMs) + 10 * kUs, 4242);  // never defined
  // A stack id 0 sample, one whose call never comes, one on another thread.
  p.AddStackSample(t, kMain, s.next_correlation(), 0, proto::STACK_SYNC);
  t = s.Sync(kMain, s.Launch(kMain, t + 20 * kMs, 1 * kMs) + 10 * kUs);
  p.AddStackSample(t, kMain, 999'999, big, proto::STACK_SYNC);
  const uint32_t corr = s.next_correlation();
  p.AddStackSample(t, kOther, corr + 1, big, proto::STACK_SYNC);
  t = s.Sync(kMain, s.Launch(kMain, t + 20 * kMs, 1 * kMs) + 10 * kUs);
  p.Flush();
  // Columns of different lengths: the samples of this batch are skipped,
  // its events kept.
  proto::StackSamples* bad = p.batch().mutable_stack_samples();
  bad->add_timestamp_delta_ns(0);
  bad->add_thread_id(kMain);
  t = s.Sync(kMain, s.Launch(kMain, t + 20 * kMs, 1 * kMs) + 10 * kUs);
  p.WriteEnd();
  auto r = Analyze(trace, "hostile");
  const model::StackModel& sm = r->model.processes[0].stacks;
  EXPECT_EQ(r->model.gpus[0].kernel_count, 6u);  // the bad batch's events count
  EXPECT_EQ(sm.undecodable, 1u);
  EXPECT_EQ(sm.no_stack, 1u);
  EXPECT_EQ(sm.unknown_stack_ids, 1u);
  EXPECT_EQ(sm.unjoined, 2u);
  EXPECT_GE(sm.unknown_frame_ids, 2u);
  const analyses::SiteReport& sites = r->report.sites;
  const SiteRow* x = SiteNamed(sites, "x.py:3 (f)");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->w.sync_calls, 2u);
  bool saw_unknown = false, saw_big = false;
  for (const analyses::ProcessStacks& ps : sites.processes) {
    for (const model::WeightedStack& ws : ps.model->stacks) {
      if (ws.id == unknown) {
        saw_unknown = true;
        ASSERT_EQ(ws.frames.size(), 4u);
        EXPECT_EQ(ps.frames[ws.frames[0]].text, "(unknown frame 777)");
        EXPECT_EQ(ps.frames[ws.frames[1]].text, "(unknown frame 4294967295)");
        EXPECT_FALSE(ps.frames[ws.frames[2]].user);
      }
      if (ws.id == big) {
        saw_big = true;
        EXPECT_EQ(ws.frames.size(), static_cast<size_t>(reader::kMaxFramesPerStack));
        EXPECT_TRUE(ws.truncated);
      }
    }
  }
  EXPECT_TRUE(saw_unknown);
  EXPECT_TRUE(saw_big);
  // Everything renders.
  EXPECT_NE(Flat(analyze::RenderSummaryText(*r))
                .find("stacks lost: 1 not kept by the collector, 2 without their call, 1 naming "
                      "an undefined stack"),
            std::string::npos)
      << analyze::RenderSummaryText(*r);
  EXPECT_TRUE(PythonChecks(analyze::RenderSummaryJson(*r), R"(
p = d['source_lines']['processes'][0]
assert p['undecodable'] == 1 and p['unknown_stack_ids'] == 1 and p['unjoined'] == 2, p
x = [s for s in d['source_lines']['sites'] if s['label'] == 'x.py:3 (f)'][0]
assert x['stacks'] == 2 and x['sync_calls'] == 2, x
)"));
  EXPECT_NE(analyze::RenderSummaryCsv(*r, "lines").find("x.py:3 (f)"), std::string::npos);
}

// export: the stacks as Chrome's stackFrames tree, `sf` on the API events
// whose call has a stack.
TEST(SitesTest, ExportCarriesStackFrames) {
  TraceBuilder trace;
  Proc s(trace);
  TorchFrames fr(s.p());
  uint64_t t = kT0;
  for (int step = 0; step < 3; ++step) {
    uint64_t h = s.Launch(kMain, t, 2 * kMs, fr.launch_stack);
    h = s.Launch(kMain, h + 2 * kUs, 2 * kMs);
    t = s.Sync(kMain, h + 10 * kUs, fr.sync_stack) + 24 * kMs;
  }
  s.p().WriteEnd();
  const std::string path = TempPath("export");
  ASSERT_TRUE(trace.WriteFile(path));
  std::ostringstream out, err;
  ASSERT_EQ(analyze::RunExport({path}, out, err), 0) << err.str();
  unlink(path.c_str());
  EXPECT_TRUE(PythonChecks(out.str(), R"(
frames = d['stackFrames']
api = [e for e in d['traceEvents'] if e.get('cat') == 'cuda_api']
assert len(api) == 9, len(api)
withsf = [e for e in api if 'sf' in e]
assert len(withsf) == 6, withsf
def chain(node):
    out = []
    while node is not None:
        out.append(frames[node]['name'])
        node = frames[node].get('parent')
    return out
sync = [e for e in withsf if e['name'] == 'cudaStreamSynchronize_v3020']
assert len(sync) == 3
assert chain(sync[0]['sf']) == ['cudaStreamSynchronize (libcudart.so.13+0x1234)',
    '/usr/lib/python3/dist-packages/torch/_tensor.py:1000 item',
    '/home/u/train.py:42 train_step', '/home/u/train.py:60 <module>'], chain(sync[0]['sf'])
assert frames[sync[0]['sf']]['category'] == 'native'
launch = [e for e in withsf if e['name'] == 'cudaLaunchKernel_v7000']
assert chain(launch[0]['sf'])[1] == '/home/u/train.py:37 train_step'
# stacks share their outer frames: one node per prefix
def root(node):
    while 'parent' in frames[node]:
        node = frames[node]['parent']
    return node
assert root(sync[0]['sf']) == root(launch[0]['sf'])
roots = sorted(v['name'] for v in frames.values() if 'parent' not in v)
assert roots == ['/home/u/train.py:60 <module>', '/usr/lib/python3.12/threading.py:1010 run'], roots
assert all(k.startswith('77.') for k in frames)
)"));
}

// Many frames naming one huge string: the text kept per frame is cut, so
// the model and the export stay small.
TEST(SitesTest, HugeFrameStringsAreCut) {
  TraceBuilder trace;
  Proc s(trace);
  TraceBuilder::Process& p = s.p();
  const std::string huge(60'000, 'x');
  uint64_t t = kT0;
  for (int i = 0; i < 200; ++i) {
    const uint32_t f = p.AddPythonFrame("/home/u/" + std::to_string(i) + ".py", 1, huge);
    const uint32_t st = p.AddStack({f});
    t = s.Sync(kMain, s.Launch(kMain, t, 1 * kUs) + 10 * kUs, st) + 100 * kUs;
    if (i % 20 == 19) p.Flush();
  }
  p.WriteEnd();
  auto r = Analyze(trace, "huge_strings");
  const model::StackModel& sm = r->model.processes[0].stacks;
  ASSERT_EQ(sm.frames.size(), 200u);
  for (const model::StackFrameText& f : sm.frames) {
    EXPECT_EQ(f.function.size(), model::kFrameTextBytes + 3);
    EXPECT_EQ(f.function.substr(f.function.size() - 3), "...");
  }
  const std::string path = TempPath("huge_export");
  ASSERT_TRUE(trace.WriteFile(path));
  std::ostringstream out, err;
  ASSERT_EQ(analyze::RunExport({path}, out, err), 0) << err.str();
  unlink(path.c_str());
  // 200 frames of at most 4 KiB of text each, not 200 x 60 kB.
  EXPECT_LT(out.str().size(), 2u << 20);
  EXPECT_GT(out.str().size(), 200u * 4096);
}

// Without stacks nothing is added: no section, no key, a header-only CSV.
TEST(SitesTest, NoStacksNoSection) {
  TraceBuilder trace;
  Proc s(trace);
  uint64_t t = kT0;
  for (int i = 0; i < 10; ++i) t = s.Sync(kMain, s.Launch(kMain, t, 1 * kMs) + 10 * kUs) + 20 * kMs;
  s.p().WriteEnd();
  auto r = Analyze(trace, "none");
  EXPECT_FALSE(r->report.sites.present);
  EXPECT_EQ(analyze::RenderSummaryText(*r).find("SOURCE LINES"), std::string::npos);
  EXPECT_EQ(analyze::RenderSummaryJson(*r).find("source_lines"), std::string::npos);
  EXPECT_EQ(analyze::RenderSummaryJson(*r).find("\"sites\""), std::string::npos);
  const std::string csv = analyze::RenderSummaryCsv(*r, "lines");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1);
  for (const Finding& f : r->findings) EXPECT_TRUE(f.sites.empty());
  const std::string path = TempPath("export_none");
  ASSERT_TRUE(trace.WriteFile(path));
  std::ostringstream out, err;
  ASSERT_EQ(analyze::RunExport({path}, out, err), 0) << err.str();
  unlink(path.c_str());
  EXPECT_EQ(out.str().find("stackFrames"), std::string::npos);
  EXPECT_EQ(out.str().find("\"sf\""), std::string::npos);
}

// Frame text: demangled native symbols, module+offset without one, user
// and library frames.
TEST(SitesTest, FrameDescriptions) {
  model::StackFrameText f;
  f.defined = true;
  f.kind = proto::FRAME_NATIVE;
  f.file = "/home/u/build/prog";
  f.function = "_Z5gps_fi";
  f.module_offset = 0x1139;
  analyses::SiteFrame d = analyses::DescribeFrame(f);
  EXPECT_EQ(d.text, "gps_f(int) (prog+0x1139)");
  EXPECT_TRUE(d.user);
  f.function.clear();
  EXPECT_EQ(analyses::DescribeFrame(f).text, "prog+0x1139");
  for (const char* lib : {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/libc.so.6",
                          "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
                          "/opt/x/site-packages/jaxlib/xla_extension.so",
                          "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}) {
    f.file = lib;
    EXPECT_FALSE(analyses::IsUserFrame(f)) << lib;
  }
  f.file.clear();  // unresolved: the absolute address
  f.module_offset = 0x7f00dead;
  EXPECT_EQ(analyses::DescribeFrame(f).text, "0x7f00dead");
  EXPECT_FALSE(analyses::IsUserFrame(f));
  f.kind = proto::FRAME_PYTHON;
  f.function = "step";
  f.qualname = "Trainer.step";
  f.line = 12;
  for (const char* path : {"/usr/lib/python3.12/asyncio/events.py", "<frozen runpy>",
                           "/x/lib/python3.11/site-packages/torch/a.py", "/x/dist-packages/b.py"}) {
    f.file = path;
    EXPECT_FALSE(analyses::IsUserFrame(f)) << path;
  }
  f.file = "/home/u/lib/pythonista/train.py";
  EXPECT_TRUE(analyses::IsUserFrame(f));
  EXPECT_EQ(analyses::DescribeFrame(f).text, "/home/u/lib/pythonista/train.py:12 Trainer.step");
}

}  // namespace
}  // namespace gpscope
