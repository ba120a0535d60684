#include "tools/analyses/sites.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/names.h"

namespace gpscope::analyses {
namespace {

// Native modules that are not the user's code (basename prefixes): the CUDA
// driver, runtime and libraries, NCCL, the interpreter, the frameworks'
// native libraries, the C/C++ runtime and gpscope itself.
constexpr std::string_view kLibraryModules[] = {
    "libcuda",  "libcudart", "libcublas",  "libcudnn",   "libnccl",     "libcupti",
    "libnvrtc", "libnvJitLink", "libnvjitlink", "libcufft", "libcurand", "libcusparse",
    "libcusolver", "libnvToolsExt", "libnvidia", "libtorch", "libc10",  "libshm",
    "libpython", "libc.so",  "libc-",      "libm.so",    "libstdc++",   "libgcc_s",
    "ld-linux", "libpthread", "libdl",     "librt",      "libgpscope",  "libjax",
    "libxla",   "libtensorflow", "libtriton", "libgomp",   "libomp",      "libiomp",
    "libmkl",   "libopenblas", "libnvshmem", "libnvperf", "libunwind", "libffi"};
// A native symbol longer than this is shown mangled (demangling is
// recursive; a hostile name must not exhaust the stack).
constexpr size_t kMaxDemangleBytes = 4096;
// z for a 95% interval.
constexpr double kZ95 = 1.96;

std::string Basename(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
bool StartsWith(std::string_view s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

bool InstalledPackage(std::string_view path) {
  return Contains(path, "/site-packages/") || Contains(path, "/dist-packages/");
}

bool StandardLibrary(std::string_view path) {
  if (StartsWith(path, "<frozen")) return true;
  for (std::string_view marker : {"/lib/python", "/lib64/python"}) {
    const size_t at = path.find(marker);
    if (at == std::string_view::npos) continue;
    // .../lib/python3.12/... (not .../lib/pythonista/...)
    const size_t v = at + marker.size();
    if (v + 1 < path.size() && path[v] == '3' && (path[v + 1] == '.' || path[v + 1] == '/')) {
      return true;
    }
  }
  return false;
}

bool LibraryModule(std::string_view path) {
  if (path.empty() || InstalledPackage(path) || StandardLibrary(path)) return true;
  const std::string base = Basename(path);
  for (std::string_view lib : kLibraryModules) {
    if (StartsWith(base, lib)) return true;
  }
  return false;
}

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

}  // namespace

bool IsUserFrame(const model::StackFrameText& f) {
  if (!f.defined) return false;
  if (f.kind == proto::FRAME_PYTHON) {
    return !f.file.empty() && !InstalledPackage(f.file) && !StandardLibrary(f.file);
  }
  if (f.kind == proto::FRAME_NATIVE) return !LibraryModule(f.file);
  return false;
}

SiteFrame DescribeFrame(const model::StackFrameText& f) {
  SiteFrame s;
  s.kind = f.kind;
  s.path = f.file;
  s.line = f.line;
  s.module_offset = f.module_offset;
  s.user = IsUserFrame(f);
  if (!f.defined) {
    s.text = absl::StrCat("(unknown frame ", f.id, ")");
    return s;
  }
  if (f.kind == proto::FRAME_PYTHON) {
    s.function = !f.qualname.empty() ? f.qualname : f.function;
    s.text = absl::StrCat(f.file.empty() ? "?" : f.file, ":", f.line,
                          s.function.empty() ? "" : " ", s.function);
    return s;
  }
  const std::string& symbol = !f.function.empty() ? f.function : f.symbol;
  s.function = symbol.size() <= kMaxDemangleBytes ? Demangle(symbol) : symbol;
  s.module = f.file;
  const std::string where =
      f.file.empty() ? Hex(f.module_offset)
                     : absl::StrCat(Basename(f.file), "+", Hex(f.module_offset));
  if (f.source_line != 0 && !f.source_file.empty()) {  // symbolized: file:line first
    s.path = f.source_file;
    s.line = f.source_line;
    s.text = absl::StrCat(f.source_file, ":", f.source_line, s.function.empty() ? "" : " ",
                          s.function, " (", where, ")");
    return s;
  }
  s.text = s.function.empty() ? where : absl::StrCat(s.function, " (", where, ")");
  return s;
}

namespace {

// The label of a site: "train.py:42 (train_step)", "main.cc:17 (step(int))"
// (a native frame symbolized offline), "gps_f (prog+0x1139)".
std::string SiteLabel(const SiteFrame& f) {
  const bool native_line = f.kind == proto::FRAME_NATIVE && f.line != 0;
  if ((f.kind == proto::FRAME_PYTHON || native_line) && !f.path.empty()) {
    return absl::StrCat(Basename(f.path), ":", f.line,
                        f.function.empty() ? "" : absl::StrCat(" (", f.function, ")"));
  }
  return f.text;
}

// The site frame of a stack: its innermost user frame; else its innermost
// Python frame; else its innermost frame. -1: no frames.
int SiteFrameOf(const model::WeightedStack& s, const std::vector<SiteFrame>& frames, bool* user) {
  *user = false;
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (frames[s.frames[i]].user) {
      *user = true;
      return static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (frames[s.frames[i]].kind == proto::FRAME_PYTHON) return static_cast<int>(i);
  }
  return s.frames.empty() ? -1 : 0;
}

}  // namespace

uint64_t SiteValue(const SiteRow& s, SiteMeasure measure) {
  switch (measure) {
    case SiteMeasure::kGpuLost:
      return s.gpu_lost_ns;
    case SiteMeasure::kSyncBlocked:
      return s.w.sync_blocked_ns;
    case SiteMeasure::kHostAfter:
      return s.w.gpu_host_after_ns;
    case SiteMeasure::kHostBefore:
      return s.w.gpu_host_before_ns;
    case SiteMeasure::kSyncIdle:
      return s.w.gpu_sync_idle_ns - s.w.gpu_implicit_idle_ns;
    case SiteMeasure::kImplicitIdle:
      return s.w.gpu_implicit_idle_ns;
    case SiteMeasure::kHostCode:
      return s.w.gpu_host_after_ns + s.w.gpu_host_before_ns;
  }
  return 0;
}

namespace {

// The order of SiteReport::rows: GPU time lost, host time blocked, kernel
// time, then the process and label.
bool SiteBefore(const SiteRow& a, const SiteRow& b) {
  return std::make_tuple(b.gpu_lost_ns, b.w.sync_blocked_ns, b.kernel_ns, a.process, a.label) <
         std::make_tuple(a.gpu_lost_ns, a.w.sync_blocked_ns, a.kernel_ns, b.process, b.label);
}

// One process's stacks -> its sites. `window`: each stack's weights in a
// window, parallel to sm.stacks (null: the stacks' whole-run weights);
// `edges` in EdgeBefore order.
std::vector<SiteRow> AggregateSites(const ProcessStacks& ps, const model::StackModel& sm,
                                    const std::vector<model::StackWeights>* window,
                                    const std::vector<model::StackEdge>& edges) {
  // Stacks -> sites, by the site frame's text (path:line function, or the
  // native frame), in first-seen order of stack id.
  std::map<std::string, size_t> by_key;
  std::vector<SiteRow> rows;
  absl::flat_hash_map<uint32_t, size_t> site_of_stack;
  std::vector<uint64_t> top_lost;
  std::vector<const model::WeightedStack*> top_of;  // each site's representative stack
  for (size_t si = 0; si < sm.stacks.size(); ++si) {
    const model::WeightedStack& s = sm.stacks[si];
    const model::StackWeights& sw = window != nullptr ? (*window)[si] : s.w;
    bool user = false;
    const int at = SiteFrameOf(s, ps.frames, &user);
    SiteFrame frame;
    if (at >= 0) {
      frame = ps.frames[s.frames[static_cast<size_t>(at)]];
    } else {
      frame.text = s.defined ? "(empty stack)" : absl::StrCat("(unknown stack ", s.id, ")");
    }
    auto [it, inserted] = by_key.try_emplace(frame.text, rows.size());
    if (inserted) {
      SiteRow r;
      r.process = ps.process;
      r.process_uid = ps.process_uid;
      r.frame = frame;
      r.user = user;
      r.label = SiteLabel(frame);
      rows.push_back(std::move(r));
      top_lost.push_back(0);
      top_of.push_back(nullptr);
    }
    SiteRow& r = rows[it->second];
    site_of_stack[s.id] = it->second;
    r.w += sw;
    ++r.stacks;
    // The representative stack: most GPU time lost, then host blocked,
    // then sampled kernel time, then the lower id.
    const uint64_t weight =
        sw.gpu_lost_ns() + sw.sync_blocked_ns + static_cast<uint64_t>(sw.sampled_kernel_ns);
    if (r.top_stack == 0 || weight > top_lost[it->second]) {
      top_lost[it->second] = weight;
      r.top_stack = s.id;
      r.truncated = s.truncated;
      top_of[it->second] = &s;
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {  // frames copied once per site
    for (uint32_t f : top_of[i]->frames) rows[i].stack.push_back(ps.frames[f]);
  }
  // Edges: the next launch after a site's syncs, the call before a
  // site's launches (the largest GPU idle between them).
  for (const model::StackEdge& e : edges) {
    if (e.gaps == 0) continue;  // in a window: a gap that began before it
    auto from = site_of_stack.find(e.from_stack);
    auto to = site_of_stack.find(e.to_stack);
    if (from == site_of_stack.end() || to == site_of_stack.end()) continue;
    SiteRow& before = rows[from->second];
    SiteRow& after = rows[to->second];
    const double host_ns = static_cast<double>(e.host_ns) / static_cast<double>(e.gaps);
    if (before.next_label.empty()) {
      before.next_label = after.label;
      before.next_gaps = e.gaps;
      before.next_host_ns = host_ns;
      before.next_gpu_host_ns = e.gpu_host_ns;
    }
    if (after.prev_label.empty()) {
      after.prev_label = before.label;
      after.prev_gaps = e.gaps;
      after.prev_host_ns = host_ns;
    }
  }
  // Kernel time by site from the sampled launches (see the header).
  const double n = static_cast<double>(sm.samples);
  for (SiteRow& r : rows) {
    r.gpu_lost_ns = r.w.gpu_lost_ns();
    if (sm.samples < 2 || sm.sampled_kernel_ns <= 0 || r.w.samples == 0) continue;
    const double R = r.w.sampled_kernel_ns / sm.sampled_kernel_ns;
    const double ss = std::max(0.0, r.w.sampled_kernel_ns2 * (1 - 2 * R) +
                                        R * R * sm.sampled_kernel_ns2);
    const double mean_x = sm.sampled_kernel_ns / n;
    const double se = std::sqrt(ss / (n * (n - 1))) / mean_x;
    r.has_kernel_estimate = true;
    r.kernel_share = R;
    r.kernel_ns = R * static_cast<double>(ps.kernel_ns);
    r.kernel_error_ns = kZ95 * se * static_cast<double>(ps.kernel_ns);
  }
  return rows;
}

}  // namespace

SiteReport ComputeSites(const model::TraceModel& model) {
  SiteReport report;
  for (size_t pi = 0; pi < model.processes.size(); ++pi) {
    const model::ProcessModel& p = model.processes[pi];
    const model::StackModel& sm = p.stacks;
    if (!sm.present) continue;
    report.present = true;
    ProcessStacks ps;
    ps.process = pi;
    ps.process_uid = p.process_uid;
    ps.model = &sm;
    for (size_t gi : p.gpus) {
      if (gi < model.gpus.size()) ps.kernel_ns += model.gpus[gi].kernel_ns;
    }
    ps.frames.reserve(sm.frames.size());
    for (const model::StackFrameText& f : sm.frames) ps.frames.push_back(DescribeFrame(f));
    for (SiteRow& r : AggregateSites(ps, sm, nullptr, sm.edges)) report.rows.push_back(std::move(r));
    report.processes.push_back(std::move(ps));
  }
  std::stable_sort(report.rows.begin(), report.rows.end(), SiteBefore);
  return report;
}

WindowSites SitesInWindow(const SiteReport& sites, uint64_t process_uid, uint64_t start_ns,
                          uint64_t end_ns) {
  WindowSites out;
  const ProcessStacks* ps = nullptr;
  for (const ProcessStacks& p : sites.processes) {
    if (p.process_uid == process_uid) ps = &p;
  }
  if (ps == nullptr || ps->model == nullptr) return out;
  const model::StackModel& sm = *ps->model;
  out.charges_kept = sm.charges.size();
  out.charges_not_kept = sm.charges_dropped;
  if (sm.charges_dropped > 0) {  // some times were not kept: the whole run's
    for (const SiteRow& r : sites.rows) {
      if (r.process_uid == process_uid) out.rows.push_back(r);
    }
    return out;
  }
  out.windowed = true;
  // Each stack's charges inside the window: the share of its time inside,
  // its counts when it starts inside (stack_model.h).
  std::vector<model::StackWeights> weights(sm.stacks.size());
  absl::flat_hash_map<uint64_t, model::StackEdge> edges;
  const uint64_t from_ns = start_ns - std::min(start_ns, sm.longest_charge_ns);
  auto c = std::lower_bound(sm.charges.begin(), sm.charges.end(), from_ns,
                            [](const model::StackCharge& x, uint64_t t) { return x.start_ns < t; });
  for (; c != sm.charges.end() && c->start_ns < end_ns; ++c) {
    const uint64_t a = std::max(c->start_ns, start_ns), b = std::min(c->end_ns(), end_ns);
    const uint64_t ns = b > a ? b - a : 0;
    const bool counted = c->start_ns >= start_ns;
    if (ns == 0 && !counted) continue;
    auto s = std::lower_bound(sm.stacks.begin(), sm.stacks.end(), c->stack,
                              [](const model::WeightedStack& x, uint32_t id) { return x.id < id; });
    if (s == sm.stacks.end() || s->id != c->stack) continue;  // every charged stack is there
    weights[static_cast<size_t>(s - sm.stacks.begin())].Add(*c, ns, counted);
    if ((c->flags & model::StackCharge::kEdge) == 0) continue;
    model::StackEdge e;
    const bool after = c->kind == model::StackCharge::kGapHostAfter;
    e.from_stack = after ? c->stack : c->other;
    e.to_stack = after ? c->other : c->stack;
    model::StackEdge& sum = edges.try_emplace(e.key(), e).first->second;
    sum.gpu_host_ns += ns;
    if (counted) {
      ++sum.gaps;
      sum.host_ns += c->host_between_ns;
    }
  }
  std::vector<model::StackEdge> ordered;
  ordered.reserve(edges.size());
  for (const auto& [key, e] : edges) ordered.push_back(e);
  std::sort(ordered.begin(), ordered.end(), model::EdgeBefore);
  for (SiteRow& r : AggregateSites(*ps, sm, &weights, ordered)) {
    if (r.gpu_lost_ns > 0 || r.w.sync_calls > 0 || r.w.sync_blocked_ns > 0) {
      out.rows.push_back(std::move(r));
    }
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), SiteBefore);
  return out;
}

size_t WholeRunRow(const SiteReport& sites, const SiteRow& s) {
  for (size_t i = 0; i < sites.rows.size(); ++i) {
    const SiteRow& r = sites.rows[i];
    if (r.process == s.process && r.frame.text == s.frame.text) return i;
  }
  return sites.rows.size();
}

std::vector<const SiteRow*> TopSites(const std::vector<SiteRow>& rows, uint64_t process_uid,
                                     SiteMeasure measure, size_t n) {
  std::vector<const SiteRow*> out;
  for (const SiteRow& s : rows) {
    if (s.process_uid == process_uid && SiteValue(s, measure) > 0) out.push_back(&s);
  }
  std::stable_sort(out.begin(), out.end(), [measure](const SiteRow* a, const SiteRow* b) {
    return SiteValue(*a, measure) > SiteValue(*b, measure);
  });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace gpscope::analyses
