#include "tools/render/sites_render.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/site_findings.h"
#include "tools/analyses/sites.h"
#include "tools/render/text_format.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::render {
namespace {

constexpr size_t kWidth = 100;

// `s` escaped and cut to `width` columns (bytes of the escaped text; an
// ellipsis marks a cut).
std::string Fit(std::string_view raw, size_t width) {
  std::string s = Printable(raw);
  if (s.size() <= width) return s;
  std::string cut(CutUtf8(s, width > 3 ? width - 3 : 0));
  return cut + "...";
}

// A site label escaped and fitted to `width` columns keeping its file:line:
// "main.cc:17 (step(int))" cuts the function ("main.cc:17 (st..."); a
// location longer than the column loses the start of its file name
// ("...ong_file_name.py:42"). A label without a line is cut at its end.
std::string FitLabel(std::string_view raw, size_t width) {
  std::string s = Printable(raw);
  if (s.size() <= width || width < 8) return Fit(raw, width);
  const size_t paren = s.find(" (");
  const std::string_view loc = std::string_view(s).substr(0, paren);
  const size_t colon = loc.rfind(':');
  const bool has_line = colon != std::string_view::npos && colon + 1 < loc.size() &&
                        loc.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
  if (!has_line) return Fit(raw, width);
  if (loc.size() + 6 <= width) {  // the location and the start of the function
    return std::string(loc) +
           std::string(CutUtf8(std::string_view(s).substr(loc.size()), width - loc.size() - 3)) +
           "...";
  }
  size_t from = loc.size() > width - 3 ? loc.size() - (width - 3) : 0;
  while (from < loc.size() && (static_cast<unsigned char>(loc[from]) & 0xC0) == 0x80) ++from;
  return "..." + std::string(loc.substr(from));
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string Right(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

// Wraps `text` (already escaped) at spaces to kWidth, continuation lines at `hang`.
void Wrap(std::vector<std::string>* out, size_t indent, const std::string& text, size_t hang) {
  std::string_view rest = text;
  size_t at = indent;
  bool first = true;
  while (first || !rest.empty()) {
    const size_t room = kWidth > at ? kWidth - at : 1;
    std::string_view line = CutUtf8(rest, room);
    if (line.empty() && !rest.empty()) line = CutUtf8(rest, room + 4);
    if (rest.size() > room) {
      const size_t space = line.rfind(' ');
      if (space != std::string_view::npos && space > 0) line = line.substr(0, space);
    }
    out->push_back(std::string(at, ' ') + std::string(line));
    rest.remove_prefix(line.size());
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    first = false;
    at = hang;
  }
}

const model::ProcessModel& ProcessOf(const model::TraceModel& m, size_t i) { return m.processes[i]; }

int FirstGpu(const model::ProcessModel& p) {
  return p.gpus.empty() ? -1 : static_cast<int>(p.gpus.front());
}

// The notes of modules of the user's code whose file was there but could
// not be used (model/symbolizer.h): a mismatched build id is worth saying
// once. A library's (libc on another machine) is not: it would make the
// output depend on the machine it is read on.
std::vector<const model::SymbolNote*> UserNotes(const model::StackModel& sm) {
  std::vector<const model::SymbolNote*> out;
  for (const model::SymbolNote& note : sm.symbol_notes) {
    model::StackFrameText module;
    module.defined = true;
    module.kind = proto::FRAME_NATIVE;
    module.file = note.module;
    if (note.module.empty() || analyses::IsUserFrame(module)) out.push_back(&note);
  }
  return out;
}

std::string StackText(const analyses::SiteRow& s) {
  std::vector<std::string> parts;
  for (const analyses::SiteFrame& f : s.stack) parts.push_back(f.text);
  std::string line = absl::StrJoin(parts, " <- ");
  if (s.truncated) absl::StrAppend(&line, " <- ...");
  return line;
}

}  // namespace

const char* FrameKindName(int kind) {
  switch (kind) {
    case proto::FRAME_PYTHON:
      return "python";
    case proto::FRAME_NATIVE:
      return "native";
    default:
      return "unknown";
  }
}

std::vector<std::string> SitesText(const model::TraceModel& model,
                                   const analyses::SummaryReport& report, size_t top) {
  std::vector<std::string> out;
  const analyses::SiteReport& sites = report.sites;
  if (!sites.present) return out;
  out.push_back(absl::StrCat("SOURCE LINES (call stacks; ", sites.rows.size(),
                             sites.rows.size() == 1 ? " site" : " sites",
                             ", GPU time lost first; whole run; csv: --table lines)"));
  for (const analyses::ProcessStacks& ps : sites.processes) {
    const model::ProcessModel& p = ProcessOf(model, ps.process);
    const model::StackModel& sm = *ps.model;
    Wrap(&out, 2,
         Printable(absl::StrCat(
             "pid ", p.pid, p.hostname.empty() ? "" : " on ", p.hostname, ": ",
             Count(sm.stack_samples), " stacks taken at CUDA calls, ", Count(sm.joined),
             " joined to their call; GPU idle attributed ", Time(sm.gpu_idle_attributed_ns),
             ", not attributed ", Time(sm.gpu_idle_unattributed_ns),
             " (no stacked call around the gap)",
             sm.samples >= 2
                 ? absl::StrCat("; kernel time by line from ", Count(sm.samples),
                                " sampled launches, +- the 95% interval of the sampling (launches "
                                "are sampled per interval of host time: a line whose launches "
                                "take less host time than one interval may be over- or "
                                "under-counted beyond it)")
                 : std::string("; too few sampled launches for kernel time by line"))),
         4);
    const uint64_t problems = sm.unjoined + sm.no_stack + sm.unknown_stack_ids +
                              sm.unknown_frame_ids + sm.tables_dropped + sm.undecodable;
    if (problems > 0) {
      Wrap(&out, 2,
           absl::StrCat("stacks lost: ", Count(sm.no_stack), " not kept by the collector, ",
                        Count(sm.unjoined), " without their call, ", Count(sm.unknown_stack_ids),
                        " naming an undefined stack, ", Count(sm.unknown_frame_ids),
                        " undefined frames, ", Count(sm.tables_dropped + sm.undecodable),
                        " table entries dropped or undecodable"),
           4);
    }
    for (const model::SymbolNote* note : UserNotes(sm)) {
      Wrap(&out, 2, Printable("symbols: " + note->text), 4);
    }
    out.push_back(absl::StrCat("  ", Pad("#  site", 42), Right("GPU lost", 10),
                               Right("blocked", 10), Right("calls", 8),
                               Right("kernel time (est.)", 24)));
    size_t n = 0;
    for (const analyses::SiteRow& s : sites.rows) {
      if (s.process != ps.process) continue;
      if (n >= top) break;
      ++n;
      const std::string kernel =
          s.has_kernel_estimate
              ? absl::StrCat(Time(s.kernel_ns), " +- ", Time(s.kernel_error_ns))
              : std::string("-");
      out.push_back(absl::StrCat(
          "  ", Pad(absl::StrCat(Pad(absl::StrCat(n, "."), 3), FitLabel(s.label, 38)), 42),
          Right(Time(s.gpu_lost_ns), 10), Right(Time(s.w.sync_blocked_ns), 10),
          Right(Count(s.w.sync_calls), 8), Right(kernel, 24)));
      std::vector<std::string> idle;
      if (s.w.gpu_sync_idle_ns > 0) {
        idle.push_back(absl::StrCat(Time(s.w.gpu_sync_idle_ns), " in its syncs"));
      }
      if (s.w.gpu_host_after_ns > 0) {
        idle.push_back(absl::StrCat(Time(s.w.gpu_host_after_ns), " in host code after them"));
      }
      if (s.w.gpu_host_before_ns > 0) {
        idle.push_back(absl::StrCat(Time(s.w.gpu_host_before_ns), " in host code before its launches"));
      }
      if (!idle.empty()) {
        Wrap(&out, 7, Printable(absl::StrCat("GPU idle: ", absl::StrJoin(idle, ", "))), 9);
      }
      if (!s.next_label.empty()) {
        Wrap(&out, 7,
             Printable(absl::StrCat("next launch: ", s.next_label, ", ", Time(s.next_host_ns),
                                    " of host time later (mean of ", Count(s.next_gaps), " gaps)")),
             9);
      }
      if (!s.prev_label.empty() && s.w.gpu_host_before_ns > 0) {
        Wrap(&out, 7,
             Printable(absl::StrCat("call before: ", s.prev_label, ", ", Time(s.prev_host_ns),
                                    " of host time earlier (mean)")),
             9);
      }
      if (s.has_kernel_estimate) {
        Wrap(&out, 7,
             absl::StrCat("kernel time: ", Count(s.w.samples), " of ", Count(sm.samples),
                          " sampled launches, ", Percent(s.kernel_share), " of the process's ",
                          Time(ps.kernel_ns)),
             9);
      }
      Wrap(&out, 7,
           Printable(absl::StrCat(s.user ? "stack: " : "stack (no user frame): ", StackText(s))), 9);
    }
  }
  return out;
}

void SitesJson(const model::TraceModel& model, const analyses::SummaryReport& report,
               JsonWriter& j) {
  const analyses::SiteReport& sites = report.sites;
  if (!sites.present) return;
  j.Key("source_lines").BeginObject();
  j.Key("processes").BeginArray();
  for (const analyses::ProcessStacks& ps : sites.processes) {
    const model::StackModel& sm = *ps.model;
    j.BeginObject().Key("process").Uint(ps.process).Key("pid").Uint(ProcessOf(model, ps.process).pid);
    j.Key("stack_samples").Uint(sm.stack_samples).Key("joined").Uint(sm.joined);
    j.Key("unjoined").Uint(sm.unjoined).Key("no_stack").Uint(sm.no_stack);
    j.Key("unknown_stack_ids").Uint(sm.unknown_stack_ids);
    j.Key("unknown_frame_ids").Uint(sm.unknown_frame_ids);
    j.Key("tables_dropped").Uint(sm.tables_dropped).Key("undecodable").Uint(sm.undecodable);
    j.Key("sampled_launches").Uint(sm.samples).Key("sampled_kernel_ns").Double(sm.sampled_kernel_ns);
    j.Key("kernel_ns").Uint(ps.kernel_ns);
    j.Key("gpu_idle_attributed_ns").Uint(sm.gpu_idle_attributed_ns);
    j.Key("gpu_idle_unattributed_ns").Uint(sm.gpu_idle_unattributed_ns);
    j.Key("sync_calls_unstacked").Uint(sm.sync_calls_unstacked);
    j.Key("sync_blocked_unstacked_ns").Uint(sm.sync_blocked_unstacked_ns);
    const std::vector<const model::SymbolNote*> notes = UserNotes(sm);
    if (sm.frames_symbolized > 0 || !notes.empty()) {  // model/symbolizer.h
      j.Key("frames_symbolized").Uint(sm.frames_symbolized);
      j.Key("symbol_notes").BeginArray();
      for (const model::SymbolNote* note : notes) {
        j.BeginObject().Key("module").String(note->module).Key("text").String(note->text).EndObject();
      }
      j.EndArray();
    }
    j.EndObject();
  }
  j.EndArray();
  j.Key("sites").BeginArray();
  for (const analyses::SiteRow& s : sites.rows) {
    const model::StackWeights& w = s.w;
    j.BeginObject().Key("process").Uint(s.process).Key("label").String(s.label);
    j.Key("kind").String(FrameKindName(s.frame.kind)).Key("file").String(s.frame.path);
    j.Key("line").Uint(s.frame.line).Key("function").String(s.frame.function);
    j.Key("user").Bool(s.user).Key("gpu_lost_ns").Uint(s.gpu_lost_ns);
    j.Key("gpu_sync_idle_ns").Uint(w.gpu_sync_idle_ns);
    j.Key("gpu_implicit_idle_ns").Uint(w.gpu_implicit_idle_ns);
    j.Key("gpu_host_after_ns").Uint(w.gpu_host_after_ns);
    j.Key("gpu_host_before_ns").Uint(w.gpu_host_before_ns);
    j.Key("sync_calls").Uint(w.sync_calls).Key("sync_blocked_ns").Uint(w.sync_blocked_ns);
    j.Key("implicit_calls").Uint(w.implicit_calls);
    j.Key("implicit_blocked_ns").Uint(w.implicit_blocked_ns);
    j.Key("main_thread_syncs").Uint(w.main_thread_syncs);
    j.Key("gaps").Uint(w.gaps).Key("readback_gaps").Uint(w.readback_gaps);
    j.Key("launches").Uint(w.launches).Key("samples").Uint(w.samples);
    j.Key("kernel");
    if (s.has_kernel_estimate) {
      j.BeginObject().Key("ns").Double(s.kernel_ns).Key("error_ns").Double(s.kernel_error_ns);
      j.Key("share").Double(s.kernel_share).EndObject();
    } else {
      j.Null();
    }
    j.Key("next");
    if (!s.next_label.empty()) {
      j.BeginObject().Key("site").String(s.next_label).Key("gaps").Uint(s.next_gaps);
      j.Key("host_ns_mean").Double(s.next_host_ns).Key("gpu_host_ns").Uint(s.next_gpu_host_ns);
      j.EndObject();
    } else {
      j.Null();
    }
    j.Key("prev");
    if (!s.prev_label.empty()) {
      j.BeginObject().Key("site").String(s.prev_label).Key("gaps").Uint(s.prev_gaps);
      j.Key("host_ns_mean").Double(s.prev_host_ns).EndObject();
    } else {
      j.Null();
    }
    j.Key("stack_id").Uint(s.top_stack).Key("stacks").Uint(s.stacks);
    j.Key("truncated").Bool(s.truncated);
    j.Key("stack").BeginArray();
    for (const analyses::SiteFrame& f : s.stack) j.String(f.text);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void SitesCsv(const model::TraceModel& model, const analyses::SummaryReport& report,
              CsvWriter& csv) {
  csv.Row({"gpu", "rank", "pid", "site", "kind", "file", "line", "function", "user",
           "gpu_lost_ns", "gpu_sync_idle_ns", "gpu_implicit_idle_ns", "gpu_host_after_ns",
           "gpu_host_before_ns", "sync_calls", "sync_blocked_ns", "readback_gaps", "launches", "samples",
           "kernel_ns", "kernel_error_ns", "next_site", "next_host_ns", "stack"});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const analyses::SiteRow& s : report.sites.rows) {
    const model::ProcessModel& p = ProcessOf(model, s.process);
    const model::StackWeights& w = s.w;
    csv.Field(FirstGpu(p)).Field(p.rank).Field(p.pid).Field(s.label);
    csv.Field(FrameKindName(s.frame.kind)).Field(s.frame.path).Field(s.frame.line);
    csv.Field(s.frame.function).Field(s.user ? 1 : 0).Field(s.gpu_lost_ns);
    csv.Field(w.gpu_sync_idle_ns).Field(w.gpu_implicit_idle_ns).Field(w.gpu_host_after_ns);
    csv.Field(w.gpu_host_before_ns).Field(w.sync_calls).Field(w.sync_blocked_ns);
    csv.Field(w.readback_gaps).Field(w.launches).Field(w.samples);
    csv.Field(s.has_kernel_estimate ? s.kernel_ns : nan);
    csv.Field(s.has_kernel_estimate ? s.kernel_error_ns : nan);
    csv.Field(s.next_label).Field(s.next_label.empty() ? nan : s.next_host_ns);
    csv.Field(StackText(s)).EndRow();
  }
}

}  // namespace gpscope::render
