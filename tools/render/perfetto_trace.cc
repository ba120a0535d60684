// tools/render/perfetto_trace.cc: see perfetto_trace.h.
#include "tools/render/perfetto_trace.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace gpscope::render {
namespace {

using format::WireWriter;

// Field numbers from Perfetto's protos/perfetto/trace/ (trace.proto,
// trace_packet.proto, interned_data/interned_data.proto, track_event/*.proto).
namespace trace { constexpr uint32_t kPacket = 1; }
namespace packet {
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kTrustedPacketSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint32_t kSeqIncrementalStateCleared = 1;
constexpr uint32_t kSeqNeedsIncrementalState = 2;
}  // namespace packet
namespace interned {
constexpr uint32_t kEventCategories = 1;  // EventCategory { iid = 1; name = 2; }
constexpr uint32_t kEventNames = 2;       // EventName { iid = 1; name = 2; }
constexpr uint32_t kIid = 1;
constexpr uint32_t kName = 2;
// Call stacks (profiling/profile_common.proto): InternedString { iid = 1;
// bytes str = 2; } for function names, build ids (raw bytes), mapping and
// source paths; Mapping, Frame and Callstack below.
constexpr uint32_t kFunctionNames = 5;
constexpr uint32_t kFrames = 6;
constexpr uint32_t kCallstacks = 7;
constexpr uint32_t kBuildIds = 16;
constexpr uint32_t kMappingPaths = 17;
constexpr uint32_t kSourcePaths = 18;
constexpr uint32_t kMappings = 19;
constexpr uint32_t kStr = 2;
}  // namespace interned
namespace mapping {  // Mapping
constexpr uint32_t kIid = 1;
constexpr uint32_t kBuildId = 2;        // iid of build_ids
constexpr uint32_t kPathStringIds = 7;  // iids of mapping_paths: one, the full path
}  // namespace mapping
namespace frame {  // Frame
constexpr uint32_t kIid = 1;
constexpr uint32_t kFunctionNameId = 2;
constexpr uint32_t kMappingId = 3;
constexpr uint32_t kRelPc = 4;
constexpr uint32_t kSourcePathIid = 5;
constexpr uint32_t kLineNumber = 6;
constexpr uint32_t kKind = 7;
constexpr int32_t kKindNative = 1;
constexpr int32_t kKindInterpreted = 3;
}  // namespace frame
namespace callstack {  // Callstack
constexpr uint32_t kIid = 1;
constexpr uint32_t kFrameIds = 2;  // repeated uint64, outermost first
}  // namespace callstack
namespace track {
constexpr uint32_t kUuid = 1;
constexpr uint32_t kName = 2;
constexpr uint32_t kProcess = 3;   // ProcessDescriptor { pid = 1; process_name = 6; }
constexpr uint32_t kThread = 4;    // ThreadDescriptor { pid = 1; tid = 2; thread_name = 5; }
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kCounter = 8;   // CounterDescriptor
constexpr uint32_t kProcessPid = 1;
constexpr uint32_t kProcessName = 6;
constexpr uint32_t kThreadPid = 1;
constexpr uint32_t kThreadTid = 2;
constexpr uint32_t kThreadName = 5;
}  // namespace track
namespace event {
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kCategories = 22;
constexpr uint32_t kName = 23;
constexpr uint32_t kDoubleCounterValue = 44;
constexpr uint32_t kFlowIds = 47;  // repeated fixed64
constexpr uint32_t kCallstackIid = 56;  // InternedData.callstacks
constexpr int32_t kTypeSliceBegin = 1;
constexpr int32_t kTypeSliceEnd = 2;
constexpr int32_t kTypeInstant = 3;
constexpr int32_t kTypeCounter = 4;
}  // namespace event
namespace annotation {  // DebugAnnotation
constexpr uint32_t kBoolValue = 2;
constexpr uint32_t kIntValue = 4;
constexpr uint32_t kStringValue = 6;
constexpr uint32_t kName = 10;
}  // namespace annotation

// A build id as the raw bytes Perfetto's Mapping wants; "" when `hex` is
// not lowercase hex of whole bytes.
std::string BuildIdBytes(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  if (hex.size() % 2 != 0) return out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::string();
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t PerfettoTraceWriter::ProcessUuid(uint32_t process) {
  return Mix((uint64_t{process + 1} << 56) ^ 0xFFFFFFFFFFFFull) | 1;
}
uint64_t PerfettoTraceWriter::TrackUuid(uint32_t process, uint64_t tid) {
  return Mix(Mix(uint64_t{process + 1}) ^ tid) | 1;
}
uint64_t PerfettoTraceWriter::CounterUuid(uint32_t process, uint32_t counter) {
  return Mix(Mix(uint64_t{process + 1} << 1) ^ (uint64_t{counter} | (1ull << 62))) | 1;
}

PerfettoTraceWriter::PerfettoTraceWriter(std::ostream& out, uint64_t origin_realtime_ns)
    : out_(out), origin_realtime_ns_(origin_realtime_ns) {}

uint64_t PerfettoTraceWriter::RealtimeNs(uint64_t origin_realtime_ns_, int64_t origin_ns) {
  // Saturating: a hostile trace's times can be anywhere in int64.
  if (origin_ns >= 0) {
    const uint64_t add = static_cast<uint64_t>(origin_ns);
    return add > UINT64_MAX - origin_realtime_ns_ ? UINT64_MAX : origin_realtime_ns_ + add;
  }
  const uint64_t sub = static_cast<uint64_t>(-(origin_ns + 1)) + 1;
  return sub >= origin_realtime_ns_ ? 0 : origin_realtime_ns_ - sub;
}

WireWriter PerfettoTraceWriter::StartPacket(size_t payload_bytes, uint64_t ts_ns,
                                            bool uses_interning) {
  const size_t need = 512 + 3 * payload_bytes;
  if (buf_.size() < need) buf_.resize(std::max(need, size_t{64} << 10));
  WireWriter w(buf_.data(), buf_.size());
  if (ts_ns != 0) w.Uint64(packet::kTimestamp, ts_ns);
  w.Uint32(packet::kTrustedPacketSequenceId, 1);
  if (first_packet_) {
    w.Uint32(packet::kSequenceFlags, packet::kSeqIncrementalStateCleared);
    first_packet_ = false;
  } else if (uses_interning) {
    w.Uint32(packet::kSequenceFlags, packet::kSeqNeedsIncrementalState);
  }
  return w;
}

void PerfettoTraceWriter::EndPacket(const WireWriter& w) {
  if (!w.ok()) return;  // cannot happen: StartPacket sized the buffer for it
  uint8_t head[1 + format::kMaxVarintBytes];
  head[0] = static_cast<uint8_t>(format::MakeTag(trace::kPacket, format::WireType::kLengthDelimited));
  uint8_t* end = format::EncodeVarintUnchecked(head + 1, w.size());
  out_.write(reinterpret_cast<const char*>(head), end - head);
  out_.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size()));
  ++packets_;
}

