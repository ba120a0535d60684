// tools/render/perfetto_trace.h: the exporter's events (chrome_tracks.h) as a
// Perfetto protobuf trace (`Trace { repeated TracePacket packet = 1; }`),
// written with proto/wire_writer.h from the field numbers of Perfetto's
// published protos (protos/perfetto/trace/...; the subset used is
// tests/export/perfetto_subset.proto). No libprotobuf, one reused buffer.
//
// One packet sequence (trusted_packet_sequence_id 1): its first packet
// clears the incremental state, later ones that use interned names say
// they need it. Tracks: one per process (ProcessDescriptor, named with the
// rank where there is one), children of it for each GPU stream, host
// thread (ThreadDescriptor), NVTX and sync lane, and one counter track per
// metric. Trace processor merges processes by pid, so a later process with
// a pid already used gets a named track without a ProcessDescriptor.
// Slices are TYPE_SLICE_BEGIN/END pairs (TrackEvent has no complete type)
// with interned names and categories, debug annotations for their
// arguments and their call stack (TrackEvent.callstack_iid, below). A launch and
// its GPU work share a flow id made of the process and the correlation id,
// so the flow needs no matching here. Timestamps are realtime ns (the
// origin plus the event's offset from it).
//
// Call stacks (chrome_stacks.h) are interned, each entry written in the
// packet that first uses it: a Callstack per stack (its iid: the tree node
// of its innermost frame; frame iids outermost first), a Frame per frame
// (function_names: the frame's text as summary gives it, e.g.
// "main.cc:17 step(int) (prog+0x1139)"; source_path_iid and line_number
// where known; kind native or interpreted) and a Mapping per module
// (mapping_paths: its path; build_ids: its GNU build id as raw bytes;
// the frame's rel_pc: its module offset), so trace processor can
// symbolize them again; a Python frame's mapping is its source file.
//
//   PerfettoTraceWriter w(out, timebase.origin_realtime_ns());
//   w.set_stacks(&stacks);
//   ... exporter calls ...
//   w.Finish();
//
// Thread model: one thread.
#ifndef GPSCOPE_TOOLS_RENDER_PERFETTO_TRACE_H_
#define GPSCOPE_TOOLS_RENDER_PERFETTO_TRACE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "proto/wire_writer.h"
#include "tools/render/chrome_stacks.h"
#include "tools/render/chrome_tracks.h"

namespace gpscope::render {

class PerfettoTraceWriter : public TraceExportSink {
 public:
  static constexpr size_t kMaxInternedNames = 1 << 20;  // past it, names go inline

  PerfettoTraceWriter(std::ostream& out, uint64_t origin_realtime_ns);
  // Where call stacks come from (may be unset).
  void set_stacks(const ChromeStacks* stacks) { stacks_ = stacks; }

  void BeginProcess(const ExportProcess& p) override;
  void DeclareTrack(uint32_t process, uint64_t tid, const std::string& name, uint32_t thread_id,
                    int64_t sort_index) override;
  void Slice(const ExportSlice& s, uint64_t tid) override;
  void Flows(const std::vector<FlowMatcher::Flow>&) override {}
  void Counter(uint32_t process, uint32_t counter, const std::string& name, int64_t ts_ns,
               double value) override;
  void Finish() { out_.flush(); }
  uint64_t packets() const { return packets_; }

  // Track and flow ids, stable for a given input.
  static uint64_t ProcessUuid(uint32_t process);
  static uint64_t TrackUuid(uint32_t process, uint64_t tid);
  static uint64_t CounterUuid(uint32_t process, uint32_t counter);
  // origin + offset, saturating at 0 and UINT64_MAX.
  static uint64_t RealtimeNs(uint64_t origin_realtime_ns, int64_t origin_ns);
  static uint64_t FlowId(uint32_t process, uint32_t correlation) {
    return (uint64_t{process + 1} << 32) | correlation;
  }

 private:
  // A writer over the reused buffer, with room for `payload_bytes` of
  // strings (times 3: String() may widen bad bytes to U+FFFD).
  format::WireWriter StartPacket(size_t payload_bytes, uint64_t ts_ns, bool uses_interning);
  void EndPacket(const format::WireWriter& w);
  uint64_t Realtime(int64_t origin_ns) const { return RealtimeNs(origin_realtime_ns_, origin_ns); }
  // iid of a name, or 0 when the table is full (then it goes inline). Adds
  // the new entry to `pending` for this packet's interned_data.
  uint64_t Intern(absl::flat_hash_map<std::string, uint64_t>* table, const std::string& text,
                  bool* added);
  // The callstack iid of a stack node (0: none), and the interned entries it
  // needs that were not written yet (new_*, their bytes in stack_payload_),
  // for WriteStackEntries() to put into the same packet's interned_data.
  uint64_t InternStack(uint32_t node);
  void WriteStackEntries(format::WireWriter& w) const;

  std::ostream& out_;
  const ChromeStacks* stacks_ = nullptr;
  const uint64_t origin_realtime_ns_;
  std::vector<uint8_t> buf_;
  bool first_packet_ = true;
  uint64_t packets_ = 0;
  absl::flat_hash_map<uint32_t, uint32_t> pids_;  // process index -> pid, first of a pid only
  absl::flat_hash_set<uint32_t> pids_seen_;
  absl::flat_hash_map<std::string, uint64_t> names_;       // event name -> iid
  absl::flat_hash_map<std::string, uint64_t> categories_;  // category -> iid
  absl::flat_hash_set<uint64_t> counters_;                 // counter tracks declared
  // Call stacks: what is interned so far (a frame's iid is its index in
  // ChromeStacks::frames() + 1), and what the current packet adds.
  struct NewFrame {
    uint32_t frame = 0;
    uint64_t mapping = 0;  // iid
    uint64_t source = 0;   // iid of its source path, 0 none
  };
  struct NewMapping {
    std::pair<std::string, std::string> key;  // path, raw build id
    uint64_t iid = 0;
  };
  absl::flat_hash_set<uint32_t> callstacks_;
  std::vector<bool> frames_written_;
  absl::flat_hash_map<std::pair<std::string, std::string>, uint64_t> mappings_;
  absl::flat_hash_map<std::string, uint64_t> source_paths_;
  std::vector<uint32_t> stack_frames_;  // the current stack's frames, innermost first
  std::vector<NewFrame> new_frames_;
  std::vector<NewMapping> new_mappings_;
  std::vector<std::pair<std::string, uint64_t>> new_source_paths_;
  uint64_t new_callstack_ = 0;
  size_t stack_payload_ = 0;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_PERFETTO_TRACE_H_
