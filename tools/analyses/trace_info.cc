// tools/analyses/trace_info.cc: see trace_info.h.
#include "tools/analyses/trace_info.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "tools/reader/event_reader.h"

namespace gpscope::analyses {
namespace {

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
      InfoProcess p;
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
    if (warnings_.size() < kInfoMaxWarnings) {
      warnings_.push_back(std::move(warning));
    } else {
      ++warnings_omitted_;
    }
  }

  InfoProcess& Of(const reader::ProcessTables& t) {
    auto [it, inserted] = slot_.try_emplace(t.process_uid(), processes_.size());
    if (inserted) processes_.emplace_back();
    return processes_[it->second];
  }

  void AddBatch(const reader::ResolvedBatch& b, InfoProcess& p) {
    const proto::EventBatch& batch = b.batch;
    for (const proto::DropNotice& d : batch.drops()) p.dropped[d.reason()] += d.count();
    for (const proto::LostInterval& l : batch.lost_intervals()) {
      ++p.lost_intervals_total;
      if (p.lost_intervals.size() < kInfoMaxLostIntervals) p.lost_intervals.push_back(l);
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
  std::vector<InfoProcess> processes_;
  std::vector<std::string> warnings_;
  uint64_t warnings_omitted_ = 0;
};

}  // namespace

std::vector<std::pair<const char*, uint64_t>> NamedCounts(const EventCounts& n) {
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

InfoReport CollectInfo(const std::vector<std::string>& paths) {
  InfoCollector collector;
  reader::ReadOptions options;
  options.max_warnings = kInfoMaxWarnings;
  return collector.Finish(reader::ReadEvents(paths, {&collector}, options));
}

}  // namespace gpscope::analyses
