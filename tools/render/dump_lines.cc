// tools/render/dump_lines.cc: see dump_lines.h.
#include "tools/render/dump_lines.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gpscope/trace.pb.h"
#include "tools/reader/batch_decode.h"
#include "tools/render/json_writer.h"
#include "tools/render/read_status.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::render {

bool DumpFilter::AddKind(std::string name) {
  if (name == "nvtx") {
    kinds.insert("nvtx_range");
    kinds.insert("nvtx_mark");
    return true;
  }
  if (name == "marker") name = "nvtx_mark";
  for (const char* k : kDumpKinds) {
    if (name == k) {
      kinds.insert(name);
      return true;
    }
  }
  return false;
}

namespace {

constexpr std::string_view kProgram = kAnalyzeProgram;


// The proto enum's value name without its prefix ("MEMCPY_HTOD" -> "HTOD").
template <typename NameFn>
std::string EnumName(NameFn name_fn, int value, const std::string& prefix) {
  std::string n = name_fn(value);
  if (n.empty()) return std::to_string(value);
  if (absl::StartsWith(n, prefix)) n.erase(0, prefix.size());
  return n;
}

// Builds one compact JSON object per line.
// How a line writes its times: absolute CUPTI ns beside t_ns (default), or
// only ns since the time origin (--time relative).
struct Clock {
  const reader::Timebase* timebase = nullptr;
  uint64_t process_uid = 0;
  bool relative = false;
  uint64_t At(uint64_t cupti_ns) const { return timebase->ToOriginNs(process_uid, cupti_ns); }
};

// A Line that is not `on` (filtered out) writes nothing.
class Line {
 public:
  Line(std::ostream& out, std::string_view type, uint32_t pid, bool on = true,
       const Clock* clock = nullptr)
      : out_(out), on_(on), clock_(clock) {
    if (on_) s_ = "{\"type\":\"" + std::string(type) + "\",\"pid\":" + std::to_string(pid);
  }
  ~Line() {
    if (on_) out_ << s_ << "}\n";
  }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  Line& U(std::string_view k, uint64_t v) { return on_ ? Raw(k, absl::StrCat(v)) : *this; }
  Line& Null(std::string_view k) { return Raw(k, "null"); }
  Line& I(std::string_view k, int64_t v) { return Raw(k, absl::StrCat(v)); }
  // JSON has no NaN or infinity: those become null.
  Line& D(std::string_view k, double v) {
    return Raw(k, std::isfinite(v) ? absl::StrCat(v) : std::string("null"));
  }
  Line& B(std::string_view k, bool v) { return Raw(k, v ? "true" : "false"); }
  Line& S(std::string_view k, std::string_view v) {
    return Raw(k, JsonWriter::Quote(v));
  }
  // An interval: start_ns, end_ns (CUPTI ns) and t_ns (since the origin);
  // relative: t_ns and end_t_ns only.
  Line& Span(uint64_t start_ns, uint64_t end_ns) {
    if (!on_) return *this;
    if (clock_->relative) return Rel("t_ns", start_ns).Rel("end_t_ns", end_ns);
    return U("start_ns", start_ns).U("end_ns", end_ns).U("t_ns", clock_->At(start_ns));
  }
  // An instant: timestamp_ns and t_ns; relative: t_ns only.
  Line& Point(uint64_t timestamp_ns) {
    if (!on_) return *this;
    if (clock_->relative) return Rel("t_ns", timestamp_ns);
    return U("timestamp_ns", timestamp_ns).U("t_ns", clock_->At(timestamp_ns));
  }
  // One time under `key` (CUPTI ns), or under `relative_key` since the origin.
  Line& Time(std::string_view key, std::string_view relative_key, uint64_t cupti_ns) {
    if (!on_) return *this;
    return clock_->relative ? Rel(relative_key, cupti_ns) : U(key, cupti_ns);
  }
  Line& Triple(std::string_view k, uint32_t x, uint32_t y, uint32_t z) {
    return Raw(k, absl::StrCat("[", x, ",", y, ",", z, "]"));
  }

 private:
  Line& Raw(std::string_view k, std::string_view v) {
    if (on_) s_.append(",\"").append(k).append("\":").append(v);
    return *this;
  }
  // ns since the origin; null for CUPTI's 0 (an incomplete record).
  Line& Rel(std::string_view k, uint64_t cupti_ns) {
    return cupti_ns == 0 ? Null(k) : U(k, clock_->At(cupti_ns));
  }

