// tools/reader/process_tables.h: everything the reader knows about one
// traced process (one process_uid) that its events refer to: interned
// strings, launch shapes, devices, contexts, streams, metric descriptors and
// the clock alignment. The reader fills a process's tables from its header
// and from each batch's definitions before that batch's events reach any
// event sink (event_sink.h), so a sink resolves an id with one lookup here
// and keeps no table of its own.
//
// Ids in a trace are untrusted. This is where they are checked: the
// definitions were cut to the limits of limits.h by CheckChunk, so every
// table indexed by an id is bounded; a lookup of an id the trace never
// defined returns the empty value (String() ""), never grows a table; the
// devices, contexts and streams of a process are capped at
// kMaxDevicesPerProcess / kMaxContextsPerProcess / kMaxStreamsPerProcess
// (past them an event's stream resolves to kNoStream and is counted).
//
//   const ProcessTables& t = batch.tables;
//   std::string_view name = t.String(kernel.name_id);
//   const LaunchShape* shape = t.Launch(kernel.launch_config_id);   // nullptr: unknown
//   uint32_t stream = batch.kernel_streams[i];   // StreamInfo index, or kNoStream
//   uint64_t wall_ns = t.clocks().ToRealtimeNs(kernel.start_ns);
//
// Thread model: written by the reader's one thread between batches; sinks
// read it while handling a batch (and after the pass, when it no longer
// changes).
#ifndef GPSCOPE_TOOLS_READER_PROCESS_TABLES_H_
#define GPSCOPE_TOOLS_READER_PROCESS_TABLES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gpscope/trace.pb.h"
#include "tools/reader/clock_align.h"

namespace gpscope::reader {

inline constexpr uint32_t kNoStream = 0xffffffffu;

// A kernel's launch shape (trace.proto LaunchConfig), as a plain value.
struct LaunchShape {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_memory_bytes = 0;
  uint32_t dynamic_shared_memory_bytes = 0;
  uint32_t local_memory_per_thread_bytes = 0;
  uint32_t cluster[3] = {0, 0, 0};
  uint64_t blocks() const { return uint64_t{grid[0]} * grid[1] * grid[2]; }
  uint32_t threads_per_block() const { return block[0] * block[1] * block[2]; }
  uint32_t shared_memory_bytes() const {
    return static_shared_memory_bytes + dynamic_shared_memory_bytes;
  }
};

// One GPU stream of the process: the (device, context, stream) of its ops.
struct StreamInfo {
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
};

class ProcessTables {
 public:
  ProcessTables(uint64_t process_uid, uint32_t pid, size_t index)
      : process_uid_(process_uid), pid_(pid), index_(index) {}
  ProcessTables(const ProcessTables&) = delete;
  ProcessTables& operator=(const ProcessTables&) = delete;

  uint64_t process_uid() const { return process_uid_; }
  uint32_t pid() const { return pid_; }
  // Order of first appearance among all processes of the pass.
  size_t index() const { return index_; }

  // Interned strings: "" for an id the trace never defined.
  const std::string& String(uint32_t id) const {
    return id < strings_.size() ? strings_[id] : Empty();
  }
  // Whether the trace defined string `id` (a defined string may be "").
  bool HasString(uint32_t id) const { return id < defined_.size() && defined_[id]; }
  // One past the largest string id defined so far (a table of per-name
  // data indexed by id needs this many entries).
  size_t string_ids() const { return strings_.size(); }
  const std::vector<std::string>& strings() const { return strings_; }  // by id

  // The launch shape of a LaunchConfig id, nullptr when never defined.
  const LaunchShape* Launch(uint32_t id) const {
    return id < launch_defined_.size() && launch_defined_[id] ? &launches_[id] : nullptr;
  }
  size_t launch_ids() const { return launches_.size(); }

  // The descriptor of a metric id, nullptr when never defined.
  const proto::MetricDescriptor* Metric(uint32_t id) const;

  // Devices by CUDA device ordinal, from the header and batches (the last
  // definition of an id wins).
  const proto::DeviceInfo* Device(uint32_t device_id) const;
  const std::map<uint32_t, proto::DeviceInfo>& devices() const { return devices_; }

  // The device of a context, -1 when its ContextInfo never came.
  int64_t ContextDevice(uint32_t context_id) const;

  // The streams the process's GPU ops ran on, in order of first op.
  const std::vector<StreamInfo>& streams() const { return streams_; }
  const StreamInfo& stream(uint32_t index) const { return streams_[index]; }
  // GPU ops whose stream was past the limits (resolved to kNoStream).
  uint64_t ops_past_limits() const { return ops_past_limits_; }

  // CUPTI ns -> CLOCK_REALTIME, from every ClockSnapshot read so far (the
  // header's, each batch's, the end's); complete once the pass is over.
  const ClockAlign& clocks() const { return clocks_; }

  // ---- filled by the reader (event_reader.cc) ----
  void AddHeader(const proto::ProcessHeader& header);
  void AddDefinitions(const proto::EventBatch& batch);
  void AddEnd(const proto::ProcessEnd& end);
  // The stream index of a GPU op, kNoStream past the limits.
  uint32_t ResolveStream(uint32_t device_id, uint32_t context_id, uint32_t stream_id);

 private:
  static const std::string& Empty();
  void AddDevice(const proto::DeviceInfo& d);

  uint64_t process_uid_;
  uint32_t pid_;
  size_t index_;
  std::vector<std::string> strings_;  // by InternedString id
  std::vector<bool> defined_;         // by InternedString id
  std::vector<LaunchShape> launches_;  // by LaunchConfig id
  std::vector<bool> launch_defined_;
  absl::flat_hash_map<uint32_t, proto::MetricDescriptor> metrics_;  // by id
  std::map<uint32_t, proto::DeviceInfo> devices_;
  absl::flat_hash_map<uint32_t, uint32_t> context_device_;
  std::vector<StreamInfo> streams_;
  // (device, context, stream) -> streams_ index.
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> stream_index_;
  absl::flat_hash_map<uint32_t, uint32_t> stream_devices_;  // device id -> its streams
  struct StreamCacheEntry {
    StreamInfo key;
    uint32_t stream = kNoStream;  // kNoStream: empty
  };
  static constexpr size_t kStreamCacheEntries = 8;
  StreamCacheEntry stream_cache_[kStreamCacheEntries];
  uint64_t ops_past_limits_ = 0;
  ClockAlign clocks_;
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_PROCESS_TABLES_H_
