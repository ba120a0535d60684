// tools/render/info_render.cc: see info_render.h.
#include "tools/render/info_render.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/render/enum_names.h"
#include "tools/render/json_writer.h"
#include "tools/render/read_status.h"
#include "tools/render/text_block.h"
#include "tools/render/text_format.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/time_origin.h"

namespace gpscope::render {
namespace {

using analyses::InfoProcess;
using analyses::InfoReport;
using analyses::kInfoMaxWarnings;

constexpr size_t kTextWidth = TextBlock::kDefaultWidth;
constexpr size_t kTextLabelWidth = 14;  // "  time span   " etc.
constexpr size_t kTextMaxWarnings = 50;
constexpr size_t kTextMaxLostIntervals = 10;

std::string Uid(uint64_t uid) { return absl::StrFormat("%016x", uid); }

// info's layout on the one text block: a 12-column label after two
// spaces, values wrapped under themselves at column 14.
class InfoText {
 public:
  // "  label       value"; a value too long for the width wraps at spaces
  // onto lines indented under it (a word longer than a line is cut).
  void Row(std::string_view label, std::string_view value) {
    t_.Raw(absl::StrFormat("  %-*s", kTextLabelWidth - 2, absl::string_view(label.data(), label.size())));
    t_.Wrap(value, kTextLabelWidth, kTextLabelWidth);
  }
  // Items joined by two spaces, wrapped to the width.
  void WrappedRow(std::string_view label, const std::vector<std::string>& items) {
    std::string line;
    bool first_line = true;
    for (const std::string& item : items) {
      if (!line.empty() && kTextLabelWidth + line.size() + 2 + item.size() > t_.width()) {
        Row(first_line ? label : "", line);
        first_line = false;
        line.clear();
      }
      absl::StrAppend(&line, line.empty() ? "" : "  ", item);  // NOLINT
    }
    if (!line.empty() || first_line) Row(first_line ? label : "", line);
  }
  // The renderer's own line.
  void Line(std::string_view text) { t_.Line(text); }
  // An indented line of text from the trace; continuation lines get two
  // more spaces.
  void Line(std::string_view indent, std::string_view text) {
    t_.Raw(indent);
    t_.Wrap(text, indent.size() + 2, indent.size() + 2);
  }
  std::string Take() { return t_.Take(); }