uint64_t PerfettoTraceWriter::Intern(absl::flat_hash_map<std::string, uint64_t>* table,
                                     const std::string& text, bool* added) {
  *added = false;
  auto it = table->find(text);
  if (it != table->end()) return it->second;
  if (table->size() >= kMaxInternedNames) return 0;
  const uint64_t iid = table->size() + 1;
  table->emplace(text, iid);
  *added = true;
  return iid;
}

void PerfettoTraceWriter::BeginProcess(const ExportProcess& p) {
  // Trace processor knows a process by its pid: a second process with the
  // same pid (another node, another container) would merge into the first,
  // so it gets a plain named track instead, and its threads no
  // ThreadDescriptor.
  const bool own_pid = pids_seen_.insert(p.pid).second;
  if (own_pid) pids_[p.index] = p.pid;
  WireWriter w = StartPacket(p.label.size(), 0, false);
  WireWriter::Nested td = w.BeginNested(packet::kTrackDescriptor);
  w.Uint64(track::kUuid, ProcessUuid(p.index));
  if (own_pid) {
    WireWriter::Nested pd = w.BeginNested(track::kProcess);
    w.Int32(track::kProcessPid, static_cast<int32_t>(p.pid));
    w.String(track::kProcessName, p.label.data(), p.label.size());
    w.EndNested(pd);
  } else {
    w.String(track::kName, p.label.data(), p.label.size());
  }
  w.EndNested(td);
  EndPacket(w);
}

