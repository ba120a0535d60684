// tools/render/time_origin.cc: see time_origin.h.
#include "tools/render/time_origin.h"

#include "absl/strings/str_cat.h"

namespace gpscope::render {

std::string TimeOriginText(const reader::Timebase& timebase) {
  if (!timebase.has_origin()) return "time origin: none (no events)";
  return absl::StrCat("time origin ", timebase.OriginUtc(),
                      " (earliest event of all files; times are since it)");
}

void WriteTimeOrigin(const reader::Timebase& timebase, JsonWriter& json) {
  json.Key("time_origin");
  if (!timebase.has_origin()) {
    json.Null();
    return;
  }
  json.BeginObject()
      .Key("realtime_ns")
      .String(absl::StrCat(timebase.origin_realtime_ns()))
      .Key("utc")
      .String(timebase.OriginUtc())
      .EndObject();
}

std::string TimeOriginCsvLine(const reader::Timebase& timebase) {
  return absl::StrCat("# time origin ", timebase.has_origin() ? timebase.OriginUtc() : "none");
}

}  // namespace gpscope::render
