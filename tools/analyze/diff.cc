// tools/analyze/diff.cc: see diff.h.
#include "tools/analyze/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/analyses/names.h"
#include "tools/analyze/cli.h"
#include "tools/model/log_histogram.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_format.h"

namespace gpscope::analyze {
namespace {

using analyses::GpuReport;
using analyses::Severity;
using render::JsonWriter;

// ------------------------------------------------------------- the numbers --

// Run-level numbers of one summary (see diff.h for how GPUs combine).
std::vector<DiffNumber> Numbers(const SummaryResult& r) {
  double window = 0, busy = 0, gap = 0, comm = 0, overlap = 0;
  double sm = 0, sm_window = 0, dram = 0, dram_window = 0;
  double kernel_ns = 0, kernel_count = 0, copy_ns = 0, copy_bytes = 0;
  RunValue step_p50, step_p95;
  model::LogHistogram kernels;
  for (const GpuReport& g : r.report.gpus) {
    const double w = g.traced_window_ns();
    window += w;
    busy += g.busy_ns;
    gap += g.gap_idle.total_ns();
    comm += g.comm_busy_ns;
    overlap += g.comm_overlap_ns;
    if (g.sm_util.source != analyses::Utilization::Source::kUnavailable) {
      sm += g.sm_util.percent * w;
      sm_window += w;
    }
    if (g.dram_util.source != analyses::Utilization::Source::kUnavailable) {
      dram += g.dram_util.percent * w;
      dram_window += w;
    }
    kernel_ns += static_cast<double>(g.gpu->kernel_ns);
    kernel_count += static_cast<double>(g.kernel_count);
    for (const analyses::CopyRow& c : g.copies) {
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
  const bool any = !r.report.gpus.empty();
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

std::map<std::string, KernelTotals> KernelsByName(const SummaryResult& r) {
  std::map<std::string, KernelTotals> out;
  for (const model::GpuModel& g : r.model.gpus) {
    for (const model::KernelStats& k : g.kernels) {
      KernelTotals& t = out[k.name];
      t.count += k.duration_ns.count();
      t.total_ns += k.duration_ns.sum();
    }
  }
  return out;
}

using CopyKey = std::pair<std::string, std::string>;

std::map<CopyKey, analyses::CopyRow> CopiesByKind(const SummaryResult& r) {
  std::map<CopyKey, analyses::CopyRow> out;
  for (const GpuReport& g : r.report.gpus) {
    for (const std::vector<analyses::CopyRow>* rows : {&g.copies, &g.memsets}) {
      for (const analyses::CopyRow& c : *rows) {
        analyses::CopyRow& t = out[{c.direction, c.memory}];
        t.count += c.count;
        t.bytes += c.bytes;
        t.duration_ns += c.duration_ns;
      }
    }
  }
  return out;
}

std::string FindingKey(const analyses::Finding& f) {
  return absl::StrCat(f.rule, "|", f.gpu, "|", f.process);
}

FindingRef Ref(const analyses::Finding& f) {
  FindingRef ref;
  ref.rule = f.rule;
  ref.gpu = f.gpu;
  ref.process = f.process;
  ref.scope = f.scope;
  ref.severity = f.severity;
  ref.cost_ns = f.cost_ns;
  return ref;
}

double Change(const RunValue& base, const RunValue& now) {
  if (!base.known || !now.known || base.value == 0) return std::nan("");
  return (now.value - base.value) / base.value;
}

}  // namespace

RunDiff ComputeDiff(const SummaryResult& base, const SummaryResult& now, const DiffOptions& options) {
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
  std::map<std::string, const analyses::Finding*> fb, fn;
  for (const analyses::Finding& f : base.findings) fb.emplace(FindingKey(f), &f);
  for (const analyses::Finding& f : now.findings) fn.emplace(FindingKey(f), &f);
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
      if (grew(n)) {
        d.regressions.push_back(absl::StrFormat("%s grew %.1f%% (%s -> %s), more than %g%%",
                                                n.key, 100 * Change(n.base, n.now),
                                                render::Time(n.base.value),
                                                render::Time(n.now.value), pct));
      }
    }
  }
  for (const DiffNumber& n : d.numbers) {
    if (n.key == "kernel_ns" && !steps && grew(n)) {
      d.regressions.push_back(absl::StrFormat(
          "total kernel time grew %.1f%% (%s -> %s), more than %g%% (no steps to compare)",
          100 * Change(n.base, n.now), render::Time(n.base.value), render::Time(n.now.value),
          pct));
    }
  }
  for (const FindingRef& f : d.appeared) {
    if (f.severity >= Severity::kWarning) {
      d.regressions.push_back(absl::StrCat("new ", analyses::SeverityName(f.severity),
                                           " finding ", f.rule, " on ", f.scope));
    }
  }
  return d;
}

namespace {

// ------------------------------------------------------------------- text --

std::string Value(const std::string& unit, const RunValue& v) {
  if (!v.known) return "-";
  if (unit == "ns") return render::Time(v.value);
  if (unit == "ratio") return render::Percent(v.value);
  if (unit == "percent") return absl::StrFormat("%.1f%%", v.value);
  if (unit == "bytes") return render::Bytes(v.value);
  return render::Count(v.value);
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

std::string Side(const std::vector<std::string>& files, const SummaryResult& r) {
  return absl::StrCat(absl::StrJoin(files, ","), " (", r.model.gpus.size(),
                      r.model.gpus.size() == 1 ? " GPU, " : " GPUs, ", render::Count(r.model.events),
                      " events)");
}

std::string RenderText(const RunDiff& d, const std::vector<std::string>& base_files,
                       const SummaryResult& base, const std::vector<std::string>& new_files,
                       const SummaryResult& now) {
  std::string out;
  auto line = [&out](const std::string& s) { absl::StrAppend(&out, s, "\n"); };
  line(absl::StrCat("gpscope diff"));
  line(analyses::Truncate(absl::StrCat("  base  ", Side(base_files, base)), 100));
  line(analyses::Truncate(absl::StrCat("  new   ", Side(new_files, now)), 100));
  if (base.model.index.partial) line(absl::StrCat("  base: ", PartialText(base.model.index)));
  if (now.model.index.partial) line(absl::StrCat("  new: ", PartialText(now.model.index)));
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
                         Value("ns", n.now), ChangeText(n), render::Count(k.base.count),
                         render::Count(k.now.count), k.status));
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
                           render::Bytes(static_cast<double>(c.base_bytes)),
                           render::Bytes(static_cast<double>(c.new_bytes)), Value("ns", n.base),
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
    for (const std::string& r : d.regressions) line(analyses::Truncate(absl::StrCat("  ", r), 100));
  }
  return out;
}

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

void SideJson(JsonWriter& j, const std::vector<std::string>& files, const SummaryResult& r) {
  j.BeginObject().Key("files").BeginArray();
  for (const std::string& f : files) j.String(f);
  j.EndArray();
  j.Key("gpus").Uint(r.model.gpus.size()).Key("events").Uint(r.model.events);
  WritePartialJson(r.model.index, j);
  j.EndObject();
}

std::string RenderJson(const RunDiff& d, const DiffOptions& options,
                       const model::ModelOptions& model_options,
                       const std::vector<std::string>& base_files, const SummaryResult& base,
                       const std::vector<std::string>& new_files, const SummaryResult& now) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject().Key("schema").String("gpscope.diff/1");
  j.Key("options").BeginObject();
  j.Key("idle_gap_threshold_ns").Uint(model_options.idle_gap_threshold_ns);
  j.Key("window_ns").Uint(model_options.window_ns).Key("top_kernels").Uint(options.top_kernels);
  j.Key("fail_on_regression_pct");
  MaybeDouble(j, options.fail_on_regression_pct.has_value(),
              options.fail_on_regression_pct.value_or(0));
  j.EndObject();
  j.Key("base");
  SideJson(j, base_files, base);
  j.Key("new");
  SideJson(j, new_files, now);
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
  for (const std::string& r : d.regressions) j.String(r);
  j.EndArray();
  j.EndObject();
  return out;
}