void PerfettoTraceWriter::DeclareTrack(uint32_t process, uint64_t tid, const std::string& name,
                                       uint32_t thread_id, int64_t) {
  WireWriter w = StartPacket(name.size() * 2, 0, false);
  WireWriter::Nested td = w.BeginNested(packet::kTrackDescriptor);
  w.Uint64(track::kUuid, TrackUuid(process, tid));
  w.Uint64(track::kParentUuid, ProcessUuid(process));
  w.String(track::kName, name.data(), name.size());
  auto pid = pids_.find(process);
  if (thread_id != 0 && pid != pids_.end()) {
    WireWriter::Nested th = w.BeginNested(track::kThread);
    w.Int32(track::kThreadPid, static_cast<int32_t>(pid->second));
    w.Int32(track::kThreadTid, static_cast<int32_t>(thread_id));
    w.String(track::kThreadName, name.data(), name.size());
    w.EndNested(th);
  }
  w.EndNested(td);
  EndPacket(w);
}

void PerfettoTraceWriter::Slice(const ExportSlice& s, uint64_t tid) {
  // The call stack (its interned entries, new ones written here).
  const uint64_t callstack_iid = InternStack(s.stack_node);
  size_t payload = s.name.size() + 64 + stack_payload_;
  for (const ExportArg& a : s.args) payload += std::string_view(a.key).size() + a.string_value.size() + 32;

  bool new_name = false, new_category = false;
  const uint64_t name_iid = Intern(&names_, s.name, &new_name);
  const uint64_t category_iid = Intern(&categories_, s.category, &new_category);
  const uint64_t track_uuid = TrackUuid(s.process, tid);
  WireWriter w = StartPacket(payload, Realtime(s.start_ns), true);
  if (new_name || new_category || new_callstack_ != 0) {
    WireWriter::Nested id = w.BeginNested(packet::kInternedData);
    WriteStackEntries(w);
    if (new_category) {
      WireWriter::Nested e = w.BeginNested(interned::kEventCategories);
      w.Uint64(interned::kIid, category_iid);
      w.String(interned::kName, s.category, std::string_view(s.category).size());
      w.EndNested(e);
    }
    if (new_name) {
      WireWriter::Nested e = w.BeginNested(interned::kEventNames);
      w.Uint64(interned::kIid, name_iid);
      w.String(interned::kName, s.name.data(), s.name.size());
      w.EndNested(e);
    }
    w.EndNested(id);
  }
  WireWriter::Nested te = w.BeginNested(packet::kTrackEvent);
  w.Enum(event::kType, s.instant ? event::kTypeInstant : event::kTypeSliceBegin);
  w.Uint64(event::kTrackUuid, track_uuid);
  if (category_iid != 0) {
    w.Uint64(event::kCategoryIids, category_iid);
  } else {
    w.String(event::kCategories, s.category, std::string_view(s.category).size());
  }
  if (name_iid != 0) {
    w.Uint64(event::kNameIid, name_iid);
  } else {
    w.String(event::kName, s.name.data(), s.name.size());
  }
  for (const ExportArg& a : s.args) {
    WireWriter::Nested da = w.BeginNested(event::kDebugAnnotations);
    w.String(annotation::kName, a.key, std::string_view(a.key).size());
    switch (a.kind) {
      case ExportArg::kInt: w.Int64(annotation::kIntValue, a.int_value); break;
      case ExportArg::kBool: w.Bool(annotation::kBoolValue, a.int_value != 0); break;
      case ExportArg::kString:
        w.String(annotation::kStringValue, a.string_value.data(), a.string_value.size());
        break;
    }
    w.EndNested(da);
  }
  if (s.role != ExportSlice::kPlain && s.correlation != 0) {
    w.Fixed64(event::kFlowIds, FlowId(s.process, s.correlation));
  }
  if (callstack_iid != 0) w.Uint64(event::kCallstackIid, callstack_iid);
  w.EndNested(te);
  EndPacket(w);
  if (s.instant) return;

  WireWriter e = StartPacket(0, Realtime(std::max(s.end_ns, s.start_ns)), true);
  WireWriter::Nested te2 = e.BeginNested(packet::kTrackEvent);
  e.Enum(event::kType, event::kTypeSliceEnd);
  e.Uint64(event::kTrackUuid, track_uuid);
  e.EndNested(te2);
  EndPacket(e);
}

