// tools/model/collectives.cc: see collectives.h.
#include "tools/model/collectives.h"

#include <cctype>
#include <string>

namespace gpscope::model {
namespace {

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The collective named in `name`, lower-cased, separators removed.
CollectiveKind KindOf(std::string_view raw) {
  std::string s;
  s.reserve(raw.size());
  for (char c : raw) {
    if (c == '_' || c == '-' || c == ' ') continue;
    s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  // Longest names first: "reducescatter" and "allreduce" contain "reduce".
  if (Contains(s, "reducescatter")) return CollectiveKind::kReduceScatter;
  if (Contains(s, "allreduce")) return CollectiveKind::kAllReduce;
  if (Contains(s, "allgather")) return CollectiveKind::kAllGather;
  if (Contains(s, "alltoall")) return CollectiveKind::kAllToAll;
  if (Contains(s, "broadcast") || Contains(s, "bcast")) return CollectiveKind::kBroadcast;
  if (Contains(s, "sendrecv") || Contains(s, "send") || Contains(s, "recv")) {
    return CollectiveKind::kSendRecv;
  }
  if (Contains(s, "reduce")) return CollectiveKind::kReduce;
  return CollectiveKind::kOther;
}

}  // namespace

const char* CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kNone:
      return "none";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
    case CollectiveKind::kOther:
      return "other";
  }
  return "other";
}

CollectiveKind ClassifyCommKernel(std::string_view name) {
  // Only the function name: a parameter list may name NCCL types of any kernel.
  const size_t paren = name.find('(');
  if (paren != std::string_view::npos) name = name.substr(0, paren);
  // Mangled names end in their parameter types ("...RING_LL24ncclDevKernelArgs..."):
  // the collective is in the first part, which KindOf() reads first anyway.
  const bool nccl = Contains(name, "ncclKernel") || Contains(name, "ncclDevKernel") ||
                    (name.rfind("nccl", 0) == 0 && Contains(name, "Kernel")) ||
                    (name.rfind("_Z", 0) == 0 && Contains(name, "nccl") && Contains(name, "Kernel"));
  if (!nccl) return CollectiveKind::kNone;
  // Cut a mangled name's parameter types: they follow the first length-prefixed
  // identifier, e.g. _Z39<39 chars><params>.
  if (name.rfind("_Z", 0) == 0) {
    size_t i = 2;
    size_t length = 0;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
      length = length * 10 + static_cast<size_t>(name[i] - '0');
      ++i;
    }
    if (length > 0 && i + length <= name.size()) name = name.substr(i, length);
  }
  return KindOf(name);
}

CollectiveKind ClassifyCommRange(std::string_view domain, std::string_view range_name) {
  std::string d;
  for (char c : domain) d.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (d != "nccl") return CollectiveKind::kNone;
  return KindOf(range_name);
}

}  // namespace gpscope::model
