// tools/analyses/diff.cc: see diff.h.
#include "tools/analyses/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/model/log_histogram.h"

namespace gpscope::analyses {
namespace {

// Run-level numbers of one summary (see diff.h for how GPUs combine).
std::vector<DiffNumber> Numbers(const DiffRun& r) {
  double window = 0, busy = 0, gap = 0, comm = 0, overlap = 0;
  double sm = 0, sm_window = 0, dram = 0, dram_window = 0;
  double kernel_ns = 0, kernel_count = 0, copy_ns = 0, copy_bytes = 0;
  RunValue step_p50, step_p95;
  model::LogHistogram kernels;
  for (const GpuReport& g : r.report->gpus) {
    const double w = g.traced_window_ns();
    window += w;
    busy += g.busy_ns;
    gap += g.gap_idle.total_ns();
    comm += g.comm_busy_ns;
    overlap += g.comm_overlap_ns;
    if (g.sm_util.source != Utilization::Source::kUnavailable) {
      sm += g.sm_util.percent * w;
      sm_window += w;
    }
    if (g.dram_util.source != Utilization::Source::kUnavailable) {
      dram += g.dram_util.percent * w;
      dram_window += w;
    }
    kernel_ns += static_cast<double>(g.gpu->kernel_ns);
    kernel_count += static_cast<double>(g.kernel_count);
    for (const CopyRow& c : g.copies) {
      copy_ns += static_cast<double>(c.duration_ns);
      copy_bytes += static_cast<double>(c.bytes);
    }
    kernels.Merge(g.gpu->kernel_duration_ns);
    if (g.step_period.count > 0) {
      step_p50 = {true, std::max(step_p50.value, g.step_period.p50)};
      step_p95 = {true, std::max(step_p95.value, g.step_period.p95)};
    }
  }
  auto ratio = [](double num, double den) { return RunValue{den > 0, den > 0 ? num / den : 0}; };
  const bool any = !r.report->gpus.empty();
  return {
      {"step_p50_ns", "ns", step_p50, {}},
      {"step_p95_ns", "ns", step_p95, {}},
      {"busy_share", "ratio", ratio(busy, window), {}},
      {"idle_gap_share", "ratio", ratio(gap, window), {}},
      {"sm_util_pct", "percent", ratio(sm, sm_window), {}},
      {"dram_bw_util_pct", "percent", ratio(dram, dram_window), {}},
      {"kernel_p50_ns", "ns", {!kernels.empty(), kernels.Percentile(50)}, {}},
      {"kernel_p95_ns", "ns", {!kernels.empty(), kernels.Percentile(95)}, {}},
      {"comm_share", "ratio", ratio(comm, comm > 0 ? window : 0), {}},
      {"comm_overlap", "ratio", ratio(overlap, comm), {}},
      {"kernel_ns", "ns", {any, kernel_ns}, {}},
      {"kernel_count", "count", {any, kernel_count}, {}},
      {"copy_ns", "ns", {any, copy_ns}, {}},
      {"copy_bytes", "bytes", {any, copy_bytes}, {}},
  };
}

std::map<std::string, KernelTotals> KernelsByName(const DiffRun& r) {
  std::map<std::string, KernelTotals> out;
  for (const model::GpuModel& g : r.model->gpus) {
    for (const model::KernelStats& k : g.kernels) {
      KernelTotals& t = out[k.name];
      t.count += k.duration_ns.count();
      t.total_ns += k.duration_ns.sum();
    }
  }
  return out;
}

using CopyKey = std::pair<std::string, std::string>;

std::map<CopyKey, CopyRow> CopiesByKind(const DiffRun& r) {
  std::map<CopyKey, CopyRow> out;
  for (const GpuReport& g : r.report->gpus) {
    for (const std::vector<CopyRow>* rows : {&g.copies, &g.memsets}) {
      for (const CopyRow& c : *rows) {
        CopyRow& t = out[{c.direction, c.memory}];
        t.count += c.count;
        t.bytes += c.bytes;
        t.duration_ns += c.duration_ns;
      }
    }
  }
  return out;
}

std::string FindingKey(const Finding& f) {
  return absl::StrCat(f.rule, "|", f.gpu, "|", f.process);
}

FindingRef Ref(const Finding& f) {
  FindingRef ref;
  ref.rule = f.rule;
  ref.gpu = f.gpu;
  ref.process = f.process;
  ref.scope = f.scope;
  ref.severity = f.severity;
  ref.cost_ns = f.cost_ns;
  return ref;
}

}  // namespace

double Change(const RunValue& base, const RunValue& now) {
  if (!base.known || !now.known || base.value == 0) return std::nan("");
  return (now.value - base.value) / base.value;
}

RunDiff ComputeDiff(const DiffRun& base, const DiffRun& now, const DiffOptions& options) {
  RunDiff d;
  d.numbers = Numbers(base);
  const std::vector<DiffNumber> after = Numbers(now);
  for (size_t i = 0; i < d.numbers.size(); ++i) d.numbers[i].now = after[i].base;

  // Kernels: every name of either run, largest total first.
  const std::map<std::string, KernelTotals> kb = KernelsByName(base);
  const std::map<std::string, KernelTotals> kn = KernelsByName(now);
  std::vector<KernelDiff> all;
  for (const auto& [name, t] : kb) {
    auto it = kn.find(name);
    all.push_back({name, it == kn.end() ? "vanished" : "changed", t,
                   it == kn.end() ? KernelTotals{} : it->second});
  }
  for (const auto& [name, t] : kn) {
    if (kb.count(name) == 0) all.push_back({name, "new", {}, t});
  }
  for (const KernelDiff& k : all) {
    d.new_kernels += k.status == "new" ? 1 : 0;
    d.vanished_kernels += k.status == "vanished" ? 1 : 0;
  }
  std::sort(all.begin(), all.end(), [](const KernelDiff& a, const KernelDiff& b) {
    const uint64_t ta = std::max(a.base.total_ns, a.now.total_ns);
    const uint64_t tb = std::max(b.base.total_ns, b.now.total_ns);
    return ta != tb ? ta > tb : a.name < b.name;
  });
  if (all.size() > options.top_kernels) all.resize(options.top_kernels);
  d.kernels = std::move(all);

  // Copies.
  const auto cb = CopiesByKind(base);
  const auto cn = CopiesByKind(now);
  std::map<CopyKey, CopyDiff> copies;
  for (const auto* side : {&cb, &cn}) {
    const bool is_base = side == &cb;
    for (const auto& [key, c] : *side) {
      CopyDiff& x = copies[key];
      x.direction = key.first;
      x.memory = key.second;
      (is_base ? x.base_count : x.new_count) = c.count;
      (is_base ? x.base_bytes : x.new_bytes) = c.bytes;
      (is_base ? x.base_ns : x.new_ns) = c.duration_ns;
    }
  }
  for (auto& [key, c] : copies) d.copies.push_back(c);
  std::sort(d.copies.begin(), d.copies.end(), [](const CopyDiff& a, const CopyDiff& b) {
    return std::max(a.base_ns, a.new_ns) > std::max(b.base_ns, b.new_ns);
  });

  // Findings, matched by rule and GPU/process index.
  std::map<std::string, const Finding*> fb, fn;
  for (const Finding& f : *base.findings) fb.emplace(FindingKey(f), &f);
  for (const Finding& f : *now.findings) fn.emplace(FindingKey(f), &f);
  for (const auto& [key, f] : fn) {
    auto it = fb.find(key);
    if (it == fb.end()) {
      d.appeared.push_back(Ref(*f));
    } else if (it->second->severity != f->severity) {
      FindingRef ref = Ref(*f);
      ref.base_severity = it->second->severity;
      d.changed.push_back(ref);
    }
  }
  for (const auto& [key, f] : fb) {
    if (fn.count(key) == 0) d.disappeared.push_back(Ref(*f));
  }

  // Regressions.
  const double pct = options.fail_on_regression_pct.value_or(kDefaultRegressionPct);
  auto grew = [&](const DiffNumber& n) {
    const double change = Change(n.base, n.now);
    return std::isfinite(change) && change * 100 > pct;
  };
  bool steps = false;
  for (const DiffNumber& n : d.numbers) {
    if ((n.key == "step_p50_ns" || n.key == "step_p95_ns") && n.base.known && n.now.known) {
      steps = true;
      if (grew(n)) d.regressions.push_back({n.key, n.unit, n.base, n.now, pct, false, {}});
    }
  }
  for (const DiffNumber& n : d.numbers) {
    if (n.key == "kernel_ns" && !steps && grew(n)) {
      d.regressions.push_back({n.key, n.unit, n.base, n.now, pct, true, {}});
    }
  }
  for (const FindingRef& f : d.appeared) {
    if (f.severity >= Severity::kWarning) {
      Regression r;
      r.threshold_pct = pct;
      r.finding = f;
      d.regressions.push_back(r);
    }
  }
  return d;
}

}  // namespace gpscope::analyses