 private:
  TextBlock t_;
};

std::string IdentityText(const proto::Identity& id) {
  std::vector<std::string> parts;
  if (!id.job_id().empty()) parts.push_back(absl::StrCat("job ", id.job_id()));
  if (id.rank() >= 0) {
    parts.push_back(id.world_size() > 0 ? absl::StrCat("rank ", id.rank(), " of ", id.world_size())
                                        : absl::StrCat("rank ", id.rank()));
  } else if (id.world_size() > 0) {
    parts.push_back(absl::StrCat("world size ", id.world_size()));
  }
  if (id.local_rank() >= 0) parts.push_back(absl::StrCat("local rank ", id.local_rank()));
  if (id.node_rank() >= 0) parts.push_back(absl::StrCat("node rank ", id.node_rank()));
  std::string text = absl::StrJoin(parts, ", ");
  if (!id.launcher().empty()) {
    absl::StrAppend(&text, text.empty() ? "" : " ", "(", id.launcher(), ")");
  }
  return text;
}

void RenderProcessText(const InfoProcess& p, InfoText& t) {
  const reader::ProcessInfo& info = p.info;
  if (!info.header) {
    t.Line("", absl::StrFormat("process %d  (uid %s)", info.pid, Uid(info.process_uid)));
    t.Row("header", "MISSING: its frame was lost or damaged; identity and devices unknown");
  } else {
    const proto::ProcessHeader& h = *info.header;
    t.Line("", absl::StrFormat("process %d on %s  (uid %s)", info.pid,
                               h.hostname().empty() ? "?" : h.hostname(), Uid(info.process_uid)));
    std::string command = absl::StrJoin(h.cmdline(), " ");
    const size_t room = kTextWidth - kTextLabelWidth;
    if (command.size() > room) command = Ellipsize(command, room);
    t.Row("command", command.empty() ? h.exe_path() : command);
    const std::string identity = IdentityText(h.identity());
    if (!identity.empty()) t.Row("identity", identity);
    if (h.env_size() > 0) {
      // Allow-listed settings only (the collector records nothing else).
      std::vector<std::string> env;
      for (const proto::KeyValue& kv : h.env()) env.push_back(absl::StrCat(kv.key(), "=", kv.value()));
      t.WrappedRow("environment", env);
    }
    // A version the collector could not read is 0 or empty: said so, not
    // shown as "CUDA driver API 0.0" or a blank.
    t.Row("versions",
          absl::StrCat("gpscope ", h.gpscope_version().empty() ? "unknown" : h.gpscope_version(),
                       ", CUDA driver API ",
                       h.cuda_driver_version() == 0
                           ? std::string("unknown")
                           : absl::StrFormat("%d.%d", h.cuda_driver_version() / 1000,
                                             h.cuda_driver_version() % 1000 / 10),
                       ", CUPTI ",
                       h.cupti_api_version() == 0 ? std::string("unknown")
                                                  : absl::StrCat(h.cupti_api_version()),
                       ", driver ", h.driver_version().empty() ? "unknown" : h.driver_version()));
  }
  // Devices from the header and the batches (a collector that attached
  // late, or a node monitor, defines them in batches).
  for (const auto& [id, d] : p.devices) {
    t.Row(absl::StrCat("device ", d.device_id()),
          absl::StrFormat("%s, %d SMs, %s, sm_%d%d", d.name(), d.sm_count(),
                          Bytes(static_cast<double>(d.global_memory_bytes())), d.compute_capability_major(),
                          d.compute_capability_minor()));
    t.Row("", absl::StrCat(d.uuid(), d.pci_bus_id().empty() ? "" : ", PCI ", d.pci_bus_id()));
  }
  if (p.has_events) {
    t.Row("time span", absl::StrCat(UtcSpanText(p.clocks.ToRealtimeNs(p.first_event_ns),
                                             p.clocks.ToRealtimeNs(p.last_event_ns)),
                                    " (", Time(p.last_event_ns - p.first_event_ns), ")"));
    if (p.clocks.empty()) t.Row("", "(no clock snapshot: CUPTI time taken as wall time)");
  } else {
    t.Row("time span", "no events");
  }
  std::string frames = absl::StrCat(Count(info.chunks), " read");
  if (info.lost_chunks > 0) {
    std::vector<std::string> gaps;
    for (const reader::SequenceGap& g : info.gaps) {
      gaps.push_back(g.count == 1
                         ? absl::StrCat(g.first_sequence)
                         : absl::StrCat(g.first_sequence, "-", g.first_sequence + g.count - 1));
    }
    uint64_t listed = 0;  // the reader keeps only the first gaps
    for (const reader::SequenceGap& g : info.gaps) listed += g.count;
    absl::StrAppend(&frames, ", ", Count(info.lost_chunks), " LOST (sequence ",
                    absl::StrJoin(gaps, ", "), listed < info.lost_chunks ? ", ..." : "", ")");
  }
  if (info.out_of_order_chunks > 0) {
    absl::StrAppend(&frames, ", ", Count(info.out_of_order_chunks), " duplicated or reordered");
  }
  t.Row("frames", frames);
  std::vector<std::string> counts;
  for (const auto& [name, n] : analyses::NamedCounts(p.events)) {
    std::string label = name;
    std::replace(label.begin(), label.end(), '_', ' ');
    counts.push_back(absl::StrCat(label, " ", Count(n)));
  }
  t.WrappedRow("events", counts);
  if (p.undecodable_batches > 0) {
    t.Row("", absl::StrCat("(", Count(p.undecodable_batches),
                           p.undecodable_batches == 1 ? " batch" : " batches",
                           " not counted: inconsistent columns)"));
  }
  if (!p.dropped.empty()) {
    std::vector<std::string> drops;
    // Every DropNotice count is in records (trace.proto): for write
    // failures, the events inside the frames that could not be written,
    // which show above as LOST frames (sequence gaps).
    for (const auto& [reason, n] : p.dropped) {
      drops.push_back(absl::StrCat(Spaced(DropName(reason)), " ", Things(n, "record"),
                                   reason == proto::DROP_WRITE_FAILED
                                       ? " (in the frames that could not be written)"
                                       : ""));
    }
    t.Row("dropped", absl::StrJoin(drops, ", "));
  }
  if (!p.lost_intervals.empty()) {
    t.Row("lost", absl::StrCat(Things(p.lost_intervals_total, "interval"),
                               " with incomplete data (UTC time, length, why):"));
    for (size_t i = 0; i < p.lost_intervals.size() && i < kTextMaxLostIntervals; ++i) {
      const proto::LostInterval& l = p.lost_intervals[i];
      const uint64_t start = p.clocks.ToRealtimeNs(l.start_ns());
      std::string line = l.end_ns() == 0
                             ? absl::StrCat(UtcText(start).substr(11), " .. end of trace")
                             : absl::StrCat(UtcText(start).substr(11), " (",
                                            Time(l.end_ns() - l.start_ns()), ")");
      absl::StrAppend(&line, "  ", Spaced(LostName(l.reason())));
      if (!l.detail().empty()) absl::StrAppend(&line, ": ", l.detail());
      t.Row("", line);
    }
    if (p.lost_intervals_total > kTextMaxLostIntervals) {
      t.Row("", absl::StrCat("... ", p.lost_intervals_total - kTextMaxLostIntervals, " more"));
    }
  }
  for (const auto& [component, c] : p.capabilities) {
    if (!c.available()) {
      t.Row("unavailable", absl::StrCat(component, c.reason().empty() ? "" : ": ", c.reason()));
    }
  }
  for (const auto& [key, r] : p.cupti_refusals) {
    // Its profiler (torch.profiler, Nsight) got no GPU events; gpscope's are complete.
    t.Row("other profiler",
          absl::StrCat("REFUSED ", Count(r.count()), "x: ", r.api(), " from ",
                       r.caller().empty() ? std::string("an unknown library") : r.caller(),
                       ", first at ", UtcText(p.clocks.ToRealtimeNs(r.first_ns())).substr(11),
                       " (it got no GPU events; GPSCOPE_CUPTI_MODE=yield leaves CUPTI to it)"));
  }
  if (info.end) {
    const proto::ProcessEnd& e = *info.end;
    std::string end = EndName(e.reason());
    if (e.reason() == proto::END_SIGNAL) absl::StrAppend(&end, " ", e.signal());
    if (e.reason() == proto::END_WINDOW_CUT) {
      absl::StrAppend(&end, ": one window copied out by gpscope attach, the process ran on; ",
                      Count(e.events_dropped()), " dropped in it");
    } else {
      absl::StrAppend(&end, ", ", Count(e.events_written()), " events written, ",
                      Count(e.events_dropped()), " dropped");
    }
    if (e.flush_timed_out()) absl::StrAppend(&end, "; final flush TIMED OUT");
    t.Row("end", end);
  } else {
    t.Row("end", "MISSING: the process did not exit cleanly (killed, crashed or still running)");
  }
}

// ------------------------------------------------------------------- json --

void RenderProcessJson(const InfoProcess& p, JsonWriter& j) {
  const reader::ProcessInfo& info = p.info;
  j.BeginObject();
  j.Key("process_uid").String(Uid(info.process_uid));
  j.Key("pid").Uint(info.pid);
  j.Key("path").String(info.path);
  j.Key("header_present").Bool(info.header.has_value());
  if (info.header) {
    const proto::ProcessHeader& h = *info.header;
    j.Key("hostname").String(h.hostname());
    j.Key("ppid").Uint(h.ppid());
    j.Key("cmdline").BeginArray();
    for (const std::string& arg : h.cmdline()) j.String(arg);
    j.EndArray();
    j.Key("exe_path").String(h.exe_path());
    const proto::Identity& id = h.identity();
    j.Key("identity").BeginObject();
    j.Key("job_id").String(id.job_id());
    j.Key("rank").Int(id.rank());
    j.Key("local_rank").Int(id.local_rank());
    j.Key("world_size").Int(id.world_size());
    j.Key("node_rank").Int(id.node_rank());
    j.Key("launcher").String(id.launcher());
    j.EndObject();
    // An array: a damaged or hand-made header may repeat a name.
    j.Key("env").BeginArray();
    for (const proto::KeyValue& kv : h.env()) {
      j.BeginObject().Key("name").String(kv.key()).Key("value").String(kv.value()).EndObject();
    }
    j.EndArray();
    j.Key("gpscope_version").String(h.gpscope_version());
    j.Key("cuda_driver_version").Uint(h.cuda_driver_version());
    j.Key("cupti_api_version").Uint(h.cupti_api_version());
    j.Key("driver_version").String(h.driver_version());
  }
  j.Key("devices").BeginArray();
  for (const auto& [id, d] : p.devices) {
    j.BeginObject();
    j.Key("device_id").Uint(d.device_id());
    j.Key("name").String(d.name());
    j.Key("uuid").String(d.uuid());
    j.Key("pci_bus_id").String(d.pci_bus_id());
    j.Key("compute_capability")
        .String(absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()));
    j.Key("sm_count").Uint(d.sm_count());
    j.Key("global_memory_bytes").Uint(d.global_memory_bytes());
    j.EndObject();
  }
  j.EndArray();
  if (p.has_events) {
    j.Key("first_event_ns").Uint(p.first_event_ns);
    j.Key("last_event_ns").Uint(p.last_event_ns);
    j.Key("first_event_time").String(UtcIso(p.clocks.ToRealtimeNs(p.first_event_ns), 9));
    j.Key("last_event_time").String(UtcIso(p.clocks.ToRealtimeNs(p.last_event_ns), 9));
  } else {
    j.Key("first_event_ns").Null().Key("last_event_ns").Null();
    j.Key("first_event_time").Null().Key("last_event_time").Null();
  }
  j.Key("clock_snapshots").Bool(!p.clocks.empty());
  j.Key("frames").Uint(info.chunks);
  j.Key("lost_frames").Uint(info.lost_chunks);
  j.Key("sequence_gaps").BeginArray();
  for (const reader::SequenceGap& g : info.gaps) {
    j.BeginObject().Key("first_sequence").Uint(g.first_sequence).Key("count").Uint(g.count);
    j.EndObject();
  }
  j.EndArray();
  j.Key("out_of_order_frames").Uint(info.out_of_order_chunks);
  j.Key("events").BeginObject();
  for (const auto& [name, n] : analyses::NamedCounts(p.events)) j.Key(name).Uint(n);
  j.EndObject();
  j.Key("undecodable_batches").Uint(p.undecodable_batches);
  j.Key("dropped").BeginObject();
  for (const auto& [reason, n] : p.dropped) j.Key(DropName(reason)).Uint(n);
  j.EndObject();
  if (p.lost_intervals_total > p.lost_intervals.size()) {
    j.Key("lost_intervals_total").Uint(p.lost_intervals_total);
  }
  j.Key("lost_intervals").BeginArray();
  for (const proto::LostInterval& l : p.lost_intervals) {
    j.BeginObject();
    j.Key("start_ns").Uint(l.start_ns());
    j.Key("end_ns").Uint(l.end_ns());
    j.Key("reason").String(LostName(l.reason()));
    j.Key("detail").String(l.detail());
    j.EndObject();
  }
  j.EndArray();
  j.Key("capabilities").BeginArray();
  for (const auto& [component, c] : p.capabilities) {
    j.BeginObject().Key("component").String(component).Key("available").Bool(c.available());
    j.Key("reason").String(c.reason()).EndObject();
  }
  j.EndArray();
  // Only when another CUPTI client was refused (older readers' key list).
  if (!p.cupti_refusals.empty()) {
    j.Key("cupti_refusals").BeginArray();
    for (const auto& [key, r] : p.cupti_refusals) {
      j.BeginObject().Key("api").String(r.api()).Key("caller").String(r.caller());
      j.Key("count").Uint(r.count()).Key("first_ns").Uint(r.first_ns());
      j.Key("last_ns").Uint(r.last_ns()).Key("result").Uint(r.result()).EndObject();
    }
    j.EndArray();
  }
  j.Key("clean_exit").Bool(info.end.has_value());
  if (info.end) {
    const proto::ProcessEnd& e = *info.end;
    j.Key("end").BeginObject();
    j.Key("reason").String(EndName(e.reason()));
    j.Key("signal").Int(e.signal());
    j.Key("end_ns").Uint(e.end_ns());
    j.Key("chunks_written").Uint(e.chunks_written());
    j.Key("events_written").Uint(e.events_written());
    j.Key("events_dropped").Uint(e.events_dropped());
    j.Key("flush_timed_out").Bool(e.flush_timed_out());
    j.EndObject();
  } else {
    j.Key("end").Null();
  }
  j.EndObject();
}

}  // namespace

