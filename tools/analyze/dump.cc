// tools/analyze/dump.cc: see dump.h. Flags -> render::WriteDumpLines.
#include "tools/analyze/dump.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/analyze/cli.h"
#include "tools/render/dump_lines.h"

namespace gpscope::analyze {
namespace {

using render::DumpFilter;
using render::kDumpKinds;

constexpr char kUsage[] =
    "usage: gpscope-analyze dump [--kind K[,K]] [--pid P[,P]] [--time absolute|relative]\n"
    "                            FILE...\n"
    "\n"
    "Writes every event as one JSON object per line: names resolved, CUPTI ns as\n"
    "recorded (start_ns, end_ns, timestamp_ns) and t_ns, ns since the time origin\n"
    "(the first line: the earliest event of all files on the common timebase, as\n"
    "every command prints it).\n"
    "\n"
    "  --kind K[,K]   only these line types: process, device, context, kernel, memcpy,\n"
    "                 memset, sync, api, nvtx_range, nvtx_mark, overhead, metric,\n"
    "                 metric_descriptor, drop, lost, capability, end; nvtx is both\n"
    "                 NVTX types, marker is nvtx_mark (the time_origin line and a\n"
    "                 partial line are always written)\n"
    "  --pid P[,P]    only lines of these processes\n"
    "  --time relative  only times since the origin: t_ns (start or instant) and\n"
    "                 end_t_ns (intervals; drops first_t_ns/last_t_ns), null for a\n"
    "                 time CUPTI left 0; no absolute CUPTI ns, which are past 2^53\n"
    "                 and lose digits as JavaScript or jq numbers. The origin's\n"
    "                 realtime_ns is then a string. Default: absolute (both).\n"
    "  -h, --help     this help\n";

int DumpUsage(std::ostream& err, const std::string& message) {
  err << kProgram << " dump: " << message << "; run '" << kProgram << " dump --help'\n";
  return kExitUsage;
}

}  // namespace

int RunDump(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"kind", "pid", "time"}, {"help"});
  if (!parsed.ok()) return DumpUsage(err, std::string(parsed.status().message()));
  if (parsed->has("help")) {
    out << kUsage;
    return kExitOk;
  }
  if (parsed->positional.empty()) return DumpUsage(err, "needs at least one FILE");
  DumpFilter filter;
  if (parsed->has("kind")) {
    for (const std::string& k :
         std::vector<std::string>(absl::StrSplit(parsed->flags.at("kind"), ',', absl::SkipEmpty()))) {
      if (!filter.AddKind(k)) {
        return DumpUsage(err, absl::StrCat("--kind: unknown kind '", k, "' (one of ",
                                           absl::StrJoin(kDumpKinds, ","), ", nvtx, marker)"));
      }
    }
    if (filter.kinds.empty()) return DumpUsage(err, "--kind needs at least one kind");
  }
  if (parsed->has("pid")) {
    for (const std::string& p :
         std::vector<std::string>(absl::StrSplit(parsed->flags.at("pid"), ',', absl::SkipEmpty()))) {
      uint32_t pid = 0;
      if (!absl::SimpleAtoi(p, &pid)) {
        return DumpUsage(err, absl::StrCat("--pid must be process ids, not '", p, "'"));
      }
      filter.pids.insert(pid);
    }
    if (filter.pids.empty()) return DumpUsage(err, "--pid needs at least one process id");
  }
  if (parsed->has("time")) {
    const std::string& t = parsed->flags.at("time");
    if (t != "absolute" && t != "relative") {
      return DumpUsage(err, absl::StrCat("--time must be absolute or relative, not '", t, "'"));
    }
    filter.relative_time = t == "relative";
  }
  reader::ReadResult read = render::WriteDumpLines(parsed->positional, filter, out, err);
  const reader::TraceIndex* index = &read.index;
  ReportMissingEnds(*index, err);
  const bool partial = ReportPartial(*index, err);
  if (absl::Status st = index->FirstFileError(); !st.ok()) {
    err << kProgram << ": " << st.message() << "\n";
    return kExitFailed;
  }
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
