// tools/render/trace_export.h: the events of trace files as slices of
// named tracks for the trace-viewer formats (`gpscope-analyze export`):
// an event sink of the reader's one pass that reorders each track's slices
// and splits them into lanes so that they nest (render/chrome_tracks.h),
// ties launches to their GPU work (flows) and hands everything to one
// format's writer: Chrome trace-event JSON (render/chrome_json.h) or a
// Perfetto protobuf trace (render/perfetto_trace.h).
//
//   const reader::Timebase tb = reader::ScanTimebase(files);
//   uint64_t events = 0;
//   reader::ReadResult r = render::ExportChrome(files, tb, out, err, &events);
#ifndef GPSCOPE_TOOLS_RENDER_TRACE_EXPORT_H_
#define GPSCOPE_TOOLS_RENDER_TRACE_EXPORT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/reader/event_reader.h"
#include "tools/reader/timebase.h"

namespace gpscope::render {

// One function per format: each opens its writer on `out`, reads the files
// through the exporter into it and ends the file. Returns the read for the
// caller's error report; *written: events (Chrome) or packets (Perfetto).
reader::ReadResult ExportChrome(const std::vector<std::string>& files,
                                const reader::Timebase& timebase, std::ostream& out,
                                std::ostream& err, uint64_t* written);
reader::ReadResult ExportPerfetto(const std::vector<std::string>& files,
                                  const reader::Timebase& timebase, std::ostream& out,
                                  std::ostream& err, uint64_t* written);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_TRACE_EXPORT_H_
