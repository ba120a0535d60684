// tools/analyses/rules.cc: see rules.h. One function per rule; the table
// at the bottom is the catalogue.
#include "tools/analyses/rules.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpscope/trace.pb.h"
#include "proto/metric_names.h"
#include "tools/analyses/names.h"
#include "tools/analyses/site_findings.h"

namespace gpscope::analyses {
namespace {

constexpr size_t kMaxRanges = 5;

// "8.2 ms", "1.44 s", "94.2 us".
std::string Time(double ns) {
  if (ns < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (ns < 1e6) return absl::StrFormat("%.3g us", ns / 1e3);
  if (ns < 1e9) return absl::StrFormat("%.3g ms", ns / 1e6);
  return absl::StrFormat("%.3g s", ns / 1e9);
}
std::string Percent(double ratio) { return absl::StrFormat("%.1f%%", 100 * ratio); }
// 1234567 -> "1,234,567".
std::string Count(uint64_t n) {
  std::string digits = absl::StrCat(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

uint64_t Ns(double v) { return v <= 0 ? 0 : static_cast<uint64_t>(v + 0.5); }

// "4 B", "93.1 kB", "16.8 GB".
std::string Bytes(double b) {
  if (b < 1e3) return absl::StrFormat("%.0f B", b);
  if (b < 1e6) return absl::StrFormat("%.3g kB", b / 1e3);
  if (b < 1e9) return absl::StrFormat("%.3g MB", b / 1e6);
  return absl::StrFormat("%.3g GB", b / 1e9);
}

struct Context {
  const model::TraceModel& model;
  const SummaryReport& report;
  std::vector<Finding>* out;
};

bool InWindow(const Window& w, uint64_t start_ns, uint64_t end_ns) {
  return end_ns > w.start_ns && start_ns < w.end_ns;
}

const std::vector<std::string>& Cmdline(const Context& c, const GpuReport& g) {
  static const std::vector<std::string>* const kEmpty = new std::vector<std::string>();
  // An index loop: the range-for here drew a "reference binding to null
  // pointer" report from clang 14's UBSan at -O2 (analyzer_fuzz) on a valid
  // two-element vector; GCC's UBSan and a debug print saw nothing wrong.
  const std::vector<model::ProcessModel>& processes = c.model.processes;
  for (size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].process_uid == g.gpu->process_uid) return processes[i].cmdline;
  }
  return *kEmpty;
}

const model::ProcessModel* ProcessOf(const Context& c, const GpuReport& g) {
  for (const model::ProcessModel& p : c.model.processes) {
    if (p.process_uid == g.gpu->process_uid) return &p;
  }
  return nullptr;
}

// The value of an allow-listed environment variable the collector recorded
// for the GPU's process; nullptr when it was not recorded.
const std::string* EnvOf(const Context& c, const GpuReport& g, std::string_view name) {
  const model::ProcessModel* p = ProcessOf(c, g);
  if (p == nullptr) return nullptr;
  for (const auto& [key, value] : p->env) {
    if (key == name) return &value;
  }
  return nullptr;
}

bool HasEnvRecord(const Context& c, const GpuReport& g) {
  const model::ProcessModel* p = ProcessOf(c, g);
  return p != nullptr && !p->env.empty();
}

// The framework whose kernels run on the GPU, for framework-aware fixes:
// "pytorch" (ATen kernels), "jax" (XLA's stream_executor or fusion kernels),
// "cupy", or "" (CUDA C++ and the rest).
std::string FrameworkOf(const GpuReport& g) {
  int torch = 0, jax = 0, cupy = 0;
  for (const model::KernelStats& k : g.gpu->kernels) {
    const std::string& n = k.name;
    if (n.find("at6native") != std::string::npos || n.find("at::native") != std::string::npos) ++torch;
    if (n.find("stream_executor") != std::string::npos ||
        (n.find("_fusion") != std::string::npos && n.rfind("_Z", 0) != 0)) {
      ++jax;
    }
    if (n.rfind("cupy_", 0) == 0) ++cupy;
  }
  if (torch > 0 && torch >= jax) return "pytorch";
  if (jax > 0) return "jax";
  if (cupy > 0) return "cupy";
  return "";
}

// ------------------------------------------------------------------ rules --

void DataStarvation(const Context& c, const GpuReport& g, Finding f) {
  const double idle = g.gap_idle.total_ns();
  if (g.idle_gap_share <= kStarvationIdleShare || idle <= 0) return;
  const double host_share = g.gap_idle.host_ns / idle;
  if (host_share < kStarvationHostWaitShare) return;
  // Input starvation needs its evidence; host wait without it is host-bound.
  const double input_share = g.gap_idle.host_ns > 0 ? g.input_host_ns / g.gap_idle.host_ns : 0;
  if (input_share < kStarvationInputShare) return;
  f.severity =
      g.idle_gap_share > kStarvationCriticalShare ? Severity::kCritical : Severity::kWarning;
  f.cost_ns = Ns(g.gap_idle.host_ns);
  f.summary = absl::StrFormat(
      "The GPU sat idle %s of the steady window in gaps >= %s; for %s of that time it was "
      "waiting for the host to launch work (the launch call came after the GPU ran dry), and "
      "in gaps holding %s of that wait the next input was copied to the GPU (H2D > 64 KB "
      "issued while it was idle): the steps wait for their data.",
      Percent(g.idle_gap_share), Time(static_cast<double>(c.report.idle_gap_threshold_ns)),
      Percent(host_share), Percent(input_share));
  f.evidence = {{"idle_gap_share", g.idle_gap_share, "ratio"},
                {"host_wait_share_of_gap_idle", host_share, "ratio"},
                {"input_share_of_host_wait", input_share, "ratio"},
                {"gap_idle_ns", idle, "ns"},
                {"gaps_at_least_threshold", g.gap_count, "count"}};
  if (g.steps_in_window > 0) {
    f.evidence.push_back({"idle_per_step_ns", g.step_idle_ns, "ns"});
    f.evidence.push_back({"step_period_p50_ns", g.step_period.p50, "ns"});
  }
  for (const model::GapRecord& gap : g.gpu->largest_gaps) {
    if (f.ranges.size() >= kMaxRanges) break;
    if (gap.host_ns == 0 || !gap.input || gap.one_time ||
        !InWindow(g.window, gap.start_ns, gap.end_ns)) {
      continue;
    }
    f.ranges.push_back({gap.start_ns, gap.end_ns,
                        absl::StrCat("idle ", Time(static_cast<double>(gap.length_ns())),
                                     ", host wait ", Time(static_cast<double>(gap.host_ns)),
                                     ", then an input copy")});
  }
  f.fixes = {
      "Feed the GPU ahead of time: DataLoader(num_workers=4+, pin_memory=True, "
      "persistent_workers=True, prefetch_factor=2+), or a prefetching input pipeline.",
      "Move CPU-side preprocessing/augmentation to the GPU (or NVIDIA DALI), or precompute it.",
      "Copy inputs with non_blocking=True from pinned memory so the next batch's copy overlaps "
      "the current step.",
      "Find what the launching thread does during the gaps (py-spy dump / perf top on it); it "
      "must launch step N+1 before the GPU finishes step N.",
  };
  CiteSites(c.report, g, SiteRole::kBeforeLaunch, &f, /*replace_fix=*/3);
  c.out->push_back(std::move(f));
}

void LaunchBound(const Context& c, const GpuReport& g, Finding f) {
  (void)c;
  const double wlen = g.traced_window_ns();
  // Short gaps whose host part follows a sync or a read-back are the host's
  // code after waiting for the GPU (host-bound's), not launches slower than
  // their kernels.
  const double launch_gap_ns = std::max(0.0, g.short_gap_idle.host_ns - g.short_after_sync_host_ns) +
                               g.short_gap_idle.kernel_ns;
  const double launch_gap_share = launch_gap_ns / wlen;
  const double short_share =
      g.launches_matched > 0
          ? static_cast<double>(g.shorter_than_launch) / static_cast<double>(g.launches_matched)
          : 0;
  const bool seed_rule =
      g.kernel_count > kTinyKernelLaunches && g.kernel_duration.mean < kTinyKernelMeanNs;
  const bool hta_rule = short_share >= kShortKernelShare && launch_gap_share >= kLaunchGapShare;
  if (!seed_rule && !hta_rule) return;
  f.severity =
      launch_gap_share >= kLaunchGapCriticalShare ? Severity::kCritical : Severity::kWarning;
  f.cost_ns = Ns(launch_gap_ns);
  f.summary = absl::StrFormat(
      "%s kernels with mean %s (%s under 10 us; %s ran shorter than their CPU launch call); "
      "the GPU idled %s of the steady window in short gaps between launches.",
      Count(g.kernel_count), Time(g.kernel_duration.mean), Count(g.tiny_kernels),
      Percent(short_share),
      Percent(launch_gap_share));
  f.evidence = {{"kernels", static_cast<double>(g.kernel_count), "count"},
                {"kernel_mean_ns", g.kernel_duration.mean, "ns"},
                {"tiny_kernels", static_cast<double>(g.tiny_kernels), "count"},
                {"short_kernel_share", short_share, "ratio"},
                {"launch_gap_share", launch_gap_share, "ratio"},
                {"launch_gap_ns", launch_gap_ns, "ns"}};
  // The most frequent tiny kernels are the ones to fuse or capture.
  std::vector<const KernelRow*> tiny;
  for (const KernelRow& k : g.top_kernels) {
    if (k.tiny > 0) tiny.push_back(&k);
  }
  std::sort(tiny.begin(), tiny.end(), [](const KernelRow* a, const KernelRow* b) {
    return a->tiny != b->tiny ? a->tiny > b->tiny : a->name < b->name;
  });
  f.fixes = {
      "Capture the step in a CUDA graph: torch.compile(model, mode=\"reduce-overhead\"), "
      "torch.cuda.graphs / CUDAGraph, or cudaStreamBeginCapture + cudaGraphLaunch.",
      "Fuse small element-wise kernels: torch.compile, fused optimizers "
      "(torch.optim.AdamW(..., fused=True)), custom/Triton kernels.",
      "Give each launch more work: larger batches or merged tensors.",
  };
  for (size_t i = 0; i < tiny.size() && i < 3; ++i) {
    f.fixes.push_back(absl::StrCat("Frequent tiny kernel: ", Truncate(tiny[i]->compact, 70), " (",
                                   Count(tiny[i]->tiny), " launches under 10 us)"));
  }
  c.out->push_back(std::move(f));
}

void HostSync(const Context& c, const GpuReport& g, Finding f) {
  const double wlen = g.traced_window_ns();
  const double sync_wait_ns = g.gap_idle.sync_ns + g.short_gap_idle.sync_ns;
  const double share = sync_wait_ns / wlen;
  if (share < kSyncWaitShare) return;
  double per_step = 0, per_s = 0;
  bool frequent = false;
  if (g.steps_in_window > 0) {
    per_step = g.sync_calls / g.steps_in_window;
    frequent = per_step >= kSyncsPerStep;
  } else {
    per_s = g.sync_calls / (wlen / 1e9);
    frequent = per_s >= kSyncsPerSecond;
  }
  if (!frequent) return;
  f.severity = share >= kSyncWaitCriticalShare ? Severity::kCritical : Severity::kWarning;
  f.cost_ns = Ns(sync_wait_ns);
  const std::string rate = g.steps_in_window > 0 ? absl::StrFormat("%.1f per step", per_step)
                                                  : absl::StrFormat("%.0f per second", per_s);
  const double d2h_per_step = g.steps_in_window > 0 ? g.d2h_copy_count / g.steps_in_window : 0;
  f.summary = absl::StrFormat(
      "The host blocked in synchronizing calls %s and the GPU ran dry behind them: %s of the "
      "steady window (%s) was idle waiting for the host to come back from a sync.",
      rate, Percent(share), Time(sync_wait_ns));
  if (g.steps_in_window > 0 && d2h_per_step >= 1) {
    absl::StrAppend(&f.summary,
                    absl::StrFormat(" %.1f device-to-host copies per step: an .item()/.cpu() "
                                    "pattern.",
                                    d2h_per_step));
  }
  f.evidence = {{"sync_wait_share", share, "ratio"},
                {"sync_wait_ns", sync_wait_ns, "ns"},
                {"sync_calls", g.sync_calls, "count"},
                {"sync_blocked_ns", g.sync_blocked_ns, "ns"}};
  if (g.steps_in_window > 0) {
    f.evidence.push_back({"sync_calls_per_step", per_step, "per_step"});
    f.evidence.push_back({"d2h_copies_per_step", d2h_per_step, "per_step"});
  } else {
    f.evidence.push_back({"sync_calls_per_s", per_s, "per_s"});
  }
  for (const model::ProcessModel& p : c.model.processes) {
    if (p.process_uid != g.gpu->process_uid) continue;
    uint32_t top_thread = 0;
    model::ThreadSyncStats top;
    for (const auto& [thread, s] : p.sync_by_thread) {
      if (s.blocked_ns > top.blocked_ns) {
        top = s;
        top_thread = thread;
      }
    }
    if (top.calls > 0) {
      f.evidence.push_back({"top_thread_id", static_cast<double>(top_thread), "count"});
      f.evidence.push_back({"top_thread_blocked_ns", static_cast<double>(top.blocked_ns), "ns"});
    }
  }
  for (const model::GapRecord& gap : g.gpu->sync_gaps) {
    if (f.ranges.size() >= kMaxRanges) break;
    if (!InWindow(g.window, gap.start_ns, gap.end_ns)) continue;
    f.ranges.push_back({gap.start_ns, gap.end_ns,
                        absl::StrCat("idle ", Time(static_cast<double>(gap.length_ns())),
                                     " after a sync")});
  }
  f.fixes = {
      "Remove per-step host reads of GPU values: loss.item(), tensor.cpu()/.tolist()/.numpy(), "
      "print(tensor), if-conditions on GPU tensors, torch.cuda.synchronize() in the loop.",
      "Accumulate metrics on the GPU (running_loss += loss.detach()) and read them every N steps.",
      "When a value is needed on the host, copy it with non_blocking=True into pinned memory and "
      "wait on a CUDA event a step later.",
      "Find the hidden syncs: torch.cuda.set_sync_debug_mode(\"warn\").",
  };
  CiteSites(c.report, g, SiteRole::kSync, &f);
  c.out->push_back(std::move(f));
}

void HostBound(const Context& c, const GpuReport& g, Finding f) {
  const double wlen = g.traced_window_ns();
  const double large_no_input = std::max(0.0, g.gap_idle.host_ns - g.input_host_ns);
  const double host_ns = large_no_input + g.short_after_sync_host_ns;
  const double share = host_ns / wlen;
  if (share <= kHostBoundShare) return;
  f.severity = share > kHostBoundCriticalShare ? Severity::kCritical : Severity::kWarning;
  f.cost_ns = Ns(host_ns);
  const double after_sync = g.after_sync_host_ns + g.short_after_sync_host_ns;
  const double per_step = g.steps_in_window > 0 ? g.sync_calls / g.steps_in_window : 0;
  f.summary = absl::StrFormat(
      "The GPU sat idle %s of the steady window (%s) waiting for the launching thread's own "
      "code: %s in gaps >= %s with no input copy issued in them, %s in shorter gaps after a "
      "sync returned or a copy to the host ended.",
      Percent(share), Time(host_ns), Time(large_no_input),
      Time(static_cast<double>(c.report.idle_gap_threshold_ns)), Time(g.short_after_sync_host_ns));
  if (after_sync > 0.5 * host_ns) {
    absl::StrAppend(&f.summary,
                    absl::StrFormat(" Most of it (%s) follows a sync or a read-back%s: the host "
                                    "waits for the GPU, then the GPU waits for the host's code.",
                                    Time(after_sync),
                                    per_step >= kSyncsPerStep
                                        ? absl::StrFormat(" (%.1f sync calls per step)", per_step)
                                        : std::string()));
  }
  absl::StrAppend(
      &f.summary,
      g.input_host_ns > 0
          ? absl::StrFormat(" Gaps in which an input copy (H2D > 64 KB) was issued hold only %s "
                            "of the host wait in gaps >= %s: not input starvation.",
                            Percent(g.input_host_ns / std::max(1.0, g.gap_idle.host_ns)),
                            Time(static_cast<double>(c.report.idle_gap_threshold_ns)))
          : " No input copy (H2D > 64 KB) was issued while the GPU waited: not input "
            "starvation.");
  f.evidence = {{"host_bound_share", share, "ratio"},
                {"host_bound_ns", host_ns, "ns"},
                {"gap_host_wait_without_input_ns", large_no_input, "ns"},
                {"short_gap_host_after_sync_ns", g.short_after_sync_host_ns, "ns"},
                {"host_wait_after_sync_ns", after_sync, "ns"},
                {"input_host_wait_ns", g.input_host_ns, "ns"}};
  if (g.steps_in_window > 0) {
    f.evidence.push_back({"sync_calls_per_step", per_step, "per_step"});
    f.evidence.push_back({"host_wait_per_step_ns", host_ns / g.steps_in_window, "ns"});
  }
  for (const model::GapRecord& gap : g.gpu->largest_gaps) {
    if (f.ranges.size() >= kMaxRanges) break;
    if (gap.host_ns == 0 || gap.input || gap.one_time ||
        !InWindow(g.window, gap.start_ns, gap.end_ns)) {
      continue;
    }
    f.ranges.push_back({gap.start_ns, gap.end_ns,
                        absl::StrCat("idle ", Time(static_cast<double>(gap.length_ns())),
                                     ", host code ", Time(static_cast<double>(gap.host_ns)),
                                     gap.sync_ns > 0 ? " after a sync" : "")});
  }
  for (const model::GapRecord& gap : g.gpu->sync_gaps) {  // the shorter ones after a sync
    if (f.ranges.size() >= kMaxRanges) break;
    if (gap.host_ns == 0 || !InWindow(g.window, gap.start_ns, gap.end_ns)) continue;
    f.ranges.push_back({gap.start_ns, gap.end_ns,
                        absl::StrCat("idle ", Time(static_cast<double>(gap.length_ns())),
                                     ", host code ", Time(static_cast<double>(gap.host_ns)),
                                     " after a sync")});
  }
  const model::ProcessModel* p = ProcessOf(c, g);
  f.fixes = {
      absl::StrCat("Find what the launching thread does between steps: ",
                   p != nullptr ? absl::StrCat("py-spy dump --pid ", p->pid, " (or py-spy record) ")
                                : std::string("py-spy dump --pid PID "),
                   "during the run, perf top -t on the thread; that code is on the critical path."),
      "Take host work off the critical path: metrics, logging and bookkeeping every N steps, in "
      "a background thread or process, or vectorized (numpy, or torch on the GPU).",
      "Let the GPU run ahead: do not read results back every step (loss.item(), .cpu(), "
      "torch.cuda.synchronize()); read them one step late or every N steps, so the next step is "
      "queued before the host code runs.",
      "Give the GPU more work per host step: larger batches, several steps per host decision, a "
      "CUDA graph for the launch sequence.",
      "If the host is waiting for data whose copies are small (under 64 KB, not counted as input "
      "copies here), treat it as input starvation: prefetch with DataLoader workers.",
  };
  CiteSites(c.report, g, SiteRole::kHostCode, &f, /*replace_fix=*/0);
  c.out->push_back(std::move(f));
}

// The fixes for the group of implicitly synchronizing calls that blocked the
// host longest, by framework.
std::vector<std::string> ImplicitFixes(const Context& c, const GpuReport& g, int group,
                                       const std::string& framework) {
  std::vector<std::string> fixes;
  switch (group) {
    case model::kImplicitDeviceAlloc:
      if (framework == "pytorch") {
        fixes.push_back(
            "PyTorch's caching allocator normally keeps freed blocks and calls neither cudaMalloc "
            "nor cudaFree after the first steps: remove torch.cuda.empty_cache() (and "
            "gc.collect() + empty_cache) from the loop.");
        fixes.push_back(
            "If memory is short, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fewer, "
            "growable segments, less fragmentation) instead of emptying the cache; keep shapes "
            "fixed (pad or bucket variable lengths) so cached blocks are reused.");
        if (const std::string* v = EnvOf(c, g, "PYTORCH_NO_CUDA_MEMORY_CACHING");
            v != nullptr && *v != "0") {
          fixes.push_back(absl::StrCat("PYTORCH_NO_CUDA_MEMORY_CACHING=", *v,
                                       " is set in the environment: it turns the caching "
                                       "allocator off; unset it."));
        }
      } else if (framework == "jax") {
        fixes.push_back(
            "JAX preallocates and pools device memory unless told not to: unset "
            "XLA_PYTHON_CLIENT_PREALLOCATE=false and XLA_PYTHON_CLIENT_ALLOCATOR=platform.");
      } else if (framework == "cupy") {
        fixes.push_back(
            "Keep CuPy's memory pool on (the default) and do not call "
            "cupy.get_default_memory_pool().free_all_blocks() in the loop.");
      }
      fixes.push_back(
          "Allocate once outside the loop and reuse the buffers, or use stream-ordered "
          "allocation (cudaMallocAsync/cudaFreeAsync from a memory pool), which does not "
          "synchronize the device.");
      break;
    case model::kImplicitHostAlloc:
      fixes.push_back(
          "Allocate pinned staging buffers once and reuse them: cudaHostAlloc/cudaMallocHost "
          "outside the loop; in PyTorch copy_() into a preallocated pinned tensor instead of "
          "calling pin_memory() per batch.");
      break;
    case model::kImplicitSyncCopy:
      fixes.push_back(
          "A synchronous cudaMemcpy waits for all earlier work and blocks the host: use "
          "cudaMemcpyAsync on a stream into pinned memory and wait on an event only when the "
          "value is needed.");
      fixes.push_back(
          "Read small results back (a residual, a loss, a flag) every N iterations or one "
          "iteration late, so the next iteration is queued while the host checks.");
      break;
    case model::kImplicitPageableCopy:
      fixes.push_back(
          "Copies from pageable memory are staged through a driver buffer while the host waits: "
          "pin the host buffers (cudaHostAlloc/cudaHostRegister; tensor.pin_memory(), "
          "DataLoader(pin_memory=True)) and copy with non_blocking=True / cudaMemcpyAsync.");
      break;
    case model::kImplicitSyncMemset:
      fixes.push_back(
          "cudaMemset synchronizes: use cudaMemsetAsync on the stream of the work that needs it.");
      break;
    default:
      break;
  }
  return fixes;
}

void ImplicitSync(const Context& c, const GpuReport& g, Finding f) {
  if (g.implicit.empty()) return;
  const double wlen = g.traced_window_ns();
  const double idle_share = g.implicit_idle_ns / wlen;
  const double blocked_share = g.implicit_blocked_ns / wlen;
  if (idle_share < kImplicitIdleShare && blocked_share < kImplicitBlockedInfoShare) return;
  f.severity = idle_share >= kImplicitCriticalShare ? Severity::kCritical
               : idle_share >= kImplicitIdleShare   ? Severity::kWarning
                                                    : Severity::kInfo;
  f.cost_ns = Ns(g.implicit_idle_ns);
  std::vector<std::string> parts;
  for (const ImplicitGroupRow& row : g.implicit) {
    if (parts.size() >= 3) break;
    parts.push_back(absl::StrCat(model::ImplicitGroupName(row.group), " ",
                                 Time(row.blocked_ns), " in ", Count(Ns(row.calls)), " calls (GPU idle ",
                                 Time(row.gpu_idle_ns), row.top_call.empty() ? "" : "; ",
                                 row.top_call, ")"));
  }
  f.summary = absl::StrFormat(
      "The host was blocked %s (%s of the steady window) in implicitly synchronizing CUDA "
      "calls, and the GPU sat idle behind them for %s (%s): %s.",
      Time(g.implicit_blocked_ns), Percent(blocked_share), Time(g.implicit_idle_ns),
      Percent(idle_share), absl::StrJoin(parts, "; "));
  if (g.implicit.front().group == model::kImplicitSyncCopy) {
    // Which synchronous copies: small D2H ones read a value back.
    for (const CopyRow& r : g.copies) {
      if (r.direction != "D2H" || r.sync_count == 0) continue;
      const double mean = static_cast<double>(r.sync_bytes) / static_cast<double>(r.sync_count);
      absl::StrAppend(&f.summary,
                      absl::StrFormat(" %s synchronous D2H copies of %s on average (whole run)%s.",
                                      Count(r.sync_count), Bytes(mean),
                                      mean <= 1024 ? ": a value read back each time, like "
                                                     ".item()"
                                                   : ""));
      break;
    }
  }
  f.evidence = {{"implicit_idle_share", idle_share, "ratio"},
                {"implicit_idle_ns", g.implicit_idle_ns, "ns"},
                {"implicit_blocked_ns", g.implicit_blocked_ns, "ns"},
                {"implicit_blocked_share", blocked_share, "ratio"}};
  for (const ImplicitGroupRow& row : g.implicit) {
    if (f.evidence.size() >= 4 + 3 * 3) break;
    const std::string key = model::ImplicitGroupKey(row.group);
    f.evidence.push_back({absl::StrCat(key, "_calls"), row.calls, "count"});
    f.evidence.push_back({absl::StrCat(key, "_blocked_ns"), row.blocked_ns, "ns"});
    f.evidence.push_back({absl::StrCat(key, "_gpu_idle_ns"), row.gpu_idle_ns, "ns"});
  }
  if (g.steps_in_window > 0 && !g.implicit.empty()) {
    f.evidence.push_back({"calls_per_step", g.implicit.front().calls / g.steps_in_window,
                          "per_step"});
  }
  const std::string framework = FrameworkOf(g);
  // Fixes for the groups that cost the most, the host's worst first.
  std::vector<const ImplicitGroupRow*> rows;
  for (const ImplicitGroupRow& row : g.implicit) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const ImplicitGroupRow* a, const ImplicitGroupRow* b) {
    return a->gpu_idle_ns + a->blocked_ns > b->gpu_idle_ns + b->blocked_ns;
  });
  for (size_t i = 0; i < rows.size() && i < 2; ++i) {
    if (i > 0 && rows[i]->gpu_idle_ns < kImplicitIdleShare * wlen &&
        rows[i]->blocked_ns < kImplicitBlockedInfoShare * wlen) {
      break;
    }
    for (std::string& fix : ImplicitFixes(c, g, rows[i]->group, framework)) {
      f.fixes.push_back(std::move(fix));
    }
  }
  f.fixes.push_back(
      "See where they are called from: gpscope-analyze dump FILE | grep -E "
      "'cudaMalloc|cudaFree|cuMemAlloc|cuMemFree|Memcpy\"|HostAlloc' lists them with their times.");
  // With call stacks the call sites are known: the site fix replaces the grep.
  CiteSites(c.report, g, SiteRole::kImplicit, &f,
            /*replace_fix=*/static_cast<int>(f.fixes.size()) - 1);
  c.out->push_back(std::move(f));
}

void SynchronousLaunches(const Context& c, const GpuReport& g, Finding f) {
  if (g.long_launches < kSyncLaunchMinLaunches) return;
  const double share = g.long_launches_blocking / g.long_launches;
  if (share < kSyncLaunchShare) return;
  const double wlen = g.traced_window_ns();
  const double wait_ns = g.gap_idle.host_ns + g.short_gap_idle.host_ns;
  const double wait_share = wait_ns / wlen;
  f.severity = wait_share >= kLaunchGapCriticalShare ? Severity::kCritical : Severity::kWarning;
  f.cost_ns = Ns(wait_ns);
  const std::string* blocking = EnvOf(c, g, "CUDA_LAUNCH_BLOCKING");
  const bool env_blocking = blocking != nullptr && !blocking->empty() && *blocking != "0";
  f.summary = absl::StrFormat(
      "%s of the %s launches of kernels running >= 50 us returned only after their kernel had "
      "ended (queue delay P50 %s, P95 %s): launches are synchronous, so the host cannot queue "
      "work ahead and the GPU idles through every launch call and all host code between "
      "kernels (%s of the steady window).",
      Percent(share), Count(Ns(g.long_launches)), Time(g.queue_delay.p50), Time(g.queue_delay.p95),
      Percent(wait_share));
  if (env_blocking) {
    absl::StrAppend(&f.summary, " The cause is in the environment: CUDA_LAUNCH_BLOCKING=", *blocking,
                    " (recorded by the collector) makes every launch wait for its kernel.");
  } else if (HasEnvRecord(c, g)) {
    absl::StrAppend(&f.summary,
                    " The recorded environment has no CUDA_LAUNCH_BLOCKING=1: look for a "
                    "debugger or sanitizer (cuda-gdb, compute-sanitizer) or a launcher that sets "
                    "it for its children only.");
  } else {
    absl::StrAppend(&f.summary,
                    " This trace has no recorded environment (a collector before the allow-list "
                    "was extended): CUDA_LAUNCH_BLOCKING=1 is the usual cause.");
  }
  f.evidence = {{"blocking_launch_share", share, "ratio"},
                {"long_launches", g.long_launches, "count"},
                {"launch_wait_share", wait_share, "ratio"},
                {"launch_wait_ns", wait_ns, "ns"},
                {"queue_delay_p95_ns", g.queue_delay.p95, "ns"},
                {"cuda_launch_blocking_set", env_blocking ? 1.0 : 0.0, "bool"}};
  if (env_blocking) {
    f.fixes.push_back(absl::StrCat(
        "Unset CUDA_LAUNCH_BLOCKING (now ", *blocking,
        "): it is a debugging switch that serializes the host with the GPU. Check the job's "
        "spec, launcher script and shell profile for it."));
  } else {
    f.fixes.push_back(
        "Unset CUDA_LAUNCH_BLOCKING if it is set for the job (its spec, launcher script, shell "
        "profile), and run outside debuggers and sanitizers when measuring performance.");
  }
  f.fixes.push_back(
      "Once launches are asynchronous again, re-run this analysis: the launch-gap numbers "
      "measured here are not those of the program.");
  if (CiteSites(c.report, g, SiteRole::kHostCode, &f)) {
    // The setting is the cause, not a line: the site fix goes after it.
    std::rotate(f.fixes.begin(), f.fixes.begin() + 1, f.fixes.begin() + 2);
  }
  c.out->push_back(std::move(f));
}

void OneTimeStartup(const Context& c, const GpuReport& g, Finding f) {
  (void)c;
  if (g.gpu->one_time_gaps.empty()) return;
  double total = 0;
  for (const model::GapRecord& gap : g.gpu->one_time_gaps) total += static_cast<double>(gap.length_ns());
  f.severity = Severity::kInfo;
  f.cost_ns = 0;
  f.summary = absl::StrFormat(
      "%d long gap%s (%s in all) ended with code the GPU had not run before: compilation (JIT, "
      "torch.compile, XLA), autotuning or lazy module loading. One-time start-up work, left out "
      "of the steady state.",
      static_cast<int>(g.gpu->one_time_gaps.size()), g.gpu->one_time_gaps.size() == 1 ? "" : "s",
      Time(total));
  f.evidence = {{"one_time_gaps", static_cast<double>(g.gpu->one_time_gaps.size()), "count"},
                {"one_time_ns", total, "ns"},
                {"one_time_in_window_ns", g.one_time_ns, "ns"}};
  for (const model::GapRecord& gap : g.gpu->one_time_gaps) {
    if (f.ranges.size() >= kMaxRanges) break;
    f.ranges.push_back({gap.start_ns, gap.end_ns, "then new kernels"});
  }
  f.fixes = {
      "If start-up time matters (short jobs, many restarts): cache compiled code "
      "(TORCHINDUCTOR_CACHE_DIR / torch.compile's cache, JAX's persistent compilation cache "
      "jax_compilation_cache_dir, Triton's cache), and warm up before timing.",
  };
  c.out->push_back(std::move(f));
}

void PageableCopies(const Context& c, const GpuReport& g, Finding f) {
  (void)c;
  uint64_t count = 0, bytes = 0, time_ns = 0;
  for (const CopyRow& r : g.copies) {
    if (r.memory != "pageable") continue;
    count += r.count;
    bytes += r.bytes;
    time_ns += r.duration_ns;
  }
  if (count == 0) return;
  const double wlen = g.traced_window_ns();
  const bool matters = g.pageable_copy_ns / wlen >= kPageableWarnShare;
  f.severity = matters ? Severity::kWarning : Severity::kInfo;
  f.cost_ns = Ns(kPageableSavedFraction * static_cast<double>(time_ns));
  f.summary = absl::StrFormat(
      "%s copies (%s) moved data to or from pageable host memory, taking %s of GPU time (%s "
      "of the steady window in %s copies); pageable copies are staged through a driver buffer "
      "and are not truly asynchronous.",
      Count(count), Bytes(static_cast<double>(bytes)), Time(static_cast<double>(time_ns)),
      Percent(g.pageable_copy_ns / wlen), Count(Ns(g.pageable_copy_count)));
  f.evidence = {{"pageable_copies", static_cast<double>(count), "count"},
                {"pageable_bytes", static_cast<double>(bytes), "bytes"},
                {"pageable_copy_ns", static_cast<double>(time_ns), "ns"},
                {"pageable_copies_in_window", g.pageable_copy_count, "count"}};
  for (const CopyRow& r : g.copies) {
    if (r.memory != "pageable") continue;
    f.evidence.push_back(
        {absl::StrCat(r.direction == "H2D" ? "h2d" : r.direction == "D2H" ? "d2h" : "other",
                      "_pageable_gb_per_s"),
         r.gb_per_s, "GB/s"});
  }
  for (const model::Interval& i : g.gpu->pageable_copies) {
    if (f.ranges.size() >= kMaxRanges) break;
    f.ranges.push_back({i.start_ns, i.end_ns, "pageable copy"});
  }
  f.fixes = {
      "Pin host buffers: tensor.pin_memory(), DataLoader(pin_memory=True); in CUDA, "
      "cudaHostAlloc/cudaMallocHost or cudaHostRegister on existing buffers.",
      "Then copy asynchronously: .to(device, non_blocking=True) / cudaMemcpyAsync on a stream.",
  };
  c.out->push_back(std::move(f));
}

void CopyHeavy(const Context& c, const GpuReport& g, Finding f) {
  (void)c;
  const double gpu_time = g.kernel_ns + g.copy_ns + g.memset_ns;
  if (gpu_time <= 0) return;
  const double share = g.copy_ns / gpu_time;
  if (share <= kCopyShare) return;
  f.severity = Severity::kWarning;
  f.cost_ns = Ns(std::max(0.0, g.busy_ns - g.kernel_busy_ns));
  f.summary = absl::StrFormat(
      "Copies took %s of GPU time in the steady window (kernels %s); %s of it ran with no "
      "kernel alongside.",
      Percent(share), Percent(g.kernel_ns / gpu_time),
      Time(std::max(0.0, g.busy_ns - g.kernel_busy_ns)));
  f.evidence = {{"copy_share_of_gpu_time", share, "ratio"},
                {"copy_ns", g.copy_ns, "ns"},
                {"kernel_ns", g.kernel_ns, "ns"},
                {"copy_only_ns", std::max(0.0, g.busy_ns - g.kernel_busy_ns), "ns"}};
  for (const CopyRow& r : g.copies) {
    if (f.evidence.size() >= 8) break;
    f.evidence.push_back({absl::StrCat(r.direction, "_", r.memory, "_gb_per_s"), r.gb_per_s,
                          "GB/s"});
  }
  for (const CopyRow& r : g.copies) {
    if (f.ranges.size() >= kMaxRanges) break;
    f.ranges.push_back({r.longest.start_ns, r.longest.end_ns,
                        absl::StrCat("longest ", r.direction, " ", r.memory, " copy")});
  }
  f.fixes = {
      "Keep data on the GPU between steps; avoid moving whole tensors back and forth.",
      "Batch many small copies into a few large ones; use pinned memory for host buffers.",
      "Overlap copies with compute: non_blocking=True / cudaMemcpyAsync on a separate stream.",
  };
  c.out->push_back(std::move(f));
}

void LongGaps(const Context& c, const GpuReport& g, Finding f) {
  if (g.pause_count < 0.5 && g.long_gap_count < 0.5) return;
  // A pause (kernel-free >= the long-gap threshold) holds any long idle gap.
  const double pause_ns = std::max(g.pause_ns, g.long_gap_ns);
  const double count = std::max(g.pause_count, g.long_gap_count);
  f.severity = Severity::kWarning;
  f.cost_ns = Ns(pause_ns);
  f.summary = absl::StrFormat(
      "%.0f pause%s of %s or more with no kernel running in the steady window, %s in all "
      "(start-up and tear-down excluded); %s of it idle, %s of it only copies or memsets.",
      count, count >= 1.5 ? "s" : "", Time(static_cast<double>(c.report.long_gap_ns)),
      Time(pause_ns), Time(g.long_gap_ns), Time(g.pause_copy_ns));
  if (g.pause_copy_ns > 0.25 * pause_ns) {
    absl::StrAppend(&f.summary,
                    " Copies inside a pause are what saving a checkpoint or moving tensors to "
                    "the host looks like.");
  }
  f.evidence = {{"pauses", count, "count"},
                {"pause_ns", pause_ns, "ns"},
                {"pause_idle_ns", g.long_gap_ns, "ns"},
                {"pause_copy_ns", g.pause_copy_ns, "ns"},
                {"long_gaps", g.long_gap_count, "count"}};
  for (const model::Interval& pause : g.gpu->pauses) {
    if (f.ranges.size() >= kMaxRanges) break;
    if (!InWindow(g.window, pause.start_ns, pause.end_ns)) continue;
    f.ranges.push_back({pause.start_ns, pause.end_ns,
                        absl::StrCat("no kernel for ", Time(static_cast<double>(pause.length_ns())))});
  }
  f.fixes = {
      "Find what the host does in these intervals: checkpointing, evaluation, logging, "
      "data-loader restarts (end of epoch), garbage collection, NCCL initialisation; "
      "`gpscope-analyze dump FILE` lists the API calls and NVTX ranges around them.",
      "Move checkpointing and evaluation off the critical path (background thread, async "
      "checkpoint: torch.distributed.checkpoint.async_save, or copy to pinned memory and write "
      "from another thread), save less often, and keep DataLoader workers alive across epochs "
      "(persistent_workers=True).",
  };
  c.out->push_back(std::move(f));
}

void DominantKernel(const Context& c, const GpuReport& g, Finding f) {
  // Communication kernels mostly wait for the other ranks: not a kernel to
  // tune (low-comm-overlap and straggler-rank judge them).
  const KernelRow* top = nullptr;
  for (const KernelRow& k : g.top_kernels) {
    if (k.collective.empty()) {
      top = &k;
      break;
    }
  }
  if (top == nullptr) return;
  const KernelRow& k = *top;
  if (k.share <= kDominantKernelShare) return;
  f.severity = Severity::kInfo;
  f.cost_ns = Ns(kDominantKernelGain * static_cast<double>(k.duration.total));
  f.summary = absl::StrFormat(
      "One kernel takes %s of all kernel time (%s launches, %s in all, mean %s): profile it.",
      Percent(k.share), Count(k.duration.count), Time(static_cast<double>(k.duration.total)),
      Time(k.duration.mean));
  f.evidence = {{"kernel_share", k.share, "ratio"},
                {"launches", static_cast<double>(k.duration.count), "count"},
                {"total_ns", static_cast<double>(k.duration.total), "ns"},
                {"mean_ns", k.duration.mean, "ns"},
                {"p95_ns", k.duration.p95, "ns"}};
  f.ranges.push_back({k.longest.start_ns, k.longest.end_ns, "its longest launch"});
  f.fixes = {
      absl::StrCat("Profile a few launches with Nsight Compute: ", NcuCommand(k.name, Cmdline(c, g))),
  };
  if (!k.library.empty() && k.library != "generated" && k.library != "Triton") {
    f.fixes.push_back(absl::StrCat(
        "It is a ", k.library, " kernel: its tiles and registers are the library's choice; "
        "tune the call instead: input dtype (bf16/fp16, or TF32 for fp32 via "
        "torch.backends.cuda.matmul.allow_tf32 / cublasSetMathMode), shapes that are multiples "
        "of 16 (8 for fp16), and batching many small calls into one (bmm, grouped GEMM)."));
  } else if (!k.library.empty()) {
    f.fixes.push_back(
        "It is generated code (Triton, XLA, CuPy, Numba or NVRTC): tune the generator's choices "
        "(Triton: BLOCK sizes, num_warps, num_stages in its autotune configs; torch.compile "
        "mode=\"max-autotune\") rather than the kernel's registers.");
  } else {
    f.fixes.push_back(
        "Check it runs on tensor cores (bf16/fp16/tf32 inputs, aligned shapes) and compare its "
        "achieved memory bandwidth and FLOP/s with the GPU's peaks in the ncu report.");
  }
  f.summary += absl::StrCat(" Kernel: ", Truncate(k.compact, 120),
                            k.library.empty() ? "" : absl::StrCat(" (", k.library, ")"));
  c.out->push_back(std::move(f));
}

void LowSmEfficiency(const Context& c, const GpuReport& g, Finding f) {
  if (g.est_sm_efficiency < 0 || g.est_sm_efficiency >= kLowSmEfficiency) return;
  const double wlen = g.traced_window_ns();
  const double kernel_busy_share = g.kernel_busy_ns / wlen;
  if (kernel_busy_share < kLowSmMinKernelBusyShare) return;
  f.severity = Severity::kWarning;
  f.cost_ns = Ns(g.kernel_ns * (1 - g.est_sm_efficiency));
  const uint32_t sms = g.gpu->has_device_info ? g.gpu->device.sm_count() : 0;
  f.summary = absl::StrFormat(
      "Kernels launch too few thread blocks to fill the GPU: estimated SM efficiency %s "
      "(blocks / %d SMs, weighted by time) while kernels run %s of the window.",
      Percent(g.est_sm_efficiency), sms, Percent(kernel_busy_share));
  f.evidence = {{"est_sm_efficiency", g.est_sm_efficiency, "ratio"},
                {"kernel_busy_share", kernel_busy_share, "ratio"},
                {"sm_count", static_cast<double>(sms), "count"}};
  const KernelRow* worst = nullptr;
  double worst_loss = 0;
  for (const KernelRow& k : g.top_kernels) {
    if (k.est_sm_efficiency < 0 || !k.collective.empty()) continue;
    const double loss = static_cast<double>(k.duration.total) * (1 - k.est_sm_efficiency);
    if (loss > worst_loss) {
      worst_loss = loss;
      worst = &k;
    }
  }
  f.fixes = {
      "Give each kernel more parallel work: larger batches, fused or batched operations "
      "(e.g. torch.bmm instead of a loop), split-K for skinny GEMMs.",
      "Run independent work concurrently on separate CUDA streams.",
  };
  if (worst != nullptr) {
    f.evidence.push_back({"worst_kernel_max_blocks", static_cast<double>(worst->max_blocks),
                          "count"});
    if (!worst->library.empty() && worst->library != "generated") {
      f.fixes.push_back(absl::StrCat(
          "Worst offender: ", Truncate(worst->compact, 60), " (", worst->library, ", ",
          worst->max_blocks, " blocks at most): the library sizes its grid from the problem, "
          "so the call is too small: batch such calls (bmm, grouped GEMM, batched FFT plans) or "
          "give each one more rows."));
    } else {
      f.fixes.push_back(absl::StrCat("Worst offender: ", Truncate(worst->compact, 60), " (",
                                     worst->max_blocks, " blocks at most); check its launch "
                                     "configuration (grid size) and occupancy: ",
                                     NcuCommand(worst->name, Cmdline(c, g))));
    }
    f.ranges.push_back({worst->longest.start_ns, worst->longest.end_ns,
                        "longest launch of the worst kernel"});
  }
  c.out->push_back(std::move(f));
}

void ClockThrottling(const Context& c, const GpuReport& g, Finding f) {
  (void)c;
  if (g.throttled_share < kThrottledShare) return;
  f.severity =
      g.throttled_share >= kThrottledCriticalShare ? Severity::kCritical : Severity::kWarning;
  f.cost_ns = Ns(g.busy_ns * g.throttled_share * kThrottleSlowdown);
  const uint64_t reasons = g.gpu->throttle_reasons_seen & model::kThrottleReasonMask;
  if (reasons == 0x4) {
    // Only the software power cap: the GPU ran at its power limit, which
    // dense GEMMs on an H200 at the default 700 W do by design (seen in
    // tests/data/h200_metrics_phases.gpscope). Power-bound, not faulty:
    // worth knowing, not a warning.
    f.severity = Severity::kInfo;
    f.title = "GPU at its power limit (clocks lowered by the power cap)";
    f.summary = absl::StrFormat(
        "The GPU ran at its power limit in %s of the samples in the steady window and lowered "
        "its clocks to stay there (software power cap only; no thermal or hardware slowdown).",
        Percent(g.throttled_share));
    f.evidence = {{"throttled_share", g.throttled_share, "ratio"},
                  {"clock_reason_samples", g.clock_reason_samples, "count"},
                  {"reasons_bitmask", static_cast<double>(reasons), "count"}};
    f.fixes = {
        absl::StrCat("Expected for compute-bound kernels at full load: judge the kernels by FLOP/s "
                     "against the peak at the clocks they actually ran (",
                     metric_names::kNvmlSmClockMhz, " in the report)."),
        "If the power limit is below the GPU's default (nvidia-smi -q -d POWER), ask the "
        "administrators; do not change power limits yourself on shared machines.",
    };
    c.out->push_back(std::move(f));
    return;
  }
  std::vector<std::string> names;
  if (reasons & 0x4) names.push_back("software power cap");
  if (reasons & 0x8) names.push_back("hardware slowdown");
  if (reasons & 0x20) names.push_back("software thermal slowdown");
  if (reasons & 0x40) names.push_back("hardware thermal slowdown");
  if (reasons & 0x80) names.push_back("power brake");
  f.summary = absl::StrFormat(
      "The GPU lowered its clocks for power or heat in %s of the samples in the steady window "
      "(%s).",
      Percent(g.throttled_share), absl::StrJoin(names, ", "));
  f.evidence = {{"throttled_share", g.throttled_share, "ratio"},
                {"clock_reason_samples", g.clock_reason_samples, "count"},
                {"reasons_bitmask", static_cast<double>(reasons), "count"}};
  f.fixes = {
      "Check cooling and power delivery of the node (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,"
      "POWER); throttling on one GPU of a node makes it a straggler for all ranks.",
      "If the power cap is set below the default, ask the administrators; do not change clocks or "
      "power limits yourself on shared machines.",
  };
  c.out->push_back(std::move(f));
}

void MemoryBandwidthBound(const Context& c, const GpuReport& g, Finding f) {
  (void)c;
  if (g.dram_util.source != Utilization::Source::kMeasured ||
      g.dram_util.percent < kDramBoundPercent) {
    return;
  }
  const double wlen = g.traced_window_ns();
  const double kernel_busy_share = g.kernel_busy_ns / wlen;
  if (kernel_busy_share < kDramBoundMinKernelBusyShare) return;
  f.severity = Severity::kWarning;
  f.cost_ns = Ns(kDramBoundGain * g.kernel_busy_ns);
  f.summary = absl::StrFormat(
      "DRAM bandwidth is %.0f%% utilized on average while kernels run %s of the window: the "
      "kernels are limited by memory traffic, not compute.",
      g.dram_util.percent, Percent(kernel_busy_share));
  f.evidence = {{"dram_bw_util_percent", g.dram_util.percent, "count"},
                {"kernel_busy_share", kernel_busy_share, "ratio"}};
  if (g.sm_util.source == Utilization::Source::kMeasured) {
    f.evidence.push_back({"sm_util_percent", g.sm_util.percent, "count"});
  }
  f.fixes = {
      "Move less data: fuse element-wise chains into their producers (torch.compile), use "
      "bf16/fp8 activations, avoid materialising large intermediates.",
      "Reuse data on chip: larger tiles, FlashAttention-style kernels instead of unfused "
      "attention.",
  };
  if (!g.top_kernels.empty()) {
    f.fixes.push_back(absl::StrCat("See the memory workload of the top kernel: ",
                                   NcuCommand(g.top_kernels.front().name, Cmdline(c, g))));
  }
  c.out->push_back(std::move(f));
}

void OtherProcesses(const Context& c, const GpuReport& g, Finding f) {
  if (g.other_process_sm < kOtherProcessSmPercent ||
      g.other_process_samples < kOtherProcessMinSamples) {
    return;
  }
  // Traced processes on the same host are covered by GpuShared() below.
  std::vector<const GpuReport::Other*> others;
  for (const GpuReport::Other& o : g.other_processes) {
    bool traced = false;
    for (const model::ProcessModel& p : c.model.processes) {
      traced |= p.pid == o.pid && p.hostname == g.gpu->hostname;
    }
    if (!traced) others.push_back(&o);
  }
  if (others.empty()) return;
  // From inside a container NVML's pids are the host's: this process is
  // itself among the "others". One process is most likely just this one;
  // with more, say what NVML saw, as info.
  bool foreign_pids = false;
  for (const model::ProcessModel& p : c.model.processes) {
    foreign_pids |= p.process_uid == g.gpu->process_uid && p.foreign_nvml_pids;
  }
  if (foreign_pids && others.size() <= 1) return;
  f.severity = foreign_pids ? Severity::kInfo : Severity::kWarning;
  f.cost_ns = foreign_pids ? 0 : Ns(g.busy_ns * g.other_process_sm / 100);
  std::vector<std::string> names;
  for (size_t i = 0; i < others.size() && i < 3; ++i) {
    names.push_back(absl::StrFormat("pid %d%s%s (%.0f%% SM on average)", others[i]->pid,
                                    others[i]->label.empty() ? "" : " ", others[i]->label,
                                    others[i]->mean_sm_util));
  }
  f.summary = absl::StrFormat(
      "Other processes used this GPU's SMs %.0f%% on average during the steady window: %s.",
      g.other_process_sm, absl::StrJoin(names, ", "));
  if (foreign_pids) {
    f.summary = absl::StrFormat(
        "NVML saw %d processes on this GPU (%s), but the traced process ran in a PID namespace "
        "(a container), so NVML's host pids cannot be told apart from its own: one of them is "
        "the traced process. Check nvidia-smi on the host.",
        static_cast<int>(others.size()), absl::StrJoin(names, ", "));
  }
  f.evidence = {{"other_process_sm_util_percent", g.other_process_sm, "count"},
                {"other_processes", static_cast<double>(others.size()), "count"},
                {"top_other_pid", static_cast<double>(others.front()->pid), "count"}};
  f.fixes = {
      "Give each job its own GPU (CUDA_VISIBLE_DEVICES, the scheduler's GPU allocation); check "
      "nvidia-smi for stray processes (notebooks, evaluation jobs).",
      "If sharing is intended, use MPS or MIG so the processes do not time-slice.",
  };
  c.out->push_back(std::move(f));
}

void LowOccupancy(const Context& c, const GpuReport& g, Finding f) {
  if (g.est_occupancy < 0 || g.est_occupancy >= kLowOccupancy ||
      g.occupancy_known_share < kLowOccupancyMinKnownShare) {
    return;
  }
  const double wlen = g.traced_window_ns();
  const double kernel_busy_share = g.kernel_busy_ns / wlen;
  if (kernel_busy_share < kLowSmMinKernelBusyShare) return;
  f.severity = Severity::kWarning;
  f.cost_ns = Ns(kLowOccupancyGain * g.kernel_ns);
  f.summary = absl::StrFormat(
      "The kernels' launch shapes allow only %s theoretical occupancy on average (weighted by "
      "time; registers, shared memory and block size against the SM's limits): too few warps "
      "per SM to hide memory latency.",
      Percent(g.est_occupancy));
  f.evidence = {{"est_occupancy", g.est_occupancy, "ratio"},
                {"occupancy_known_share", g.occupancy_known_share, "ratio"},
                {"large_tile_share", g.large_tile_share, "ratio"},
                {"kernel_busy_share", kernel_busy_share, "ratio"}};
  const KernelRow* worst = nullptr;
  for (const KernelRow& k : g.top_kernels) {
    if (k.est_occupancy >= 0 && k.est_occupancy < kLowOccupancy && !k.large_tile &&
        k.library.empty() && (worst == nullptr || k.duration.total > worst->duration.total)) {
      worst = &k;
    }
  }
  f.fixes = {
      "Use fewer registers per thread: __launch_bounds__(threads, min_blocks) or -maxrregcount; "
      "check spills with -Xptxas -v.",
      "Use less shared memory per block, or larger blocks that share it.",
  };
  if (worst != nullptr) {
    f.evidence.push_back({"worst_kernel_occupancy", worst->est_occupancy, "ratio"});
    f.ranges.push_back({worst->longest.start_ns, worst->longest.end_ns, "its longest launch"});
    f.fixes.push_back(absl::StrCat("Check the achieved occupancy of ", Truncate(worst->compact, 60),
                                   ": ", NcuCommand(worst->name, Cmdline(c, g))));
  }
  c.out->push_back(std::move(f));
}

void LowCommOverlap(const Context& c, const GpuReport& g, Finding f) {
  if (g.comm_overlap < 0 || g.comm_share < kCommMinShare || g.comm_overlap >= kLowCommOverlap) {
    return;
  }
  // Time a rank's collectives spend waiting for a later rank (ranks.h: its
  // wait) is a straggler's cost, not missing overlap: the straggler-rank
  // finding names it. What is left is this rank's own exposed transfer.
  double wait_ns = 0;
  for (const RankRow& r : c.report.ranks.rows) {
    if (r.gpu_index == g.gpu_index && r.collectives > 0) wait_ns = r.wait_ns;
  }
  const double exposed_ns = std::max(0.0, g.comm_busy_ns - g.comm_overlap_ns - wait_ns);
  const double wlen = g.traced_window_ns();
  if (wait_ns > 0 && exposed_ns < kCommMinShare * wlen) return;
  f.severity = Severity::kWarning;
  f.cost_ns = Ns(exposed_ns);
  f.summary = absl::StrFormat(
      "Communication kernels run %s of the steady window and only %s of that time overlaps "
      "compute: %s of communication is exposed, with the GPU doing nothing else.",
      Percent(g.comm_share), Percent(g.comm_overlap), Time(exposed_ns));
  f.evidence = {{"comm_share", g.comm_share, "ratio"},
                {"comm_overlap", g.comm_overlap, "ratio"},
                {"comm_busy_ns", g.comm_busy_ns, "ns"},
                {"exposed_comm_ns", exposed_ns, "ns"},
                {"comm_kernels", static_cast<double>(g.comm_kernels), "count"}};
  if (g.steps_in_window > 0) f.evidence.push_back({"comm_per_step_ns", g.step_comm_ns, "ns"});
  for (const CollectiveRow& r : g.collectives) {
    if (f.evidence.size() >= 8) break;
    f.evidence.push_back({absl::StrCat(r.kind, "_share_of_comm"), r.share_of_comm, "ratio"});
  }
  f.fixes = {
      "DDP: let gradient all-reduces start during backward: smaller buckets "
      "(DistributedDataParallel(bucket_cap_mb=...)), gradient_as_bucket_view=True, no "
      "synchronizing calls between backward and the optimizer.",
      "FSDP: prefetch the next all-gather (backward_prefetch=BackwardPrefetch.BACKWARD_PRE, "
      "forward_prefetch=True); limit_all_gathers to keep memory in check.",
      "Run collectives on their own stream and do not wait on them early (async_op=True, "
      "then work.wait() just before the result is needed).",
      "If communication itself is slow, check the interconnect: NCCL_DEBUG=INFO shows the "
      "transport and algorithm chosen (NVLink/IB vs sockets).",
  };
  c.out->push_back(std::move(f));
}

// ------------------------------------------------------- non-GPU rules --

// The file a GPU's process was read from.
std::string PathOf(const Context& c, size_t gpu_index) {
  if (gpu_index >= c.report.gpus.size()) return "";
  const model::ProcessModel* p = ProcessOf(c, c.report.gpus[gpu_index]);
  return p != nullptr ? p->path : "";
}

// How to compare the straggler with the fastest rank: the same node file
// (`diff --rank`), or two files.
std::string StragglerDiffFix(const Context& c, const RankRow& slow) {
  const RankReport& ranks = c.report.ranks;
  const RankRow* fast = nullptr;
  for (const RankRow& r : ranks.rows) {
    if (&r == &slow || r.collectives == 0) continue;
    if (fast == nullptr || r.mean_late_ns < fast->mean_late_ns) fast = &r;
  }
  if (fast == nullptr) return "Compare this rank's summary with a fast rank's.";
  const std::string slow_path = PathOf(c, slow.gpu_index);
  const std::string fast_path = PathOf(c, fast->gpu_index);
  if (slow.rank >= 0 && fast->rank >= 0 && slow_path == fast_path && !slow_path.empty()) {
    return absl::StrCat("Compare it with the fastest rank, ", fast->label,
                        ", from the same node file: gpscope-analyze diff --rank ", fast->rank,
                        " --rank ", slow.rank, " ", ShellQuote(slow_path));
  }
  if (!slow_path.empty() && !fast_path.empty() && slow_path != fast_path) {
    return absl::StrCat("Compare it with the fastest rank, ", fast->label,
                        ": gpscope-analyze diff ", ShellQuote(fast_path), " ",
                        ShellQuote(slow_path));
  }
  return absl::StrCat("Compare it with the fastest rank, ", fast->label,
                      " (pid ", fast->pid, " vs pid ", slow.pid, "): their rows in the per-rank "
                      "table below, and each GPU's section.");
}

void StragglerRank(const Context& c) {
  const RankReport& ranks = c.report.ranks;
  if (ranks.straggler < 0) return;
  const RankRow& s = ranks.rows[static_cast<size_t>(ranks.straggler)];
  Finding f;
  f.rule = "straggler-rank";
  f.title = "Straggler rank";
  f.severity = Severity::kWarning;
  f.gpu = static_cast<int>(s.gpu_index);
  f.scope = s.label;
  f.cost_ns = Ns(s.mean_late_ns * static_cast<double>(ranks.matched) * ranks.stride);
  f.summary = absl::StrFormat(
      "%s starts %s of the %s matched collectives last, on average %s after the median of the "
      "other ranks (clocks aligned with each process's snapshots; collective ends agree to %s): "
      "the others wait for it in every collective.",
      s.label, Percent(s.last_share), Count(ranks.matched), Time(s.mean_late_ns),
      Time(ranks.end_spread_ns));
  // What it costs the others: their time in collectives beyond the
  // fastest rank's (TB's "synchronizing"), per step when steps are known.
  // The per-collective lateness above is diluted when a step has several
  // collectives: only the first waits for the late rank, the rest queue
  // behind it on the communication stream and start together.
  double others_wait_ns = 0;
  size_t others = 0;
  for (size_t i = 0; i < ranks.rows.size(); ++i) {
    if (static_cast<int>(i) == ranks.straggler || ranks.rows[i].collectives == 0) continue;
    others_wait_ns += ranks.rows[i].wait_ns;
    ++others;
  }
  if (others > 0) others_wait_ns /= static_cast<double>(others);
  // report.gpus is in TraceModel::gpus order: gpu_index is its position.
  const double steps = s.gpu_index < c.report.gpus.size()
                           ? static_cast<double>(c.report.gpus[s.gpu_index].step_count)
                           : 0;
  if (others_wait_ns > 0) {
    absl::StrAppend(&f.summary,
                    absl::StrFormat(" Each other rank waits %s in collectives for it", Time(others_wait_ns)),
                    steps > 0 ? absl::StrFormat(" (%s per step)", Time(others_wait_ns / steps))
                              : std::string(),
                    ".");
  }
  if (ranks.straggler_excess_compute > 0.05) {
    absl::StrAppend(&f.summary,
                    absl::StrFormat(" Its compute share of the window is %s above the median "
                                    "rank's.",
                                    Percent(ranks.straggler_excess_compute)));
  }
  f.evidence = {{"mean_late_ns", s.mean_late_ns, "ns"},
                {"last_share", s.last_share, "ratio"},
                {"matched_collectives", static_cast<double>(ranks.matched), "count"},
                {"end_spread_ns", ranks.end_spread_ns, "ns"},
                {"excess_compute_share", ranks.straggler_excess_compute, "ratio"},
                {"others_wait_ns", others_wait_ns, "ns"}};
  if (steps > 0) f.evidence.push_back({"others_wait_per_step_ns", others_wait_ns / steps, "ns"});
  // Where: its latest collectives, from the first other rank's start (the
  // others sit in the collective, this rank is not there yet) to its end.
  for (const LateCollective& l : s.latest) {
    f.ranges.push_back({l.others_start_ns, l.end_ns,
                        absl::StrCat(model::CollectiveName(l.kind), " #", l.seq, " starts ",
                                     Time(l.late_ns), " late")});
  }
  for (const RankRow& r : ranks.rows) {
    if (r.collectives == 0 || f.evidence.size() >= 7 + 2 * 8) continue;
    const std::string who = r.rank >= 0 ? absl::StrCat("rank", r.rank) : absl::StrCat("pid", r.pid);
    f.evidence.push_back({absl::StrCat(who, "_late_ns"), r.mean_late_ns, "ns"});
    f.evidence.push_back({absl::StrCat(who, "_compute_ns"), r.compute_busy_ns, "ns"});
  }
  f.fixes = {
      absl::StrCat("Look at what ", s.label,
                   " does differently: its host (other jobs, CPU frequency, data loading from "
                   "slower storage), its GPU (clocks, temperature: see its clock-throttling and "
                   "the per-rank table) or its data (longer sequences: balance the batches)."),
      StragglerDiffFix(c, s),
      "If the work per rank is uneven by design (pipeline stages, uneven shards), rebalance "
      "the partition.",
  };
  c.out->push_back(std::move(f));
}


void GpuShared(const Context& c) {
  std::map<std::pair<std::string, std::string>, std::vector<const GpuReport*>> by_device;
  for (const GpuReport& g : c.report.gpus) {
    if (!g.gpu->has_device_info || g.gpu->device.uuid().empty()) continue;
    by_device[{g.gpu->hostname, g.gpu->device.uuid()}].push_back(&g);
  }
  for (const auto& [key, gpus] : by_device) {
    if (gpus.size() < 2) continue;
    for (size_t i = 0; i < gpus.size(); ++i) {
      for (size_t j = i + 1; j < gpus.size(); ++j) {
        const GpuReport& a = *gpus[i];
        const GpuReport& b = *gpus[j];
        if (a.gpu->process_uid == b.gpu->process_uid) continue;
        const uint64_t lo = std::max(a.gpu->first_ns, b.gpu->first_ns);
        const uint64_t hi = std::min(a.gpu->last_ns, b.gpu->last_ns);
        if (hi <= lo) continue;
        Finding f;
        f.rule = "gpu-shared";
        f.title = "GPU shared by several processes";
        f.severity = Severity::kWarning;
        f.gpu = static_cast<int>(b.gpu_index);
        f.scope = absl::StrCat(key.second, " on ", key.first.empty() ? "?" : key.first);
        f.cost_ns = std::min(a.gpu->busy_ns, b.gpu->busy_ns);
        f.summary = absl::StrFormat(
            "pid %d and pid %d both ran work on this GPU for %s at the same time; they compete "
            "for SMs and memory bandwidth.",
            a.gpu->pid, b.gpu->pid, Time(static_cast<double>(hi - lo)));
        f.evidence = {{"pid_a", static_cast<double>(a.gpu->pid), "count"},
                      {"pid_b", static_cast<double>(b.gpu->pid), "count"},
                      {"overlap_ns", static_cast<double>(hi - lo), "ns"},
                      {"busy_a_ns", static_cast<double>(a.gpu->busy_ns), "ns"},
                      {"busy_b_ns", static_cast<double>(b.gpu->busy_ns), "ns"}};
        f.ranges.push_back({lo, hi, "both processes active"});
        f.fixes = {
            "Give each process its own GPU (CUDA_VISIBLE_DEVICES / the launcher's local rank).",
            "If sharing is intended, use MPS or MIG so the processes do not time-slice.",
        };
        c.out->push_back(std::move(f));
      }
    }
  }
}

std::string DropName(int reason) {
  if (!proto::DropReason_IsValid(reason)) return absl::StrCat("reason_", reason);
  std::string n = proto::DropReason_Name(static_cast<proto::DropReason>(reason));
  return n.rfind("DROP_", 0) == 0 ? n.substr(5) : n;
}

void IncompleteData(const Context& c) {
  for (const ProcessReport& pr : c.report.processes) {
    const model::ProcessModel& p = *pr.process;
    if (pr.complete) continue;
    Finding f;
    f.rule = "incomplete-data";
    f.title = "Incomplete data";
    f.process = static_cast<int>(pr.process_index);
    f.scope = pr.label;
    const double events = static_cast<double>(std::max<uint64_t>(1, p.events + pr.dropped));
    const double frames = static_cast<double>(std::max<uint64_t>(1, p.chunks + p.lost_chunks));
    const bool heavy = static_cast<double>(pr.dropped) / events > kIncompleteCriticalShare ||
                       static_cast<double>(p.lost_chunks) / frames > kIncompleteCriticalShare;
    // Time outside capture windows was left out on purpose; it is not a loss.
    const uint64_t lost_count = p.lost_interval_count - p.window_off_count;
    const uint64_t lost_ns = p.lost_interval_ns - p.window_off_ns;
    // A capture window cut from a process that ran on (`gpscope attach`)
    // has no end record and nothing else missing: say so, as info.
    const bool open_window_only = !p.clean_end && p.window_off_count > 0 && pr.dropped == 0 &&
                                  lost_count == 0 && p.lost_chunks == 0 &&
                                  p.undecodable_batches == 0;
    f.severity = heavy ? Severity::kCritical
                       : (open_window_only ? Severity::kInfo : Severity::kWarning);
    // Untraced time, plus the dropped records' share of the traced span:
    // drops alone would otherwise cost nothing and rank last.
    const double span_ns = static_cast<double>(p.last_ns > p.first_ns ? p.last_ns - p.first_ns : 0);
    f.cost_ns = lost_ns + Ns(static_cast<double>(pr.dropped) / events * span_ns);
    std::vector<std::string> what;
    if (pr.dropped > 0) what.push_back(absl::StrCat(Count(pr.dropped), " records dropped"));
    if (lost_count > 0) {
      what.push_back(absl::StrCat(lost_count, " intervals not traced (",
                                  Time(static_cast<double>(lost_ns)), ")"));
    }
    if (p.lost_chunks > 0) what.push_back(absl::StrCat(p.lost_chunks, " frames lost"));
    if (p.undecodable_batches > 0) {
      what.push_back(absl::StrCat(p.undecodable_batches, " batches undecodable"));
    }
    if (!p.clean_end) what.push_back("no end record (killed, crashed or still running)");
    f.summary = open_window_only
                    ? absl::StrCat("No end record: a capture window of a process that was still "
                                   "running (as `gpscope attach` writes it), or the process was "
                                   "killed. Outside the window (",
                                   Time(static_cast<double>(p.window_off_ns)),
                                   ") nothing was traced, by choice.")
                    : absl::StrCat("The trace of this process is incomplete: ",
                                   absl::StrJoin(what, "; "),
                                   ". Counts and times in this report undercount.");
    f.evidence = {{"dropped_records", static_cast<double>(pr.dropped), "count"},
                  {"lost_intervals", static_cast<double>(lost_count), "count"},
                  {"lost_interval_ns", static_cast<double>(lost_ns), "ns"},
                  {"outside_capture_window_ns", static_cast<double>(p.window_off_ns), "ns"},
                  {"lost_frames", static_cast<double>(p.lost_chunks), "count"},
                  {"clean_end", p.clean_end ? 1.0 : 0.0, "bool"}};
    for (const auto& [reason, n] : p.dropped) {
      if (reason == proto::DROP_STACKS) continue;  // not events: source-lines says so
      f.evidence.push_back({absl::StrCat("dropped_", absl::AsciiStrToLower(DropName(reason))),
                            static_cast<double>(n), "count"});
    }
    for (const proto::LostInterval& l : p.lost_intervals) {
      if (f.ranges.size() >= kMaxRanges) break;
      if (l.reason() == proto::LOST_TRACING_DISABLED && !open_window_only) continue;
      f.ranges.push_back({l.start_ns(), l.end_ns() == 0 ? p.last_ns : l.end_ns(), l.detail()});
    }
    for (const auto& [reason, n] : p.dropped) {
      switch (reason) {
        case proto::DROP_CUPTI_BUFFER_POOL_EMPTY:
          f.fixes.push_back("CUPTI buffers ran out: raise GPSCOPE_MAX_BUFFER_MB (default 64).");
          break;
        case proto::DROP_CUPTI_REPORTED:
        case proto::DROP_CUPTI_INCOMPLETE_RECORD:
          f.fixes.push_back(
              "CUPTI dropped records: raise GPSCOPE_BUFFER_KB and lower "
              "GPSCOPE_FLUSH_INTERVAL_MS so buffers are handed back sooner.");
          break;
        case proto::DROP_RING_FULL:
          f.fixes.push_back(
              "Per-thread rings were full: the writer fell behind; GPSCOPE_API=0 removes API "
              "records if launch statistics are not needed.");
          break;
        case proto::DROP_WRITE_FAILED:
          f.fixes.push_back("Frames could not be written: check free space in GPSCOPE_OUTPUT.");
          break;
        default:
          break;
      }
    }
    bool other_profiler = false, write_error = false;
    for (const proto::LostInterval& l : p.lost_intervals) {
      other_profiler |= l.reason() == proto::LOST_YIELDED_TO_OTHER_PROFILER ||
                        l.reason() == proto::LOST_OTHER_PROFILER_ACTIVE;
      write_error |= l.reason() == proto::LOST_WRITE_ERROR;
    }
    if (other_profiler) {
      f.fixes.push_back(
          "Do not run another CUPTI profiler (nsys, ncu, torch.profiler) at the same time; see "
          "the lost intervals' details.");
    }
    if (write_error) f.fixes.push_back("Writes failed: check free space in GPSCOPE_OUTPUT.");
    if (!p.clean_end && !open_window_only) {
      f.fixes.push_back(
          "Let the process exit normally (or send SIGTERM, not SIGKILL); if the final flush "
          "timed out, raise GPSCOPE_EXIT_TIMEOUT_MS.");
    }
    if (p.lost_chunks > 0 || p.undecodable_batches > 0) {
      f.fixes.push_back("Frames were lost or damaged: check the disk and the reader's warnings.");
    }
    c.out->push_back(std::move(f));
  }
}

// ---------------------------------------------------------------- grouping --

// Moves the findings that are consequences of another under it
// (Finding::grouped): see rules.h. Each pairing names the evidence that one
// explains the other.
void GroupConsequences(const Context& c, std::vector<Finding>* findings) {
  std::vector<Finding>& all = *findings;
  std::vector<int> parent(all.size(), -1);
  std::vector<std::string> relation(all.size());
  auto find = [&all](std::string_view rule, int gpu) -> int {
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].rule == rule && all[i].gpu == gpu) return static_cast<int>(i);
    }
    return -1;
  };
  auto root = [&parent](int i) {
    while (parent[static_cast<size_t>(i)] >= 0) i = parent[static_cast<size_t>(i)];
    return i;
  };
  // A consequence goes under the root of its cause's group (groups are one
  // level deep); one that already has a cause keeps it.
  auto group = [&](int cause, int consequence, std::string why) {
    if (cause < 0 || consequence < 0) return;
    if (parent[static_cast<size_t>(consequence)] >= 0) return;
    cause = root(cause);
    if (cause == consequence) return;
    parent[static_cast<size_t>(consequence)] = cause;
    relation[static_cast<size_t>(consequence)] = std::move(why);
    for (size_t k = 0; k < parent.size(); ++k) {  // its own consequences move along
      if (parent[k] == consequence) parent[k] = cause;
    }
  };
  // The straggler first: its own GPU's findings explain why it is late, the
  // other ranks' exposed communication is the wait for it.
  const int straggler = find("straggler-rank", c.report.ranks.straggler >= 0
                                                   ? static_cast<int>(c.report.ranks.rows[static_cast<size_t>(c.report.ranks.straggler)].gpu_index)
                                                   : -2);
  if (straggler >= 0) {
    const int sgpu = all[static_cast<size_t>(straggler)].gpu;
    for (size_t i = 0; i < all.size(); ++i) {
      const Finding& f = all[i];
      if (f.severity == Severity::kInfo) continue;
      static constexpr std::string_view kWhy[] = {"data-starvation", "host-bound", "host-sync",
                                                  "implicit-sync", "synchronous-launches",
                                                  "launch-bound", "clock-throttling",
                                                  "gpu-shared-nvml", "long-gaps"};
      const bool why = std::find(std::begin(kWhy), std::end(kWhy), f.rule) != std::end(kWhy);
      if (f.gpu == sgpu && why) {
        group(straggler, static_cast<int>(i), "on the straggler itself: why it is late");
      } else if (f.gpu != sgpu && f.rule == "low-comm-overlap") {
        group(straggler, static_cast<int>(i), "consequence: this rank waits for the straggler");
      }
    }
  }
  // Heavy record loss: idle time may be activity whose records were lost.
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].rule != "incomplete-data" || all[i].severity != Severity::kCritical) continue;
    const int process = all[i].process;
    for (size_t j = 0; j < all.size(); ++j) {
      const Finding& f = all[j];
      if (f.gpu < 0 || static_cast<size_t>(f.gpu) >= c.report.gpus.size()) continue;
      const GpuReport& g = c.report.gpus[static_cast<size_t>(f.gpu)];
      const model::ProcessModel* p = ProcessOf(c, g);
      if (p == nullptr || process < 0 ||
          static_cast<size_t>(process) >= c.model.processes.size() ||
          &c.model.processes[static_cast<size_t>(process)] != p) {
        continue;
      }
      static constexpr std::string_view kIdle[] = {"data-starvation", "host-bound", "host-sync",
                                                   "implicit-sync", "launch-bound", "long-gaps",
                                                   "synchronous-launches", "low-sm-efficiency"};
      if (std::find(std::begin(kIdle), std::end(kIdle), f.rule) == std::end(kIdle)) continue;
      group(static_cast<int>(i), static_cast<int>(j),
            "may be an artifact of the lost records: idle time there may be unrecorded work");
    }
  }
  for (const GpuReport& g : c.report.gpus) {
    const int gpu = static_cast<int>(g.gpu_index);
    const double wlen = g.traced_window_ns();
    // Synchronous launches cause the launch gaps and the host wait.
    const int sync_launch = find("synchronous-launches", gpu);
    for (std::string_view rule : {"launch-bound", "data-starvation", "host-bound"}) {
      group(sync_launch, find(rule, gpu),
            "consequence: every launch waits for its kernel, so the host cannot run ahead");
    }
    // Implicit syncs behind the launch gaps: when they hold at least half
    // of the launch-gap idle (ours: majority).
    const int implicit = find("implicit-sync", gpu);
    const int launch = find("launch-bound", gpu);
    if (implicit >= 0 && launch >= 0 &&
        g.implicit_idle_ns >= 0.5 * (g.short_gap_idle.host_ns + g.short_gap_idle.kernel_ns +
                                     g.short_gap_idle.implicit_ns)) {
      group(implicit, launch,
            "consequence: the short gaps are the host blocked in allocation and free, not "
            "launch overhead");
    }
    // Host code after a sync costs more than the sync: the sync is part of
    // the host-bound loop.
    const int host_bound = find("host-bound", gpu);
    const double sync_wait = g.gap_idle.sync_ns + g.short_gap_idle.sync_ns;
    if (g.after_sync_host_ns + g.short_after_sync_host_ns >= sync_wait) {
      group(host_bound, find("host-sync", gpu),
            "consequence: the sync makes the host wait for the GPU; the host code after it is "
            "the larger cost");
    }
    // Pageable memory makes the copies slow: copy-heavy is the symptom.
    const int pageable = find("pageable-copies", gpu);
    const int copy_heavy = find("copy-heavy", gpu);
    const int long_gaps = find("long-gaps", gpu);
    // A pause full of copies (a checkpoint) explains both.
    if (long_gaps >= 0 && g.copy_ns > 0 && g.pause_copy_ns >= 0.5 * g.copy_ns) {
      group(long_gaps, copy_heavy, "consequence: most copy time is inside the pauses");
      if (g.pageable_copy_ns > 0 && g.pause_copy_ns >= 0.5 * g.pageable_copy_ns) {
        group(long_gaps, pageable, "consequence: the pageable copies are inside the pauses");
      }
    }
    if (pageable >= 0 && copy_heavy >= 0 && g.pageable_copy_ns >= 0.5 * g.copy_ns) {
      group(pageable, copy_heavy,
            "consequence: most copy time is copies from pageable memory, at pageable speed");
    }
    // The host held in pageable copies is the same copies seen from the host.
    if (pageable >= 0 && implicit >= 0 && !g.implicit.empty() &&
        g.implicit.front().group == model::kImplicitPageableCopy) {
      group(pageable, implicit,
            "consequence: the host is held while the driver stages the pageable copies");
    }
    (void)wlen;
  }
  // Apply: causes take the worst severity and the largest cost of their group.
  std::vector<Finding> top;
  std::vector<int> where(all.size(), -1);
  for (size_t i = 0; i < all.size(); ++i) {
    if (parent[i] >= 0) continue;
    where[i] = static_cast<int>(top.size());
    top.push_back(std::move(all[i]));
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (parent[i] < 0) continue;
    Finding& cause = top[static_cast<size_t>(where[static_cast<size_t>(parent[i])])];
    Finding& member = all[i];
    member.relation = relation[i];
    cause.severity = std::max(cause.severity, member.severity);
    cause.cost_ns = std::max(cause.cost_ns, member.cost_ns);
    cause.grouped.push_back(std::move(member));
  }
  all = std::move(top);
}

