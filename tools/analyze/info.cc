// tools/analyze/info.cc: see info.h.
#include "tools/analyze/info.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "tools/analyze/cli.h"
#include "tools/reader/event_reader.h"
#include "tools/render/time_origin.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {
namespace {

constexpr size_t kMaxWarnings = 1000;
constexpr size_t kTextWidth = 100;
constexpr size_t kTextLabelWidth = 14;  // "  time span   " etc.
constexpr size_t kTextMaxWarnings = 50;
constexpr size_t kTextMaxLostIntervals = 10;
// Lost intervals kept per process (the JSON lists them); the rest are counted.
constexpr size_t kMaxLostIntervalsKept = 4096;

// ------------------------------------------------------------- collecting --

// An event sink of the reader's pass; devices and clocks are the reader's
// tables'.
class InfoCollector : public reader::EventSink {
 public:
  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader&,
                const reader::ChunkPlace&) override {
    Of(t);
  }
  void OnBatch(const reader::ResolvedBatch& b) override { AddBatch(b, Of(b.tables)); }
  void OnEnd(const reader::ProcessTables& t, const proto::ProcessEnd&,
             const reader::ChunkPlace&) override {
    Of(t);
  }

  void OnWarning(std::string_view warning) override { Warn(std::string(warning)); }

  InfoReport Finish(reader::ReadResult read) {
    InfoReport report;
    reader::TraceIndex& index = read.index;
    index.warnings = std::move(warnings_);
    index.warnings_omitted = warnings_omitted_;
    for (const reader::ProcessInfo& info : index.processes) {
      auto it = slot_.find(info.process_uid);
      ProcessReport p;
      if (it != slot_.end()) p = std::move(processes_[it->second]);
      p.info = info;
      if (const reader::ProcessTables* t = read.FindTables(info.process_uid)) {
        p.clocks = t->clocks();
        p.devices = t->devices();
      }
      report.processes.push_back(std::move(p));
    }
    report.index = std::move(index);
    report.timebase = std::move(read.timebase);
    return report;
  }

 private:
  void Warn(std::string warning) {
    if (warnings_.size() < kMaxWarnings) {
      warnings_.push_back(std::move(warning));
    } else {
      ++warnings_omitted_;
    }
  }

  ProcessReport& Of(const reader::ProcessTables& t) {
    auto [it, inserted] = slot_.try_emplace(t.process_uid(), processes_.size());
    if (inserted) processes_.emplace_back();
    return processes_[it->second];
  }

  void AddBatch(const reader::ResolvedBatch& b, ProcessReport& p) {
    const proto::EventBatch& batch = b.batch;
    for (const proto::DropNotice& d : batch.drops()) p.dropped[d.reason()] += d.count();
    for (const proto::LostInterval& l : batch.lost_intervals()) {
      ++p.lost_intervals_total;
      if (p.lost_intervals.size() < kMaxLostIntervalsKept) p.lost_intervals.push_back(l);
    }
    for (const proto::CapabilityNotice& c : batch.capabilities()) p.capabilities[c.component()] = c;
    for (const proto::CuptiClientRefusal& r : batch.cupti_refusals()) {
      proto::CuptiClientRefusal& kept = p.cupti_refusals[{r.api(), r.caller()}];
      if (r.count() >= kept.count()) kept = r;
    }
    if (!b.decode_status.ok()) {
      ++p.undecodable_batches;
      Warn(absl::StrCat(b.place.file->path, ": offset ", b.place.offset, ": ",
                        b.decode_status.message(), "; batch skipped"));
      return;
    }
    const reader::DecodedBatch& events_ = b.events;
    EventCounts& n = p.events;
    n.kernels += events_.kernels.size();
    n.memcpys += events_.memcpys.size();
    n.memsets += events_.memsets.size();
    n.syncs += events_.syncs.size();
    n.api_calls += events_.api_calls.size();
    n.nvtx_ranges += events_.nvtx_ranges.size();
    n.nvtx_marks += events_.nvtx_marks.size();
    n.overheads += events_.overheads.size();
    n.metric_samples += events_.metrics.size();
    auto span = [&p](uint64_t first_ns, uint64_t last_ns) {
      p.first_event_ns = p.has_events ? std::min(p.first_event_ns, first_ns) : first_ns;
      p.last_event_ns = p.has_events ? std::max(p.last_event_ns, last_ns) : last_ns;
      p.has_events = true;
    };
    for (const auto& e : events_.kernels) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.memcpys) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.memsets) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.syncs) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.api_calls) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.nvtx_ranges) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.nvtx_marks) span(e.timestamp_ns, e.timestamp_ns);
    for (const auto& e : events_.overheads) span(e.start_ns, e.end_ns);
    for (const auto& e : events_.metrics) span(e.timestamp_ns, e.timestamp_ns);
  }

  absl::flat_hash_map<uint64_t, size_t> slot_;  // process_uid -> processes_
  std::vector<ProcessReport> processes_;
  std::vector<std::string> warnings_;
  uint64_t warnings_omitted_ = 0;
};