std::string RenderInfoText(const InfoReport& report) {
  InfoText t;
  const reader::TraceIndex& index = report.index;
  t.Line(absl::StrFormat("gpscope trace info: %d %s, %d %s", index.files.size(),
                         index.files.size() == 1 ? "file" : "files", report.processes.size(),
                         report.processes.size() == 1 ? "process" : "processes"));
  t.Line("", TimeOriginText(report.timebase));
  if (index.partial) {
    t.Line("");
    t.Line("", PartialText(index));
  }
  for (const reader::FileInfo& f : index.files) {
    t.Line("");
    if (!f.status.ok()) {
      t.Line("", absl::StrCat("file NOT READ: ", f.status.message()));
      continue;
    }
    if (f.not_read) {
      t.Line("", absl::StrCat("file NOT READ (memory budget reached before it): ", f.path));
      continue;
    }
    t.Line("", absl::StrCat("file ", f.path));
    t.Row("format", absl::StrCat("version ", f.format_version, ", ", Bytes(static_cast<double>(f.file_bytes)), ", ",
                                 Things(f.frames, "frame")));
    if (f.damaged_regions > 0 || f.truncated || f.bad_chunks > 0) {
      std::vector<std::string> damage;
      if (f.damaged_regions > 0) {
        damage.push_back(Things(f.damaged_regions, "damaged region"));
      }
      if (f.bad_chunks > 0) damage.push_back(Things(f.bad_chunks, "undecodable frame"));
      damage.push_back(absl::StrCat(Things(f.skipped_bytes, "byte"), " skipped"));
      if (f.truncated) damage.push_back("ends in a truncated frame");
      t.Row("damage", absl::StrJoin(damage, ", "));
    }
  }
  for (const InfoProcess& p : report.processes) {
    t.Line("");
    RenderProcessText(p, t);
  }
  const uint64_t total_warnings = index.warnings.size() + index.warnings_omitted;
  if (total_warnings > 0) {
    t.Line("");
    t.Line(absl::StrCat("warnings (", Count(total_warnings), "):"));
    for (size_t i = 0; i < index.warnings.size() && i < kTextMaxWarnings; ++i) {
      t.Line("  ", index.warnings[i]);
    }
    if (total_warnings > kTextMaxWarnings) {
      t.Line(absl::StrCat("  ... ", Count(total_warnings - kTextMaxWarnings),
                          " more (--format json lists up to ", kInfoMaxWarnings, ")"));
    }
  }
  return t.Take();
}

