// tools/monitor/window_tracker.cc: see window_tracker.h.
#include "tools/monitor/window_tracker.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/control/capture_window.h"
#include "tools/analyses/summary.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/clock_align.h"
#include "tools/reader/window_cut.h"

namespace gpscope::monitor {
namespace {

// The earliest start and the latest end of the batch's GPU activity and
// CUDA API calls (what a capture window switches on); false when it has
// none (standby: metric samples only).
bool ActivitySpan(const proto::EventBatch& b, uint64_t* first_ns, uint64_t* last_ns) {
  *first_ns = std::numeric_limits<uint64_t>::max();
  *last_ns = 0;
  bool any = false;
  auto span = [&](const auto& events) {
    for (const auto& e : events) {
      if (e.start_ns == 0) continue;  // an incomplete record
      any = true;
      *first_ns = std::min(*first_ns, e.start_ns);
      *last_ns = std::max(*last_ns, std::max(e.start_ns, e.end_ns));
    }
  };
  std::vector<format::KernelEvent> kernels;
  std::vector<format::MemcpyEvent> memcpys;
  std::vector<format::MemsetEvent> memsets;
  std::vector<format::SyncEvent> syncs;
  std::vector<format::ApiCallEvent> api_calls;
  if (b.has_kernels() && reader::DecodeKernels(b, &kernels).ok()) span(kernels);
  if (b.has_memcpys() && reader::DecodeMemcpys(b, &memcpys).ok()) span(memcpys);
  if (b.has_memsets() && reader::DecodeMemsets(b, &memsets).ok()) span(memsets);
  if (b.has_syncs() && reader::DecodeSyncs(b, &syncs).ok()) span(syncs);
  if (b.has_api_calls() && reader::DecodeApiCalls(b, &api_calls).ok()) span(api_calls);
  return any;
}

// The batch without its events (definitions, notices and clocks stay).
void StripEvents(proto::EventBatch* b) {
  b->clear_kernels();
  b->clear_memcpys();
  b->clear_memsets();
  b->clear_syncs();
  b->clear_api_calls();
  b->clear_nvtx_ranges();
  b->clear_nvtx_marks();
  b->clear_overheads();
  b->clear_metrics();
  b->clear_stack_samples();
}

}  // namespace

struct WindowTracker::Process {
  std::string path;  // the file its chunks come from
  reader::WindowCut cut;
  reader::ClockAlign clocks;  // CUPTI ns -> CLOCK_REALTIME, from its snapshots
  uint64_t duty_on_ns = 0;    // GPSCOPE_DUTY's ON; 0: no duty cycle

  // The open window.
  bool open = false;
  std::string bytes;  // its trace so far (compressed frames)
  std::unique_ptr<reader::StringCutSink> sink;
  uint64_t first_activity_ns = 0;  // CUPTI ns
  uint64_t last_activity_ns = 0;
  uint64_t last_activity_mono_ns = 0;  // when a chunk with activity arrived
  uint64_t events = 0;                 // kept in the window's trace
  uint64_t not_analysed = 0;           // left out (caps)
  uint64_t not_analysed_first_ns = 0, not_analysed_last_ns = 0;
  uint64_t last_sequence = 0;
};

class WindowTracker::Visitor : public reader::FrameVisitor {
 public:
  Visitor(WindowTracker* tracker, const std::string& path) : tracker_(tracker), path_(path) {}
  void OnFrame(uint64_t, const uint8_t*, size_t, const proto::Chunk& chunk) override {
    tracker_->OnChunk(path_, chunk);
  }

