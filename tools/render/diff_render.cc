// tools/render/diff_render.cc: see diff_render.h.
#include "tools/render/diff_render.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/analyses/names.h"
#include "tools/render/text_format.h"

namespace gpscope::render {
namespace {

using analyses::Change;
using analyses::CopyDiff;
using analyses::DiffNumber;
using analyses::DiffOptions;
using analyses::FindingRef;
using analyses::KernelDiff;
using analyses::KernelTotals;
using analyses::Regression;
using analyses::RunDiff;
using analyses::RunValue;

// ------------------------------------------------------------------- text --

std::string Value(const std::string& unit, const RunValue& v) {
  if (!v.known) return "-";
  if (unit == "ns") return Time(v.value);
  if (unit == "ratio") return Percent(v.value);
  if (unit == "percent") return absl::StrFormat("%.1f%%", v.value);
  if (unit == "bytes") return Bytes(v.value);
  if (v.value != std::floor(v.value)) return absl::StrFormat("%.4g", v.value);  // per step
  return Count(v.value);
}

// "+12.0%" beyond the noise floor, "~+0.3%" within it, "same" when equal.
std::string ChangeText(const std::string& unit, const RunValue& base, const RunValue& now,
                       bool significant) {
  if (!base.known || !now.known) return "";
  if (base.value == now.value) return "same";
  std::string c;
  if (unit == "ratio") {
    c = absl::StrFormat("%+.1f pt", 100 * (now.value - base.value));
  } else if (unit == "percent") {
    c = absl::StrFormat("%+.1f pt", now.value - base.value);
  } else {
    const double r = Change(base, now);
    c = std::isfinite(r) ? absl::StrFormat("%+.1f%%", 100 * r) : "new";
  }
  return significant ? c : absl::StrCat("~", c);
}

std::string Label(const DiffNumber& n) {
  static const std::map<std::string, std::string>* const kLabels =
      new std::map<std::string, std::string>{
          {"step_p50_ns", "step time P50"},  {"step_p95_ns", "step time P95"},
          {"busy_share", "GPU busy share"},  {"idle_gap_share", "idle-gap share"},
          {"sm_util_pct", "SM util"},        {"dram_bw_util_pct", "memory BW util"},
          {"kernel_p50_ns", "kernel P50"},   {"kernel_p95_ns", "kernel P95"},
          {"comm_share", "comm share"},      {"comm_overlap", "comm overlap"},
          {"kernel_ns", "kernel time"},      {"kernel_count", "kernels"},
          {"copy_ns", "copy time"},          {"copy_bytes", "copy bytes"}};
  auto it = kLabels->find(n.key);
  const std::string label = it != kLabels->end() ? it->second : n.key;
  return n.per_step ? absl::StrCat(label, "/step") : label;
}

std::string Side(const DiffSide& s) {
  return absl::StrCat(absl::StrJoin(s.files, ","), " (", s.gpus,
                      s.gpus == 1 ? " GPU, " : " GPUs, ", Count(s.events), " events)");
}

std::string BasisText(const RunDiff& d) {
  if (d.per_step) {
    return absl::StrCat("per step (base ", Count(d.base_steps), " steps, new ",
                        Count(d.new_steps), "): amounts are divided by each run's steps");
  }
  const char* why = d.base_steps == 0 && d.new_steps == 0 ? "neither run has steps"
                    : d.base_steps == 0                  ? "base has no steps"
                                                         : "new has no steps";
  return absl::StrCat("whole-run totals (", why, ")");
}

std::string NoiseText(const RunDiff& d) {
  if (d.step_noise > 0) {
    return absl::StrFormat(
        "+-%.2f%% (2 standard errors of mean step time; percentiles >= %.1f%%); ~: within it",
        100 * d.step_noise, 100 * analyses::kHistogramResolution);
  }
  return absl::StrFormat("0 (no step variance: any difference counts; percentiles >= %.1f%%)",
                         100 * analyses::kHistogramResolution);
}

// A per-step amount ("12.3" calls) or a whole-run count.
std::string Calls(double calls, bool per_step) {
  return per_step ? absl::StrFormat("%.4g", calls) : Count(calls);
}

}  // namespace

std::string RegressionText(const Regression& r) {
  const DiffNumber& n = r.number;
  const std::string what = r.stand_in ? "total kernel time" : Label(n);
  std::string text;
  if (r.share) {
    const double points = 100 * (n.now.value - n.base.value);
    text = absl::StrFormat("%s: %s %s %.1f pt (%s -> %s), more than %g pt", r.metric, what,
                           points > 0 ? "rose" : "fell", std::fabs(points),
                           Value(n.unit, n.base), Value(n.unit, n.now), r.threshold);
  } else {
    text = absl::StrFormat("%s: %s grew %.1f%% (%s -> %s), more than %g%%", r.metric, what,
                           100 * Change(n.base, n.now), Value(n.unit, n.base),
                           Value(n.unit, n.now), r.threshold);
  }
  if (n.noise > 0) absl::StrAppend(&text, absl::StrFormat(" and the noise floor %.1f%%", 100 * n.noise));
  if (r.stand_in) absl::StrAppend(&text, " (no steps in a run: stands in for step time)");
  return text;
}

std::string RenderDiffText(const RunDiff& d, const DiffSide& base, const DiffSide& now) {
  std::string out;
  auto line = [&out](const std::string& s) { absl::StrAppend(&out, s, "\n"); };
  line(absl::StrCat("gpscope diff"));
  line(analyses::Truncate(absl::StrCat("  base  ", Side(base)), 100));
  line(analyses::Truncate(absl::StrCat("  new   ", Side(now)), 100));
  if (!base.partial_text.empty()) line(absl::StrCat("  base: ", base.partial_text));
  if (!now.partial_text.empty()) line(absl::StrCat("  new: ", now.partial_text));
  line(analyses::Truncate(absl::StrCat("  basis ", BasisText(d)), 100));
  line(analyses::Truncate(absl::StrCat("  noise ", NoiseText(d)), 100));
  line("");
  line(absl::StrFormat("  %-18s %14s %14s %12s", "", "base", "new", "change"));
  for (const DiffNumber& n : d.numbers) {
    if (!n.base.known && !n.now.known) continue;
    line(absl::StrFormat("  %-18s %14s %14s %12s", Label(n), Value(n.unit, n.base),
                         Value(n.unit, n.now), ChangeText(n.unit, n.base, n.now, n.significant)));
  }
  line("");
  line(absl::StrCat("TOP KERNELS by ", d.per_step ? "time per step" : "total time",
                    " (either run; ", d.changed_kernels, " changed, ", d.new_kernels, " new, ",
                    d.vanished_kernels, " vanished names in all)"));
  line(absl::StrFormat("  %3s %10s %10s %8s %9s %9s %s", "#", "base", "new", "change",
                       d.per_step ? "calls b" : "count b", d.per_step ? "calls n" : "count n",
                       "status"));
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const KernelDiff& k = d.kernels[i];
    const RunValue b{k.base.count > 0, k.base_value}, n{k.now.count > 0, k.now_value};
    line(absl::StrFormat("  %3d %10s %10s %8s %9s %9s %s", i + 1, Value("ns", b),
                         Value("ns", n), ChangeText("ns", b, n, k.status != "same"),
                         Calls(k.base_calls, d.per_step), Calls(k.now_calls, d.per_step),
                         k.status));
    line(absl::StrCat("      ", analyses::Truncate(analyses::CompactKernelName(k.name), 94)));
  }
  if (!d.copies.empty()) {
    const double sb = d.per_step ? static_cast<double>(d.base_steps) : 1;
    const double sn = d.per_step ? static_cast<double>(d.new_steps) : 1;
    line("");
    line(d.per_step ? "COPIES (per step)" : "COPIES (whole run)");
    line(absl::StrFormat("    %-7s %-9s %10s %10s %10s %10s %8s", "kind", "memory", "bytes b",
                         "bytes n", "time b", "time n", "change"));
    for (const CopyDiff& c : d.copies) {
      const RunValue b{c.base_count > 0, c.base_value}, n{c.new_count > 0, c.now_value};
      const bool beyond = std::fabs(n.value - b.value) >
                          d.step_noise * std::max(std::fabs(b.value), std::fabs(n.value));
      line(absl::StrFormat("    %-7s %-9s %10s %10s %10s %10s %8s", c.direction,
                           analyses::Truncate(c.memory, 9),
                           Bytes(static_cast<double>(c.base_bytes) / sb),
                           Bytes(static_cast<double>(c.new_bytes) / sn), Value("ns", b),
                           Value("ns", n), ChangeText("ns", b, n, beyond)));
    }
  }
  line("");
  line(absl::StrCat("FINDINGS: ", d.appeared.size(), " appeared, ", d.disappeared.size(),
                    " disappeared, ", d.changed.size(),
                    " changed severity (listed; a finding is never a regression)"));
  auto finding = [&line](const char* what, const FindingRef& f) {
    line(analyses::Truncate(absl::StrCat("  ", what, " ", analyses::SeverityName(f.severity), " ",
                                         f.rule, " (", f.scope, ")"),
                            100));
  };
  for (const FindingRef& f : d.appeared) finding("+", f);
  for (const FindingRef& f : d.disappeared) finding("-", f);
  for (const FindingRef& f : d.changed) {
    line(analyses::Truncate(absl::StrCat("  ~ ", f.rule, ": ", analyses::SeverityName(f.base_severity),
                                         " -> ", analyses::SeverityName(f.severity), " (", f.scope,
                                         ")"),
                            100));
  }
  line("");
  const std::string watch = absl::StrFormat("watching %s, worse by more than %g%% (pt for shares)",
                                            absl::StrJoin(d.metrics, ","), d.threshold_pct);
  if (d.regressions.empty()) {
    line(analyses::Truncate(absl::StrCat("REGRESSIONS: none (", watch, ")"), 100));
  } else {
    line(analyses::Truncate(absl::StrCat("REGRESSIONS (", d.regressions.size(), "; ", watch, ")"),
                            100));
    for (const Regression& r : d.regressions) {
      line(analyses::Truncate(absl::StrCat("  ", RegressionText(r)), 100));
    }
  }
  return out;
}

