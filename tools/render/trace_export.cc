// tools/render/trace_export.cc: see trace_export.h.
#include "tools/render/trace_export.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/names.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/event_reader.h"
#include "tools/render/chrome_json.h"
#include "tools/render/chrome_stacks.h"
#include "tools/render/chrome_tracks.h"
#include "tools/render/perfetto_trace.h"
#include "tools/render/json_writer.h"
#include "tools/render/read_status.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::render {
namespace {

constexpr std::string_view kProgram = kAnalyzeProgram;

// Track ids within a process: GPU streams and host-side tracks are told
// apart by high bits, so they never collide with OS thread ids; a track's
// extra lanes (render/chrome_tracks.h) are bits 44 up. All stay below 2^53,
// so JSON readers that parse numbers as doubles keep them apart.
constexpr uint64_t kGpuTrackBase = 1ull << 40;
constexpr uint64_t kNvtxTrackBase = 1ull << 41;
constexpr uint64_t kSyncTrackBase = 1ull << 42;
constexpr int kLaneShift = 44;
// Tracks given a reorder window and lanes. Past it (a trace naming a new
// thread or stream with every event) a new track's slices go straight out
// on lane 0, as they come, so memory stays bounded.
constexpr size_t kMaxWindowedTracks = 1 << 16;


// An event sink of the reader's pass: the events as slices of named tracks,
// each track's slices reordered and split into lanes so that they nest,
// launches tied to their GPU work, handed to one file format's writer.
class Exporter : public reader::EventSink {
 public:
  // `resolve_stacks_early`: the sink writes a slice's frames with the slice
  // (Perfetto), so frames are named as their batches come; else once, at
  // the end (Chrome writes its stackFrames last).
  Exporter(render::TraceExportSink& sink, std::ostream& err, const reader::Timebase& timebase,
           bool resolve_stacks_early)
      : sink_(sink), err_(err), timebase_(timebase), resolve_stacks_early_(resolve_stacks_early) {}

  const render::ChromeStacks& stacks() const { return stacks_; }

  // Hands on what the reorder windows still hold, track by track, and
  // names the frames not named yet.
  void Finish() {
    stacks_.Resolve();
    for (auto& entry : tracks_) {
      Track* t = &entry.second;  // not a structured binding: lambdas cannot capture those in C++17
      t->window.Flush([&](ExportSlice&& s) { Emit(std::move(s), t); });
    }
    if (unwindowed_ > 0) {
      err_ << kProgram << ": export: " << unwindowed_ << " slices on tracks past the first "
           << kMaxWindowedTracks << " went out unsorted, on one lane each\n";
    }
  }

  void OnHeader(const reader::ProcessTables& t, const proto::ProcessHeader& h,
                const reader::ChunkPlace&) override {
    Process& p = Of(t);
    if (p.begun) return;
    p.begun = true;
    render::ExportProcess ep;
    ep.index = p.index;
    ep.pid = p.pid;
    ep.label = "pid " + std::to_string(p.pid) + " on " + h.hostname();
    if (h.identity().rank() >= 0) {
      ep.rank = h.identity().rank();
      ep.label = "rank " + std::to_string(ep.rank) + " · " + ep.label;
    }
    sink_.BeginProcess(ep);
  }

