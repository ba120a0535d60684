// tools/analyses/rules.h: the findings catalogue: every rule gpscope-analyze
// applies, its thresholds (with where they come from), and the evaluation
// that turns a SummaryReport into ranked findings.
//
// A finding names its rule, a severity, the evidence (numbers and up to 5
// time ranges where it holds), an estimated cost (GPU time it likely costs,
// used for ranking: the time that would be recovered if fixed, or a stated
// heuristic) and concrete fixes. Rules judge the steady window (see
// gpu_report.h), so start-up does not trip them: one-time start-up work
// (before the first step, compilation, autotuning) is at most info. A
// healthy compute-bound run yields no finding of warning level or above.
//
// A finding that is a consequence of another (launch-bound gaps behind
// synchronous launches, copy-heavy behind pageable copies, the other
// ranks' waits behind a straggler) is not a card of its own: it is grouped
// under its cause (Finding::grouped), and the cause takes the worst severity
// and the largest cost of its group.
//
//   std::vector<Finding> findings = EvaluateRules(model, report);  // most severe, then costliest
//   for (const RuleInfo& r : RuleCatalogue()) ...                  // for --help and docs
//
// Every threshold below comes from a definition or from physics, never from
// fitting a trace: each names its source. Sources: "seed" = the project's
// brief (ANALYSIS-NOTES.md, rules table); nsys = Nsight Systems expert rules
// and gpu_gaps; HTA = Holistic Trace Analysis; TB = the PyTorch TensorBoard
// plugin; CUDA = the CUDA C++ Programming Guide; "ours" = chosen here, with
// the reason (a majority, a factor of two, "nearly all").
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_RULES_H_
#define GPSCOPE_TOOLS_ANALYSES_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/analyses/gpu_report.h"
#include "tools/model/trace_model.h"

