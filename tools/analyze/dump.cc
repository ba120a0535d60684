// tools/analyze/dump.cc: see dump.h.
#include "tools/analyze/dump.h"

#include <cmath>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gpscope/trace.pb.h"
#include "tools/analyze/cli.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/event_reader.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {
namespace {

using render::JsonWriter;

// The proto enum's value name without its prefix ("MEMCPY_HTOD" -> "HTOD").
template <typename NameFn>
std::string EnumName(NameFn name_fn, int value, const std::string& prefix) {
  std::string n = name_fn(value);
  if (n.empty()) return std::to_string(value);
  if (absl::StartsWith(n, prefix)) n.erase(0, prefix.size());
  return n;
}

// Builds one compact JSON object per line.
class Line {
 public:
  Line(std::ostream& out, std::string_view type, uint32_t pid) : out_(out) {
    s_ = "{\"type\":\"" + std::string(type) + "\",\"pid\":" + std::to_string(pid);
  }
  ~Line() { out_ << s_ << "}\n"; }
  Line& U(std::string_view k, uint64_t v) { return Raw(k, absl::StrCat(v)); }
  Line& I(std::string_view k, int64_t v) { return Raw(k, absl::StrCat(v)); }
  // JSON has no NaN or infinity: those become null.
  Line& D(std::string_view k, double v) {
    return Raw(k, std::isfinite(v) ? absl::StrCat(v) : std::string("null"));
  }
  Line& B(std::string_view k, bool v) { return Raw(k, v ? "true" : "false"); }
  Line& S(std::string_view k, std::string_view v) {
    return Raw(k, JsonWriter::Quote(v));
  }
  Line& Triple(std::string_view k, uint32_t x, uint32_t y, uint32_t z) {
    return Raw(k, absl::StrCat("[", x, ",", y, ",", z, "]"));
  }

 private:
  Line& Raw(std::string_view k, std::string_view v) {
    s_.append(",\"").append(k).append("\":").append(v);
    return *this;
  }
  std::ostream& out_;
  std::string s_;
};

// An event sink of the reader's pass: names and launch shapes from the
// process's tables; every timed event carries its CUPTI times as recorded
// (start_ns, end_ns, timestamp_ns) and `t_ns`, ns since the time origin on
// the common timebase (reader/timebase.h: the same number summary, the
// report and export show for it).
class Dumper : public reader::EventSink {
 public:
  Dumper(std::ostream& out, std::ostream& err, const reader::Timebase& timebase)
      : out_(out), err_(err), timebase_(timebase) {
    out_ << "{\"type\":\"time_origin\",\"realtime_ns\":" << timebase.origin_realtime_ns()
         << ",\"utc\":" << JsonWriter::Quote(timebase.OriginUtc()) << "}\n";
  }

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h,
                const reader::ChunkPlace&) override {
    const uint32_t pid = t.pid();
    {
      Line l(out_, "process", pid);
      l.S("uid", absl::StrCat(absl::Hex(t.process_uid(), absl::kZeroPad16)))
          .S("host", h.hostname())
          .U("ppid", h.ppid())
          .I("rank", h.identity().rank())
          .I("local_rank", h.identity().local_rank())
          .I("world_size", h.identity().world_size())
          .S("job", h.identity().job_id())
          .S("launcher", h.identity().launcher())
          .S("exe", h.exe_path())
          .B("fork_child", h.is_fork_child())
          .U("cupti_api_version", h.cupti_api_version())
          .U("cuda_driver_version", h.cuda_driver_version());
    }
    for (const proto::DeviceInfo& d : h.devices()) Device(pid, d);
  }

  void OnEnd(const reader::ProcessTables& t, const proto::ProcessEnd& e,
             const reader::ChunkPlace&) override {
    const uint32_t pid = t.pid();
    {
      Line(out_, "end", pid)
          .U("end_ns", e.end_ns())
          .S("reason", EnumName(proto::EndReason_Name<int>, e.reason(), "END_"))
          .I("signal", e.signal())
          .U("chunks_written", e.chunks_written())
          .U("events_written", e.events_written())
          .U("events_dropped", e.events_dropped())
          .B("flush_timed_out", e.flush_timed_out());
    }
  }

