// tools/render/read_status.cc: see read_status.h.
#include "tools/render/read_status.h"

#include "absl/strings/str_cat.h"

namespace gpscope::render {

std::string PartialText(const reader::TraceIndex& index) {
  if (!index.partial) return "";
  return absl::StrCat("PARTIAL RESULT: ", index.partial->Message());
}

void WritePartialJson(const reader::TraceIndex& index, JsonWriter& json) {
  if (!index.partial) return;
  const reader::PartialRead& p = *index.partial;
  json.Key("partial").BeginObject();
  json.Key("reason").String("memory budget");
  json.Key("file").String(p.path);
  json.Key("offset").Uint(p.offset);
  json.Key("budget_bytes").Uint(p.budget_bytes);
  json.Key("resident_bytes").Uint(p.resident_bytes);
  json.Key("message").String(p.Message());
  json.EndObject();
}

}  // namespace gpscope::render
