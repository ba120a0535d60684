// tools/render/enum_names.cc: see enum_names.h.
#include "tools/render/enum_names.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gpscope/trace.pb.h"

namespace gpscope::render {
namespace {

std::string Lower(bool valid, const std::string& name, std::string_view prefix, int value) {
  if (!valid) return absl::StrCat("reason_", value);
  return absl::AsciiStrToLower(name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name);
}

}  // namespace

std::string DropName(int r) {
  const bool ok = proto::DropReason_IsValid(r);
  return Lower(ok, ok ? proto::DropReason_Name(static_cast<proto::DropReason>(r)) : "", "DROP_", r);
}
std::string LostName(int r) {
  const bool ok = proto::LostReason_IsValid(r);
  return Lower(ok, ok ? proto::LostReason_Name(static_cast<proto::LostReason>(r)) : "", "LOST_", r);
}
std::string EndName(int r) {
  const bool ok = proto::EndReason_IsValid(r);
  return Lower(ok, ok ? proto::EndReason_Name(static_cast<proto::EndReason>(r)) : "", "END_", r);
}

std::string Spaced(std::string name) {
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

}  // namespace gpscope::render