uint64_t PerfettoTraceWriter::InternStack(uint32_t node) {
  new_frames_.clear();
  new_mappings_.clear();
  new_source_paths_.clear();
  new_callstack_ = 0;
  stack_payload_ = 0;
  if (node == 0 || stacks_ == nullptr || node > stacks_->nodes().size()) return 0;
  if (callstacks_.contains(node)) return node;  // a callstack's iid is its leaf node's
  const std::vector<ChromeStacks::Node>& nodes = stacks_->nodes();
  const std::vector<model::StackFrameText>& frames = stacks_->frames();
  stack_frames_.clear();  // innermost first
  for (uint32_t n = node; n != 0 && n <= nodes.size() && stack_frames_.size() < nodes.size();
       n = nodes[n - 1].parent) {
    stack_frames_.push_back(nodes[n - 1].frame);
  }
  if (frames_written_.size() < frames.size()) frames_written_.resize(frames.size(), false);
  for (uint32_t fi : stack_frames_) {
    if (fi >= frames.size() || frames_written_[fi]) continue;
    frames_written_[fi] = true;
    const model::StackFrameText& f = frames[fi];
    const bool native = f.kind == proto::FRAME_NATIVE;
    NewFrame nf;
    nf.frame = fi;
    // Its mapping: a native frame's module (path and build id), a Python
    // frame's source file.
    std::pair<std::string, std::string> key(f.file.empty() ? "[unknown]" : f.file,
                                             native ? BuildIdBytes(f.build_id) : "");
    auto m = mappings_.find(key);
    if (m == mappings_.end()) {
      stack_payload_ += key.first.size() + key.second.size() + 32;
      m = mappings_.emplace(key, mappings_.size() + 1).first;
      new_mappings_.push_back({std::move(key), m->second});
    }
    nf.mapping = m->second;
    const std::string& source = native ? f.source_file : f.file;
    if (!source.empty()) {
      auto sp = source_paths_.find(source);
      if (sp == source_paths_.end()) {
        stack_payload_ += source.size() + 16;
        sp = source_paths_.emplace(source, source_paths_.size() + 1).first;
        new_source_paths_.push_back({source, sp->second});
      }
      nf.source = sp->second;
    }
    stack_payload_ += stacks_->text(fi).size() + 64;
    new_frames_.push_back(nf);
  }
  callstacks_.insert(node);
  new_callstack_ = node;
  stack_payload_ += stack_frames_.size() * 12 + 16;
  return node;
}