  void OnBatch(const reader::ResolvedBatch& rb) override {
    const proto::EventBatch& b = rb.batch;
    const reader::ProcessTables& t = rb.tables;
    const uint32_t pid = t.pid();
    const uint64_t uid = t.process_uid();
    auto str = [&t](uint32_t id) {
      if (id == 0) return std::string();
      return t.HasString(id) ? t.String(id) : absl::StrCat("<unknown name #", id, ">");
    };
    auto at = [this, uid](uint64_t cupti_ns) { return timebase_.ToOriginNs(uid, cupti_ns); };
    for (const proto::DeviceInfo& d : b.devices()) Device(pid, d);
    for (const proto::ContextInfo& c : b.contexts()) {
      Line(out_, "context", pid).U("context", c.context_id()).U("device", c.device_id())
          .U("null_stream", c.null_stream_id());
    }
    for (const proto::MetricDescriptor& m : b.metric_descriptors()) {
      Line(out_, "metric_descriptor", pid).U("id", m.id()).S("name", m.name()).S("unit", m.unit())
          .S("scope", EnumName(proto::MetricScope_Name<int>, m.scope(), "SCOPE_"))
          .U("device", m.device_id()).U("metric_pid", m.pid()).S("label", m.label());
    }
    for (const proto::DropNotice& d : b.drops()) {
      Line(out_, "drop", pid).S("reason", EnumName(proto::DropReason_Name<int>, d.reason(), "DROP_"))
          .U("count", d.count()).U("first_ns", d.first_ns()).U("last_ns", d.last_ns())
          .S("detail", d.detail());
    }
    for (const proto::LostInterval& l : b.lost_intervals()) {
      Line(out_, "lost", pid).S("reason", EnumName(proto::LostReason_Name<int>, l.reason(), "LOST_"))
          .U("start_ns", l.start_ns()).U("end_ns", l.end_ns()).S("detail", l.detail());
    }
    for (const proto::CapabilityNotice& c : b.capabilities()) {
      Line(out_, "capability", pid).S("component", c.component()).B("available", c.available())
          .S("reason", c.reason());
    }
    if (!rb.decode_status.ok()) {
      err_ << kProgram << ": pid " << pid << ": " << rb.decode_status.message() << "\n";
      return;  // one bad batch does not end the dump
    }
    const reader::DecodedBatch& events_ = rb.events;
    static const reader::LaunchShape kNoShape;
    for (const format::KernelEvent& k : events_.kernels) {
      const reader::LaunchShape* shape = t.Launch(k.launch_config_id);
      const reader::LaunchShape& c = shape != nullptr ? *shape : kNoShape;
      Line(out_, "kernel", pid).U("start_ns", k.start_ns).U("end_ns", k.end_ns)
          .U("t_ns", at(k.start_ns))
          .S("name", str(k.name_id))
          .Triple("grid", c.grid[0], c.grid[1], c.grid[2])
          .Triple("block", c.block[0], c.block[1], c.block[2])
          .U("registers", c.registers_per_thread)
          .U("static_smem", c.static_shared_memory_bytes)
          .U("dynamic_smem", c.dynamic_shared_memory_bytes)
          .U("device", k.device_id).U("context", k.context_id).U("stream", k.stream_id)
          .U("correlation", k.correlation_id).U("graph_id", k.graph_id)
          .U("graph_node", k.graph_node_id);
    }
    for (const format::MemcpyEvent& m : events_.memcpys) {
      Line(out_, "memcpy", pid).U("start_ns", m.start_ns).U("end_ns", m.end_ns)
          .U("t_ns", at(m.start_ns)).U("bytes", m.bytes)
          .S("copy_kind", EnumName(proto::MemcpyKind_Name<int>, m.copy_kind, "MEMCPY_"))
          .S("src_kind", EnumName(proto::MemoryKind_Name<int>, m.src_kind, "MEMORY_"))
          .S("dst_kind", EnumName(proto::MemoryKind_Name<int>, m.dst_kind, "MEMORY_"))
          .B("async", m.flags & 1).U("device", m.device_id).U("dst_device", m.dst_device_id)
          .U("context", m.context_id).U("stream", m.stream_id)
          .U("correlation", m.correlation_id).U("graph_id", m.graph_id);
    }
    for (const format::MemsetEvent& m : events_.memsets) {
      Line(out_, "memset", pid).U("start_ns", m.start_ns).U("end_ns", m.end_ns)
          .U("t_ns", at(m.start_ns)).U("bytes", m.bytes)
          .U("value", m.value)
          .S("memory_kind", EnumName(proto::MemoryKind_Name<int>, m.memory_kind, "MEMORY_"))
          .B("async", m.flags & 1).U("device", m.device_id).U("context", m.context_id)
          .U("stream", m.stream_id).U("correlation", m.correlation_id).U("graph_id", m.graph_id);
    }
    for (const format::SyncEvent& s : events_.syncs) {
      Line(out_, "sync", pid).U("start_ns", s.start_ns).U("end_ns", s.end_ns)
          .U("t_ns", at(s.start_ns))
          .S("sync_kind", EnumName(proto::SyncKind_Name<int>, s.sync_kind, "SYNC_"))
          .U("context", s.context_id).U("stream", s.stream_id).U("event", s.event_id)
          .U("correlation", s.correlation_id).U("thread", s.thread_id);
    }
    for (const format::ApiCallEvent& a : events_.api_calls) {
      Line(out_, "api", pid).U("start_ns", a.start_ns).U("end_ns", a.end_ns)
          .U("t_ns", at(a.start_ns))
          .S("name", str(a.api_name_id))
          .S("domain", EnumName(proto::ApiDomain_Name<int>, a.domain, "API_"))
          .U("cbid", a.cbid).U("thread", a.thread_id).U("correlation", a.correlation_id)
          .U("return_value", a.return_value);
    }
    for (const format::NvtxRangeEvent& r : events_.nvtx_ranges) {
      Line(out_, "nvtx_range", pid).U("start_ns", r.start_ns).U("end_ns", r.end_ns)
          .U("t_ns", at(r.start_ns))
          .S("name", str(r.name_id)).S("domain", str(r.domain_id))
          .U("thread", r.thread_id).U("depth", r.depth);
    }
    for (const format::NvtxMarkEvent& m : events_.nvtx_marks) {
      Line(out_, "nvtx_mark", pid).U("timestamp_ns", m.timestamp_ns).U("t_ns", at(m.timestamp_ns))
          .S("name", str(m.name_id)).S("domain", str(m.domain_id)).U("thread", m.thread_id);
    }
    for (const format::OverheadEvent& o : events_.overheads) {
      Line(out_, "overhead", pid).U("start_ns", o.start_ns).U("end_ns", o.end_ns)
          .U("t_ns", at(o.start_ns))
          .S("overhead_kind", EnumName(proto::OverheadKind_Name<int>, o.overhead_kind, "OVERHEAD_"))
          .U("thread", o.thread_id).U("device", o.device_id);
    }
    for (const format::MetricSample& m : events_.metrics) {
      Line(out_, "metric", pid).U("timestamp_ns", m.timestamp_ns).U("t_ns", at(m.timestamp_ns))
          .U("metric", m.metric_id).D("value", m.value);
    }
  }

