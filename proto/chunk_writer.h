// proto/chunk_writer.h: the trace writer: turns events into frames on disk,
// for one process (the collector's, or the node monitor's own files).
//
// Owns the BatchBuilder (columnar encoding), the string and launch-shape
// interners, the FrameEncoder (zstd) and the output fd. Add*() appends to
// the current batch and ships a chunk whenever it is full; Flush() ships a
// partial one (the periodic flush). Each chunk is one frame, one write().
//
// A failed write (disk full, I/O error) loses that chunk only: the loss is
// counted, reported once through Options::log_error (the collector and the
// monitor pass common/raw_log.h's RawLogError: one stderr line), and
// recorded in the next chunk that lands (a DropNotice and a LostInterval);
// every interned string is sent again so later chunks stay readable.
//
// Deferred output: constructed with fd -1, it holds its frames in memory
// (at most Options::max_held_bytes; beyond, frames are lost and recorded as
// a write failure would be) until Open(fd) writes them out in order, each
// in its own write(). The collector opens the trace file only once the
// process has created a CUDA context, so a process that only initializes
// CUDA (torchrun's agent, a launcher calling cudaGetDeviceCount) leaves no
// file; DiscardHeld() drops what it held.
//
// Thread model: single-threaded. Only the collector's writer thread (and,
// after it has stopped, the exit path) calls it; in the monitor, its
// sampling thread. CUDA-free, no libprotobuf. Allocates only when it meets
// a new name or launch shape, and for held frames.
#ifndef GPSCOPE_PROTO_CHUNK_WRITER_H_
#define GPSCOPE_PROTO_CHUNK_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/batch_builder.h"
#include "proto/framing.h"

namespace gpscope::format {

class ChunkWriter {
 public:
  struct Options {
    size_t max_chunk_bytes = 1 << 20;
    int zstd_level = 1;
    size_t max_held_bytes = 4 << 20;  // frames held while fd is -1
    // Gets the one line about a frame or header that could not be written
    // (without a newline). Null: not logged; the loss is still recorded.
    void (*log_error)(const char* line) = nullptr;
  };
  ChunkWriter(int fd, uint64_t process_uid, uint32_t pid, const Options& options);
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  bool ok() const;

  // Deferred output (see above). is_open(): frames go to a file. Open()
  // writes the held frames; false when one could not be written (the loss
  // is recorded like any failed write). DiscardHeld() forgets them.
  bool is_open() const { return fd_ >= 0; }
  bool Open(int fd);
  void DiscardHeld();
  // No file will come: forget the held frames and hold no more.
  void StopHolding() {
    DiscardHeld();
    max_held_bytes_ = 0;
  }
  size_t held_frames() const { return held_.size(); }

  // Sequence 0. Returns false when the frame could not be written.
  bool WriteHeader(const format::ProcessHeaderRecord& header);
  // Ships the open batch (if any), then the end chunk.
  bool WriteEnd(format::ProcessEndRecord end);

  // Interned ids, dense from 1. 0 for an empty name.
  uint32_t InternString(std::string_view s);
  uint32_t InternLaunchConfig(format::LaunchConfigRecord shape);  // shape.id ignored

  void AddKernel(const format::KernelEvent& e);
  void AddMemcpy(const format::MemcpyEvent& e);
  void AddMemset(const format::MemsetEvent& e);
  void AddSync(const format::SyncEvent& e);
  void AddApiCall(const format::ApiCallEvent& e);
  void AddNvtxRange(const format::NvtxRangeEvent& e);
  void AddNvtxMark(const format::NvtxMarkEvent& e);
  void AddOverhead(const format::OverheadEvent& e);
  void AddMetricSample(const format::MetricSample& e);
  void AddDevice(const format::DeviceRecord& r);
  void AddContext(const format::ContextRecord& r);
  void AddMetricDescriptor(const format::MetricDescriptorRecord& r);
  void AddDrop(const format::DropRecord& r);
  void AddLostInterval(const format::LostIntervalRecord& r);
  void AddClock(const format::ClockRecord& r);
  void AddCapability(const format::CapabilityRecord& r);
  void AddCuptiRefusal(const format::CuptiRefusalRecord& r);
  // Call stacks: frames before the stacks that use them, stacks before the
  // samples that name them (a batch shipped between keeps that order).
  void AddStackFrame(const format::StackFrameRecord& r);
  void AddStack(const format::StackRecord& r);
  void AddStackSample(const format::StackSampleEvent& e);
  // The node monitor's summary of another process's capture window (issue 24).
  void AddWindowSummary(const format::WindowSummaryRecord& r);

  // Ships the open batch if it holds anything. False if the write failed.
  bool Flush();

  uint64_t chunks_written() const { return chunks_written_; }
  uint64_t events_written() const { return events_written_; }
  uint64_t events_lost() const { return events_lost_; }
  uint64_t frames_failed() const { return frames_failed_; }
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t sequence() const { return sequence_; }

 private:
  // Runs add(builder); when the batch is full ships it and retries once.
  template <typename Fn>
  void AddWith(uint64_t ts_ns, Fn add);
  bool Ship(const uint8_t* raw, size_t raw_bytes, size_t events);
  void LogError(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // One frame to the file, or into held_ while there is none.
  bool Put(const uint8_t* frame, size_t frame_bytes, int* err);
  // Bookkeeping of a frame that did not land (Ship, Open).
  void FrameLost(int err);
  void BeginBatch(uint64_t base_ns);

  struct LaunchKey {
    uint32_t v[13];
    bool operator==(const LaunchKey& o) const;
  };
  struct LaunchKeyHash {
    size_t operator()(const LaunchKey& k) const;
  };
  struct Interned {
    uint32_t id;
    uint64_t sent_epoch;  // the write epoch in which the definition was sent
  };

  int fd_;
  size_t max_held_bytes_;
  void (*log_error_)(const char* line);
  std::vector<std::vector<uint8_t>> held_;  // frames before Open(), in order
  size_t held_bytes_ = 0;
  uint64_t process_uid_;
  uint32_t pid_;
  format::BatchBuilder builder_;
  format::FrameEncoder encoder_;
  std::unique_ptr<uint8_t[]> raw_;
  size_t raw_cap_;
  bool batch_open_ = false;

  std::unordered_map<std::string, Interned> strings_;
  std::unordered_map<LaunchKey, Interned, LaunchKeyHash> launches_;
  // Bumped after a failed write: definitions sent in a lost chunk are resent.
  uint64_t epoch_ = 1;

  uint64_t sequence_ = 1;  // 0 is the header
  uint64_t chunks_written_ = 0;
  uint64_t events_written_ = 0;
  uint64_t events_lost_ = 0;
  uint64_t frames_failed_ = 0;
  uint64_t bytes_written_ = 0;
  // A loss not yet recorded in the trace.
  uint64_t pending_lost_events_ = 0;
  uint64_t pending_lost_frames_ = 0;
  uint64_t lost_first_ns_ = 0;
  uint64_t lost_last_ns_ = 0;
  int last_errno_ = 0;
  uint64_t batch_first_ns_ = 0;
  uint64_t batch_last_ns_ = 0;
};

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_CHUNK_WRITER_H_