  void OnBatch(const reader::ResolvedBatch& rb) override {
    Process& p = Of(rb.tables);
    if (!p.begun) {  // no header read: still a process of its own
      p.begun = true;
      render::ExportProcess ep;
      ep.index = p.index;
      ep.pid = p.pid;
      ep.label = "pid " + std::to_string(p.pid);
      sink_.BeginProcess(ep);
    }
    const proto::EventBatch& b = rb.batch;
    for (const proto::MetricDescriptor& m : b.metric_descriptors()) {
      p.metrics[m.id()] = m.name() + (m.scope() == proto::SCOPE_DEVICE
                                          ? " gpu" + std::to_string(m.device_id())
                                          : (m.pid() ? " pid" + std::to_string(m.pid()) : ""));
    }
    // Call stacks (issue 20): the tables of this batch, before its API events.
    stacks_.AddBatch(rb.tables, b);
    if (resolve_stacks_early_) stacks_.Resolve();
    if (!rb.decode_status.ok()) {
      err_ << kProgram << ": pid " << p.pid << ": " << rb.decode_status.message() << "\n";
      return;
    }
    const reader::DecodedBatch& batch = rb.events;
    for (const format::KernelEvent& k : batch.kernels) {
      ExportSlice s = Base(p, GpuTrack(p, k.device_id, k.stream_id), "kernel", k.start_ns, k.end_ns);
      s.name = p.KernelName(k.name_id);  // the same kernel, the same name
      s.args.push_back(ExportArg::Int("correlation", k.correlation_id));
      if (k.graph_id) s.args.push_back(ExportArg::Int("graph_id", k.graph_id));
      s.correlation = k.correlation_id;
      s.role = ExportSlice::kWork;
      Submit(std::move(s));
    }
    for (const format::MemcpyEvent& m : batch.memcpys) {
      ExportSlice s = Base(p, GpuTrack(p, m.device_id, m.stream_id), "memcpy", m.start_ns, m.end_ns);
      s.name = "Memcpy " + render::MemcpyKindName(m.copy_kind);
      s.args.push_back(ExportArg::Int("bytes", static_cast<int64_t>(m.bytes)));
      s.args.push_back(ExportArg::Str("kind", render::MemcpyKindName(m.copy_kind)));
      s.args.push_back(ExportArg::Str("src", render::MemoryKindName(m.src_kind)));
      s.args.push_back(ExportArg::Str("dst", render::MemoryKindName(m.dst_kind)));
      s.args.push_back(ExportArg::Bool("async", (m.flags & 1) != 0));
      s.args.push_back(ExportArg::Int("correlation", m.correlation_id));
      s.correlation = m.correlation_id;
      s.role = ExportSlice::kWork;
      Submit(std::move(s));
    }
    for (const format::MemsetEvent& m : batch.memsets) {
      ExportSlice s = Base(p, GpuTrack(p, m.device_id, m.stream_id), "memset", m.start_ns, m.end_ns);
      s.name = "Memset";
      s.args.push_back(ExportArg::Int("bytes", static_cast<int64_t>(m.bytes)));
      s.args.push_back(ExportArg::Str("memory", render::MemoryKindName(m.memory_kind)));
      s.args.push_back(ExportArg::Int("correlation", m.correlation_id));
      s.correlation = m.correlation_id;
      s.role = ExportSlice::kWork;
      Submit(std::move(s));
    }
    for (const format::SyncEvent& y : batch.syncs) {
      const uint64_t track = kSyncTrackBase | y.context_id;
      Name(p, track, "sync waits (ctx " + std::to_string(y.context_id) + ")", 0, 1);
      ExportSlice s = Base(p, track, "sync", y.start_ns, y.end_ns);
      s.name = "Sync: " + render::SyncKindName(y.sync_kind);
      s.args.push_back(ExportArg::Str("kind", render::SyncKindName(y.sync_kind)));
      s.args.push_back(ExportArg::Int("correlation", y.correlation_id));
      Submit(std::move(s));
    }
    for (const format::ApiCallEvent& a : batch.api_calls) {
      Name(p, a.thread_id, "tid " + std::to_string(a.thread_id) + " CUDA API", a.thread_id, 3);
      ExportSlice s = Base(p, a.thread_id, "cuda_api", a.start_ns, a.end_ns);
      s.name = p.Str(a.api_name_id);
      s.args.push_back(ExportArg::Int("correlation", a.correlation_id));
      if (stacks_.any()) {
        s.stack_node = stacks_.TakeNode(rb.tables.process_uid(), a.thread_id, a.correlation_id);
      }
      s.correlation = a.correlation_id;
      s.role = ExportSlice::kLaunch;
      Submit(std::move(s));
    }
    for (const format::NvtxRangeEvent& r : batch.nvtx_ranges) {
      const uint64_t track = kNvtxTrackBase | r.thread_id;
      Name(p, track, "tid " + std::to_string(r.thread_id) + " NVTX", 0, 2);
      ExportSlice s = Base(p, track, "nvtx", r.start_ns, r.end_ns);
      s.name = p.Str(r.name_id);
      Submit(std::move(s));
    }
    for (const format::NvtxMarkEvent& m : batch.nvtx_marks) {
      const uint64_t track = kNvtxTrackBase | m.thread_id;
      Name(p, track, "tid " + std::to_string(m.thread_id) + " NVTX", 0, 2);
      ExportSlice s = Base(p, track, "nvtx", m.timestamp_ns, m.timestamp_ns);
      s.name = p.Str(m.name_id);
      s.instant = true;
      sink_.Slice(s, track);  // instants nest anywhere: no lane needed
    }
    for (const format::MetricSample& m : batch.metrics) {
      auto it = p.metrics.find(m.metric_id);
      const std::string name =
          it != p.metrics.end() ? it->second : "metric " + std::to_string(m.metric_id);
      sink_.Counter(p.index, m.metric_id, name, OriginNs(p, m.timestamp_ns), m.value);
    }
  }

