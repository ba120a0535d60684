// tools/reader/event_reader.cc: see event_reader.h.
#include "tools/reader/event_reader.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/limits.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::reader {
namespace {

// The earliest nonzero start and the latest end of a decoded batch.
struct TimeSpan {
  uint64_t first_ns = std::numeric_limits<uint64_t>::max();
  uint64_t last_ns = 0;
  bool empty() const { return first_ns == std::numeric_limits<uint64_t>::max(); }
  void Add(uint64_t start_ns, uint64_t end_ns) {
    if (start_ns != 0 && start_ns < first_ns) first_ns = start_ns;  // 0: an incomplete record
    if (end_ns > last_ns) last_ns = end_ns;
  }
};

TimeSpan SpanOf(const DecodedBatch& e) {
  TimeSpan s;
  for (const auto& x : e.kernels) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.memcpys) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.memsets) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.syncs) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.api_calls) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.nvtx_ranges) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.nvtx_marks) s.Add(x.timestamp_ns, x.timestamp_ns);
  for (const auto& x : e.overheads) s.Add(x.start_ns, x.end_ns);
  for (const auto& x : e.metrics) s.Add(x.timestamp_ns, x.timestamp_ns);
  return s;
}

// A batch decoded on a decode thread (EventReader::Impl::Prepare).
struct DecodedChunk : PreparedChunk {
  absl::Status status;  // of DecodeBatch; not OK: `events` is empty
  DecodedBatch events;
  TimeSpan span;
};

void DecodeInto(const proto::EventBatch& batch, DecodedChunk* d) {
  d->status = DecodeBatch(batch, &d->events);
  if (!d->status.ok()) d->events.Clear();
  d->span = SpanOf(d->events);
}

}  // namespace

std::string UtcTime(uint64_t realtime_ns) {
  const absl::Time t =
      absl::FromUnixNanos(static_cast<int64_t>(std::min<uint64_t>(realtime_ns, INT64_MAX)));
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", t, absl::UTCTimeZone());
}

std::string Timebase::OriginUtc() const {
  return has_origin_ ? UtcTime(origin_realtime_ns_) : std::string();
}

const ClockAlign& Timebase::Clocks(uint64_t process_uid) const {
  static const ClockAlign* const kIdentity = new ClockAlign();
  auto it = clocks_.find(process_uid);
  return it == clocks_.end() ? *kIdentity : it->second;
}

const ProcessTables* ReadResult::FindTables(uint64_t process_uid) const {
  for (const auto& t : tables) {
    if (t->process_uid() == process_uid) return t.get();
  }
  return nullptr;
}

class EventReader::Impl : public ChunkVisitor {
 public:
  Impl(std::vector<EventSink*> sinks, ReadOptions options)
      : sinks_(std::move(sinks)), reader_(*this, options) {
    for (const EventSink* s : sinks_) resolve_streams_ |= s->WantsStreams();
  }

  absl::Status ReadFile(const std::string& path) { return reader_.ReadFile(path); }
  absl::Status ReadBuffer(const std::string& name, const uint8_t* data, size_t size) {
    return reader_.ReadBuffer(name, data, size);
  }

  absl::Status ReadFiles(const std::vector<std::string>& paths) { return reader_.ReadFiles(paths); }

  // On a decode thread: the batch's columns, which depend on nothing else.
  // Touches no member (the reader's thread uses them meanwhile).
  void Prepare(const proto::Chunk& chunk,
               std::unique_ptr<PreparedChunk>* prepared) const override {
    if (chunk.body_case() != proto::Chunk::kBatch) return;
    if (*prepared == nullptr) *prepared = std::make_unique<DecodedChunk>();
    DecodeInto(chunk.batch(), static_cast<DecodedChunk*>(prepared->get()));
  }

  absl::Status OnChunk(const ChunkContext& context, const proto::Chunk& chunk) override {
    ProcessTables& t = Tables(chunk.process_uid(), chunk.pid());
    const ChunkPlace place{context.file, context.offset, context.process};
    if (chunk.has_header()) {
      t.AddHeader(chunk.header());
      for (EventSink* s : sinks_) s->OnHeader(t, chunk.header(), place);
    } else if (chunk.has_end()) {
      t.AddEnd(chunk.end());
      for (EventSink* s : sinks_) s->OnEnd(t, chunk.end(), place);
    } else if (chunk.has_batch()) {
      const proto::EventBatch& b = chunk.batch();
      t.AddDefinitions(b);
      // Prepared on a decode thread, or (a reader without one) here.
      const DecodedChunk* d = static_cast<const DecodedChunk*>(context.prepared);
      if (d == nullptr) {
        DecodeInto(b, &decoded_);
        d = &decoded_;
      }
      Resolve(t, *d);
      const ResolvedBatch batch{t,         b,       place,   d->status,
                                d->events, kernel_, memcpy_, memset_};
      for (EventSink* s : sinks_) s->OnBatch(batch);
    }
    return absl::OkStatus();
  }

