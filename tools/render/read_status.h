// tools/render/read_status.h: how every output says that reading stopped
// early (the memory budget, reader::TraceIndex::partial): the line a text
// output starts with, and the "partial" object of a JSON output. Complete
// reads add nothing, so complete outputs are unchanged.
//
//   if (index.partial) text.Para(0, PartialText(index));
//   WritePartialJson(index, json);  // inside the document's object
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_READ_STATUS_H_
#define GPSCOPE_TOOLS_RENDER_READ_STATUS_H_

#include <string>
#include <string_view>

#include "tools/reader/trace_reader.h"
#include "tools/render/json_writer.h"

namespace gpscope::render {

// The analyzer's name, as its messages start (analyze/cli.h uses it too).
inline constexpr std::string_view kAnalyzeProgram = "gpscope-analyze";

// "PARTIAL RESULT: <message>" (no newline), or "" when reading was complete.
std::string PartialText(const reader::TraceIndex& index);
// Writes "partial": {reason, file, offset, budget_bytes, resident_bytes,
// message} into an open JSON object when reading was partial.
void WritePartialJson(const reader::TraceIndex& index, JsonWriter& json);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_READ_STATUS_H_
