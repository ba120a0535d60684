// tools/analyze/report.cc: see report.h.
#include "tools/analyze/report.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <fstream>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/analyze/cli.h"
#include "tools/analyze/summary.h"
#include "tools/reader/limits.h"
#include "tools/reader/trace_reader.h"
#include "tools/render/report_data.h"
#include "tools/render/report_html.h"
#include "tools/render/report_timeline.h"

#include "gpscope_version.h"  // GPSCOPE_VERSION, from git describe (cmake/Version.cmake)

namespace gpscope::analyze {
namespace {

constexpr char kUsage[] =
    "usage: gpscope-analyze report [OPTIONS] FILE... -o report.html\n"
    "\n"
    "Writes one self-contained HTML report: findings first (each with links that\n"
    "move the timeline to where it holds), a zoomable waterfall timeline of every\n"
    "process and rank on one time base, the four numbers per GPU and their trends,\n"
    "histograms, top kernels, steps and a correlation table. It opens offline.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  where to write ('-' for stdout; default gpscope-report.html)\n"
    "  --idle-gap-ms MS   idle gaps shorter than this are normal switching (default 5)\n"
    "  --top N            kernels in the top-kernels table per GPU (default 50)\n"
    "  --max-events N     exact timeline events kept (default 16000000; beyond, the\n"
    "                     report says how many it left out)\n"
    "  --bins N           pre-aggregated bins per timeline lane (default 2048)\n"
    "  --no-compress      do not gzip the timeline data (bigger file)\n"
    "  --data-only        write the report's JSON data instead of the HTML page\n"
    "\n"
    "Keys in the timeline: W/S zoom, A/D or arrows pan, mouse wheel zooms, drag pans,\n"
    "/ searches kernel names, 0 shows everything.\n"
    "Exit status: 0 ok, 1 a file could not be read or written, 2 usage error.\n";

std::string Size(uint64_t bytes) {
  if (bytes < 1024 * 1024) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  return absl::StrFormat("%.2f MiB", bytes / (1024.0 * 1024.0));
}

bool ParseCount(const ParsedArgs& args, const std::string& flag, uint64_t min, uint64_t max,
                uint64_t* value, std::ostream& err) {
  if (!args.has(flag)) return true;
  const std::string& v = args.flags.at(flag);
  uint64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < min || n > max) {
    err << kProgram << " report: --" << flag << " must be a whole number " << min << ".." << max
        << ", not '" << v << "'\n";
    return false;
  }
  *value = n;
  return true;
}

}  // namespace

int RunReport(const std::vector<std::string>& raw_args, std::ostream& out, std::ostream& err) {
  // ParseArgs knows long flags only; -o is the one short flag here.
  std::vector<std::string> args;
  for (const std::string& a : raw_args) args.push_back(a == "-o" ? "--output" : a);
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {"output", "idle-gap-ms", "top", "max-events", "bins"},
                {"help", "no-compress", "data-only"});
  if (!parsed.ok()) {
    err << kProgram << " report: " << parsed.status().message() << "; run '" << kProgram
        << " report --help'\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    out << kUsage;
    return kExitOk;
  }
  ReportRequest request;
  if (parsed->has("idle-gap-ms")) {
    const std::string& v = parsed->flags.at("idle-gap-ms");
    double ms = 0;
    if (!absl::SimpleAtod(v, &ms) || !(ms > 0) || ms > 3.6e6) {
      err << kProgram << " report: --idle-gap-ms must be a number of milliseconds > 0, not '" << v
          << "'\n";
      return kExitUsage;
    }
    request.model_options.idle_gap_threshold_ns = static_cast<uint64_t>(ms * 1e6);
  }
  uint64_t top = request.top_kernels, max_events = render::TimelineOptions{}.max_events,
           bins = request.bins;
  if (!ParseCount(*parsed, "top", 0, 10000, &top, err) ||
      !ParseCount(*parsed, "max-events", 0, 1'000'000'000, &max_events, err) ||
      !ParseCount(*parsed, "bins", 16, 65536, &bins, err)) {
    return kExitUsage;
  }
  if (parsed->positional.empty()) {
    err << kProgram << " report: no trace files given; usage: " << kProgram
        << " report [OPTIONS] FILE... -o report.html\n";
    return kExitUsage;
  }
  if (parsed->has("output")) request.output = parsed->flags.at("output");
  if (request.output.empty()) {
    err << kProgram << " report: --output needs a file name\n";
    return kExitUsage;
  }
  request.files = parsed->positional;
  request.top_kernels = top;
  request.max_events = max_events;
  request.bins = static_cast<uint32_t>(bins);
  request.compress = !parsed->has("no-compress");
  request.data_only = parsed->has("data-only");
  std::unique_ptr<SummaryResult> unused;
  return WriteReport(request, out, err, &unused);
}