 private:
  WindowTracker* tracker_;
  const std::string& path_;
};

WindowTracker::WindowTracker(WindowTrackerOptions options) : options_(std::move(options)) {}
WindowTracker::~WindowTracker() = default;

size_t WindowTracker::processes() const { return processes_.size(); }

WindowTracker::Result WindowTracker::Poll(uint64_t now_realtime_ns, uint64_t now_mono_ns) {
  Result result;
  result_ = &result;
  now_mono_ns_ = now_mono_ns;
  const reader::FollowPolicy policy{true, options_.uid};
  for (const std::string& dir : options_.dirs) {
    for (const std::string& path : reader::ListTraceFilesIn(dir)) {
      if (refused_.count(path) != 0) continue;
      std::unique_ptr<reader::FrameFollower>& follower = followers_[path];
      if (!follower) {
        follower = std::make_unique<reader::FrameFollower>(path, 4u << 20, policy);
        ++stats_.files;
      }
      Visitor visitor(this, path);
      const absl::Status s = follower->ReadNew(visitor);
      if (!s.ok()) {
        refused_.insert(path);
        followers_.erase(path);
        ++stats_.files_refused;
        result.log.push_back(std::string("--traces: skipping ") + std::string(s.message()));
      }
    }
  }
  stats_.damaged_regions = 0;
  for (const auto& [path, f] : followers_) stats_.damaged_regions += f->damaged_regions();

  // Duty windows whose time is over, and processes gone quiet.
  for (auto& [uid, p] : processes_) {
    if (!p->open || p->duty_on_ns == 0) continue;
    const uint64_t due_ns =
        p->clocks.ToRealtimeNs(p->first_activity_ns) + p->duty_on_ns + options_.settle_ns;
    if (now_realtime_ns >= due_ns && now_mono_ns - p->last_activity_mono_ns >= options_.settle_ns) {
      CloseWindow(*p, "duty_schedule", p->last_activity_ns);
    }
  }
  for (auto it = last_seen_mono_.begin(); it != last_seen_mono_.end();) {
    if (now_mono_ns - it->second < options_.ttl_ns) {
      ++it;
      continue;
    }
    result.gone.push_back(it->first);
    processes_.erase(it->first);
    it = last_seen_mono_.erase(it);
  }
  result_ = nullptr;
  return result;
}

void WindowTracker::OnChunk(const std::string& path, const proto::Chunk& c) {
  const uint64_t uid = c.process_uid();
  auto it = processes_.find(uid);
  if (c.has_header()) {
    if (it == processes_.end()) it = processes_.emplace(uid, std::make_unique<Process>()).first;
    Process& p = *it->second;
    p.path = path;
    p.cut.Keep(c);
    for (const proto::ClockSnapshot& clock : c.header().clocks()) {
      p.clocks.Add(clock.cupti_ns(), clock.realtime_ns());
    }
    for (const proto::KeyValue& kv : c.header().config()) {
      uint64_t on_ms = 0, period_ms = 0;
      if (kv.key() == "GPSCOPE_DUTY" && control::ParseDuty(kv.value(), &on_ms, &period_ms)) {
        p.duty_on_ns = on_ms * 1000000ull;
      }
    }
    last_seen_mono_[uid] = now_mono_ns_;
    return;
  }
  if (it == processes_.end()) return;  // no header seen (or forgotten): nothing to cut
  Process& p = *it->second;
  last_seen_mono_[uid] = now_mono_ns_;
  if (c.has_end()) {
    if (p.open) {
      p.cut.Add(c);
      CloseWindow(p, "process_end",
                  c.end().end_ns() != 0 ? c.end().end_ns() : p.last_activity_ns);
    }
    processes_.erase(it);  // nothing more comes; last_seen_mono_ keeps it until ttl_ns
    return;
  }
  if (!c.has_batch()) return;
  const proto::EventBatch& b = c.batch();
  for (const proto::ClockSnapshot& clock : b.clocks()) {
    p.clocks.Add(clock.cupti_ns(), clock.realtime_ns());
  }
  // The time outside windows began: the open window ended there.
  for (const proto::LostInterval& l : b.lost_intervals()) {
    if (p.open && l.reason() == proto::LOST_TRACING_DISABLED && l.start_ns() >= p.first_activity_ns) {
      CloseWindow(p, "tracing_disabled", l.start_ns());
    }
  }
  uint64_t first_ns = 0, last_ns = 0;
  const bool activity = ActivitySpan(b, &first_ns, &last_ns);
  if (activity && !p.open) OpenWindow(p, first_ns);
  if (p.open) {
    if (activity) {
      p.first_activity_ns = std::min(p.first_activity_ns, first_ns);
      p.last_activity_ns = std::max(p.last_activity_ns, last_ns);
      p.last_activity_mono_ns = now_mono_ns_;
    }
    const uint64_t events = reader::CountEvents(b);
    if (p.events + events <= options_.max_window_events &&
        p.bytes.size() <= options_.max_window_bytes) {
      p.events += events;
      p.cut.Add(c);
    } else {
      proto::Chunk stripped = c;
      StripEvents(stripped.mutable_batch());
      p.cut.Add(stripped);
      if (p.not_analysed == 0) p.not_analysed_first_ns = activity ? first_ns : p.last_activity_ns;
      p.not_analysed += events;
      if (activity) p.not_analysed_last_ns = std::max(p.not_analysed_last_ns, last_ns);
    }
    p.last_sequence = std::max(p.last_sequence, c.sequence());
  }
  p.cut.Keep(c);  // after Add: its definitions serve the windows to come
}

void WindowTracker::OpenWindow(Process& p, uint64_t first_activity_ns) {
  p.bytes.clear();
  p.sink = std::make_unique<reader::StringCutSink>(&p.bytes);
  p.open = p.cut.Begin(p.sink.get(), /*zstd_level=*/1);
  p.first_activity_ns = first_activity_ns;
  p.last_activity_ns = first_activity_ns;
  p.last_activity_mono_ns = now_mono_ns_;
  p.events = 0;
  p.not_analysed = 0;
  p.not_analysed_first_ns = p.not_analysed_last_ns = 0;
  p.last_sequence = 0;
}

void WindowTracker::CloseWindow(Process& p, const char* reason, uint64_t end_ns) {
  if (p.not_analysed > 0) {
    // Recorded in the window's trace, so the analyses say it undercounts.
    proto::Chunk note;
    note.set_process_uid(p.cut.header().process_uid());
    note.set_pid(p.cut.header().pid());
    note.set_sequence(p.last_sequence);  // no gap: it stands for what was left out
    proto::DropNotice* d = note.mutable_batch()->add_drops();
    d->set_reason(proto::DROP_UNKNOWN);
    d->set_count(p.not_analysed);
    d->set_first_ns(p.not_analysed_first_ns);
    d->set_last_ns(std::max(p.not_analysed_first_ns, p.not_analysed_last_ns));
    d->set_detail("not analysed: past the node monitor's cap of " +
                  std::to_string(options_.max_window_events) + " events or " +
                  std::to_string(options_.max_window_bytes >> 20) + " MiB per window");
    p.cut.Add(note);
  }
  p.cut.End();
  p.open = false;
  const std::unique_ptr<analyses::SummaryResult> r = analyses::ComputeSummaryResultFromBuffer(
      p.path, reinterpret_cast<const uint8_t*>(p.bytes.data()), p.bytes.size(),
      model::ModelOptions{}, analyses::ReportOptions{});
  analyses::WindowSummary s =
      analyses::SummarizeWindow(*r, {p.first_activity_ns, std::max(end_ns, p.first_activity_ns)});
  s.close_reason = reason;
  s.events_not_analysed = p.not_analysed;
  s.trace_path = p.path;
  ++stats_.windows;
  stats_.events_not_analysed += p.not_analysed;
  std::string().swap(p.bytes);  // the window's memory goes back
  p.sink.reset();
  if (result_ != nullptr) result_->summaries.push_back(std::move(s));
}

}  // namespace gpscope::monitor
