// proto/chunk_writer.cc: see chunk_writer.h.
#include "proto/chunk_writer.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "proto/enums.h"

namespace gpscope::format {

bool ChunkWriter::LaunchKey::operator==(const LaunchKey& o) const {
  return memcmp(v, o.v, sizeof(v)) == 0;
}

size_t ChunkWriter::LaunchKeyHash::operator()(const LaunchKey& k) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the 13 fields
  for (uint32_t x : k.v) h = (h ^ x) * 1099511628211ull;
  return static_cast<size_t>(h);
}

ChunkWriter::ChunkWriter(int fd, uint64_t process_uid, uint32_t pid, const Options& options)
    : fd_(fd),
      max_held_bytes_(options.max_held_bytes),
      log_error_(options.log_error),
      process_uid_(process_uid),
      pid_(pid),
      builder_(options.max_chunk_bytes),
      encoder_(options.max_chunk_bytes, options.zstd_level),
      raw_cap_(options.max_chunk_bytes) {
  raw_.reset(new (std::nothrow) uint8_t[raw_cap_]);
}

bool ChunkWriter::ok() const { return builder_.ok() && encoder_.ok() && raw_ != nullptr; }

bool ChunkWriter::Put(const uint8_t* frame, size_t frame_bytes, int* err) {
  if (fd_ >= 0) return format::AppendFrame(fd_, frame, frame_bytes, err);
  if (held_bytes_ + frame_bytes > max_held_bytes_) {
    *err = ENOBUFS;
    return false;
  }
  held_.emplace_back(frame, frame + frame_bytes);
  held_bytes_ += frame_bytes;
  return true;
}

bool ChunkWriter::Open(int fd) {
  fd_ = fd;
  bool all = true;
  for (const std::vector<uint8_t>& f : held_) {
    int err = 0;
    if (!format::AppendFrame(fd_, f.data(), f.size(), &err)) {
      FrameLost(err);  // recorded by the next chunk that lands
      ++pending_lost_frames_;
      all = false;
    }
  }
  DiscardHeld();
  return all;
}

void ChunkWriter::DiscardHeld() {
  held_.clear();
  held_.shrink_to_fit();
  held_bytes_ = 0;
}

void ChunkWriter::BeginBatch(uint64_t base_ns) {
  builder_.Begin(base_ns);
  batch_open_ = true;
  batch_first_ns_ = base_ns;
  batch_last_ns_ = base_ns;
  // A loss is recorded in the first chunk after it.
  if (pending_lost_frames_ > 0) {
    static constexpr char kDetail[] = "trace frames could not be written";
    format::DropRecord drop{};
    drop.reason = wire::DROP_WRITE_FAILED;
    drop.count = pending_lost_events_;
    drop.first_ns = lost_first_ns_;
    drop.last_ns = lost_last_ns_;
    drop.detail = {kDetail, sizeof(kDetail) - 1};
    builder_.AddDrop(drop);
    format::LostIntervalRecord lost{};
    lost.start_ns = lost_first_ns_;
    lost.end_ns = lost_last_ns_;
    lost.reason = wire::LOST_WRITE_ERROR;
    const char* why = strerror(last_errno_);
    lost.detail = format::MakeStringRef(why);
    builder_.AddLostInterval(lost);
  }
}

template <typename Fn>
void ChunkWriter::AddWith(uint64_t ts_ns, Fn add) {
  if (!batch_open_) BeginBatch(ts_ns);
  if (!add(builder_)) {
    Flush();
    BeginBatch(ts_ns);
    if (!add(builder_)) {
      // Larger than an empty chunk: cannot happen for fixed-size events; a
      // huge string is dropped and counted.
      ++events_lost_;
      return;
    }
  }
  if (ts_ns != 0) {
    if (batch_first_ns_ == 0 || ts_ns < batch_first_ns_) batch_first_ns_ = ts_ns;
    if (ts_ns > batch_last_ns_) batch_last_ns_ = ts_ns;
  }
}

uint32_t ChunkWriter::InternString(std::string_view s) {
  if (s.empty()) return 0;
  auto [it, inserted] = strings_.try_emplace(std::string(s), Interned{0, 0});
  if (inserted) it->second.id = static_cast<uint32_t>(strings_.size());
  if (it->second.sent_epoch != epoch_) {
    const uint32_t id = it->second.id;
    AddWith(0, [&](BatchBuilder& b) { return b.AddString(id, s.data(), s.size()); });
    it->second.sent_epoch = epoch_;
  }
  return it->second.id;
}

uint32_t ChunkWriter::InternLaunchConfig(format::LaunchConfigRecord shape) {
  LaunchKey key{{shape.grid_x, shape.grid_y, shape.grid_z, shape.block_x, shape.block_y,
                 shape.block_z, shape.registers_per_thread, shape.static_shared_memory_bytes,
                 shape.dynamic_shared_memory_bytes, shape.local_memory_per_thread_bytes,
                 shape.cluster_x, shape.cluster_y, shape.cluster_z}};
  auto [it, inserted] = launches_.try_emplace(key, Interned{0, 0});
  if (inserted) it->second.id = static_cast<uint32_t>(launches_.size());
  if (it->second.sent_epoch != epoch_) {
    shape.id = it->second.id;
    AddWith(0, [&](BatchBuilder& b) { return b.AddLaunchConfig(shape); });
    it->second.sent_epoch = epoch_;
  }
  return it->second.id;
}