std::string RenderInfoJson(const InfoReport& report) {
  std::string out;
  JsonWriter j(&out);
  const reader::TraceIndex& index = report.index;
  j.BeginObject();
  WriteTimeOrigin(report.timebase, j);
  j.Key("files").BeginArray();
  for (const reader::FileInfo& f : index.files) {
    j.BeginObject();
    j.Key("path").String(f.path);
    if (f.status.ok()) {
      j.Key("error").Null();
    } else {
      j.Key("error").String(std::string(f.status.message()));
    }
    j.Key("bytes").Uint(f.file_bytes);
    j.Key("format_version").Uint(f.format_version);
    j.Key("frames").Uint(f.frames);
    j.Key("bad_chunks").Uint(f.bad_chunks);
    j.Key("damaged_regions").Uint(f.damaged_regions);
    j.Key("skipped_bytes").Uint(f.skipped_bytes);
    j.Key("truncated").Bool(f.truncated);
    if (f.stopped_at_offset) j.Key("stopped_at_offset").Uint(*f.stopped_at_offset);
    if (f.not_read) j.Key("not_read").Bool(true);
    j.EndObject();
  }
  j.EndArray();
  WritePartialJson(index, j);
  j.Key("processes").BeginArray();
  for (const InfoProcess& p : report.processes) RenderProcessJson(p, j);
  j.EndArray();
  j.Key("warnings").BeginArray();
  for (const std::string& w : index.warnings) j.String(w);
  j.EndArray();
  j.Key("warnings_omitted").Uint(index.warnings_omitted);
  j.EndObject();
  return out;
}

}  // namespace gpscope::render
