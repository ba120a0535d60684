// tools/reader/window_cut.cc: see window_cut.h.
#include "tools/reader/window_cut.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "proto/framing.h"

namespace gpscope::reader {
namespace {

// Adds `item` to `list`, or replaces the entry of the same id (`index` maps
// ids to positions in `list`).
template <typename T>
void Define(uint32_t id, const T& item, google::protobuf::RepeatedPtrField<T>* list,
            std::map<uint32_t, int>* index) {
  auto [it, inserted] = index->try_emplace(id, list->size());
  if (inserted) {
    *list->Add() = item;
  } else {
    *list->Mutable(it->second) = item;
  }
}

}  // namespace

bool FdCutSink::Write(const uint8_t* data, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = write(fd_, data + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

WindowCut::WindowCut() = default;
WindowCut::~WindowCut() = default;

void WindowCut::Keep(const proto::Chunk& c) {
  if (c.has_header()) {
    header_ = c;
    definitions_.Clear();
    for (auto* index : {&strings_, &configs_, &devices_, &contexts_, &metrics_, &frames_by_id_,
                        &stacks_}) {
      index->clear();
    }
  } else if (c.has_batch() && header_.has_header() && c.process_uid() == header_.process_uid()) {
    KeepDefinitions(c.batch());
  }
}

void WindowCut::KeepDefinitions(const proto::EventBatch& b) {
  proto::EventBatch& d = definitions_;
  for (const auto& x : b.strings()) Define(x.id(), x, d.mutable_strings(), &strings_);
  for (const auto& x : b.launch_configs()) {
    Define(x.id(), x, d.mutable_launch_configs(), &configs_);
  }
  for (const auto& x : b.devices()) Define(x.device_id(), x, d.mutable_devices(), &devices_);
  for (const auto& x : b.contexts()) Define(x.context_id(), x, d.mutable_contexts(), &contexts_);
  for (const auto& x : b.metric_descriptors()) {
    Define(x.id(), x, d.mutable_metric_descriptors(), &metrics_);
  }
  for (const auto& x : b.stack_frames()) {
    Define(x.id(), x, d.mutable_stack_frames(), &frames_by_id_);
  }
  for (const auto& x : b.stacks()) Define(x.id(), x, d.mutable_stacks(), &stacks_);
}

bool WindowCut::Begin(CutSink* sink, int zstd_level) {
  sink_ = sink;
  if (zstd_level != zstd_level_) encoder_.reset();
  zstd_level_ = zstd_level;
  ok_ = true;
  frames_ = 0;
  window_chunks_ = 0;
  next_sequence_ = 0;
  last_source_sequence_ = 0;
  saw_end_ = false;
  last_clock_.Clear();
  dropped_ = 0;
  if (!header_.has_header()) return ok_ = false;
  uint8_t head[format::kFileHeaderBytes];
  format::WriteFileHeader(head);
  ok_ = sink_->Write(head, sizeof(head));
  proto::Chunk header = header_;
  Emit(header);
  if (definitions_.ByteSizeLong() > 0) {
    proto::Chunk defs;
    defs.set_process_uid(header_.process_uid());
    defs.set_pid(header_.pid());
    *defs.mutable_batch() = definitions_;
    Emit(defs);
  }
  return ok_;
}

bool WindowCut::Add(const proto::Chunk& c) {
  if (c.has_header() || sink_ == nullptr) return ok_;
  saw_end_ |= c.has_end();
  for (const proto::ClockSnapshot& clock : c.batch().clocks()) {
    if (clock.cupti_ns() >= last_clock_.cupti_ns()) last_clock_ = clock;
  }
  for (const proto::DropNotice& d : c.batch().drops()) dropped_ += d.count();
  // Renumbered after the header and definitions; a gap in the source's
  // numbers inside the window (lost frames) stays.
  if (window_chunks_ > 0 && c.sequence() > last_source_sequence_) {
    next_sequence_ += c.sequence() - last_source_sequence_ - 1;
  }
  last_source_sequence_ = std::max(last_source_sequence_, c.sequence());
  ++window_chunks_;
  proto::Chunk copy = c;
  Emit(copy);
  return ok_;
}

bool WindowCut::End() {
  if (sink_ == nullptr) return false;
  if (!saw_end_ && header_.has_header() && window_chunks_ > 0) {
    proto::Chunk end;
    end.set_process_uid(header_.process_uid());
    end.set_pid(header_.pid());
    proto::ProcessEnd& e = *end.mutable_end();
    e.set_reason(proto::END_WINDOW_CUT);
    e.set_end_ns(last_clock_.cupti_ns());
    if (last_clock_.cupti_ns() != 0) *e.mutable_clock() = last_clock_;
    e.set_chunks_written(next_sequence_ + 1);
    e.set_events_dropped(dropped_);
    Emit(end);
  }
  sink_ = nullptr;
  return ok_;
}

void WindowCut::Emit(proto::Chunk& chunk) {
  if (sink_ == nullptr || !ok_) return;
  chunk.set_sequence(next_sequence_++);
  const std::string raw = chunk.SerializeAsString();
  if (!encoder_ || raw.size() > encoder_capacity_) {
    encoder_capacity_ = std::max<size_t>(raw.size(), 1u << 20);
    encoder_ = std::make_unique<format::FrameEncoder>(encoder_capacity_, zstd_level_);
  }
  const uint8_t* frame = nullptr;
  const size_t bytes =
      encoder_->ok()
          ? encoder_->Encode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &frame)
          : 0;
  ok_ = bytes > 0 && sink_->Write(frame, bytes);
  ++frames_;
}

}  // namespace gpscope::reader
