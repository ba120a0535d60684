// tools/analyses/sites.h: source sites (issue 20): the stacks of the model
// (model/stack_model.h) aggregated by their innermost user frame, ranked by
// the GPU time they cost.
//
// User frame: a Python frame outside the standard library (a path under
// .../lib/python3.X/ or <frozen ...>) and outside installed packages
// (site-packages, dist-packages: the frameworks); a native frame in a module
// that is not a CUDA, NCCL, math-library, framework, interpreter or C/C++
// runtime library (kLibraryModules in sites.cc) nor installed under
// site-packages. A stack with no user frame is shown at its innermost Python
// frame (else its innermost frame) and marked `user = false`. The full stack
// is kept: a site shows the stack that cost it most.
//
// GPU time lost by a site = the GPU idle attributed to its stacks
// (stack_model.h): while the host was blocked in its syncs, in the host code
// after them, or in the host code before its launches.
//
// Kernel time by source line, from the launches sampled in time
// (STACK_SAMPLED): a ratio estimate. With n sampled launches of GPU time
// x_i, y_i = x_i where the launch was at the site (else 0), R = sum y /
// sum x estimates the site's share of kernel time; its standard error is
// sqrt(sum (y_i - R x_i)^2 / (n (n - 1))) / mean(x) (the ratio estimator's,
// Cochran, Sampling Techniques, 6.3), and the estimate is R x the process's
// kernel time, +- 1.96 standard errors (95%). It assumes a sampled launch
// is like the launches around it in time: the collector samples one launch
// per interval of host time per thread (GPSCOPE_STACK_SAMPLE_MS), first
// after each idle, so lines whose launches all fall within less host time
// than an interval are sampled by phase, not at random; the interval covers
// the sampling error only, not that bias. (tests/data/stacks: with 24
// launches per line, 250 us of host time apart, the estimate is exact; at
// 46 us apart, two lines of 33% and 67% estimated 50% each.)
//
// Whole run and windows. ComputeSites ranks each process's sites over the
// whole run (the source-lines table of every output). A finding judges a
// GPU's steady window: SitesInWindow aggregates the same sites, by the same
// code, from the stacks' timed charges inside a window (model/stack_model.h),
// so the sites a finding cites, their order and its numbers are the
// window's. In a window's rows the calls, blocked time, GPU idle, gaps and
// the next/previous sites (edges) are the window's; launches, samples and
// kernel estimates are not time-resolved (0, none). Where the process's
// charges were not all kept (past ModelOptions::max_stack_charges) it returns
// the whole-run rows and says so (windowed = false).
//
//   SiteReport sites = ComputeSites(model);      // empty when no stacks
//   for (const SiteRow& s : sites.rows) ...      // GPU time lost, largest first
//   WindowSites in = SitesInWindow(sites, uid, g.window.start_ns, g.window.end_ns);
//   TopSites(in.rows, uid, SiteMeasure::kHostCode, 3);
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_SITES_H_
#define GPSCOPE_TOOLS_ANALYSES_SITES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/model/stack_model.h"
#include "tools/model/trace_model.h"

namespace gpscope::analyses {

// One frame as people read it: "train.py:42 train_step" (Python; the full
// path in `path`), "/src/main.cc:17 step(int) (prog+0x1139)" (native,
// symbolized offline: model/symbolizer.h), "foo::bar(int) (libfoo.so+0x1a2b)"
// (native, demangled), "libfoo.so+0x1a2b" (no symbol), "(unknown frame 7)".
struct SiteFrame {
  std::string text;
  std::string path;      // Python file; native: the source file when symbolized, else the module
  std::string module;    // native: the module, as recorded
  std::string function;  // demangled for native frames (recorded, else from the module's file)
  uint32_t line = 0;     // Python line; native: the source line when symbolized, else 0
  uint64_t module_offset = 0;
  int kind = 0;          // proto::FrameKind
  bool user = false;
};
SiteFrame DescribeFrame(const model::StackFrameText& f);
bool IsUserFrame(const model::StackFrameText& f);

struct SiteRow {
  size_t process = 0;     // index into TraceModel::processes
  uint64_t process_uid = 0;
  std::string label;      // "train.py:42 (train_step)", "main.cc:17 (step(int))"
  SiteFrame frame;        // the innermost user frame (or the fallback)
  bool user = false;
  model::StackWeights w;  // summed over the site's stacks
  uint64_t gpu_lost_ns = 0;
  uint32_t top_stack = 0;          // the stack id (of the process) that cost it most
  std::vector<SiteFrame> stack;    // that stack, innermost first
  bool truncated = false;
  uint64_t stacks = 0;             // distinct stacks at this site
  // Kernel time estimated from sampled launches (see the header); valid
  // when samples >= 2 and the process's sampled launches ran kernels.
  bool has_kernel_estimate = false;
  double kernel_share = 0;
  double kernel_ns = 0;
  double kernel_error_ns = 0;  // 95%
  // The host code after this site's syncs: the site of the launch that
  // most often ended the gap, and the mean host time between the calls.
  std::string next_label;
  uint64_t next_gaps = 0;
  double next_host_ns = 0;       // mean
  uint64_t next_gpu_host_ns = 0;
  // For a launch site: the call before the gaps it ended.
  std::string prev_label;
  uint64_t prev_gaps = 0;
  double prev_host_ns = 0;
};

// A process's stacks for the flame view and the export.
struct ProcessStacks {
  size_t process = 0;
  uint64_t process_uid = 0;
  std::vector<SiteFrame> frames;        // model::StackModel::frames, described
  const model::StackModel* model = nullptr;
  uint64_t kernel_ns = 0;               // the process's kernel time (all its GPUs)
};

struct SiteReport {
  bool present = false;  // any process sent stacks
  std::vector<SiteRow> rows;  // GPU time lost, then host time blocked, then kernel time
  std::vector<ProcessStacks> processes;
};

SiteReport ComputeSites(const model::TraceModel& model);

// The sites of one process over [start_ns, end_ns) (see the header).
struct WindowSites {
  bool windowed = false;      // false: the whole-run rows (charges not all kept)
  uint64_t charges_kept = 0;      // the process's timed charges (StackModel::charges)
  uint64_t charges_not_kept = 0;  // and those past the limit (charges_dropped)
  std::vector<SiteRow> rows;  // those that cost something in the window, ordered as SiteReport's
};
WindowSites SitesInWindow(const SiteReport& sites, uint64_t process_uid, uint64_t start_ns,
                          uint64_t end_ns);

// The index into sites.rows of the whole-run row of `s` (the same process
// and site frame), or sites.rows.size().
size_t WholeRunRow(const SiteReport& sites, const SiteRow& s);

// The sites of one process ranked by a measure, those with a non-zero one,
// at most n.
// kSyncIdle: GPU idle behind explicit syncs; kImplicitIdle: behind implicit
// ones; kHostCode: host-after plus host-before.
enum class SiteMeasure {
  kGpuLost, kSyncBlocked, kHostAfter, kHostBefore, kSyncIdle, kImplicitIdle, kHostCode
};
std::vector<const SiteRow*> TopSites(const std::vector<SiteRow>& rows, uint64_t process_uid,
                                     SiteMeasure measure, size_t n);
uint64_t SiteValue(const SiteRow& s, SiteMeasure measure);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_SITES_H_
