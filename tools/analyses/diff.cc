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

// What one run's variance says: coefficient of variation and count of the
// step periods (slowest GPU) and of all kernel durations.
struct Spread {
  double step_cv = 0;
  uint64_t step_n = 0;
  double kernel_cv = 0;
  uint64_t kernel_n = 0;
};

double Cv(double mean, double stddev) { return mean > 0 ? stddev / mean : 0; }

// Two standard errors of the relative difference of two means.
double TwoSe(double cv_b, uint64_t n_b, double cv_n, uint64_t n_n) {
  double v = 0;
  if (n_b > 0) v += cv_b * cv_b / static_cast<double>(n_b);
  if (n_n > 0) v += cv_n * cv_n / static_cast<double>(n_n);
  return 2 * std::sqrt(v);
}

// The most steps of any GPU of the run (0 without steps).
uint64_t Steps(const DiffRun& r) {
  uint64_t steps = 0;
  for (const GpuReport& g : r.report->gpus) {
    if (g.has_steps) steps = std::max(steps, g.step_count);
  }
  return steps;
}

// Run-level numbers of one summary (see diff.h for how GPUs combine);
// amounts divided by `steps` when it is not 0.
std::vector<DiffNumber> Numbers(const DiffRun& r, uint64_t steps, Spread* spread) {
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
      if (!step_p50.known || g.step_period.p50 > step_p50.value) {
        spread->step_cv = Cv(g.step_period.mean, g.step_period.stddev);
        spread->step_n = g.step_period.count;
      }
      step_p50 = {true, std::max(step_p50.value, g.step_period.p50)};
      step_p95 = {true, std::max(step_p95.value, g.step_period.p95)};
    }
  }
  spread->kernel_cv = Cv(kernels.mean(), kernels.stddev());
  spread->kernel_n = kernels.count();
  auto ratio = [](double num, double den) { return RunValue{den > 0, den > 0 ? num / den : 0}; };
  const bool any = !r.report->gpus.empty();
  const double per = steps > 0 ? static_cast<double>(steps) : 1;
  const bool ps = steps > 0;
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
      {"kernel_ns", "ns", {any, kernel_ns / per}, {}, ps},
      {"kernel_count", "count", {any, kernel_count / per}, {}, ps},
      {"copy_ns", "ns", {any, copy_ns / per}, {}, ps},
      {"copy_bytes", "bytes", {any, copy_bytes / per}, {}, ps},
  };
}