  std::ostream& out_;
  const bool on_;
  const Clock* clock_;
  std::string s_;
};

// An event sink of the reader's pass: names and launch shapes from the
// process's tables; every timed event carries its CUPTI times as recorded
// (start_ns, end_ns, timestamp_ns) and `t_ns`, ns since the time origin on
// the common timebase (reader/timebase.h: the same number summary, the
// report and export show for it).
class Dumper : public reader::EventSink {
 public:
  Dumper(std::ostream& out, std::ostream& err, const reader::Timebase& timebase,
         const DumpFilter& filter)
      : out_(out), err_(err), timebase_(timebase), filter_(filter) {
    // (relative: the origin as a string, since it is past 2^53)
    const std::string origin = absl::StrCat(timebase.origin_realtime_ns());
    out_ << "{\"type\":\"time_origin\",\"realtime_ns\":"
         << (filter_.relative_time ? JsonWriter::Quote(origin) : origin)
         << ",\"utc\":" << JsonWriter::Quote(timebase.OriginUtc()) << "}\n";
  }

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h,
                const reader::ChunkPlace&) override {
    const uint32_t pid = t.pid();
    if (!filter_.WantsPid(pid)) return;
    {
      Line l(out_, "process", pid, filter_.Wants("process", pid));
      l.S("uid", absl::StrCat(absl::Hex(t.process_uid(), absl::kZeroPad16)))
          .S("host", h.hostname())
          .U("ppid", h.ppid())
          .I("rank", h.identity().rank())
          .I("local_rank", h.identity().local_rank())
          .I("world_size", h.identity().world_size())
          .S("job", h.identity().job_id())
          .S("launcher", h.identity().launcher())
          .S("exe", h.exe_path())
          .U("cupti_api_version", h.cupti_api_version())
          .U("cuda_driver_version", h.cuda_driver_version());
    }
    for (const proto::DeviceInfo& d : h.devices()) Device(pid, d);
  }

