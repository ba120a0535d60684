// tools/analyze/export.h: `gpscope-analyze export --format chrome FILE... -o OUT`:
// the traces as Chrome trace-event JSON, which opens in ui.perfetto.dev and
// chrome://tracing. One process per traced process; per GPU stream a track
// ("GPU 0 stream 7") with kernels, copies and memsets; per host thread a
// "CUDA API" track and an "NVTX" track; sync waits on their GPU's track
// group; sampled metrics as counter tracks. Timestamps are microseconds
// (with ns fractions) since the first process's start, every process mapped
// to wall-clock time through its clock snapshots, so ranks line up.
//
// Streaming: events are written as they are read; memory is bounded by one
// batch plus the name tables. Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_EXPORT_H_
#define GPSCOPE_TOOLS_ANALYZE_EXPORT_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpscope::analyze {

int RunExport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_EXPORT_H_
