// tools/render/chrome_tracks.h: the shape both trace exports (Chrome JSON,
// Perfetto protobuf) need from the events, independent of the file format:
//
//  - LaneAssigner: timeline viewers (chrome://tracing, speedscope, Perfetto)
//    draw the slices of one track as a call stack, so two slices there must
//    either nest or not overlap. A slice that would overlap another without
//    nesting goes to the next lane (an extra track of the same process)
//    where it fits; the first lane that fits wins, so the result depends
//    only on the order the slices come in.
//  - ReorderWindow: CUPTI writes a call's record when it returns, so a
//    nested call (the driver call inside a runtime call) comes before its
//    parent, and a batch lists each kind of GPU work apart. Each track
//    holds its last kWindow slices and hands them on in start order (the
//    longer first at equal starts), so such slices nest or follow on one
//    lane instead of taking two.
//  - FlowMatcher: pairs the API call that launched GPU work (kernel,
//    memcpy, memset) with that work by correlation id, whichever comes
//    first; one flow per pair (a CUDA graph launch has many).
//  - SyncKindName / MemcpyKindName / MemoryKindName: the trace's enum
//    values (proto/gpscope/trace.proto, equal to CUPTI's) as names.
//
//   LaneAssigner lanes;
//   uint32_t lane = lanes.Place(start_ns, end_ns);  // 0 for properly nested input
//
// Bounded: kMaxLanes lanes per track, kMaxDepth open slices per lane,
// FlowMatcher::kMaxPending endpoints waiting.
//
// Thread model: one thread.
#ifndef GPSCOPE_TOOLS_RENDER_CHROME_TRACKS_H_
#define GPSCOPE_TOOLS_RENDER_CHROME_TRACKS_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace gpscope::render {

class LaneAssigner {
 public:
  static constexpr uint32_t kMaxLanes = 64;
  static constexpr size_t kMaxDepth = 256;

  // The lane of a slice [start_ns, end_ns] (end < start is read as start).
  // Past kMaxLanes the last lane takes it anyway (forced() counts those).
  uint32_t Place(int64_t start_ns, int64_t end_ns);
  uint32_t lanes() const { return static_cast<uint32_t>(lanes_.size()); }
  uint64_t forced() const { return forced_; }

 private:
  struct Lane {
    int64_t last_start_ns = 0;
    std::vector<int64_t> open_ends_ns;  // ends of the open slices, outermost first
  };
  // How many open slices stay open at start_ns, or -1 when the slice does
  // not fit the lane (starts before its last slice, overlaps without
  // nesting, or would nest too deep).
  static int Fits(const Lane& lane, int64_t start_ns, int64_t end_ns);
  std::vector<Lane> lanes_;
  uint64_t forced_ = 0;
};

// Holds up to kWindow items of one track and releases them in (start asc,
// end desc, arrival) order. T has int64_t start_ns and end_ns. The window
// is wide because a batch lists its kernels, then its copies, then its
// memsets: a stream's copies come up to a batch of kernels late.
template <typename T>
class ReorderWindow {
 public:
  static constexpr size_t kWindow = 1 << 14;

  // Adds `item`; when the window is full, calls emit(T&&) with the earliest.
  template <typename Emit>
  void Push(T item, Emit&& emit) {
    items_.push_back({seq_++, std::move(item)});
    std::push_heap(items_.begin(), items_.end(), Later);
    if (items_.size() > kWindow) emit(PopFirst());
  }
  template <typename Emit>
  void Flush(Emit&& emit) {
    while (!items_.empty()) emit(PopFirst());
  }
  bool empty() const { return items_.empty(); }

 private:
  using Entry = std::pair<uint64_t, T>;
  // Heap order: the root is the entry that goes first.
  static bool Later(const Entry& x, const Entry& y) {
    const T& a = x.second;
    const T& b = y.second;
    if (a.start_ns != b.start_ns) return a.start_ns > b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
    return x.first > y.first;
  }
  T PopFirst() {
    std::pop_heap(items_.begin(), items_.end(), Later);
    T out = std::move(items_.back().second);
    items_.pop_back();
    return out;
  }
  uint64_t seq_ = 0;
  std::vector<Entry> items_;
};

