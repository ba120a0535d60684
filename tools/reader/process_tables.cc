// tools/reader/process_tables.cc: see process_tables.h.
#include "tools/reader/process_tables.h"

#include <algorithm>

#include "tools/reader/limits.h"

namespace gpscope::reader {

const std::string& ProcessTables::Empty() {
  static const std::string* const kEmpty = new std::string();
  return *kEmpty;
}

const proto::MetricDescriptor* ProcessTables::Metric(uint32_t id) const {
  auto it = metrics_.find(id);
  return it == metrics_.end() ? nullptr : &it->second;
}

const proto::DeviceInfo* ProcessTables::Device(uint32_t device_id) const {
  auto it = devices_.find(device_id);
  return it == devices_.end() ? nullptr : &it->second;
}

int64_t ProcessTables::ContextDevice(uint32_t context_id) const {
  auto it = context_device_.find(context_id);
  return it == context_device_.end() ? int64_t{-1} : static_cast<int64_t>(it->second);
}

void ProcessTables::AddDevice(const proto::DeviceInfo& d) {
  auto it = devices_.find(d.device_id());
  if (it != devices_.end()) {
    it->second = d;
  } else if (devices_.size() < kMaxDevicesPerProcess) {
    devices_.emplace(d.device_id(), d);
  }
}

void ProcessTables::AddHeader(const proto::ProcessHeader& h) {
  for (const proto::ClockSnapshot& c : h.clocks()) clocks_.Add(c.cupti_ns(), c.realtime_ns());
  for (const proto::DeviceInfo& d : h.devices()) AddDevice(d);
}

void ProcessTables::AddEnd(const proto::ProcessEnd& e) {
  if (e.has_clock()) clocks_.Add(e.clock().cupti_ns(), e.clock().realtime_ns());
}

void ProcessTables::AddDefinitions(const proto::EventBatch& b) {
  for (const proto::InternedString& s : b.strings()) {
    const uint32_t id = s.id();
    if (id == 0 || id > kMaxStringId) continue;  // CheckChunk drops these; never size by them
    if (id >= strings_.size()) {
      strings_.resize(std::max<size_t>(id + 1, strings_.size() * 3 / 2));
      defined_.resize(strings_.size(), false);
    }
    strings_[id] = s.value();
    defined_[id] = true;
  }
  for (const proto::LaunchConfig& c : b.launch_configs()) {
    const uint32_t id = c.id();
    if (id > kMaxLaunchConfigId) continue;
    if (id >= launches_.size()) {
      const size_t n = size_t{id} + 1 + id / 2;
      launches_.resize(n);
      launch_defined_.resize(n, false);
    }
    LaunchShape& l = launches_[id];
    l.grid[0] = c.grid_x();
    l.grid[1] = c.grid_y();
    l.grid[2] = c.grid_z();
    l.block[0] = c.block_x();
    l.block[1] = c.block_y();
    l.block[2] = c.block_z();
    l.registers_per_thread = c.registers_per_thread();
    l.static_shared_memory_bytes = c.static_shared_memory_bytes();
    l.dynamic_shared_memory_bytes = c.dynamic_shared_memory_bytes();
    l.local_memory_per_thread_bytes = c.local_memory_per_thread_bytes();
    l.cluster[0] = c.cluster_x();
    l.cluster[1] = c.cluster_y();
    l.cluster[2] = c.cluster_z();
    launch_defined_[id] = true;
  }
  for (const proto::DeviceInfo& d : b.devices()) AddDevice(d);
  for (const proto::ContextInfo& c : b.contexts()) {
    auto it = context_device_.find(c.context_id());
    if (it != context_device_.end()) {
      it->second = c.device_id();
    } else if (context_device_.size() < kMaxContextsPerProcess) {
      context_device_.emplace(c.context_id(), c.device_id());
    }
  }
  for (const proto::MetricDescriptor& d : b.metric_descriptors()) {
    if (d.id() <= kMaxMetricId) metrics_[d.id()] = d;
  }
  for (const proto::ClockSnapshot& c : b.clocks()) clocks_.Add(c.cupti_ns(), c.realtime_ns());
}

uint32_t ProcessTables::ResolveStream(uint32_t device_id, uint32_t context_id,
                                      uint32_t stream_id) {
  // Per op: a process's ops alternate among a few streams, so the last ones
  // resolved are remembered (direct-mapped by stream id) before the hash.
  StreamCacheEntry& cached = stream_cache_[(stream_id ^ context_id) & (kStreamCacheEntries - 1)];
  if (cached.stream != kNoStream && cached.key.device_id == device_id &&
      cached.key.context_id == context_id && cached.key.stream_id == stream_id) {
    return cached.stream;
  }
  const auto key = std::make_tuple(device_id, context_id, stream_id);
  auto it = stream_index_.find(key);
  if (it == stream_index_.end()) {
    const bool new_device = !stream_devices_.contains(device_id);
    if (streams_.size() >= kMaxStreamsPerProcess ||
        (new_device && stream_devices_.size() >= kMaxDevicesPerProcess)) {
      ++ops_past_limits_;
      return kNoStream;
    }
    ++stream_devices_[device_id];
    it = stream_index_.emplace(key, static_cast<uint32_t>(streams_.size())).first;
    streams_.push_back({device_id, context_id, stream_id});
  }
  cached.key = {device_id, context_id, stream_id};
  cached.stream = it->second;
  return cached.stream;
}

}  // namespace gpscope::reader