int WriteReport(const ReportRequest& request, std::ostream& out, std::ostream& err,
                std::unique_ptr<SummaryResult>* analysis) {
  const std::string& output = request.output;

  // The page is built in memory after reading (one pass feeding the model
  // and the timeline, then the JSON and HTML): reading gets half the
  // budget, and the timeline collector stops keeping events early enough
  // that its output fits beside them (kOutputBytesPerEvent).
  reader::SetReadingShare(0.5);
  struct RestoreShare {
    ~RestoreShare() { reader::SetReadingShare(0.5); }
  } restore;

  // One pass: the analyzer's model and the timeline's exact events are
  // sinks of the same read (each file read and decoded once).
  analyses::ReportOptions options;
  options.top_kernels = request.top_kernels;
  render::TimelineOptions timeline_options;
  timeline_options.max_events = request.max_events;
  render::TimelineCollector collector(timeline_options);
  std::unique_ptr<SummaryResult>& result = *analysis;
  result = ComputeSummaryResult(request.files, request.model_options, options, {&collector});
  int code = kExitOk;
  size_t readable = 0;
  for (const reader::FileInfo& f : result->model.index.files) {
    if (f.status.ok()) {
      ++readable;
    } else {
      err << kProgram << ": " << f.status.message() << "\n";
      code = kExitFailed;
    }
  }
  if (readable == 0) return code;
  const bool partial = ReportPartial(result->model.index, err);
  render::TimelineData timeline = collector.Finish(result->model.timebase, &result->model);
  if (partial) code = kExitFailed;

  render::ReportInputs inputs;
  inputs.model = &result->model;
  inputs.summary = &result->report;
  inputs.findings = &result->findings;
  inputs.summary_json = RenderSummaryJson(*result);
  inputs.timeline = &timeline;
  inputs.generator = std::string(kProgram) + " " + GPSCOPE_VERSION;
  render::ReportDataOptions data_options;
  data_options.bin_count = request.bins;
  data_options.compress = request.compress;
  std::string json = render::BuildReportJson(inputs, data_options);
  // The events are in the JSON now: their memory goes back before the page
  // is assembled (a 10 M-event timeline holds ~330 MB).
  timeline.lanes = {};
  timeline.stacks.reset();
#ifdef __GLIBC__
  malloc_trim(0);  // the lanes' blocks sit between other allocations
#endif

  std::string document;
  if (request.data_only) {
    document = std::move(json);
  } else {
    absl::StatusOr<std::string> html = render::RenderReportHtml(render::ReportTemplate(), json);
    if (!html.ok()) {
      err << kProgram << " report: " << html.status().message() << "\n";
      return kExitFailed;
    }
    std::string().swap(json);
    document = *std::move(html);
  }
  if (output == "-") {
    out << document;
    return code;
  }
  {
    std::ofstream file(output, std::ios::binary | std::ios::trunc);
    file.write(document.data(), static_cast<std::streamsize>(document.size()));
    file.close();
    if (!file) {
      err << kProgram << " report: cannot write " << output
          << "; check that its directory exists and is writable\n";
      return kExitFailed;
    }
  }
  out << "wrote " << output << " (" << Size(document.size())
      << "): " << result->model.processes.size()
      << (result->model.processes.size() == 1 ? " process, " : " processes, ")
      << result->model.gpus.size() << (result->model.gpus.size() == 1 ? " GPU, " : " GPUs, ")
      << timeline.events_kept << " timeline events";
  if (timeline.events_not_kept > 0) {
    out << " (" << timeline.events_not_kept << " not shown"
        << (timeline.over_memory_budget ? ": the memory budget was reached" : "") << ")";
  }
  out << ", " << result->findings.size()
      << (result->findings.size() == 1 ? " finding" : " findings")
      << (partial ? "; PARTIAL: the memory budget stopped reading (see above)\n" : "\n");
  return code;
}

}  // namespace gpscope::analyze