  void OnWarning(std::string_view warning) override {
    for (EventSink* s : sinks_) s->OnWarning(warning);
  }

  ReadResult Finish() {
    ReadResult r;
    r.index = reader_.TakeIndex();
    for (size_t i = 0; i < tables_.size(); ++i) {
      const ProcessTables& t = *tables_[i];
      r.timebase.SetClocks(t.process_uid(), t.clocks());
      if (!spans_[i].empty()) r.timebase.ConsiderEvent(t.clocks().ToRealtimeNs(spans_[i].first_ns));
    }
    r.tables = std::move(tables_);
    return r;
  }

 private:
  ProcessTables& Tables(uint64_t uid, uint32_t pid) {
    auto [it, inserted] = slot_.try_emplace(uid, tables_.size());
    if (inserted) {
      tables_.push_back(std::make_unique<ProcessTables>(uid, pid, tables_.size()));
      spans_.emplace_back();
    }
    current_ = it->second;
    return *tables_[it->second];
  }

  // Streams of the GPU ops (when a sink wants them), and the batch's time
  // span for the origin.
  void Resolve(ProcessTables& t, const DecodedChunk& d) {
    if (resolve_streams_) ResolveStreams(t, d.events);
    const TimeSpan& s = d.span;
    TimeSpan& p = spans_[current_];
    if (!s.empty()) p.first_ns = std::min(p.first_ns, s.first_ns);
    p.last_ns = std::max(p.last_ns, s.last_ns);
  }

  void ResolveStreams(ProcessTables& t, const DecodedBatch& events) {
    kernel_.resize(events.kernels.size());
    for (size_t i = 0; i < events.kernels.size(); ++i) {
      const auto& e = events.kernels[i];
      kernel_[i] = t.ResolveStream(e.device_id, e.context_id, e.stream_id);
    }
    memcpy_.resize(events.memcpys.size());
    for (size_t i = 0; i < events.memcpys.size(); ++i) {
      const auto& e = events.memcpys[i];
      memcpy_[i] = t.ResolveStream(e.device_id, e.context_id, e.stream_id);
    }
    memset_.resize(events.memsets.size());
    for (size_t i = 0; i < events.memsets.size(); ++i) {
      const auto& e = events.memsets[i];
      memset_[i] = t.ResolveStream(e.device_id, e.context_id, e.stream_id);
    }
  }

  std::vector<EventSink*> sinks_;
  bool resolve_streams_ = false;  // some sink WantsStreams
  TraceReader reader_;
  absl::flat_hash_map<uint64_t, size_t> slot_;  // process_uid -> tables_
  std::vector<std::unique_ptr<ProcessTables>> tables_;
  std::vector<TimeSpan> spans_;  // by tables_ index: CUPTI ns
  size_t current_ = 0;
  DecodedChunk decoded_;  // without a decode thread: reused across batches
  std::vector<uint32_t> kernel_, memcpy_, memset_;
};

EventReader::EventReader(std::vector<EventSink*> sinks, ReadOptions options)
    : impl_(std::make_unique<Impl>(std::move(sinks), options)) {}
EventReader::~EventReader() = default;
absl::Status EventReader::ReadFile(const std::string& path) { return impl_->ReadFile(path); }
absl::Status EventReader::ReadBuffer(const std::string& name, const uint8_t* data, size_t size) {
  return impl_->ReadBuffer(name, data, size);
}
absl::Status EventReader::ReadFiles(const std::vector<std::string>& paths) {
  return impl_->ReadFiles(paths);
}
ReadResult EventReader::Finish() { return impl_->Finish(); }

ReadResult ReadEvents(const std::vector<std::string>& paths, const std::vector<EventSink*>& sinks,
                      const ReadOptions& options) {
  EventReader reader(sinks, options);
  (void)reader.ReadFiles(paths);  // unreadable files are recorded in the index
  return reader.Finish();
}

Timebase ScanTimebase(const std::vector<std::string>& paths, const ReadOptions& options) {
  return ReadEvents(paths, {}, options).timebase;
}

}  // namespace gpscope::reader