  void OnWarning(std::string_view warning) override {
    err_ << kProgram << ": " << render::Printable(warning) << "\n";
  }

 private:
  struct Process {
    uint32_t index = 0;
    uint32_t pid = 0;
    uint64_t uid = 0;
    bool begun = false;
    const reader::ProcessTables* tables = nullptr;
    absl::flat_hash_map<uint32_t, std::string> metrics;  // display names, by id
    struct TrackName {
      std::string label;  // lane 0's
      int64_t sort = 0;
      uint32_t thread_id = 0;
    };
    absl::flat_hash_map<uint64_t, TrackName> track_names;
    absl::flat_hash_set<uint64_t> declared;  // tids (lanes included) handed to the sink
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
  struct Track {
    render::ReorderWindow<ExportSlice> window;
    render::LaneAssigner lanes;
  };

  Process& Of(const reader::ProcessTables& t) {
    auto [it, inserted] = processes_.try_emplace(t.process_uid());
    Process& p = it->second;
    if (inserted) {
      p.index = static_cast<uint32_t>(by_index_.size());
      by_index_.push_back(t.process_uid());
    }
    p.pid = t.pid();
    p.uid = t.process_uid();
    p.tables = &t;
    return p;
  }

  int64_t OriginNs(const Process& p, uint64_t cupti_ns) const {
    return static_cast<int64_t>(timebase_.ToOriginNs(p.uid, cupti_ns));
  }

  ExportSlice Base(const Process& p, uint64_t track, const char* category, uint64_t start_ns,
                   uint64_t end_ns) const {
    ExportSlice s;
    s.process = p.index;
    s.track = track;
    s.category = category;
    s.start_ns = OriginNs(p, start_ns);
    s.end_ns = end_ns > start_ns ? OriginNs(p, end_ns) : s.start_ns;
    return s;
  }

  uint64_t GpuTrack(Process& p, uint32_t device, uint32_t stream) {
    const uint64_t track = kGpuTrackBase | (static_cast<uint64_t>(device) << 32) | stream;
    Name(p, track, "GPU " + std::to_string(device) + " stream " + std::to_string(stream), 0, 0);
    return track;
  }

  // Names a track (lane 0 is declared at once, for a stable order; the
  // others when a slice first needs them), with a sort key (GPU tracks
  // first).
  void Name(Process& p, uint64_t track, const std::string& label, uint32_t thread_id, int group) {
    auto [it, inserted] = p.track_names.try_emplace(track);
    if (!inserted) return;
    it->second = {label, int64_t{group} * 1000000 + static_cast<int64_t>(track % 1000000),
                  thread_id};
    Declare(p, track, 0);
  }

