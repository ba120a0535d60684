// tools/render/dump_lines.h: `gpscope-analyze dump`'s output, one compact
// JSON object per line (the format is documented in tools/analyze/dump.h):
// an event sink of the reader's one pass that writes each event as it is
// read, names and launch shapes resolved from the process's tables, times
// as CUPTI ns and as ns since the one time origin (reader/timebase.h), or
// only the latter (DumpFilter::relative_time).
//
//   render::DumpFilter f;
//   f.AddKind("kernel");
//   reader::ReadResult r = render::WriteDumpLines(files, f, std::cout, std::cerr);
#ifndef GPSCOPE_TOOLS_RENDER_DUMP_LINES_H_
#define GPSCOPE_TOOLS_RENDER_DUMP_LINES_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "tools/reader/event_reader.h"

namespace gpscope::render {

// The line types dump writes, in the order --help lists them.
inline constexpr const char* kDumpKinds[] = {
    "process", "device", "context", "kernel", "memcpy", "memset", "sync", "api", "nvtx_range",
    "nvtx_mark", "overhead", "metric", "metric_descriptor", "drop", "lost", "capability", "end"};

// --kind, --pid and --time, as parsed.
struct DumpFilter {
  absl::flat_hash_set<std::string> kinds;  // empty: all
  absl::flat_hash_set<uint32_t> pids;      // empty: all
  bool relative_time = false;

  bool WantsPid(uint32_t pid) const { return pids.empty() || pids.contains(pid); }
  bool Wants(std::string_view type, uint32_t pid) const {
    return WantsPid(pid) && (kinds.empty() || kinds.contains(std::string(type)));
  }
  // Adds the line types `name` stands for ("nvtx": both NVTX types,
  // "marker": nvtx_mark); false for an unknown name.
  bool AddKind(std::string name);
};

// The time_origin line, then every wanted event of `files` in one pass
// (the timebase from a first scan), then a `partial` line when reading
// stopped at the memory budget. Warnings go to `err`.
reader::ReadResult WriteDumpLines(const std::vector<std::string>& files, const DumpFilter& filter,
                                  std::ostream& out, std::ostream& err);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_DUMP_LINES_H_
