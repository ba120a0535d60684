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
  return Count(v.value);
}

std::string ChangeText(const DiffNumber& n) {
  if (!n.base.known || !n.now.known) return "";
  if (n.unit == "ratio") return absl::StrFormat("%+.1f pt", 100 * (n.now.value - n.base.value));
  if (n.unit == "percent") return absl::StrFormat("%+.1f pt", n.now.value - n.base.value);
  const double c = Change(n.base, n.now);
  return std::isfinite(c) ? absl::StrFormat("%+.1f%%", 100 * c) : "";
}

std::string Label(const std::string& key) {
  static const std::map<std::string, std::string>* const kLabels =
      new std::map<std::string, std::string>{
          {"step_p50_ns", "step time P50"},  {"step_p95_ns", "step time P95"},
          {"busy_share", "GPU busy share"},  {"idle_gap_share", "idle-gap share"},
          {"sm_util_pct", "SM util"},        {"dram_bw_util_pct", "memory BW util"},
          {"kernel_p50_ns", "kernel P50"},   {"kernel_p95_ns", "kernel P95"},
          {"comm_share", "comm share"},      {"comm_overlap", "comm overlap"},
          {"kernel_ns", "kernel time"},      {"kernel_count", "kernels"},
          {"copy_ns", "copy time"},          {"copy_bytes", "copy bytes"}};
  auto it = kLabels->find(key);
  return it != kLabels->end() ? it->second : key;
}

std::string Side(const DiffSide& s) {
  return absl::StrCat(absl::StrJoin(s.files, ","), " (", s.gpus,
                      s.gpus == 1 ? " GPU, " : " GPUs, ", Count(s.events), " events)");
}

}  // namespace

std::string RegressionText(const Regression& r) {
  if (r.key.empty()) {
    return absl::StrCat("new ", analyses::SeverityName(r.finding.severity), " finding ",
                        r.finding.rule, " on ", r.finding.scope);
  }
  if (r.no_steps) {
    return absl::StrFormat(
        "total kernel time grew %.1f%% (%s -> %s), more than %g%% (no steps to compare)",
        100 * Change(r.base, r.now), Time(r.base.value), Time(r.now.value), r.threshold_pct);
  }
  return absl::StrFormat("%s grew %.1f%% (%s -> %s), more than %g%%", r.key,
                         100 * Change(r.base, r.now), Time(r.base.value), Time(r.now.value),
                         r.threshold_pct);
}

std::string RenderDiffText(const RunDiff& d, const DiffSide& base, const DiffSide& now) {
  std::string out;
  auto line = [&out](const std::string& s) { absl::StrAppend(&out, s, "\n"); };
  line(absl::StrCat("gpscope diff"));
  line(analyses::Truncate(absl::StrCat("  base  ", Side(base)), 100));
  line(analyses::Truncate(absl::StrCat("  new   ", Side(now)), 100));
  if (!base.partial_text.empty()) line(absl::StrCat("  base: ", base.partial_text));
  if (!now.partial_text.empty()) line(absl::StrCat("  new: ", now.partial_text));
  line("");
  line(absl::StrFormat("  %-18s %14s %14s %12s", "", "base", "new", "change"));
  for (const DiffNumber& n : d.numbers) {
    if (!n.base.known && !n.now.known) continue;
    line(absl::StrFormat("  %-18s %14s %14s %12s", Label(n.key), Value(n.unit, n.base),
                         Value(n.unit, n.now), ChangeText(n)));
  }
  line("");
  line(absl::StrCat("TOP KERNELS by total time (either run; ", d.new_kernels, " new, ",
                    d.vanished_kernels, " vanished names in all)"));
  line(absl::StrFormat("  %3s %10s %10s %8s %9s %9s %s", "#", "base", "new", "change",
                       "count b", "count n", "status"));
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const KernelDiff& k = d.kernels[i];
    const DiffNumber n{"", "ns", {k.base.count > 0, static_cast<double>(k.base.total_ns)},
                       {k.now.count > 0, static_cast<double>(k.now.total_ns)}};
    line(absl::StrFormat("  %3d %10s %10s %8s %9s %9s %s", i + 1, Value("ns", n.base),
                         Value("ns", n.now), ChangeText(n), Count(k.base.count),
                         Count(k.now.count), k.status));
    line(absl::StrCat("      ", analyses::Truncate(analyses::CompactKernelName(k.name), 94)));
  }
  if (!d.copies.empty()) {
    line("");
    line("COPIES (whole run)");
    line(absl::StrFormat("    %-7s %-9s %10s %10s %10s %10s %8s", "kind", "memory", "bytes b",
                         "bytes n", "time b", "time n", "change"));
    for (const CopyDiff& c : d.copies) {
      const DiffNumber n{"", "ns", {c.base_count > 0, static_cast<double>(c.base_ns)},
                         {c.new_count > 0, static_cast<double>(c.new_ns)}};
      line(absl::StrFormat("    %-7s %-9s %10s %10s %10s %10s %8s", c.direction,
                           analyses::Truncate(c.memory, 9),
                           Bytes(static_cast<double>(c.base_bytes)),
                           Bytes(static_cast<double>(c.new_bytes)), Value("ns", n.base),
                           Value("ns", n.now), ChangeText(n)));
    }
  }
  line("");
  line(absl::StrCat("FINDINGS: ", d.appeared.size(), " appeared, ", d.disappeared.size(),
                    " disappeared, ", d.changed.size(), " changed severity"));
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
  if (d.regressions.empty()) {
    line("REGRESSIONS: none");
  } else {
    line(absl::StrCat("REGRESSIONS (", d.regressions.size(), ")"));
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

void Totals(JsonWriter& j, const KernelTotals& t) {
  j.BeginObject().Key("count").Uint(t.count).Key("total_ns").Uint(t.total_ns);
  j.Key("mean_ns").Double(t.mean_ns()).EndObject();
}

void FindingRefJson(JsonWriter& j, const FindingRef& f, bool changed) {
  j.BeginObject().Key("rule").String(f.rule);
  j.Key("gpu").IndexOrNull(f.gpu).Key("process").IndexOrNull(f.process);
  j.Key("scope").String(f.scope);
  if (changed) j.Key("base_severity").String(analyses::SeverityName(f.base_severity));
  j.Key("severity").String(analyses::SeverityName(f.severity)).Key("cost_ns").Uint(f.cost_ns);
  j.EndObject();
}

void SideJson(JsonWriter& j, const DiffSide& s) {
  j.BeginObject().Key("files").BeginArray();
  for (const std::string& f : s.files) j.String(f);
  j.EndArray();
  j.Key("gpus").Uint(s.gpus).Key("events").Uint(s.events);
  if (s.write_partial_json) s.write_partial_json(j);
  j.EndObject();
}

}  // namespace

