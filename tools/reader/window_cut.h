// tools/reader/window_cut.h: one capture window of one process, cut out of
// a (node) trace file into a trace of its own.
//
// Before the window, Keep() takes the process's chunks: its header, and
// what its batches define for later ones by id (interned strings, launch
// shapes, devices, contexts, metric descriptors, stack frames and stacks;
// the last definition of an id wins). Begin() writes a file header, the
// header chunk and one batch holding those definitions; Add() writes each
// chunk of the window, renumbered so that the reader sees no sequence gap
// where the chunks before the window were left out (a gap inside the
// window, frames its writer lost, stays a gap of the same size); End()
// closes with the process's own end chunk when it came inside the window,
// else with one saying END_WINDOW_CUT (the window is whole, the process ran
// on), carrying the window's latest clock snapshot and its drop counts
// (no end at all when the window got no chunk).
//
// `gpscope attach` writes the cut to a file (tools/gpscope/attach.cc); the
// node monitor keeps it in memory and analyses it (tools/monitor/
// window_tracker.h).
//
//   WindowCut cut;
//   for (each chunk of the process before the window) cut.Keep(chunk);
//   std::string bytes;
//   StringCutSink sink(&bytes);
//   if (!cut.Begin(&sink)) ...             // no header kept
//   for (each chunk of the window) cut.Add(chunk);
//   cut.End();                             // `bytes` is a complete trace
//
// Memory: the header, the definitions (bounded by the reader's limits,
// limits.h) and one chunk being encoded; the window's frames go to the sink.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_READER_WINDOW_CUT_H_
#define GPSCOPE_TOOLS_READER_WINDOW_CUT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gpscope/trace.pb.h"

namespace gpscope::format {
class FrameEncoder;
}

namespace gpscope::reader {

// Where a cut's bytes go. False: the write failed (the cut stops writing).
class CutSink {
 public:
  virtual ~CutSink() = default;
  virtual bool Write(const uint8_t* data, size_t bytes) = 0;
};

// Appends to a string (the monitor's in-memory window trace).
class StringCutSink : public CutSink {
 public:
  explicit StringCutSink(std::string* out) : out_(out) {}
  bool Write(const uint8_t* data, size_t bytes) override {
    out_->append(reinterpret_cast<const char*>(data), bytes);
    return true;
  }

 private:
  std::string* out_;
};

// Writes to a file descriptor the caller opened (and closes).
class FdCutSink : public CutSink {
 public:
  explicit FdCutSink(int fd) : fd_(fd) {}
  bool Write(const uint8_t* data, size_t bytes) override;

 private:
  int fd_;
};

class WindowCut {
 public:
  WindowCut();
  ~WindowCut();
  WindowCut(const WindowCut&) = delete;
  WindowCut& operator=(const WindowCut&) = delete;

  // A chunk of the process before the window (or any chunk, to keep its
  // definitions for a later window): a header starts over (a new process,
  // or a reused pid), a batch adds its definitions, an end is ignored.
  void Keep(const proto::Chunk& chunk);
  bool has_header() const { return header_.has_header(); }
  const proto::Chunk& header() const { return header_; }

  // Starts a window's trace into `sink` (which must outlive End()). False
  // without a header, or when the sink failed.
  bool Begin(CutSink* sink, int zstd_level = 3);
  // A chunk of the window (a header chunk is skipped). False once a write
  // failed.
  bool Add(const proto::Chunk& chunk);
  // Ends the window's trace (see above). False when a write failed.
  bool End();

  bool ok() const { return ok_; }
  uint64_t frames() const { return frames_; }  // header, definitions and end included
  uint64_t window_chunks() const { return window_chunks_; }
  bool saw_end() const { return saw_end_; }

 private:
  void KeepDefinitions(const proto::EventBatch& batch);
  void Emit(proto::Chunk& chunk);

  proto::Chunk header_;
  proto::EventBatch definitions_;
  // id -> index into definitions_'s repeated field of that kind.
  std::map<uint32_t, int> strings_, configs_, devices_, contexts_, metrics_, frames_by_id_,
      stacks_;

  CutSink* sink_ = nullptr;
  std::unique_ptr<format::FrameEncoder> encoder_;
  size_t encoder_capacity_ = 0;
  int zstd_level_ = 3;
  bool ok_ = true;
  uint64_t frames_ = 0;
  uint64_t window_chunks_ = 0;
  uint64_t next_sequence_ = 0;
  uint64_t last_source_sequence_ = 0;  // of the window's last chunk; 0: none yet
  bool saw_end_ = false;              // the process's own end chunk was in the window
  proto::ClockSnapshot last_clock_;   // the window's latest
  uint64_t dropped_ = 0;              // records its drop notices count
};

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_WINDOW_CUT_H_