// One end of a launch flow: where the slice was drawn.
struct FlowEnd {
  uint32_t process = 0;  // the exporter's process index
  uint64_t tid = 0;      // track (lane included)
  int64_t ts_ns = 0;
};

class FlowMatcher {
 public:
  static constexpr size_t kMaxPending = 1 << 20;
  struct Flow {
    uint64_t id;  // unique in the export, from 1
    FlowEnd from;  // the API call
    FlowEnd to;    // the GPU work
  };

  // The API call with `correlation`; flows to GPU work already seen.
  void Launch(uint64_t key, const FlowEnd& api, std::vector<Flow>* out);
  // GPU work with `correlation`; a flow when its call was seen.
  void Work(uint64_t key, const FlowEnd& work, std::vector<Flow>* out);
  uint64_t flows() const { return next_id_ - 1; }

  // The key of a correlation id within a process.
  static uint64_t Key(uint32_t process, uint32_t correlation) {
    return (uint64_t{process} << 32) | correlation;
  }

 private:
  void Bound();
  uint64_t next_id_ = 1;
  absl::flat_hash_map<uint64_t, FlowEnd> launches_;
  std::deque<uint64_t> launch_order_;
  absl::flat_hash_map<uint64_t, std::vector<FlowEnd>> waiting_;
  std::deque<uint64_t> waiting_order_;
};

// One argument of a slice (Chrome "args", Perfetto debug annotation).
struct ExportArg {
  enum Kind : uint8_t { kInt, kBool, kString };
  const char* key = "";
  Kind kind = kInt;
  int64_t int_value = 0;
  std::string string_value;
  static ExportArg Int(const char* key, int64_t v) { return {key, kInt, v, {}}; }
  static ExportArg Bool(const char* key, bool v) { return {key, kBool, v ? 1 : 0, {}}; }
  static ExportArg Str(const char* key, std::string v) { return {key, kString, 0, std::move(v)}; }
};

// A slice (or, with end_ns == start_ns and instant set, an instant) on one
// track of one process. Times are ns since the time origin every command
// prints (reader/timebase.h).
struct ExportSlice {
  enum Role : uint8_t { kPlain, kLaunch, kWork };  // flow ends by correlation
  uint32_t process = 0;  // the exporter's index, from 0 in the order first seen
  uint64_t track = 0;    // track key within the process (lane 0's tid)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  const char* category = "";
  std::string name;
  std::vector<ExportArg> args;
  uint32_t stack_node = 0;   // ChromeStacks node (index + 1; 0: none)
  uint32_t correlation = 0;  // 0: none
  Role role = kPlain;
  bool instant = false;
};

struct ExportProcess {
  uint32_t index = 0;
  uint32_t pid = 0;
  int32_t rank = -1;  // Identity.rank; -1 when not a distributed run
  std::string label;  // "rank 0 · pid 41 on host"
};

// What a file format does with the events, in the exporter's order:
// a process before its tracks, a track before its slices.
class TraceExportSink {
 public:
  virtual ~TraceExportSink() = default;
  virtual void BeginProcess(const ExportProcess& p) = 0;
  // `thread_id`: the OS thread of a host-thread track, 0 for the others;
  // `sort_index`: lower sorts first.
  virtual void DeclareTrack(uint32_t process, uint64_t tid, const std::string& name,
                            uint32_t thread_id, int64_t sort_index) = 0;
  virtual void Slice(const ExportSlice& s, uint64_t tid) = 0;
  // Launch flows whose two ends have been written (Chrome draws them from
  // these; Perfetto already tied them to the slices by correlation).
  virtual void Flows(const std::vector<FlowMatcher::Flow>& flows) = 0;
  // A metric sample; `counter` is the process's metric id.
  virtual void Counter(uint32_t process, uint32_t counter, const std::string& name,
                       int64_t ts_ns, double value) = 0;
};

// "stream synchronize", ...; "sync kind N" for a value the schema lacks.
std::string SyncKindName(uint32_t kind);
// "HtoD", "DtoH", ..., "PtoP"; "kind N" otherwise.
std::string MemcpyKindName(uint32_t kind);
// "pageable", "pinned", "device", ...; "unknown" for 0, "kind N" otherwise.
std::string MemoryKindName(uint32_t kind);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_CHROME_TRACKS_H_
