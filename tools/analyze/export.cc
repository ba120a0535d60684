// tools/analyze/export.cc: see export.h.
#include "tools/analyze/export.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/names.h"
#include "tools/analyze/cli.h"
#include "tools/analyze/export_sqlite.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/event_reader.h"
#include "tools/render/chrome_stacks.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {
namespace {

using render::JsonWriter;

// Track ids within a process: GPU streams and host-side tracks are told
// apart by high bits, so they never collide with OS thread ids.
constexpr uint64_t kGpuTrackBase = 1ull << 40;
constexpr uint64_t kNvtxTrackBase = 1ull << 41;
constexpr uint64_t kSyncTrackBase = 1ull << 42;

const char* MemcpyName(uint32_t kind) {
  switch (kind) {
    case 1: return "Memcpy HtoD";
    case 2: return "Memcpy DtoH";
    case 8: return "Memcpy DtoD";
    case 10: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

const char* MemoryName(uint32_t kind) {
  switch (kind) {
    case 1: return "pageable";
    case 2: return "pinned";
    case 3: return "device";
    case 5: return "managed";
    default: return "other";
  }
}

// An event sink of the reader's pass. Every ts is microseconds since the
// time origin on the common timebase (reader/timebase.h), the same origin
// every command prints; the metadata names it.
class Exporter : public reader::EventSink {
 public:
  Exporter(std::ostream& out, std::ostream& err, const reader::Timebase& timebase)
      : out_(out), err_(err), timebase_(timebase) {
    out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  }

  // Ends the document: the time origin, and a partial read, in its metadata.
  void Finish(const reader::TraceIndex* index) {
    out_ << "\n]";
    stacks_.WriteDictionary(out_);  // call stacks (issue 20): only when the trace has them
    out_ << ",\"metadata\":{\"gpscope_time_origin\":{\"realtime_ns\":"
         << timebase_.origin_realtime_ns()
         << ",\"utc\":" << JsonWriter::Quote(timebase_.OriginUtc()) << "}";
    if (index != nullptr && index->partial) {
      const reader::PartialRead& p = *index->partial;
      out_ << ",\"gpscope_partial\":{\"reason\":\"memory budget\",\"file\":"
           << JsonWriter::Quote(p.path) << ",\"offset\":" << p.offset
           << ",\"budget_bytes\":" << p.budget_bytes
           << ",\"message\":" << JsonWriter::Quote(p.Message()) << "}";
    }
    out_ << "}}\n";
  }
  uint64_t events() const { return events_written_; }

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h,
                const reader::ChunkPlace&) override {
    Process& p = Of(t);
    {
      std::string label = "pid " + std::to_string(p.pid) + " on " + h.hostname();
      if (h.identity().rank() >= 0) label = "rank " + std::to_string(h.identity().rank()) + " · " + label;
      Meta("process_name", p.pid, 0, label);
    }
  }

  void OnBatch(const reader::ResolvedBatch& rb) override {
    Process& p = Of(rb.tables);
    const proto::EventBatch& b = rb.batch;
    for (const proto::MetricDescriptor& m : b.metric_descriptors()) {
      p.metrics[m.id()] = m.name() + (m.scope() == proto::SCOPE_DEVICE
                                          ? " gpu" + std::to_string(m.device_id())
                                          : (m.pid() ? " pid" + std::to_string(m.pid()) : ""));
    }
    // Call stacks (issue 20): the tables of this batch, before its API events.
    stacks_.AddBatch(rb.tables.process_uid(), p.pid, b,
                     [&rb](uint32_t id) { return rb.tables.String(id); });
    if (!rb.decode_status.ok()) {
      err_ << kProgram << ": pid " << p.pid << ": " << rb.decode_status.message() << "\n";
      return;
    }
    const reader::DecodedBatch& batch_ = rb.events;
    for (const format::KernelEvent& k : batch_.kernels) {
      const uint64_t track = GpuTrack(p, k.device_id, k.stream_id);
      Complete(p, "kernel", p.KernelName(k.name_id), track, k.start_ns, k.end_ns,
               "\"correlation\":" + std::to_string(k.correlation_id) +
                   (k.graph_id ? ",\"graph_id\":" + std::to_string(k.graph_id) : ""));
    }
    for (const format::MemcpyEvent& m : batch_.memcpys) {
      const uint64_t track = GpuTrack(p, m.device_id, m.stream_id);
      Complete(p, "memcpy", MemcpyName(m.copy_kind), track, m.start_ns, m.end_ns,
               "\"bytes\":" + std::to_string(m.bytes) + ",\"src\":\"" + MemoryName(m.src_kind) +
                   "\",\"dst\":\"" + MemoryName(m.dst_kind) + "\",\"async\":" +
                   ((m.flags & 1) ? "true" : "false"));
    }
    for (const format::MemsetEvent& m : batch_.memsets) {
      const uint64_t track = GpuTrack(p, m.device_id, m.stream_id);
      Complete(p, "memset", "Memset", track, m.start_ns, m.end_ns,
               "\"bytes\":" + std::to_string(m.bytes));
    }
    for (const format::SyncEvent& s : batch_.syncs) {
      const uint64_t track = kSyncTrackBase | s.context_id;
      Name(p, track, "sync waits (ctx " + std::to_string(s.context_id) + ")", 1);
      Complete(p, "sync", "Synchronize", track, s.start_ns, s.end_ns,
               "\"kind\":" + std::to_string(s.sync_kind));
    }
    for (const format::ApiCallEvent& a : batch_.api_calls) {
      Name(p, a.thread_id, "tid " + std::to_string(a.thread_id) + " CUDA API", 3);
      const std::string sf =
          stacks_.any() ? stacks_.Take(rb.tables.process_uid(), a.thread_id, a.correlation_id) : "";
      Event(p, "cuda_api", p.Str(a.api_name_id), "X", a.thread_id, a.start_ns,
            a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0,
            "\"correlation\":" + std::to_string(a.correlation_id),
            sf.empty() ? "" : (",\"sf\":\"" + sf + "\"").c_str());
    }
    for (const format::NvtxRangeEvent& r : batch_.nvtx_ranges) {
      const uint64_t track = kNvtxTrackBase | r.thread_id;
      Name(p, track, "tid " + std::to_string(r.thread_id) + " NVTX", 2);
      Complete(p, "nvtx", p.Str(r.name_id), track, r.start_ns, r.end_ns, "");
    }
    for (const format::NvtxMarkEvent& m : batch_.nvtx_marks) {
      const uint64_t track = kNvtxTrackBase | m.thread_id;
      Name(p, track, "tid " + std::to_string(m.thread_id) + " NVTX", 2);
      Event(p, "nvtx", p.Str(m.name_id), "i", track, m.timestamp_ns, 0, "", ",\"s\":\"t\"");
    }
    for (const format::MetricSample& m : batch_.metrics) {
      auto it = p.metrics.find(m.metric_id);
      const std::string name = it != p.metrics.end() ? it->second : "metric " + std::to_string(m.metric_id);
      char value[64];
      // JSON has no NaN or infinity: a non-finite reading becomes null.
      if (std::isfinite(m.value)) {
        snprintf(value, sizeof(value), "\"value\":%.6g", m.value);
      } else {
        snprintf(value, sizeof(value), "\"value\":null");
      }
      Event(p, "metric", name, "C", 0, m.timestamp_ns, 0, value, "");
    }
  }

  void OnWarning(std::string_view warning) override {
    err_ << kProgram << ": " << render::Printable(warning) << "\n";
  }

 private:
  struct Process {
    uint32_t pid = 0;
    uint64_t uid = 0;
    const reader::ProcessTables* tables = nullptr;
    absl::flat_hash_map<uint32_t, std::string> metrics;  // display names, by id
    absl::flat_hash_set<uint64_t> named_tracks;
    absl::flat_hash_map<uint32_t, std::string> kernel_names;  // demangled, by id
    std::string Str(uint32_t id) const {
      return tables->HasString(id) ? tables->String(id)
                                   : "<unknown name #" + std::to_string(id) + ">";
    }
    // Demangled once per name: Perfetto shows names as given.
    const std::string& KernelName(uint32_t id) {
      auto [it, inserted] = kernel_names.try_emplace(id);
      if (inserted) it->second = analyses::Demangle(Str(id));
      return it->second;
    }
  };

  Process& Of(const reader::ProcessTables& t) {
    Process& p = processes_[t.process_uid()];
    p.pid = t.pid();
    p.uid = t.process_uid();
    p.tables = &t;
    return p;
  }

  uint64_t GpuTrack(Process& p, uint32_t device, uint32_t stream) {
    const uint64_t track = kGpuTrackBase | (static_cast<uint64_t>(device) << 32) | stream;
    Name(p, track, "GPU " + std::to_string(device) + " stream " + std::to_string(stream), 0);
    return track;
  }

  // Labels a track once, with a sort key (GPU tracks first).
  void Name(Process& p, uint64_t track, const std::string& label, int group) {
    if (!p.named_tracks.insert(track).second) return;
    Meta("thread_name", p.pid, track, label);
    Separator();
    out_ << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << p.pid << ",\"tid\":" << track
         << ",\"args\":{\"sort_index\":" << group * 1000000 + static_cast<int>(track % 1000000)
         << "}}";
  }

  void Meta(const char* what, uint32_t pid, uint64_t tid, const std::string& label) {
    Separator();
    out_ << "{\"ph\":\"M\",\"name\":\"" << what << "\",\"pid\":" << pid << ",\"tid\":" << tid
         << ",\"args\":{\"name\":" << JsonWriter::Quote(label) << "}}";
  }

  void Complete(const Process& p, const char* cat, const std::string& name, uint64_t track,
                uint64_t start_ns, uint64_t end_ns, const std::string& args) {
    Event(p, cat, name, "X", track, start_ns, end_ns > start_ns ? end_ns - start_ns : 0, args, "");
  }

  void Event(const Process& p, const char* cat, const std::string& name, const char* ph,
             uint64_t track, uint64_t cupti_ns, uint64_t dur_ns, const std::string& args,
             const char* extra) {
    // Microseconds with ns fractions; a double holds them exactly for
    // spans of weeks.
    const int64_t rel_ns = static_cast<int64_t>(timebase_.ToOriginNs(p.uid, cupti_ns));
    char ts[64];
    snprintf(ts, sizeof(ts), "%.3f", static_cast<double>(rel_ns) / 1000.0);
    Separator();
    out_ << "{\"ph\":\"" << ph << "\",\"cat\":\"" << cat << "\",\"name\":" << JsonWriter::Quote(name)
         << ",\"pid\":" << p.pid << ",\"tid\":" << track << ",\"ts\":" << ts;
    if (ph[0] == 'X') {
      snprintf(ts, sizeof(ts), "%.3f", static_cast<double>(dur_ns) / 1000.0);
      out_ << ",\"dur\":" << ts;
    }
    out_ << ",\"args\":{" << args << "}" << extra << "}";
    ++events_written_;
  }

  void Separator() {
    if (first_) {
      first_ = false;
    } else {
      out_ << ",\n";
    }
  }

  std::ostream& out_;
  std::ostream& err_;
  const reader::Timebase& timebase_;
  bool first_ = true;
  uint64_t events_written_ = 0;
  absl::flat_hash_map<uint64_t, Process> processes_;
  render::ChromeStacks stacks_;
};

}  // namespace

int RunExport(const std::vector<std::string>& raw_args, std::ostream& out, std::ostream& err) {
  // ParseArgs knows long flags only; -o is the one short flag, as in report.
  std::vector<std::string> args;
  for (const std::string& a : raw_args) args.push_back(a == "-o" ? "--output" : a);
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"format", "output"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " export: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  const bool help = parsed->has("help");
  std::string format = parsed->has("format") ? parsed->flags.at("format") : "chrome";
  if (format == "sqlite" && !help && !parsed->positional.empty()) {  // docs/sqlite.md
    return RunSqliteExport(parsed->positional,
                           parsed->has("output") ? parsed->flags.at("output") : "", out, err);
  }
  if (help || parsed->positional.empty() || (format != "chrome" && format != "perfetto")) {
    (help ? out : err) << "usage: " << kProgram
                       << " export [--format chrome|perfetto|sqlite] [-o OUT] FILE...\n\n"
                       << "Writes Chrome trace-event JSON (opens in ui.perfetto.dev and "
                          "chrome://tracing;\n'perfetto' writes the same JSON, which Perfetto "
                          "imports). Default output: stdout. Times (ts) are microseconds since\n"
                          "the time origin every command prints (metadata.gpscope_time_origin).\n"
                       << "'sqlite' writes an SQLite database to -o OUT.sqlite (docs/sqlite.md).\n";
    return help ? kExitOk : kExitUsage;
  }
  std::string path = parsed->has("output") ? parsed->flags.at("output") : "-";
  std::ofstream file;
  std::ostream* sink = &out;
  if (path != "-") {
    file.open(path, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << kProgram << ": " << path << ": cannot write\n";
      return kExitFailed;
    }
    sink = &file;
  }
  // Events are written as they are read: the timebase (final clocks, the
  // origin) comes from a first pass.
  const reader::Timebase timebase = reader::ScanTimebase(parsed->positional);
  Exporter exporter(*sink, err, timebase);
  reader::ReadResult read = reader::ReadEvents(parsed->positional, {&exporter});
  const reader::TraceIndex* index = &read.index;
  exporter.Finish(index);
  ReportMissingEnds(*index, err);
  const bool partial = ReportPartial(*index, err);
  if (absl::Status st = index->FirstFileError(); !st.ok()) {
    err << kProgram << ": " << st.message() << "\n";
    return kExitFailed;
  }
  if (path != "-") {
    file.close();
    if (!file) {
      err << kProgram << ": " << path << ": write failed\n";
      return kExitFailed;
    }
    err << "wrote " << path << " (" << exporter.events() << " events)\n";
  }
  return partial ? kExitFailed : kExitOk;
}

}  // namespace gpscope::analyze