// --------------------------------------------------------------- catalogue --

using GpuRuleFn = void (*)(const Context&, const GpuReport&, Finding);

struct GpuRule {
  RuleInfo info;
  GpuRuleFn fn;
};

const GpuRule kGpuRules[] = {
    {{"data-starvation", "GPU starved of input data",
      "idle-gap share (gaps >= --idle-gap-ms) > 30% of the steady window, >= 50% of that idle "
      "is host wait, and >= 50% of the host wait is in gaps in which an input copy (H2D > 64 "
      "KB) was issued; critical > 60%",
      "seed (idle-gap share > 30%), HTA (host wait), nsys (64 KB copies)"},
     DataStarvation},
    {{"launch-bound", "Launch-bound: many tiny kernels",
      "> 10,000 launches with mean < 10 us, or >= 30% of kernels shorter than their launch call "
      "and >= 30% of the window idle in short launch gaps; critical >= 60%",
      "seed (tiny kernels), HTA (short kernels)"},
     LaunchBound},
    {{"host-bound", "Host-bound: the GPU waits for the host's own code",
      "host wait in gaps >= --idle-gap-ms with no input copy, plus host wait in shorter gaps "
      "after a sync, > 30% of the steady window; critical > 60%",
      "seed (idle share > 30%), ANALYSIS-NOTES (input- vs host- vs sync-bound)"},
     HostBound},
    {{"synchronous-launches", "Synchronous launches (every launch waits for its kernel)",
      ">= 90% of >= 100 launches of kernels running >= 50 us returned after their kernel "
      "ended (queue depth 0); the cause from the recorded environment (CUDA_LAUNCH_BLOCKING); "
      "critical when launch waits >= 60% of the window",
      "HTA (launch call 5-20 us, outliers > 50 us), ours (90%)"},
     SynchronousLaunches},
    {{"implicit-sync", "Host blocked in implicitly synchronizing calls",
      "GPU idle while the host was blocked in allocation/free, pinned host allocation, "
      "synchronous or pageable copies, synchronous memsets >= 5% of the steady window "
      "(critical >= 25%); info when only the host time blocked is >= 5%",
      "CUDA Programming Guide (implicit synchronization), nsys (sync memcpy/memset), TB (5%)"},
     ImplicitSync},
    {{"host-sync", "Host synchronization stalls (.item()-style)",
      "GPU idle behind host syncs >= 5% of the steady window with a sync call about every step "
      "(>= 0.9 per step, or >= 10/s); critical >= 25%",
      "nsys (sync APIs), TB (5% threshold), ours"},
     HostSync},
    {{"pageable-copies", "Copies from pageable host memory",
      "any copy to/from pageable memory; warning when their GPU time is >= 1% of the window",
      "nsys (async memcpy with pageable memory)"},
     PageableCopies},
    {{"copy-heavy", "Copies take a large share of GPU time",
      "memcpy time > 20% of kernel + copy + memset time in the steady window",
      "seed (copies > 20% -> fix copies first)"},
     CopyHeavy},
    {{"long-gaps", "Long pauses in GPU work",
      "kernel-free intervals (idle, or copies only) >= 500 ms inside the steady window "
      "(start-up, tear-down and one-time gaps excluded)",
      "nsys gpu_gaps (500 ms), ours (kernel-free)"},
     LongGaps},
    {{"one-time-startup", "One-time start-up work (compilation, autotuning, loading)",
      "long gaps (>= 500 ms) after which the GPU runs kernels it never ran before (info)",
      "ours (new code after a gap: JIT, autotuning, lazy loading)"},
     OneTimeStartup},
    {{"dominant-kernel", "One kernel dominates",
      "one kernel name > 40% of all kernel time (info: profile it with ncu)",
      "seed (single kernel > 40% -> profile that kernel)"},
     DominantKernel},
    {{"low-sm-efficiency", "Launches too small to fill the GPU",
      "estimated SM efficiency (min(blocks/SMs,1), time-weighted) < 50% while kernels run >= 20% "
      "of the window",
      "TB (est. SM efficiency), ours"},
     LowSmEfficiency},
    {{"memory-bandwidth-bound", "Kernels bound by memory bandwidth",
      // The metric is metric_names::kGpmDramBwUtil (analyses_test checks the name).
      "sampled DRAM bandwidth utilization (gpm.dram_bw_util) >= 60% on average while kernels run "
      ">= 30% of the window",
      "ours (Nsight Compute guidance)"},
     MemoryBandwidthBound},
    {{"clock-throttling", "GPU clocks throttled (power/thermal)",
      "NVML clock event reasons show a power or thermal slowdown in >= 10% of the samples in the "
      "window; critical >= 50%; info only when the software power cap is the only reason (a "
      "GPU at its power limit)",
      "ours (NVML clock event reasons)"},
     ClockThrottling},
    {{"gpu-shared-nvml", "GPU shared with other processes",
      "NVML per-process utilization shows untraced processes using >= 5% of the SMs on average "
      "in the window (info only, from inside a PID namespace, where NVML's host pids cannot be "
      "matched: two or more processes)",
      "ours (NVML process utilization)"},
     OtherProcesses},
    {{"low-occupancy", "Low-occupancy launches",
      "theoretical occupancy of the launch shapes (registers, shared memory, block size vs the "
      "SM's limits), time-weighted, < 25% while kernels run >= 20% of the window; launches "
      "with >= 64 KiB shared memory per block (GEMM/attention tiles, low occupancy by design) "
      "left out",
      "TB (est. achieved occupancy), CUDA occupancy calculator, ours (25%, large tiles)"},
     LowOccupancy},
    {{"low-comm-overlap", "Low communication/computation overlap",
      "communication kernels (NCCL) run >= 10% of the steady window and < 30% of their time "
      "overlaps compute kernels (HTA's overlap)",
      "HTA (comm/compute overlap), TB (communication > 10%), ours (30%)"},
     LowCommOverlap},
};

}  // namespace

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

