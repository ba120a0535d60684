// tools/reader/limits.cc: see limits.h.
#include "tools/reader/limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/wire_writer.h"

namespace gpscope::reader {
namespace {

uint64_t g_budget_bytes = kDefaultMemoryBudgetBytes;
double g_reading_share = 0.5;

// Every text field of a chunk comes through here: cut to the limit, then
// made valid UTF-8.
void Cut(std::string* s, ChunkCheck* check) {
  if (s->size() > kMaxStringBytes) {
    CutUtf8(s, kMaxStringBytes);
    ++check->strings_cut;
  }
  if (RepairUtf8(s)) ++check->strings_repaired;
}

// Drops the entries past kMaxListEntries of a repeated field.
template <typename Message>
void CapMessages(google::protobuf::RepeatedPtrField<Message>* list, ChunkCheck* check) {
  if (list->size() <= kMaxListEntries) return;
  check->entries_dropped += static_cast<uint64_t>(list->size() - kMaxListEntries);
  list->DeleteSubrange(kMaxListEntries, list->size() - kMaxListEntries);
}

// Keeps the entries with keep(entry), in order.
template <typename Message, typename Keep>
void Filter(google::protobuf::RepeatedPtrField<Message>* list, Keep keep, ChunkCheck* check) {
  int kept = 0;
  for (int i = 0; i < list->size(); ++i) {
    if (!keep(list->Get(i))) continue;
    if (kept != i) list->SwapElements(kept, i);
    ++kept;
  }
  if (kept < list->size()) {
    check->ids_dropped += static_cast<uint64_t>(list->size() - kept);
    list->DeleteSubrange(kept, list->size() - kept);
  }
}

void CheckDevice(proto::DeviceInfo* d, ChunkCheck* check) {
  Cut(d->mutable_name(), check);
  Cut(d->mutable_uuid(), check);
  Cut(d->mutable_pci_bus_id(), check);
}

void CheckHeader(proto::ProcessHeader* h, ChunkCheck* check) {
  Cut(h->mutable_gpscope_version(), check);
  Cut(h->mutable_hostname(), check);
  Cut(h->mutable_exe_path(), check);
  Cut(h->mutable_driver_version(), check);
  CapMessages(h->mutable_cmdline(), check);
  for (std::string& arg : *h->mutable_cmdline()) Cut(&arg, check);
  CapMessages(h->mutable_env(), check);
  CapMessages(h->mutable_config(), check);
  for (proto::KeyValue& kv : *h->mutable_env()) {
    Cut(kv.mutable_key(), check);
    Cut(kv.mutable_value(), check);
  }
  for (proto::KeyValue& kv : *h->mutable_config()) {
    Cut(kv.mutable_key(), check);
    Cut(kv.mutable_value(), check);
  }
  CapMessages(h->mutable_devices(), check);
  for (proto::DeviceInfo& d : *h->mutable_devices()) CheckDevice(&d, check);
  CapMessages(h->mutable_clocks(), check);
  proto::Identity* id = h->mutable_identity();
  Cut(id->mutable_job_id(), check);
  Cut(id->mutable_launcher(), check);
}

void CheckBatch(proto::EventBatch* b, ChunkCheck* check) {
  Filter(
      b->mutable_strings(),
      [](const proto::InternedString& s) { return s.id() != 0 && s.id() <= kMaxStringId; }, check);
  for (proto::InternedString& s : *b->mutable_strings()) Cut(s.mutable_value(), check);
  Filter(
      b->mutable_launch_configs(),
      [](const proto::LaunchConfig& c) { return c.id() <= kMaxLaunchConfigId; }, check);
  Filter(
      b->mutable_metric_descriptors(),
      [](const proto::MetricDescriptor& d) { return d.id() <= kMaxMetricId; }, check);
  for (proto::MetricDescriptor& d : *b->mutable_metric_descriptors()) {
    Cut(d.mutable_name(), check);
    Cut(d.mutable_unit(), check);
    Cut(d.mutable_label(), check);
  }
  // ---- call stacks (issue 20): ids within the bounds, stacks cut ----
  Filter(
      b->mutable_stack_frames(),
      [](const proto::StackFrame& f) { return f.id() != 0 && f.id() <= kMaxStackFrameId; }, check);
  Filter(
      b->mutable_stacks(), [](const proto::Stack& s) { return s.id() != 0 && s.id() <= kMaxStackId; },
      check);
  for (proto::Stack& s : *b->mutable_stacks()) {
    if (s.frame_ids_size() > kMaxFramesPerStack) {
      check->entries_dropped += static_cast<uint64_t>(s.frame_ids_size() - kMaxFramesPerStack);
      s.mutable_frame_ids()->Truncate(kMaxFramesPerStack);  // innermost first: keep those
      s.set_truncated(true);
    }
  }
  CapMessages(b->mutable_devices(), check);
  for (proto::DeviceInfo& d : *b->mutable_devices()) CheckDevice(&d, check);
  CapMessages(b->mutable_contexts(), check);
  CapMessages(b->mutable_clocks(), check);
  CapMessages(b->mutable_capabilities(), check);
  for (proto::DropNotice& d : *b->mutable_drops()) Cut(d.mutable_detail(), check);
  for (proto::LostInterval& l : *b->mutable_lost_intervals()) Cut(l.mutable_detail(), check);
  for (proto::CapabilityNotice& c : *b->mutable_capabilities()) {
    Cut(c.mutable_component(), check);
    Cut(c.mutable_reason(), check);
  }
  for (proto::CuptiClientRefusal& r : *b->mutable_cupti_refusals()) {
    Cut(r.mutable_api(), check);
    Cut(r.mutable_caller(), check);
  }
  // The node monitor's window summaries (issue 24).
  CapMessages(b->mutable_window_summaries(), check);
  for (proto::WindowSummary& w : *b->mutable_window_summaries()) {
    for (std::string* text : {w.mutable_hostname(), w.mutable_job_id(), w.mutable_close_reason(),
                              w.mutable_top_rule(), w.mutable_top_severity(),
                              w.mutable_top_title(), w.mutable_trace_path()}) {
      Cut(text, check);
    }
    CapMessages(w.mutable_gpus(), check);
    for (proto::WindowGpu& g : *w.mutable_gpus()) Cut(g.mutable_uuid(), check);
  }
}

}  // namespace

bool RepairUtf8(std::string* s) {
  bool valid = true;
  const size_t size = format::Utf8SanitizedSize(s->data(), s->size(), &valid);
  if (valid) return false;
  std::string out;
  out.reserve(size);
  const auto* p = reinterpret_cast<const uint8_t*>(s->data());
  for (size_t i = 0; i < s->size();) {
    const size_t n = format::Utf8SequenceBytes(p + i, s->size() - i);
    if (n == 0) {
      out.append(reinterpret_cast<const char*>(format::kUtf8Replacement),
                 sizeof(format::kUtf8Replacement));
      ++i;
    } else {
      out.append(s->data() + i, n);
      i += n;
    }
  }
  *s = std::move(out);
  return true;
}

void CutUtf8(std::string* s, size_t max_bytes) {
  if (s->size() <= max_bytes) return;
  size_t n = max_bytes;
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  while (n > 0 && (static_cast<unsigned char>((*s)[n]) & 0xC0) == 0x80) --n;
  s->resize(n);
}

ChunkCheck CheckChunk(proto::Chunk* chunk) {
  ChunkCheck check;
  if (chunk->has_header()) CheckHeader(chunk->mutable_header(), &check);
  if (chunk->has_batch()) CheckBatch(chunk->mutable_batch(), &check);
  if (chunk->has_end()) {
    // Nothing variable-sized in an end record.
  }
  return check;
}

void SetMemoryBudgetBytes(uint64_t bytes) { g_budget_bytes = bytes; }
uint64_t MemoryBudgetBytes() { return g_budget_bytes; }

uint64_t ResidentBytes() {
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // "size resident shared text lib data dt", in pages.
  char* end = nullptr;
  std::strtoull(buf, &end, 10);
  const unsigned long long resident = std::strtoull(end, nullptr, 10);
  static const long page = sysconf(_SC_PAGESIZE);
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(page > 0 ? page : 4096);
}

void SetReadingShare(double share) { g_reading_share = share; }

uint64_t ReadingLimitBytes() {
  return static_cast<uint64_t>(static_cast<double>(g_budget_bytes) * g_reading_share);
}

bool MemoryBudgetExceeded(uint64_t extra_bytes) {
  if (g_budget_bytes == 0) return false;
  const uint64_t limit = ReadingLimitBytes();
  if (extra_bytes >= limit) return true;
  return ResidentBytes() > limit - extra_bytes;
}

absl::StatusOr<uint64_t> ParseByteSize(std::string_view raw_text) {
  const absl::string_view raw(raw_text.data(), raw_text.size());
  std::string text = absl::AsciiStrToLower(absl::StripAsciiWhitespace(raw));
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-memory must be a size such as 512M, 2G or 4GiB (at least 16M), or 'unlimited', "
        "not '",
        raw, "'"));
  };
  if (text == "unlimited" || text == "none") return uint64_t{0};
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) return bad();
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text.substr(0, digits), &value)) return bad();
  std::string unit = text.substr(digits);
  // "gib", "gb" and "g" mean the same (binary units); a bare "b" is bytes.
  if (unit.size() == 3 && unit.compare(1, 2, "ib") == 0) {
    unit.resize(1);
  } else if (unit.size() == 2 && unit[1] == 'b') {
    unit.resize(1);
  }
  int shift = 0;
  if (unit.empty() || unit == "b") {
    shift = 0;
  } else if (unit == "k") {
    shift = 10;
  } else if (unit == "m") {
    shift = 20;
  } else if (unit == "g") {
    shift = 30;
  } else if (unit == "t") {
    shift = 40;
  } else {
    return bad();
  }
  if (value > (uint64_t{1} << (63 - shift))) return bad();
  const uint64_t bytes = value << shift;
  if (bytes < (uint64_t{16} << 20)) return bad();
  return bytes;
}

std::string FormatByteSize(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) {
    return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  }
  return absl::StrFormat("%.0f MiB", static_cast<double>(bytes) / (1u << 20));
}

}  // namespace gpscope::reader