std::string RenderDiffJson(const RunDiff& d, const DiffRenderOptions& render_options,
                           const DiffSide& base, const DiffSide& now) {
  const DiffOptions& options = render_options.diff;
  std::string out;
  JsonWriter j(&out);
  j.BeginObject().Key("schema").String("gpscope.diff/1");
  j.Key("options").BeginObject();
  j.Key("idle_gap_threshold_ns").Uint(render_options.idle_gap_threshold_ns);
  j.Key("window_ns").Uint(render_options.window_ns).Key("top_kernels").Uint(options.top_kernels);
  j.Key("fail_on_regression_pct");
  MaybeDouble(j, options.fail_on_regression_pct.has_value(),
              options.fail_on_regression_pct.value_or(0));
  j.EndObject();
  j.Key("base");
  SideJson(j, base);
  j.Key("new");
  SideJson(j, now);
  j.Key("numbers").BeginArray();
  for (const DiffNumber& n : d.numbers) {
    j.BeginObject().Key("key").String(n.key).Key("unit").String(n.unit);
    j.Key("base");
    MaybeDouble(j, n.base.known, n.base.value);
    j.Key("new");
    MaybeDouble(j, n.now.known, n.now.value);
    j.Key("delta");
    MaybeDouble(j, n.base.known && n.now.known, n.now.value - n.base.value);
    j.Key("change");
    MaybeDouble(j, true, Change(n.base, n.now));
    j.EndObject();
  }
  j.EndArray();
  j.Key("kernels").BeginObject().Key("rows").BeginArray();
  for (const KernelDiff& k : d.kernels) {
    j.BeginObject().Key("name").String(k.name).Key("demangled").String(analyses::Demangle(k.name));
    j.Key("status").String(k.status).Key("base");
    Totals(j, k.base);
    j.Key("new");
    Totals(j, k.now);
    j.Key("delta_ns").Int(static_cast<int64_t>(k.now.total_ns) - static_cast<int64_t>(k.base.total_ns));
    j.Key("change");
    MaybeDouble(j, true,
                Change({k.base.count > 0, static_cast<double>(k.base.total_ns)},
                       {k.now.count > 0, static_cast<double>(k.now.total_ns)}));
    j.EndObject();
  }
  j.EndArray();
  j.Key("new_count").Uint(d.new_kernels).Key("vanished_count").Uint(d.vanished_kernels);
  j.EndObject();
  j.Key("copies").BeginArray();
  for (const CopyDiff& c : d.copies) {
    j.BeginObject().Key("direction").String(c.direction).Key("memory").String(c.memory);
    j.Key("base").BeginObject().Key("count").Uint(c.base_count).Key("bytes").Uint(c.base_bytes);
    j.Key("duration_ns").Uint(c.base_ns).EndObject();
    j.Key("new").BeginObject().Key("count").Uint(c.new_count).Key("bytes").Uint(c.new_bytes);
    j.Key("duration_ns").Uint(c.new_ns).EndObject();
    j.Key("delta_ns").Int(static_cast<int64_t>(c.new_ns) - static_cast<int64_t>(c.base_ns));
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
  for (const Regression& r : d.regressions) j.String(RegressionText(r));
  j.EndArray();
  j.EndObject();
  return out;
}

}  // namespace gpscope::render
