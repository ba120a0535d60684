// tools/render/report_timeline.h: the exact events behind the HTML report's
// waterfall timeline, gathered in one streaming pass and put on one time base.
//
// TimelineCollector is an event sink of the reader's pass (beside the
// model: the report reads each file once) that keeps every GPU op (kernels,
// copies, memsets), sync wait, CUDA API call, NVTX range/mark, CUPTI
// overhead and metric sample, sorted into lanes:
//   per process (rank), per GPU: one lane per stream, one "sync waits" lane;
//   per host thread: an NVTX lane and a CUDA API lane;
//   per process: a profiler-overhead lane; one counter lane per metric.
// Names, launch shapes, contexts and metric descriptors come from the
// reader's ProcessTables. Finish() maps every CUPTI timestamp to
// CLOCK_REALTIME with the pass's Timebase (the one interpolating clock
// alignment of every output), so processes of several files and hosts line
// up, then subtracts the time origin every command prints (t0_realtime_ns,
// the earliest event of all files): every time in TimelineData is "report
// ns", ns since that origin. Each lane is sorted by start
// and its events are given rows (first fit), so overlapping events (nested
// API calls, NVTX push/pop) stack instead of hiding each other.
//
// Memory: ~33 bytes per kept event, in blocks (a lane is a std::deque, so
// growing it never copies what it holds: no transient 2-3x of a vector's
// reallocation at 10 M events). Past TimelineOptions::max_events, or when
// RSS plus what the report's output will need for the events kept
// (kOutputBytesPerEvent each) passes the reading limit, the collector stops
// keeping events (counted per lane in `not_kept`, shown in the report as
// incomplete); the analyzer's numbers still cover everything.
//
//   TimelineCollector collector(options);
//   model::TraceModel model = model::BuildModel(paths, model_options, {&collector});
//   TimelineData timeline = collector.Finish(model.timebase, &model);
//
// Thread model: one thread; a collector is used for one pass.
#ifndef GPSCOPE_TOOLS_RENDER_REPORT_TIMELINE_H_
#define GPSCOPE_TOOLS_RENDER_REPORT_TIMELINE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gpscope/trace.pb.h"
#include "tools/model/trace_model.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/clock_align.h"
#include "tools/reader/event_sink.h"
#include "tools/reader/timebase.h"
#include "tools/render/chrome_stacks.h"