constexpr char kUsage[] =
    "usage: gpscope-analyze diff [--format text|json] [--fail-on-regression PCT] [--top N]\n"
    "                            [--idle-gap-ms MS] [--window-ms MS] BASE NEW\n"
    "       gpscope-analyze diff [options] --rank A --rank B FILE\n"
    "\n"
    "What changed between two runs: step time P50/P95, GPU busy and idle-gap share, the\n"
    "four numbers, communication, top kernels by total time (new and vanished ones),\n"
    "copies, and findings that appeared or disappeared. BASE and NEW are trace files,\n"
    "or several files of one run joined by commas. With --rank twice, BASE is rank A\n"
    "and NEW rank B of the same FILE (a node file holds every rank of the node).\n"
    "\n"
    "  --format text|json        output format (default text; json keys in diff.h)\n"
    "  --fail-on-regression PCT  exit 3 when step time P50/P95 (without steps: total\n"
    "                            kernel time) grew by more than PCT percent, or a\n"
    "                            warning-level finding appeared\n"
    "  --top N                   kernels listed (default 15)\n"
    "  --idle-gap-ms MS          as for summary (default 5)\n"
    "  --window-ms MS            as for summary, 50..200 (default 100)\n"
    "  --rank A --rank B         compare two ranks of one run (Identity.rank)\n"
    "  -h, --help                this help\n"
    "\n"
    "Exit status: 0 ok (regressions are listed but do not fail without the option),\n"
    "3 regression with --fail-on-regression, 1 a file could not be read, 2 usage error.\n";