const std::vector<RuleInfo>& RuleCatalogue() {
  static const std::vector<RuleInfo>* const kCatalogue = [] {
    auto* rules = new std::vector<RuleInfo>();
    for (const GpuRule& r : kGpuRules) rules->push_back(r.info);
    rules->push_back({"gpu-shared", "GPU shared by several processes",
                      "two traced processes on the same host and GPU UUID with overlapping "
                      "activity",
                      "ours"});
    rules->push_back({"straggler-rank", "Straggler rank",
                      "one rank starts >= 50% of the matched collectives last, on average >= "
                      "max(0.5 ms, 5% of its median step, twice the collectives' end spread) "
                      "after the median of the others (clocks aligned with the snapshots)",
                      "HTA (straggler: late collective start), ours (clock alignment, "
                      "thresholds)"});
    rules->push_back({"incomplete-data", "Incomplete data",
                      "any dropped record, lost interval, lost frame, undecodable batch or "
                      "missing end record; critical when > 1% of events or frames were lost",
                      "ours (every report shows its losses)"});
    return rules;
  }();
  return *kCatalogue;
}

std::vector<Finding> EvaluateRules(const model::TraceModel& model, const SummaryReport& report) {
  std::vector<Finding> findings;
  const Context c{model, report, &findings};
  for (const GpuReport& g : report.gpus) {
    if (g.window.length_ns() == 0) continue;
    for (const GpuRule& rule : kGpuRules) {
      Finding f;
      f.rule = rule.info.id;
      f.title = rule.info.title;
      f.gpu = static_cast<int>(g.gpu_index);
      f.scope = g.label;
      rule.fn(c, g, std::move(f));
    }
  }
  GpuShared(c);
  StragglerRank(c);
  IncompleteData(c);
  GroupConsequences(c, &findings);
  // Most severe first, then most costly: an info finding (a dominant
  // kernel, a GPU at its power cap) can have a large "cost" but is not a
  // problem to fix, and a critical finding outranks any warning.
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::make_tuple(static_cast<int>(b.severity), b.cost_ns, a.rule) <
           std::make_tuple(static_cast<int>(a.severity), a.cost_ns, b.rule);
  });
  return findings;
}

}  // namespace gpscope::analyses