void ChunkWriter::AddKernel(const format::KernelEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddKernel(e); });
}
void ChunkWriter::AddMemcpy(const format::MemcpyEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddMemcpy(e); });
}
void ChunkWriter::AddMemset(const format::MemsetEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddMemset(e); });
}
void ChunkWriter::AddSync(const format::SyncEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddSync(e); });
}
void ChunkWriter::AddApiCall(const format::ApiCallEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddApiCall(e); });
}
void ChunkWriter::AddNvtxRange(const format::NvtxRangeEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddNvtxRange(e); });
}
void ChunkWriter::AddNvtxMark(const format::NvtxMarkEvent& e) {
  AddWith(e.timestamp_ns, [&](BatchBuilder& b) { return b.AddNvtxMark(e); });
}
void ChunkWriter::AddOverhead(const format::OverheadEvent& e) {
  AddWith(e.start_ns, [&](BatchBuilder& b) { return b.AddOverhead(e); });
}
void ChunkWriter::AddMetricSample(const format::MetricSample& e) {
  AddWith(e.timestamp_ns, [&](BatchBuilder& b) { return b.AddMetricSample(e); });
}
void ChunkWriter::AddDevice(const format::DeviceRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddDevice(r); });
}
void ChunkWriter::AddContext(const format::ContextRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddContext(r); });
}
void ChunkWriter::AddMetricDescriptor(const format::MetricDescriptorRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddMetricDescriptor(r); });
}
void ChunkWriter::AddDrop(const format::DropRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddDrop(r); });
}
void ChunkWriter::AddLostInterval(const format::LostIntervalRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddLostInterval(r); });
}
void ChunkWriter::AddClock(const format::ClockRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddClock(r); });
}
void ChunkWriter::AddCapability(const format::CapabilityRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddCapability(r); });
}
void ChunkWriter::AddCuptiRefusal(const format::CuptiRefusalRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddCuptiRefusal(r); });
}

void ChunkWriter::AddStackFrame(const format::StackFrameRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddStackFrame(r); });
}
void ChunkWriter::AddStack(const format::StackRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddStack(r); });
}
void ChunkWriter::AddWindowSummary(const format::WindowSummaryRecord& r) {
  AddWith(0, [&](BatchBuilder& b) { return b.AddWindowSummary(r); });
}
void ChunkWriter::AddStackSample(const format::StackSampleEvent& e) {
  AddWith(e.timestamp_ns, [&](BatchBuilder& b) { return b.AddStackSample(e); });
}

bool ChunkWriter::Ship(const uint8_t* raw, size_t raw_bytes, size_t events) {
  const uint8_t* frame = nullptr;
  size_t frame_bytes = raw_bytes ? encoder_.Encode(raw, raw_bytes, &frame) : 0;
  int err = 0;
  bool landed = frame_bytes > 0 && Put(frame, frame_bytes, &err);
  ++sequence_;
  if (landed) {
    ++chunks_written_;
    events_written_ += events;
    bytes_written_ += frame_bytes;
    pending_lost_events_ = 0;
    pending_lost_frames_ = 0;
    return true;
  }
  if (frame_bytes == 0) err = EOVERFLOW;
  FrameLost(err);
  events_lost_ += events;
  if (pending_lost_frames_ == 0) lost_first_ns_ = batch_first_ns_;
  lost_last_ns_ = batch_last_ns_;
  pending_lost_events_ += events;
  ++pending_lost_frames_;
  return false;
}

void ChunkWriter::LogError(const char* fmt, ...) {
  if (log_error_ == nullptr) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  log_error_(line);
}

void ChunkWriter::FrameLost(int err) {
  // One line per new cause; held frames beyond the cap before the file
  // opens (ENOBUFS) are recorded, not logged.
  if (err != ENOBUFS && (frames_failed_ == 0 || err != last_errno_)) {
    LogError("cannot write trace frame (%s); the application runs on, this part of the "
             "trace is lost and the loss is recorded",
             strerror(err));
  }
  ++frames_failed_;
  last_errno_ = err;
  ++epoch_;  // definitions in the lost frame must be sent again
}

bool ChunkWriter::Flush() {
  if (!batch_open_) return true;
  if (builder_.event_count() == 0 && builder_.encoded_bytes_estimate() == 0) return true;
  batch_open_ = false;
  size_t n = builder_.FinishChunk(process_uid_, pid_, sequence_, raw_.get(), raw_cap_);
  return Ship(raw_.get(), n, builder_.event_count());
}

bool ChunkWriter::WriteHeader(const format::ProcessHeaderRecord& header) {
  size_t n = format::EncodeHeaderChunk(header, process_uid_, pid_, raw_.get(), raw_cap_);
  const uint8_t* frame = nullptr;
  size_t frame_bytes = n ? encoder_.Encode(raw_.get(), n, &frame) : 0;
  int err = 0;
  if (frame_bytes == 0 || !Put(frame, frame_bytes, &err)) {
    LogError("cannot write the trace header (%s)", strerror(err ? err : EOVERFLOW));
    return false;
  }
  bytes_written_ += frame_bytes;
  ++chunks_written_;
  return true;
}

bool ChunkWriter::WriteEnd(format::ProcessEndRecord end) {
  Flush();
  end.chunks_written = chunks_written_ + 1;
  end.events_written = events_written_;
  end.events_dropped += events_lost_;
  size_t n = format::EncodeEndChunk(end, process_uid_, pid_, sequence_, raw_.get(), raw_cap_);
  return Ship(raw_.get(), n, 0);
}

}  // namespace gpscope::format