// |now - base| beyond noise x max(|base|, |now|) (both known).
bool Beyond(double base, double now, double noise) {
  return std::fabs(now - base) > noise * std::max(std::fabs(base), std::fabs(now));
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

const std::vector<DiffMetric>& DiffMetrics() {
  static const std::vector<DiffMetric>* const kMetrics = new std::vector<DiffMetric>{
      {"step_time", "step_p50_ns", true, false, "median step time"},
      {"step_p95", "step_p95_ns", true, false, "P95 step time"},
      {"kernel_time", "kernel_ns", true, false, "kernel time (per step, else total)"},
      {"kernel_p50", "kernel_p50_ns", true, false, "median kernel duration"},
      {"kernel_p95", "kernel_p95_ns", true, false, "P95 kernel duration"},
      {"idle_share", "idle_gap_share", true, true, "idle-gap share (points)"},
      {"busy_share", "busy_share", false, true, "GPU busy share, a fall (points)"},
      {"comm_share", "comm_share", true, true, "communication share (points)"},
      {"copy_time", "copy_ns", true, false, "copy time (per step, else total)"},
  };
  return *kMetrics;
}

const DiffMetric* FindDiffMetric(std::string_view name) {
  for (const DiffMetric& m : DiffMetrics()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

RunDiff ComputeDiff(const DiffRun& base, const DiffRun& now, const DiffOptions& options) {
  RunDiff d;
  d.base_steps = Steps(base);
  d.new_steps = Steps(now);
  d.per_step = d.base_steps > 0 && d.new_steps > 0;
  Spread sb, sn;
  d.numbers = Numbers(base, d.per_step ? d.base_steps : 0, &sb);
  const std::vector<DiffNumber> after = Numbers(now, d.per_step ? d.new_steps : 0, &sn);
  d.step_noise = TwoSe(sb.step_cv, sb.step_n, sn.step_cv, sn.step_n);
  const double kernel_noise = TwoSe(sb.kernel_cv, sb.kernel_n, sn.kernel_cv, sn.kernel_n);
  for (size_t i = 0; i < d.numbers.size(); ++i) {
    DiffNumber& n = d.numbers[i];
    n.now = after[i].base;
    if (n.key == "kernel_p50_ns" || n.key == "kernel_p95_ns") {
      n.noise = std::max(kernel_noise, kHistogramResolution);
    } else if (n.key == "step_p50_ns" || n.key == "step_p95_ns") {
      n.noise = std::max(d.step_noise, kHistogramResolution);
    } else if (n.per_step || n.unit == "ratio" || n.unit == "percent") {
      n.noise = d.step_noise;
    } else {
      n.noise = 0;  // a whole-run total: no per-step variance to judge it by
    }
    n.significant = n.base.known && n.now.known && Beyond(n.base.value, n.now.value, n.noise);
  }

  // Kernels: every name of either run, the larger time on the basis first.
  const double steps_b = d.per_step ? static_cast<double>(d.base_steps) : 1;
  const double steps_n = d.per_step ? static_cast<double>(d.new_steps) : 1;
  const double row_step_term = d.per_step ? d.step_noise / 2 : 0;
  std::map<std::string, const model::LogHistogram*> hb, hn;
  for (const auto* side : {&base, &now}) {
    for (const model::GpuModel& g : side->model->gpus) {
      for (const model::KernelStats& k : g.kernels) {
        (side == &base ? hb : hn).emplace(k.name, &k.duration_ns);
      }
    }
  }
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
  for (KernelDiff& k : all) {
    k.base_value = static_cast<double>(k.base.total_ns) / steps_b;
    k.now_value = static_cast<double>(k.now.total_ns) / steps_n;
    k.base_calls = static_cast<double>(k.base.count) / steps_b;
    k.now_calls = static_cast<double>(k.now.count) / steps_n;
    if (k.status == "changed") {
      // The kernel's own duration spread (the first GPU's histogram of the
      // name stands for the name), plus the step term per step.
      const model::LogHistogram* a = hb[k.name];
      const model::LogHistogram* b = hn[k.name];
      const double se = TwoSe(Cv(a->mean(), a->stddev()), a->count(),
                              Cv(b->mean(), b->stddev()), b->count()) / 2;
      k.noise = 2 * std::sqrt(se * se + row_step_term * row_step_term);
      if (!Beyond(k.base_calls, k.now_calls, k.noise) &&
          !Beyond(k.base_value, k.now_value, k.noise)) {
        k.status = "same";
      }
    }
    d.new_kernels += k.status == "new" ? 1 : 0;
    d.vanished_kernels += k.status == "vanished" ? 1 : 0;
    d.changed_kernels += k.status == "changed" ? 1 : 0;
  }
  std::sort(all.begin(), all.end(), [](const KernelDiff& a, const KernelDiff& b) {
    const double ta = std::max(a.base_value, a.now_value);
    const double tb = std::max(b.base_value, b.now_value);
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
  for (auto& [key, c] : copies) {
    c.base_value = static_cast<double>(c.base_ns) / steps_b;
    c.now_value = static_cast<double>(c.new_ns) / steps_n;
    d.copies.push_back(c);
  }
  std::stable_sort(d.copies.begin(), d.copies.end(), [](const CopyDiff& a, const CopyDiff& b) {
    return std::max(a.base_value, a.now_value) > std::max(b.base_value, b.now_value);
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

  // Regressions: the watched metrics that got worse beyond the threshold
  // and their noise floor. Without steps in a run, kernel time on totals
  // stands in for the step times (once).
  d.metrics = options.metrics;
  d.threshold_pct = options.fail_on_regression_pct.value_or(kDefaultRegressionPct);
  auto number = [&d](const char* key) -> const DiffNumber* {
    for (const DiffNumber& n : d.numbers) {
      if (n.key == key) return &n;
    }
    return nullptr;
  };
  bool stood_in = false;
  for (const std::string& name : options.metrics) {
    const DiffMetric* m = FindDiffMetric(name);
    if (m == nullptr) continue;  // the command rejects unknown names
    const DiffNumber* n = number(m->key);
    bool stand_in = false;
    const bool step_metric = std::string_view(m->key).substr(0, 5) == "step_";
    if (n != nullptr && step_metric && !(n->base.known && n->now.known)) {
      if (stood_in) continue;
      stood_in = stand_in = true;
      n = number("kernel_ns");
    }
    if (n == nullptr || !n->base.known || !n->now.known || !n->significant) continue;
    const double worse = m->higher_is_worse ? n->now.value - n->base.value
                                            : n->base.value - n->now.value;
    if (!(worse > 0)) continue;
    double by = 0;
    if (m->share) {
      by = 100 * worse;  // points
    } else if (n->base.value > 0) {
      by = 100 * worse / n->base.value;
    } else {
      continue;  // from nothing: no percentage
    }
    if (by > d.threshold_pct) {
      d.regressions.push_back({stand_in ? "kernel_time" : m->name, *n, d.threshold_pct, m->share,
                               stand_in});
    }
  }
  return d;
}

}  // namespace gpscope::analyses