namespace {

// ------------------------------------------------------------------- json --

void MaybeDouble(JsonWriter& j, bool known, double v) {
  if (known && std::isfinite(v)) {
    j.Double(v);
  } else {
    j.Null();
  }
}

void Totals(JsonWriter& j, const KernelTotals& t, bool per_step, double calls, double ns) {
  j.BeginObject().Key("count").Uint(t.count).Key("total_ns").Uint(t.total_ns);
  j.Key("mean_ns").Double(t.mean_ns());
  j.Key("calls_per_step");
  MaybeDouble(j, per_step, calls);
  j.Key("ns_per_step");
  MaybeDouble(j, per_step, ns);
  j.EndObject();
}

void FindingRefJson(JsonWriter& j, const FindingRef& f, bool changed) {
  j.BeginObject().Key("rule").String(f.rule);
  j.Key("gpu").IndexOrNull(f.gpu).Key("process").IndexOrNull(f.process);
  j.Key("scope").String(f.scope);
  if (changed) j.Key("base_severity").String(analyses::SeverityName(f.base_severity));
  j.Key("severity").String(analyses::SeverityName(f.severity)).Key("cost_ns").Uint(f.cost_ns);
  j.EndObject();
}

void SideJson(JsonWriter& j, const DiffSide& s, uint64_t steps) {
  j.BeginObject().Key("files").BeginArray();
  for (const std::string& f : s.files) j.String(f);
  j.EndArray();
  j.Key("gpus").Uint(s.gpus).Key("events").Uint(s.events);
  j.Key("steps");
  MaybeDouble(j, steps > 0, static_cast<double>(steps));
  if (s.write_partial_json) s.write_partial_json(j);
  j.EndObject();
}

void NumberJson(JsonWriter& j, const DiffNumber& n) {
  j.BeginObject().Key("key").String(n.key).Key("unit").String(n.unit);
  j.Key("per_step").Bool(n.per_step);
  j.Key("base");
  MaybeDouble(j, n.base.known, n.base.value);
  j.Key("new");
  MaybeDouble(j, n.now.known, n.now.value);
  j.Key("delta");
  MaybeDouble(j, n.base.known && n.now.known, n.now.value - n.base.value);
  j.Key("change");
  MaybeDouble(j, true, Change(n.base, n.now));
  j.Key("noise").Double(n.noise).Key("significant").Bool(n.significant);
  j.EndObject();
}

}  // namespace