  void OnEnd(const reader::ProcessTables& t, const proto::ProcessEnd& e,
             const reader::ChunkPlace&) override {
    const uint32_t pid = t.pid();
    clock_ = {&timebase_, t.process_uid(), filter_.relative_time};
    {
      L("end", pid)
          .Time("end_ns", "end_t_ns", e.end_ns())
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
    if (!filter_.WantsPid(pid)) return;
    clock_ = {&timebase_, t.process_uid(), filter_.relative_time};
    auto str = [&t](uint32_t id) {
      if (id == 0) return std::string();
      return t.HasString(id) ? t.String(id) : absl::StrCat("<unknown name #", id, ">");
    };
    for (const proto::DeviceInfo& d : b.devices()) Device(pid, d);
    for (const proto::ContextInfo& c : b.contexts()) {
      L("context", pid).U("context", c.context_id()).U("device", c.device_id())
          .U("null_stream", c.null_stream_id());
    }
    for (const proto::MetricDescriptor& m : b.metric_descriptors()) {
      L("metric_descriptor", pid).U("id", m.id()).S("name", m.name()).S("unit", m.unit())
          .S("scope", EnumName(proto::MetricScope_Name<int>, m.scope(), "SCOPE_"))
          .U("device", m.device_id()).U("metric_pid", m.pid()).S("label", m.label());
    }
    for (const proto::DropNotice& d : b.drops()) {
      L("drop", pid).S("reason", EnumName(proto::DropReason_Name<int>, d.reason(), "DROP_"))
          .U("count", d.count()).Time("first_ns", "first_t_ns", d.first_ns())
          .Time("last_ns", "last_t_ns", d.last_ns())
          .S("detail", d.detail());
    }
    for (const proto::LostInterval& l : b.lost_intervals()) {
      L("lost", pid).S("reason", EnumName(proto::LostReason_Name<int>, l.reason(), "LOST_"))
          .Time("start_ns", "t_ns", l.start_ns()).Time("end_ns", "end_t_ns", l.end_ns())
          .S("detail", l.detail());
    }
    for (const proto::CapabilityNotice& c : b.capabilities()) {
      L("capability", pid).S("component", c.component()).B("available", c.available())
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
      L("kernel", pid).Span(k.start_ns, k.end_ns)
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
      L("memcpy", pid).Span(m.start_ns, m.end_ns).U("bytes", m.bytes)
          .S("copy_kind", EnumName(proto::MemcpyKind_Name<int>, m.copy_kind, "MEMCPY_"))
          .S("src_kind", EnumName(proto::MemoryKind_Name<int>, m.src_kind, "MEMORY_"))
          .S("dst_kind", EnumName(proto::MemoryKind_Name<int>, m.dst_kind, "MEMORY_"))
          .B("async", m.flags & 1).U("device", m.device_id).U("dst_device", m.dst_device_id)
          .U("context", m.context_id).U("stream", m.stream_id)
          .U("correlation", m.correlation_id).U("graph_id", m.graph_id);
    }
    for (const format::MemsetEvent& m : events_.memsets) {
      L("memset", pid).Span(m.start_ns, m.end_ns).U("bytes", m.bytes)
          .U("value", m.value)
          .S("memory_kind", EnumName(proto::MemoryKind_Name<int>, m.memory_kind, "MEMORY_"))
          .B("async", m.flags & 1).U("device", m.device_id).U("context", m.context_id)
          .U("stream", m.stream_id).U("correlation", m.correlation_id).U("graph_id", m.graph_id);
    }
    for (const format::SyncEvent& s : events_.syncs) {
      L("sync", pid).Span(s.start_ns, s.end_ns)
          .S("sync_kind", EnumName(proto::SyncKind_Name<int>, s.sync_kind, "SYNC_"))
          .U("context", s.context_id).U("stream", s.stream_id).U("event", s.event_id)
          .U("correlation", s.correlation_id).U("thread", s.thread_id);
    }
    for (const format::ApiCallEvent& a : events_.api_calls) {
      L("api", pid).Span(a.start_ns, a.end_ns)
          .S("name", str(a.api_name_id))
          .S("domain", EnumName(proto::ApiDomain_Name<int>, a.domain, "API_"))
          .U("cbid", a.cbid).U("thread", a.thread_id).U("correlation", a.correlation_id)
          .U("return_value", a.return_value);
    }
    for (const format::NvtxRangeEvent& r : events_.nvtx_ranges) {
      L("nvtx_range", pid).Span(r.start_ns, r.end_ns)
          .S("name", str(r.name_id)).S("domain", str(r.domain_id))
          .U("thread", r.thread_id).U("depth", r.depth);
    }
    for (const format::NvtxMarkEvent& m : events_.nvtx_marks) {
      L("nvtx_mark", pid).Point(m.timestamp_ns)
          .S("name", str(m.name_id)).S("domain", str(m.domain_id)).U("thread", m.thread_id);
    }
    for (const format::OverheadEvent& o : events_.overheads) {
      L("overhead", pid).Span(o.start_ns, o.end_ns)
          .S("overhead_kind", EnumName(proto::OverheadKind_Name<int>, o.overhead_kind, "OVERHEAD_"))
          .U("thread", o.thread_id).U("device", o.device_id);
    }
    for (const format::MetricSample& m : events_.metrics) {
      L("metric", pid).Point(m.timestamp_ns)
          .U("metric", m.metric_id).D("value", m.value);
    }
  }

  void OnWarning(std::string_view warning) override {
    err_ << kProgram << ": " << Printable(warning) << "\n";
  }

 private:
  // A line of `type` for `pid`, written only when the filter wants it.
  Line L(std::string_view type, uint32_t pid) {
    return Line(out_, type, pid, filter_.Wants(type, pid), &clock_);
  }

  void Device(uint32_t pid, const proto::DeviceInfo& d) {
    L("device", pid).U("device", d.device_id()).S("name", d.name()).S("uuid", d.uuid())
        .U("cc_major", d.compute_capability_major()).U("cc_minor", d.compute_capability_minor())
        .U("sm_count", d.sm_count()).U("memory_bytes", d.global_memory_bytes());
  }

  std::ostream& out_;
  std::ostream& err_;
  const reader::Timebase& timebase_;
  const DumpFilter& filter_;
  Clock clock_;
};

}  // namespace

reader::ReadResult WriteDumpLines(const std::vector<std::string>& files, const DumpFilter& filter,
                                  std::ostream& out, std::ostream& err) {
  // Lines are written as they are read: the timebase (final clocks, the
  // origin) comes from a first pass.
  const reader::Timebase timebase = reader::ScanTimebase(files);
  Dumper dumper(out, err, timebase, filter);
  reader::ReadResult read = reader::ReadEvents(files, {&dumper});
  if (read.index.partial) {
    const reader::PartialRead& p = *read.index.partial;
    out << "{\"type\":\"partial\",\"reason\":\"memory budget\",\"file\":"
        << JsonWriter::Quote(p.path) << ",\"offset\":" << p.offset
        << ",\"budget_bytes\":" << p.budget_bytes << "}\n";
  }
  return read;
}

}  // namespace gpscope::render
