// tools/analyses/trace_info.h: what a set of trace files holds (`gpscope-analyze
// info`): per process its identity, devices, clocks, event counts per kind
// and time span, dropped records, lost intervals, capabilities and CUPTI
// clients refused; the files and warnings of the read. Collected by one event
// sink of the reader's pass (no model is built). render/info_render.h writes it.
//
//   InfoReport r = CollectInfo({"run.gpscope"});
//   for (const InfoProcess& p : r.processes) ... p.events.kernels
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYSES_TRACE_INFO_H_
#define GPSCOPE_TOOLS_ANALYSES_TRACE_INFO_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpscope/trace.pb.h"
#include "tools/reader/clock_align.h"
#include "tools/reader/timebase.h"
#include "tools/reader/trace_index.h"

namespace gpscope::analyses {

// Warnings kept (the JSON lists them); the rest are counted.
inline constexpr size_t kInfoMaxWarnings = 1000;
// Lost intervals kept per process; the rest are counted.
inline constexpr size_t kInfoMaxLostIntervals = 4096;

struct EventCounts {
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t syncs = 0;
  uint64_t api_calls = 0;
  uint64_t nvtx_ranges = 0;
  uint64_t nvtx_marks = 0;
  uint64_t overheads = 0;
  uint64_t metric_samples = 0;
};

struct InfoProcess {
  reader::ProcessInfo info;  // identity (header), end, frames and gaps
  EventCounts events;
  bool has_events = false;
  uint64_t first_event_ns = 0;      // CUPTI ns, valid when has_events
  uint64_t last_event_ns = 0;       // the latest end (or timestamp) of any event
  reader::ClockAlign clocks;        // the reader's (header, batch and end snapshots)
  // Devices from the header and from batches (the reader's tables).
  std::map<uint32_t, proto::DeviceInfo> devices;
  std::map<int, uint64_t> dropped;  // proto::DropReason -> records (frames for WRITE_FAILED)
  std::vector<proto::LostInterval> lost_intervals;  // the first kMaxLostIntervalsKept
  uint64_t lost_intervals_total = 0;
  std::map<std::string, proto::CapabilityNotice> capabilities;  // by component, last wins
  // Another CUPTI client refused while the collector held CUPTI, by (api,
  // caller); the notices are cumulative, the largest count wins.
  std::map<std::pair<std::string, std::string>, proto::CuptiClientRefusal> cupti_refusals;
  uint64_t undecodable_batches = 0;  // batches whose columns disagree (also a warning)
};

struct InfoReport {
  reader::TraceIndex index;              // files, warnings
  reader::Timebase timebase;             // the time origin every command prints
  std::vector<InfoProcess> processes;  // in order of first appearance
};

// The counts by their output names ("kernels", "memcpys", ..., "metric_samples").
std::vector<std::pair<const char*, uint64_t>> NamedCounts(const EventCounts& n);

InfoReport CollectInfo(const std::vector<std::string>& paths);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_TRACE_INFO_H_