  void Declare(Process& p, uint64_t track, uint32_t lane) {
    const uint64_t tid = track | (uint64_t{lane} << kLaneShift);
    if (!p.declared.insert(tid).second) return;
    const Process::TrackName& n = p.track_names[track];
    sink_.DeclareTrack(p.index, tid,
                       lane == 0 ? n.label : n.label + " (" + std::to_string(lane + 1) + ")",
                       lane == 0 ? n.thread_id : 0, n.sort * 64 + lane);
  }

  void Submit(ExportSlice s) {
    auto it = tracks_.find({s.process, s.track});
    if (it == tracks_.end()) {
      if (tracks_.size() >= kMaxWindowedTracks) {
        ++unwindowed_;
        return Emit(std::move(s), nullptr);
      }
      it = tracks_.try_emplace({s.process, s.track}).first;
    }
    Track* t = &it->second;
    t->window.Push(std::move(s), [&](ExportSlice&& out) { Emit(std::move(out), t); });
  }

  // A slice leaves its track's window: its lane, its flow.
  void Emit(ExportSlice&& s, Track* t) {
    const uint32_t lane = t != nullptr ? t->lanes.Place(s.start_ns, s.end_ns) : 0;
    Declare(processes_[by_index_[s.process]], s.track, lane);
    const uint64_t tid = s.track | (uint64_t{lane} << kLaneShift);
    sink_.Slice(s, tid);
    if (s.role == ExportSlice::kPlain || s.correlation == 0) return;
    const uint64_t key = render::FlowMatcher::Key(s.process, s.correlation);
    const render::FlowEnd end{s.process, tid, s.start_ns};
    flows_out_.clear();
    if (s.role == ExportSlice::kLaunch) {
      flows_.Launch(key, end, &flows_out_);
    } else {
      flows_.Work(key, end, &flows_out_);
    }
    if (!flows_out_.empty()) sink_.Flows(flows_out_);
  }

  render::TraceExportSink& sink_;
  std::ostream& err_;
  const reader::Timebase& timebase_;
  const bool resolve_stacks_early_;
  absl::flat_hash_map<uint64_t, Process> processes_;  // by process uid
  std::vector<uint64_t> by_index_;                    // process index -> uid
  // Ordered by (process, track): the order the windows are flushed in.
  std::map<std::pair<uint32_t, uint64_t>, Track> tracks_;
  render::ChromeStacks stacks_;
  render::FlowMatcher flows_;
  std::vector<render::FlowMatcher::Flow> flows_out_;
  uint64_t unwindowed_ = 0;  // slices past kMaxWindowedTracks
};

}  // namespace

reader::ReadResult ExportChrome(const std::vector<std::string>& files,
                                const reader::Timebase& timebase, std::ostream& out,
                                std::ostream& err, uint64_t* written) {
  render::ChromeJsonWriter writer(out);
  Exporter exporter(writer, err, timebase, /*resolve_stacks_early=*/false);
  writer.set_stacks(&exporter.stacks());
  reader::ReadResult read = reader::ReadEvents(files, {&exporter});
  exporter.Finish();
  writer.Finish(timebase, &read.index);
  *written = writer.events();
  return read;
}

reader::ReadResult ExportPerfetto(const std::vector<std::string>& files,
                                  const reader::Timebase& timebase, std::ostream& out,
                                  std::ostream& err, uint64_t* written) {
  render::PerfettoTraceWriter writer(out, timebase.origin_realtime_ns());
  Exporter exporter(writer, err, timebase, /*resolve_stacks_early=*/true);
  writer.set_stacks(&exporter.stacks());
  reader::ReadResult read = reader::ReadEvents(files, {&exporter});
  exporter.Finish();
  writer.Finish();
  *written = writer.packets();
  return read;
}

}  // namespace gpscope::render