int Usage(std::ostream& err, const std::string& message) {
  err << kProgram << " diff: " << message << "; run '" << kProgram << " diff --help'\n";
  return kExitUsage;
}

}  // namespace

int RunDiffCommand(const std::vector<std::string>& raw_args, std::ostream& out,
                   std::ostream& err) {
  // --rank may be given twice, which ParseArgs (one value per flag) does
  // not keep: take the ranks out first.
  std::vector<std::string> args;
  std::vector<int32_t> ranks;
  for (size_t i = 0; i < raw_args.size(); ++i) {
    const std::string& a = raw_args[i];
    if (a == "--") {
      args.insert(args.end(), raw_args.begin() + static_cast<std::ptrdiff_t>(i), raw_args.end());
      break;
    }
    std::string value;
    if (a == "--rank") {
      if (i + 1 >= raw_args.size()) return Usage(err, "--rank needs a value");
      value = raw_args[++i];
    } else if (a.rfind("--rank=", 0) == 0) {
      value = a.substr(7);
    } else {
      args.push_back(a);
      continue;
    }
    int32_t rank = -1;
    if (!absl::SimpleAtoi(value, &rank) || rank < 0) {
      return Usage(err, absl::StrCat("--rank must be a rank number >= 0, not '", value, "'"));
    }
    ranks.push_back(rank);
  }
  if (!ranks.empty() && ranks.size() != 2) {
    return Usage(err, absl::StrCat("--rank is given twice, BASE's rank then NEW's (got ",
                                   ranks.size(), ")"));
  }
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(
      args, {"format", "fail-on-regression", "top", "idle-gap-ms", "window-ms"}, {"help"});
  if (!parsed.ok()) return Usage(err, std::string(parsed.status().message()));
  if (parsed->has("help")) {
    out << kUsage;
    return kExitOk;
  }
  const std::string format = parsed->has("format") ? parsed->flags.at("format") : "text";
  if (format != "text" && format != "json") {
    return Usage(err, absl::StrCat("--format must be text or json, not '", format, "'"));
  }
  DiffOptions options;
  model::ModelOptions model_options;
  if (parsed->has("fail-on-regression")) {
    double pct = 0;
    const std::string& v = parsed->flags.at("fail-on-regression");
    if (!absl::SimpleAtod(v, &pct) || !(pct >= 0) || pct > 1e6) {
      return Usage(err, absl::StrCat("--fail-on-regression must be a percentage >= 0, not '", v,
                                     "'"));
    }
    options.fail_on_regression_pct = pct;
  }
  if (const std::string error = ParseCommonFlags(*parsed, &model_options, &options.top_kernels);
      !error.empty()) {
    return Usage(err, error);
  }
  const size_t want = ranks.empty() ? 2 : 1;
  if (parsed->positional.size() != want) {
    return Usage(err, ranks.empty()
                          ? absl::StrCat("needs two runs, BASE and NEW (got ",
                                         parsed->positional.size(), ")")
                          : absl::StrCat("with --rank, needs one run, FILE (got ",
                                         parsed->positional.size(), ")"));
  }
  std::vector<std::string> files[2];
  std::unique_ptr<SummaryResult> results[2];
  int code = kExitOk;
  for (int side = 0; side < 2; ++side) {
    files[side] = absl::StrSplit(parsed->positional[ranks.empty() ? static_cast<size_t>(side) : 0],
                                 ',', absl::SkipEmpty());
    model::ModelOptions side_options = model_options;
    if (!ranks.empty()) side_options.only_rank = ranks[static_cast<size_t>(side)];
    results[side] = ComputeSummaryResult(files[side], side_options, analyses::ReportOptions{});
    size_t readable = 0;
    for (const reader::FileInfo& f : results[side]->model.index.files) {
      if (f.status.ok()) {
        ++readable;
      } else {
        err << kProgram << ": " << f.status.message() << "\n";
        code = kExitFailed;
      }
    }
    if (ReportPartial(results[side]->model.index, err)) code = kExitFailed;
    if (readable == 0) return kExitFailed;
    if (!ranks.empty() && results[side]->model.processes.empty()) {
      err << kProgram << ": " << absl::StrJoin(files[side], ",") << ": no process of rank "
          << ranks[static_cast<size_t>(side)]
          << " (the header's identity); check the ranks with gpscope-analyze info\n";
      return kExitFailed;
    }
  }
  const RunDiff d = ComputeDiff(*results[0], *results[1], options);
  out << (format == "json" ? RenderJson(d, options, model_options, files[0], *results[0], files[1],
                                        *results[1])
                           : render::SanitizeTerminal(
                                 RenderText(d, files[0], *results[0], files[1], *results[1])));
  if (code == kExitOk && options.fail_on_regression_pct && !d.regressions.empty()) {
    return kExitRegression;
  }
  return code;
}

}  // namespace gpscope::analyze
