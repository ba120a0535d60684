// tools/analyze/export.h: `gpscope-analyze export [--format chrome|perfetto]
// FILE... -o OUT`: the traces as Chrome trace-event JSON (chrome://tracing,
// ui.perfetto.dev, speedscope) or as a Perfetto protobuf trace
// (render/chrome_json.h, render/perfetto_trace.h; docs/export.md). One
// process per traced process (named with its rank); per GPU stream a track
// ("GPU 0 stream 7") with kernels, copies and memsets; per host thread a
// "CUDA API" track and an "NVTX" track; sync waits per context; sampled
// metrics as counter tracks; a flow from each launch to its GPU work. A
// slice that would overlap another on its track without nesting goes to an
// extra lane ("GPU 0 stream 7 (2)"). Times are on the time origin every
// command prints, every process mapped to wall-clock time through its clock
// snapshots, so ranks line up.
//
// Streaming: events are written as they are read, each track's through a
// reorder window (render/chrome_tracks.h: ReorderWindow::kWindow slices);
// memory is bounded by those windows, one batch and the name tables.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_EXPORT_H_
#define GPSCOPE_TOOLS_ANALYZE_EXPORT_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpscope::analyze {

int RunExport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_EXPORT_H_