namespace gpscope::render {

// What an event is; decides its colour in the report (report/src/colors.js
// keeps the same numbering).
enum class EventCategory : uint8_t {
  kKernel = 0,
  kCommKernel = 1,  // NCCL: ncclKernel_* (old) and ncclDevKernel_* (new)
  kH2D = 2,
  kD2H = 3,
  kD2D = 4,
  kP2P = 5,
  kCopyOther = 6,
  kMemset = 7,
  kSync = 8,  // the host waited for the GPU (CUPTI synchronization record)
  kApi = 9,
  kApiSync = 10,  // a synchronizing API call (cuda*Synchronize)
  kNvtx = 11,
  kNvtxStep = 12,  // an NVTX range whose name marks a training step
  kNvtxMark = 13,  // an instant (duration 0)
  kOverhead = 14,
};

enum class LaneKind : uint8_t { kStream, kSync, kApi, kNvtx, kOverhead, kCounter };
const char* LaneKindName(LaneKind kind);  // "stream", "sync", "api", ...

// One event; times are CUPTI ns until Finish(), report ns after.
struct TimelineEvent {
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t aux = 0;   // kernel: launch config (TimelineData::configs index + 1);
                      // copy/memset: bytes; API call: return value
  uint32_t name = 0;  // TimelineData::names index
  EventCategory category = EventCategory::kKernel;
  uint8_t row = 0;  // stacking row within the lane
};

struct CounterSample {
  uint64_t t_ns = 0;
  double value = 0;
};

struct TimelineLane {
  LaneKind kind = LaneKind::kStream;
  size_t process = 0;       // TimelineData::processes index
  uint32_t device_id = 0;   // stream, sync and device-scoped counter lanes
  bool has_device = false;  // false: host side (thread, process or host scope)
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t thread_id = 0;
  std::string label;                  // "stream 7", "tid 846 · CUDA API", "nvml.power_w (W)"
  std::deque<TimelineEvent> events;  // sorted by start after Finish()
  uint32_t rows = 1;
  uint64_t max_duration_ns = 0;
  uint64_t not_kept = 0;  // events past TimelineOptions::max_events
  // Counter lanes only.
  std::string metric_name;
  std::string unit;
  int scope = 0;  // proto::MetricScope
  std::vector<CounterSample> samples;
  // API lanes: the calls with a call stack (issue 20), (start ns, node of
  // TimelineData::stacks + 1), by start; at most kMaxStackCalls in all.
  std::vector<std::pair<uint64_t, uint32_t>> stack_calls;
};

// A process as the timeline knows it.
struct TimelineProcess {
  uint64_t process_uid = 0;
  uint32_t pid = 0;
  std::string hostname;
  int32_t rank = -1;
  reader::ClockAlign clocks;  // the timebase's, for this process
  std::map<uint32_t, proto::DeviceInfo> devices;
  std::vector<proto::LostInterval> lost;  // report ns after Finish (end 0 -> trace end)
  uint64_t lost_not_kept = 0;
};

struct LaunchShape {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t shared_memory_bytes = 0;  // static + dynamic
};

// Calls with a stack kept for the report's timeline (sync calls first once
// past it is not tried: the first ones are kept).
inline constexpr size_t kMaxStackCalls = 1 << 18;

// What the report's writer needs per kept event on top of the events
// themselves (tiled JSON text and its HTML copy, bins, spans), for the
// memory check while reading.
inline constexpr uint64_t kOutputBytesPerEvent = 24;

struct TimelineOptions {
  uint64_t max_events = 16'000'000;  // ~530 MB of events; beyond, lanes only count
  uint32_t max_rows = 12;           // deeper nesting shares the last row
};

struct TimelineData {
  uint64_t t0_realtime_ns = 0;     // CLOCK_REALTIME of report ns 0: the pass's time origin
  uint64_t span_ns = 0;            // report ns of the last event end
  std::vector<std::string> names;  // display names: kernels demangled
  std::vector<LaunchShape> configs;
  std::vector<TimelineProcess> processes;  // in order of first appearance
  std::vector<TimelineLane> lanes;         // grouped: process, then GPU, threads, counters
  uint64_t events_kept = 0;
  uint64_t events_not_kept = 0;
  uint64_t undecodable_batches = 0;
  bool over_memory_budget = false;  // events stopped being kept: the memory budget
  // Call stacks (issue 20): the trace's stacks as a prefix tree
  // (chrome_stacks.h); null or empty when the trace has none.
  std::shared_ptr<const ChromeStacks> stacks;
  uint64_t stack_calls_not_kept = 0;  // past kMaxStackCalls

  // Report ns of a CUPTI timestamp of process `process` (clamped at 0).
  uint64_t ToReportNs(size_t process, uint64_t cupti_ns) const;
  // TimelineData::processes index of a process_uid, or -1.
  int FindProcess(uint64_t process_uid) const;
};

class TimelineCollector : public reader::EventSink {
 public:
  explicit TimelineCollector(const TimelineOptions& options = {});
  ~TimelineCollector() override;
  TimelineCollector(const TimelineCollector&) = delete;
  TimelineCollector& operator=(const TimelineCollector&) = delete;

  void OnHeader(const reader::ProcessTables& tables, const proto::ProcessHeader& header,
                const reader::ChunkPlace& place) override;
  // A batch that did not decode is counted.
  void OnBatch(const reader::ResolvedBatch& batch) override;

  // Ends the pass: time base (the pass's, with its origin), sorting, rows,
  // the call stacks' frames named (chrome_stacks.h Resolve; `symbolized`:
  // the model of the same pass, whose frames are not symbolized again).
  TimelineData Finish(const reader::Timebase& timebase,
                      const model::TraceModel* symbolized = nullptr);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether a kernel name is an NCCL communication kernel.
bool IsCommKernelName(std::string_view mangled_name);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_REPORT_TIMELINE_H_
