// tools/render/time_origin.h: how every output states the time origin of
// the pass (reader/timebase.h: the earliest event of all files on the
// common timebase), so a time read in one output finds the same event in
// another: summary and info (text, JSON), the CSV tables, the report's data
// (t0_realtime_ns), export (metadata.gpscope_time_origin) and dump (its
// first line) all name the same instant.
//
//   out << TimeOriginText(model.timebase) << "\n";
//   // "time origin 2026-11-29T09:26:55.905855123Z (earliest event of all
//   //  files; times are seconds since it)"
//   WriteTimeOrigin(model.timebase, json);   // "time_origin":{"realtime_ns":"...","utc":"..."}
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_TIME_ORIGIN_H_
#define GPSCOPE_TOOLS_RENDER_TIME_ORIGIN_H_

#include <string>

#include "tools/reader/timebase.h"
#include "tools/render/json_writer.h"

namespace gpscope::render {

// One line: the origin in UTC and what it is ("time origin: none (no
// events)" without one).
std::string TimeOriginText(const reader::Timebase& timebase);
// The key "time_origin": {"realtime_ns": "<decimal string>", "utc": "..."}
// (null without an origin). realtime_ns is a string: it is past 2^53.
void WriteTimeOrigin(const reader::Timebase& timebase, JsonWriter& json);
// The CSV comment line that heads every table: "# time origin <utc>".
std::string TimeOriginCsvLine(const reader::Timebase& timebase);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_TIME_ORIGIN_H_