std::string RenderDiffJson(const RunDiff& d, const DiffRenderOptions& render_options,
                           const DiffSide& base, const DiffSide& now) {
  const DiffOptions& options = render_options.diff;
  std::string out;
  JsonWriter j(&out);
  j.BeginObject().Key("schema").String("gpscope.diff/2");
  j.Key("options").BeginObject();
  j.Key("idle_gap_threshold_ns").Uint(render_options.idle_gap_threshold_ns);
  j.Key("window_ns").Uint(render_options.window_ns).Key("top_kernels").Uint(options.top_kernels);
  j.Key("fail_on_regression_pct");
  MaybeDouble(j, options.fail_on_regression_pct.has_value(),
              options.fail_on_regression_pct.value_or(0));
  j.Key("metrics").BeginInlineArray();
  for (const std::string& m : d.metrics) j.String(m);
  j.EndArray();
  j.Key("threshold_pct").Double(d.threshold_pct);
  j.EndObject();
  j.Key("base");
  SideJson(j, base, d.base_steps);
  j.Key("new");
  SideJson(j, now, d.new_steps);
  j.Key("basis").String(d.per_step ? "per_step" : "total");
  j.Key("noise_floor").BeginObject();
  j.Key("step_rel").Double(d.step_noise);
  j.Key("percentile_rel_min").Double(analyses::kHistogramResolution);
  j.Key("rule").String(
      "changed when |new - base| > noise x max(|base|, |new|); noise: 2 standard errors of the "
      "relative difference of mean step time (per kernel: of its mean duration, plus the step "
      "term per step), percentiles never below the histogram's 1/64; 0 without step variance");
  j.EndObject();
  j.Key("numbers").BeginArray();
  for (const DiffNumber& n : d.numbers) NumberJson(j, n);
  j.EndArray();
  j.Key("kernels").BeginObject().Key("rows").BeginArray();
  for (const KernelDiff& k : d.kernels) {
    j.BeginObject().Key("name").String(k.name).Key("demangled").String(analyses::Demangle(k.name));
    j.Key("status").String(k.status).Key("base");
    Totals(j, k.base, d.per_step, k.base_calls, k.base_value);
    j.Key("new");
    Totals(j, k.now, d.per_step, k.now_calls, k.now_value);
    j.Key("delta_ns").Int(static_cast<int64_t>(k.now.total_ns) - static_cast<int64_t>(k.base.total_ns));
    j.Key("change");
    MaybeDouble(j, true, Change({k.base.count > 0, k.base_value}, {k.now.count > 0, k.now_value}));
    j.Key("noise").Double(k.noise);
    j.EndObject();
  }
  j.EndArray();
  j.Key("changed_count").Uint(d.changed_kernels);
  j.Key("new_count").Uint(d.new_kernels).Key("vanished_count").Uint(d.vanished_kernels);
  j.EndObject();
  j.Key("copies").BeginArray();
  for (const CopyDiff& c : d.copies) {
    j.BeginObject().Key("direction").String(c.direction).Key("memory").String(c.memory);
    j.Key("base").BeginObject().Key("count").Uint(c.base_count).Key("bytes").Uint(c.base_bytes);
    j.Key("duration_ns").Uint(c.base_ns).Key("ns_per_step");
    MaybeDouble(j, d.per_step, c.base_value);
    j.EndObject();
    j.Key("new").BeginObject().Key("count").Uint(c.new_count).Key("bytes").Uint(c.new_bytes);
    j.Key("duration_ns").Uint(c.new_ns).Key("ns_per_step");
    MaybeDouble(j, d.per_step, c.now_value);
    j.EndObject();
    j.Key("delta_ns").Int(static_cast<int64_t>(c.new_ns) - static_cast<int64_t>(c.base_ns));
    j.Key("change");
    MaybeDouble(j, true, Change({c.base_count > 0, c.base_value}, {c.new_count > 0, c.now_value}));
    j.EndObject();
  }
  j.EndArray();
  j.Key("findings").BeginObject();
  j.Key("appeared").BeginArray();
  for (const FindingRef& f : d.appeared) FindingRefJson(j, f, false);
  j.EndArray();
  j.Key("disappeared").BeginArray();
  for (const FindingRef& f : d.disappeared) FindingRefJson(j, f, false);
  j.EndArray();
  j.Key("changed").BeginArray();
  for (const FindingRef& f : d.changed) FindingRefJson(j, f, true);
  j.EndArray();
  j.EndObject();
  j.Key("regressions").BeginArray();
  for (const Regression& r : d.regressions) {
    j.BeginObject().Key("metric").String(r.metric).Key("key").String(r.number.key);
    j.Key("base").Double(r.number.base.value).Key("new").Double(r.number.now.value);
    if (r.share) {
      j.Key("worse_by_pt").Double(100 * std::fabs(r.number.now.value - r.number.base.value));
    } else {
      j.Key("worse_by_pct").Double(100 * Change(r.number.base, r.number.now));
    }
    j.Key("threshold").Double(r.threshold).Key("noise").Double(r.number.noise);
    j.Key("stand_in").Bool(r.stand_in).Key("text").String(RegressionText(r));
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return out;
}

}  // namespace gpscope::render