namespace gpscope::analyses {

// ------------------------------------------------------------ thresholds --
//
// The model's own thresholds, on which these rules rest (model/trace_model.h,
// model/host_calls.h, gpu_report.cc), with their sources:
//   idle-gap threshold 5 ms (seed: shorter gaps are normal switching);
//   long gap / pause 500 ms (nsys gpu_gaps); one-time start-up: a long gap
//     followed by a kernel never run before (ours: JIT compilation,
//     autotuning and lazy loading must precede new code's first run);
//   sync wait: up to the sync's return + 0.5 ms (ours, kSyncRelaunchNs); an
//     implicit sync's: + 50 us (HTA: a launch call takes at most ~50 us);
//   input copy: H2D > 64 KB (nsys's synchronous-memcpy rule ignores smaller);
//   synchronous launch: a kernel >= 50 us ending before its launch call
//     returned (HTA's launch-call outlier bound);
//   inferred steps: >= 5 instances, period >= 100 us, mean within 25% of
//     the median and P95 <= 2x it (ours, unchanged), judged without the
//     intervals that hold a pause; the steady window is cut to them only
//     when the GPU does at most 3 steps' work after the last one starts
//     (ours: the last step plus a margin) and no other regular series
//     spanning a quarter of theirs runs mostly outside them (ours: phases).

// data-starvation. seed: an idle-gap share (gaps >= 5 ms) above 30% means
// starvation or a sync problem; it is starvation when the host was late: at
// least half of that idle time is host wait (ours: majority), and input
// starvation only with its evidence (ANALYSIS-NOTES, "what separates
// causes"): for at least half of that host wait (ours: majority) an input
// copy (H2D > 64 KB, nsys's size below which a copy is not worth flagging;
// model::kInputCopyMinBytes) was issued while the GPU was idle. Critical
// above 60% (ours: the GPU idles more than it works).
inline constexpr double kStarvationIdleShare = 0.30;
inline constexpr double kStarvationHostWaitShare = 0.50;
inline constexpr double kStarvationInputShare = 0.50;
inline constexpr double kStarvationCriticalShare = 0.60;

// host-bound. The GPU waits for the launching thread's own code: host wait
// in gaps >= the idle-gap threshold with no input copy, plus host wait in
// shorter gaps that began in a sync (the host's code between a sync's
// return and its next launch: not the "normal switching" the seed's 5 ms
// threshold means, which is between queued kernels). Above 30% of the
// window (seed: idle share > 30% = starvation or a sync problem); critical
// above 60% (as data-starvation). Cost: that host wait.
inline constexpr double kHostBoundShare = kStarvationIdleShare;
inline constexpr double kHostBoundCriticalShare = kStarvationCriticalShare;

// launch-bound. seed: > 10,000 launches with a mean below 10 us. Or, HTA's
// view: at least 30% of kernels are "short" (GPU time < CPU launch call,
// ours: 30%) and the GPU idles >= 30% of the window in gaps below the
// idle-gap threshold waiting for launches (ours). Critical above 60%.
inline constexpr uint64_t kTinyKernelLaunches = 10'000;
inline constexpr double kTinyKernelMeanNs = 10'000;
inline constexpr double kShortKernelShare = 0.30;
inline constexpr double kLaunchGapShare = 0.30;
inline constexpr double kLaunchGapCriticalShare = 0.60;

// host-sync. .item()-style stalls: the GPU ran dry while the host was
// blocked in a synchronizing call, for >= 5% of the window (ours, after TB's
// 5% data-loading threshold), with a sync about every step (>= 0.9 per step:
// counts at the window's edges are prorated; or 10 per second without
// steps). Critical above 25% (ours).
inline constexpr double kSyncWaitShare = 0.05;
inline constexpr double kSyncWaitCriticalShare = 0.25;
inline constexpr double kSyncsPerStep = 0.9;
inline constexpr double kSyncsPerSecond = 10.0;

// implicit-sync. Host time blocked in implicitly synchronizing calls (CUDA:
// "Implicit Synchronization": device and page-locked host allocation and
// free, synchronous copies and memsets, copies from pageable memory;
// model/host_calls.h) with the GPU idle behind them for >= 5% of the window
// (TB's 5% data-loading threshold, like host-sync); critical >= 25% (as
// host-sync). Below, host time blocked >= 5% of the window is info. Cost:
// the GPU idle behind them; ranked within by host time blocked.
inline constexpr double kImplicitIdleShare = 0.05;
inline constexpr double kImplicitCriticalShare = 0.25;
inline constexpr double kImplicitBlockedInfoShare = 0.05;

// synchronous-launches. A kernel that runs >= 50 us (HTA: launch calls
// take 5-20 us, above 50 us is an outlier; model::kLaunchCallOutlierNs)
// cannot end before an asynchronous launch call returns; when nearly all
// such launches (>= 90%, ours: "every launch", leaving room for clock
// jitter) return only after their kernel ended, launches are synchronous
// (queue depth 0: CUDA_LAUNCH_BLOCKING=1, a debugger, a sanitizer). Needs
// >= 100 such launches in the window (ours: enough to say "nearly all").
// Always a warning (the setting serializes host and device); critical when
// the GPU idles waiting for launches >= 60% of the window (as
// launch-bound). Cost: the host wait in the window.
inline constexpr double kSyncLaunchShare = 0.90;
inline constexpr double kSyncLaunchMinLaunches = 100;

// pageable-copies. nsys flags any async memcpy from pageable memory. We warn
// when they matter: their GPU time is >= 1% of the steady window (ours: a
// cost worth a warning; a count of copies says nothing about their cost,
// and copies before the first step are outside the window); else info.
// Cost: pinned copies run about twice as fast (ours: half their time).
inline constexpr double kPageableWarnShare = 0.01;
inline constexpr double kPageableSavedFraction = 0.5;

// copy-heavy. seed: memcpy above 20% of GPU time (kernels + copies +
// memsets) -> fix copies first. Cost: time only copies ran.
inline constexpr double kCopyShare = 0.20;

// long-gaps. nsys gpu_gaps: idle gaps >= 500 ms (ModelOptions::long_gap_ns),
// excluding start-up and tear-down (ours: outside the steady window). Ours:
// a kernel-free interval that long counts too (a checkpoint's D2H copies do
// not make the GPU compute), and a gap after which the GPU runs code it has
// never run before is one-time start-up work (compilation, autotuning, lazy
// loading: model/trace_model.h), reported as info (one-time-startup).

// dominant-kernel. seed: one kernel above 40% of kernel time -> profile it
// with ncu. Info: not a problem by itself. Communication kernels are left
// out (their time is mostly waiting for the other ranks: low-comm-overlap
// and straggler-rank judge them). For library kernels the advice is about
// the call (shape, dtype, batching). Cost heuristic (ours): tuning recovers
// ~10% of its time.
inline constexpr double kDominantKernelShare = 0.40;
inline constexpr double kDominantKernelGain = 0.10;

// low-sm-efficiency (low-occupancy launches). TB's estimated SM efficiency
// (sum of min(blocks/SMs, 1) x duration over kernel time) below 50% (ours),
// when kernels keep the GPU busy >= 20% of the window (ours: otherwise idle
// time matters more). Cost: kernel time x (1 - efficiency).
inline constexpr double kLowSmEfficiency = 0.50;
inline constexpr double kLowSmMinKernelBusyShare = 0.20;

// low-occupancy. The launch shapes' theoretical occupancy (registers,
// shared memory, threads per block against the SM's limits in DeviceInfo;
// model/occupancy.h), weighted by kernel time, below 25% (ours: too few
// resident warps to hide memory latency) over kernels whose occupancy is
// known for >= half of the kernel time, while kernels run >= 20% of the
// window. Library and generated kernels (names.h LibraryOf) are left out:
// their registers and tiles are the library's or the compiler's choice.
// Cost heuristic (ours): 10% of kernel time, like dominant-kernel.
inline constexpr double kLowOccupancy = 0.25;
inline constexpr double kLowOccupancyMinKnownShare = 0.5;
inline constexpr double kLowOccupancyGain = 0.10;

// gpu-shared. Two traced processes used the same GPU (same host and UUID)
// at overlapping times, or NVML saw other processes use >= 5% of the SMs on
// average in the window (ours). Cost: the smaller busy time of the pair, or
// busy time x their share.
inline constexpr double kOtherProcessSmPercent = 5.0;
inline constexpr double kOtherProcessMinSamples = 3;

// clock-throttling. NVML clock event reasons show a power or thermal
// slowdown (model::kThrottleReasonMask) in >= 10% of the samples in the
// window (ours); critical >= 50%. Cost heuristic (ours): throttled clocks
// run ~15% slower, over the busy time of the throttled samples.
inline constexpr double kThrottledShare = 0.10;
inline constexpr double kThrottledCriticalShare = 0.50;
inline constexpr double kThrottleSlowdown = 0.15;

// memory-bandwidth-bound. Sampled DRAM bandwidth utilization (gpm) >= 60%
// on average in the window while kernels run >= 30% of it (ours, after
// Nsight Compute's guidance that DRAM above ~60% of peak limits a kernel).
// Cost heuristic (ours): 10% of kernel time, like dominant-kernel.
inline constexpr double kDramBoundPercent = 60.0;
inline constexpr double kDramBoundMinKernelBusyShare = 0.30;
inline constexpr double kDramBoundGain = 0.10;

// low-comm-overlap. HTA's communication/computation overlap (time compute
// kernels run while a communication kernel runs / communication time) below
// 30% (ours: most communication is exposed), when communication kernels run
// >= 10% of the steady window (TB: communication > 10% of a step matters).
// Cost: the exposed communication time, comm busy - overlap (what perfect
// overlap would hide).
inline constexpr double kLowCommOverlap = 0.30;
inline constexpr double kCommMinShare = 0.10;

// straggler-rank. One rank (GPU) starts the matched collectives last in
// >= 50% of them, late by >= max(0.5 ms, 5% of its median step, twice the
// collectives' end spread) on average against the median of the others
// (ranks.h: kStragglerLastShare, kStragglerMinLateNs, kStragglerStepShare;
// HTA's straggler definition with clocks aligned). Cost: its mean lateness
// x matched collectives (x the sampling stride): time the other ranks wait
// for it, per rank.

// incomplete-data. Any drop, lost interval, lost frame, undecodable batch
// or missing end: the numbers above undercount. Critical when more than 1%
// of events or frames were lost (ours). Cost: time known to be unobserved.
// When critical, the idle-based findings of that process (starvation,
// host-bound, syncs, long gaps, launch gaps) are grouped under it: idle time
// may be activity whose records were lost.
inline constexpr double kIncompleteCriticalShare = 0.01;

// ---------------------------------------------------------------- types --

enum class Severity { kInfo = 0, kWarning = 1, kCritical = 2 };
const char* SeverityName(Severity severity);  // "info", "warning", "critical"

struct EvidenceNumber {
  std::string key;   // stable, snake_case, e.g. "idle_gap_share"
  double value = 0;
  std::string unit;  // "ratio", "ns", "count", "bytes", "GB/s", "per_step", "per_s", "bool"
};

struct TimeRange {
  uint64_t start_ns = 0;  // CUPTI ns
  uint64_t end_ns = 0;
  std::string note;       // "host wait 7.9 ms", "pageable H2D"...
};

struct Finding {
  std::string rule;   // RuleInfo::id
  std::string title;
  Severity severity = Severity::kInfo;
  uint64_t cost_ns = 0;
  int gpu = -1;       // index into SummaryReport::gpus, or -1
  int process = -1;   // index into SummaryReport::processes, or -1
  std::string scope;  // the GPU's or process's label
  std::string summary;  // one or two sentences with the key numbers
  std::vector<EvidenceNumber> evidence;
  std::vector<TimeRange> ranges;  // up to 5
  std::vector<std::string> fixes;
  // Findings grouped under this one (their cause), with how they relate:
  // "consequence", "on the straggler itself", "may be an artifact of the
  // lost records"; they have no `grouped` of their own.
  std::vector<Finding> grouped;
  std::string relation;  // set on a grouped finding
};

struct RuleInfo {
  const char* id;
  const char* title;
  const char* trigger;  // thresholds in words
  const char* source;
};

// Every rule, in evaluation order.
const std::vector<RuleInfo>& RuleCatalogue();

// Applies every rule, groups consequences under their causes; findings
// sorted by severity (critical first), then cost (highest first), then rule
// id.
std::vector<Finding> EvaluateRules(const model::TraceModel& model, const SummaryReport& report);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_RULES_H_
