// tools/analyze/info.h: `gpscope-analyze info FILE...`: what a set of trace
// files holds. Per process: identity, command line, the allow-listed
// environment the collector recorded (CUDA_LAUNCH_BLOCKING, NCCL_*...),
// devices, time span (wall clock), frames read and lost, event counts per
// kind, drops by reason, lost intervals, unavailable collector parts and
// whether the process ended cleanly; plus the reader's warnings about
// damaged data.
//
// CollectInfo() is the analysis (pure apart from reading the files); the two
// renderers turn its result into text (fits 100 columns) or JSON (stable
// keys, for scripts).
//
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_INFO_H_
#define GPSCOPE_TOOLS_ANALYZE_INFO_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gpscope/trace.pb.h"
#include "tools/reader/clock_align.h"
#include "tools/reader/timebase.h"
#include "tools/reader/trace_index.h"

namespace gpscope::analyze {

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

struct ProcessReport {
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
  std::vector<ProcessReport> processes;  // in order of first appearance
};

InfoReport CollectInfo(const std::vector<std::string>& paths);
std::string RenderInfoText(const InfoReport& report);
std::string RenderInfoJson(const InfoReport& report);

// The command: `info [--format text|json] FILE...` (args after "info").
int RunInfo(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_INFO_H_