// -------------------------------------------------------------- formatting --

// "DROP_RING_FULL" -> "ring_full"; values this build does not know -> "reason_17".
std::string EnumName(bool valid, const std::string& name, absl::string_view prefix, int value) {
  if (!valid) return absl::StrCat("reason_", value);
  return absl::AsciiStrToLower(name.substr(std::min(prefix.size(), name.size())));
}
std::string DropName(int r) {
  const bool ok = proto::DropReason_IsValid(r);
  return EnumName(ok, ok ? proto::DropReason_Name(static_cast<proto::DropReason>(r)) : "", "DROP_",
                  r);
}
std::string LostName(int r) {
  const bool ok = proto::LostReason_IsValid(r);
  return EnumName(ok, ok ? proto::LostReason_Name(static_cast<proto::LostReason>(r)) : "", "LOST_",
                  r);
}
std::string EndName(int r) {
  const bool ok = proto::EndReason_IsValid(r);
  return EnumName(ok, ok ? proto::EndReason_Name(static_cast<proto::EndReason>(r)) : "", "END_", r);
}

// "ring_full" -> "ring full", for text.
std::string Spaced(std::string name) {
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

std::string Uid(uint64_t uid) { return absl::StrFormat("%016x", uid); }

// 1234567 -> "1,234,567".
std::string Count(uint64_t n) {
  std::string digits = absl::StrCat(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

// "1 frame", "2 frames".
std::string Things(uint64_t n, absl::string_view thing) {
  return absl::StrCat(Count(n), " ", thing, n == 1 ? "" : "s");
}

std::string Bytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  for (; v >= 1024 && u < 4; ++u) v /= 1024;
  return absl::StrFormat("%.1f %s", v, units[u]);
}

std::string Duration(uint64_t ns) {
  if (ns < 1'000) return absl::StrCat(ns, " ns");
  if (ns < 1'000'000) return absl::StrFormat("%.3f us", static_cast<double>(ns) / 1e3);
  if (ns < 1'000'000'000) return absl::StrFormat("%.3f ms", static_cast<double>(ns) / 1e6);
  return absl::StrFormat("%.3f s", static_cast<double>(ns) / 1e9);
}

absl::Time WallTime(uint64_t realtime_ns) {
  return absl::FromUnixNanos(static_cast<int64_t>(std::min<uint64_t>(realtime_ns, INT64_MAX)));
}
std::string TextTime(uint64_t realtime_ns) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E6S", WallTime(realtime_ns), absl::UTCTimeZone());
}
// "2023-11-14 22:13:20.000500 .. 22:13:20.003250 UTC": the date once when
// both ends share it.
std::string TextSpan(uint64_t first_realtime_ns, uint64_t last_realtime_ns) {
  const std::string first = TextTime(first_realtime_ns);
  std::string last = TextTime(last_realtime_ns);
  if (first.compare(0, 11, last, 0, 11) == 0) last.erase(0, 11);
  return absl::StrCat(first, " .. ", last, " UTC");
}
std::string IsoTime(uint64_t realtime_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", WallTime(realtime_ns), absl::UTCTimeZone());
}

std::vector<std::pair<const char*, uint64_t>> CountList(const EventCounts& n) {
  return {{"kernels", n.kernels},
          {"memcpys", n.memcpys},
          {"memsets", n.memsets},
          {"syncs", n.syncs},
          {"api_calls", n.api_calls},
          {"nvtx_ranges", n.nvtx_ranges},
          {"nvtx_marks", n.nvtx_marks},
          {"overheads", n.overheads},
          {"metric_samples", n.metric_samples}};
}

// ------------------------------------------------------------------- text --

class TextOut {
 public:
  // "  label       value"; a value too long for kTextWidth wraps at spaces
  // onto lines indented under it (a word longer than a line is cut).
  void Row(absl::string_view label, absl::string_view value) {
    absl::StrAppendFormat(&out_, "  %-*s", kTextLabelWidth - 2, label);
    Wrapped(value, kTextLabelWidth);
  }
  // Text at `indent`, wrapped like Row's values.
  void Wrapped(absl::string_view raw_text, size_t indent) {
    // Strings come from the trace: control characters (newlines, terminal
    // escapes, bidi overrides) would break the layout or the terminal, so
    // they are escaped (render::Printable); lines break on characters.
    const std::string printable =
        render::Printable(std::string_view(raw_text.data(), raw_text.size()));
    absl::string_view text = printable;
    const size_t room = kTextWidth - indent;
    bool first = true;
    while (first || !text.empty()) {
      const std::string_view cut = render::CutUtf8(std::string_view(text.data(), text.size()), room);
      absl::string_view line(cut.data(), cut.size());
      if (line.empty() && !text.empty()) line = text.substr(0, std::min<size_t>(text.size(), 4));
      if (text.size() > room) {
        const size_t space = line.rfind(' ');
        if (space != absl::string_view::npos && space > 0) line = line.substr(0, space);
      }
      if (!first) out_.append(indent, ' ');
      absl::StrAppend(&out_, line, "\n");
      text.remove_prefix(line.size());
      while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
      first = false;
    }
  }
  // Items joined by two spaces, wrapped to kTextWidth.
  void WrappedRow(absl::string_view label, const std::vector<std::string>& items) {
    std::string line;
    bool first_line = true;
    for (const std::string& item : items) {
      if (!line.empty() && kTextLabelWidth + line.size() + 2 + item.size() > kTextWidth) {
        Row(first_line ? label : "", line);
        first_line = false;
        line.clear();
      }
      absl::StrAppend(&line, line.empty() ? "" : "  ", item);
    }
    if (!line.empty() || first_line) Row(first_line ? label : "", line);
  }
  void Line(absl::string_view text) { absl::StrAppend(&out_, text, "\n"); }
  // An indented line; continuation lines get two more spaces.
  void Line(absl::string_view indent, absl::string_view text) {
    out_.append(indent.data(), indent.size());
    Wrapped(text, indent.size() + 2);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
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

void RenderProcessText(const ProcessReport& p, TextOut& t) {
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
    if (command.size() > room) command = render::Ellipsize(command, room);
    t.Row("command", command.empty() ? h.exe_path() : command);
    const std::string identity = IdentityText(h.identity());
    if (!identity.empty()) t.Row("identity", identity);
    if (h.env_size() > 0) {
      // Allow-listed settings only (the collector records nothing else).
      std::vector<std::string> env;
      for (const proto::KeyValue& kv : h.env()) env.push_back(absl::StrCat(kv.key(), "=", kv.value()));
      t.WrappedRow("environment", env);
    }
    if (h.is_fork_child()) {
      t.Row("fork",
            absl::StrCat("child of uid ", Uid(h.parent_process_uid()), " (ppid ", h.ppid(), ")"));
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
                          Bytes(d.global_memory_bytes()), d.compute_capability_major(),
                          d.compute_capability_minor()));
    t.Row("", absl::StrCat(d.uuid(), d.pci_bus_id().empty() ? "" : ", PCI ", d.pci_bus_id()));
  }
  if (p.has_events) {
    t.Row("time span", absl::StrCat(TextSpan(p.clocks.ToRealtimeNs(p.first_event_ns),
                                             p.clocks.ToRealtimeNs(p.last_event_ns)),
                                    " (", Duration(p.last_event_ns - p.first_event_ns), ")"));
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
  for (const auto& [name, n] : CountList(p.events)) {
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
                             ? absl::StrCat(TextTime(start).substr(11), " .. end of trace")
                             : absl::StrCat(TextTime(start).substr(11), " (",
                                            Duration(l.end_ns() - l.start_ns()), ")");
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
                       ", first at ", TextTime(p.clocks.ToRealtimeNs(r.first_ns())).substr(11),
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

void RenderProcessJson(const ProcessReport& p, render::JsonWriter& j) {
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
    j.Key("is_fork_child").Bool(h.is_fork_child());
    if (h.is_fork_child()) {
      j.Key("parent_process_uid").String(Uid(h.parent_process_uid()));
    } else {
      j.Key("parent_process_uid").Null();
    }
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
    j.Key("first_event_time").String(IsoTime(p.clocks.ToRealtimeNs(p.first_event_ns)));
    j.Key("last_event_time").String(IsoTime(p.clocks.ToRealtimeNs(p.last_event_ns)));
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
  for (const auto& [name, n] : CountList(p.events)) j.Key(name).Uint(n);
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

constexpr char kInfoUsage[] =
    "usage: gpscope-analyze info [--format text|json] FILE...\n"
    "\n"
    "Shows what gpscope trace files hold: per process its identity, command line,\n"
    "devices, time span, frames read and lost, event counts per kind, dropped records,\n"
    "lost intervals and whether it exited cleanly; then warnings about damaged data.\n"
    "\n"
    "  --format text|json  output format (default text; json has stable keys)\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit status: 0 ok (also when data was damaged: see warnings), 1 a file could not\n"
    "be read, 2 usage error.\n";

}  // namespace

InfoReport CollectInfo(const std::vector<std::string>& paths) {
  InfoCollector collector;
  reader::ReadOptions options;
  options.max_warnings = kMaxWarnings;
  return collector.Finish(reader::ReadEvents(paths, {&collector}, options));
}

std::string RenderInfoText(const InfoReport& report) {
  TextOut t;
  const reader::TraceIndex& index = report.index;
  t.Line(absl::StrFormat("gpscope trace info: %d %s, %d %s", index.files.size(),
                         index.files.size() == 1 ? "file" : "files", report.processes.size(),
                         report.processes.size() == 1 ? "process" : "processes"));
  t.Line("", render::TimeOriginText(report.timebase));
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
    t.Row("format", absl::StrCat("version ", f.format_version, ", ", Bytes(f.file_bytes), ", ",
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
  for (const ProcessReport& p : report.processes) {
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
                          " more (--format json lists up to ", kMaxWarnings, ")"));
    }
  }
  return t.Take();
}

std::string RenderInfoJson(const InfoReport& report) {
  std::string out;
  render::JsonWriter j(&out);
  const reader::TraceIndex& index = report.index;
  j.BeginObject();
  render::WriteTimeOrigin(report.timebase, j);
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
  for (const ProcessReport& p : report.processes) RenderProcessJson(p, j);
  j.EndArray();
  j.Key("warnings").BeginArray();
  for (const std::string& w : index.warnings) j.String(w);
  j.EndArray();
  j.Key("warnings_omitted").Uint(index.warnings_omitted);
  j.EndObject();
  return out;
}

int RunInfo(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"format"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " info: " << parsed.status().message() << "; run '" << kProgram
        << " info --help'\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    out << kInfoUsage;
    return kExitOk;
  }
  const std::string format = parsed->has("format") ? parsed->flags.at("format") : "text";
  if (format != "text" && format != "json") {
    err << kProgram << " info: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  if (parsed->positional.empty()) {
    err << kProgram << " info: no trace files given; usage: " << kProgram
        << " info [--format text|json] FILE...\n";
    return kExitUsage;
  }
  const InfoReport report = CollectInfo(parsed->positional);
  int code = kExitOk;
  size_t readable = 0;
  for (const reader::FileInfo& f : report.index.files) {
    if (f.status.ok()) {
      ++readable;
    } else {
      err << kProgram << ": " << f.status.message() << "\n";
      code = kExitFailed;
    }
  }
  if (ReportPartial(report.index, err)) code = kExitFailed;
  if (readable > 0) {
    out << (format == "json" ? RenderInfoJson(report)
                             : render::SanitizeTerminal(RenderInfoText(report)));
  }
  return code;
}

}  // namespace gpscope::analyze