  void OnWarning(std::string_view warning) override {
    err_ << kProgram << ": " << render::Printable(warning) << "\n";
  }

 private:
  void Device(uint32_t pid, const proto::DeviceInfo& d) {
    Line(out_, "device", pid).U("device", d.device_id()).S("name", d.name()).S("uuid", d.uuid())
        .U("cc_major", d.compute_capability_major()).U("cc_minor", d.compute_capability_minor())
        .U("sm_count", d.sm_count()).U("memory_bytes", d.global_memory_bytes());
  }

  std::ostream& out_;
  std::ostream& err_;
  const reader::Timebase& timebase_;
};

}  // namespace

int RunDump(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " dump: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  if (parsed->has("help") || parsed->positional.empty()) {
    (parsed->has("help") ? out : err)
        << "usage: " << kProgram << " dump FILE...\n\n"
        << "Writes every event as one JSON object per line: names resolved, CUPTI ns as\n"
           "recorded (start_ns, end_ns, timestamp_ns) and t_ns, ns since the time origin\n"
           "(the first line: the earliest event of all files on the common timebase, as\n"
           "every command prints it).\n";
    return parsed->has("help") ? kExitOk : kExitUsage;
  }
  // Lines are written as they are read: the timebase (final clocks, the
  // origin) comes from a first pass.
  const reader::Timebase timebase = reader::ScanTimebase(parsed->positional);
  Dumper dumper(out, err, timebase);
  reader::ReadResult read = reader::ReadEvents(parsed->positional, {&dumper});
  const reader::TraceIndex* index = &read.index;
  ReportMissingEnds(*index, err);
  if (index->partial) {
    const reader::PartialRead& p = *index->partial;
    out << "{\"type\":\"partial\",\"reason\":\"memory budget\",\"file\":"
        << JsonWriter::Quote(p.path) << ",\"offset\":" << p.offset
        << ",\"budget_bytes\":" << p.budget_bytes << "}\n";
  }
  const bool partial = ReportPartial(*index, err);
  if (absl::Status st = index->FirstFileError(); !st.ok()) {
    err << kProgram << ": " << st.message() << "\n";
    return kExitFailed;
  }
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