void PerfettoTraceWriter::WriteStackEntries(WireWriter& w) const {
  for (const NewMapping& m : new_mappings_) {
    const std::string& path = m.key.first;
    const std::string& build_id = m.key.second;
    WireWriter::Nested p = w.BeginNested(interned::kMappingPaths);
    w.Uint64(interned::kIid, m.iid);
    w.String(interned::kStr, path.data(), path.size());
    w.EndNested(p);
    if (!build_id.empty()) {
      WireWriter::Nested b = w.BeginNested(interned::kBuildIds);
      w.Uint64(interned::kIid, m.iid);
      w.Bytes(interned::kStr, build_id.data(), build_id.size());
      w.EndNested(b);
    }
    WireWriter::Nested e = w.BeginNested(interned::kMappings);
    w.Uint64(mapping::kIid, m.iid);
    if (!build_id.empty()) w.Uint64(mapping::kBuildId, m.iid);
    w.Uint64(mapping::kPathStringIds, m.iid);
    w.EndNested(e);
  }
  for (const std::pair<std::string, uint64_t>& sp : new_source_paths_) {
    WireWriter::Nested e = w.BeginNested(interned::kSourcePaths);
    w.Uint64(interned::kIid, sp.second);
    w.String(interned::kStr, sp.first.data(), sp.first.size());
    w.EndNested(e);
  }
  for (const NewFrame& nf : new_frames_) {
    const model::StackFrameText& f = stacks_->frames()[nf.frame];
    const std::string& text = stacks_->text(nf.frame);
    const uint64_t iid = uint64_t{nf.frame} + 1;  // its function name has the same iid
    WireWriter::Nested name = w.BeginNested(interned::kFunctionNames);
    w.Uint64(interned::kIid, iid);
    w.String(interned::kStr, text.data(), text.size());
    w.EndNested(name);
    const bool native = f.kind == proto::FRAME_NATIVE;
    WireWriter::Nested e = w.BeginNested(interned::kFrames);
    w.Uint64(frame::kIid, iid);
    w.Uint64(frame::kFunctionNameId, iid);
    w.Uint64(frame::kMappingId, nf.mapping);
    // The module offset: an ELF virtual address (what addr2line takes);
    // for shared libraries and PIE executables as GNU ld lays them out
    // (code at a file offset equal to its address) also Perfetto's rel_pc.
    w.Uint64(frame::kRelPc, native ? f.module_offset : 0);
    if (nf.source != 0) {
      w.Uint64(frame::kSourcePathIid, nf.source);
      const uint32_t line = native ? f.source_line : f.line;
      if (line != 0) w.Uint32(frame::kLineNumber, line);
    }
    if (f.kind == proto::FRAME_NATIVE) w.Enum(frame::kKind, frame::kKindNative);
    if (f.kind == proto::FRAME_PYTHON) w.Enum(frame::kKind, frame::kKindInterpreted);
    w.EndNested(e);
  }
  if (new_callstack_ != 0) {
    WireWriter::Nested e = w.BeginNested(interned::kCallstacks);
    w.Uint64(callstack::kIid, new_callstack_);
    for (auto it = stack_frames_.rbegin(); it != stack_frames_.rend(); ++it) {
      w.Uint64(callstack::kFrameIds, uint64_t{*it} + 1);
    }
    w.EndNested(e);
  }
}

void PerfettoTraceWriter::Counter(uint32_t process, uint32_t counter, const std::string& name,
                                  int64_t ts_ns, double value) {
  if (!std::isfinite(value)) return;  // a gap, as in the Chrome export's null
  const uint64_t uuid = CounterUuid(process, counter);
  if (counters_.insert(uuid).second) {
    WireWriter w = StartPacket(name.size(), 0, false);
    WireWriter::Nested td = w.BeginNested(packet::kTrackDescriptor);
    w.Uint64(track::kUuid, uuid);
    w.Uint64(track::kParentUuid, ProcessUuid(process));
    w.String(track::kName, name.data(), name.size());
    WireWriter::Nested cd = w.BeginNested(track::kCounter);
    w.EndNested(cd);
    w.EndNested(td);
    EndPacket(w);
  }
  WireWriter w = StartPacket(0, Realtime(ts_ns), false);
  WireWriter::Nested te = w.BeginNested(packet::kTrackEvent);
  w.Enum(event::kType, event::kTypeCounter);
  w.Uint64(event::kTrackUuid, uuid);
  w.Double(event::kDoubleCounterValue, value);
  w.EndNested(te);
  EndPacket(w);
}

}  // namespace gpscope::render
