// tests/fuzz/reader_fuzz.cc: libFuzzer target for the trace reader.
//
// An input that starts with the file magic is a whole trace file's content.
// Any other input is a list of chunks, each a u16 little-endian length and
// that many bytes, which the harness frames with valid checksums: random
// bytes rarely pass a CRC, and this way protobuf parsing, process tracking,
// batch decoding and the renderers see hostile chunk contents too.
//
// The file is then read three ways:
//   1. from memory (TraceReader::ReadBuffer), decoding every batch, with no
//      decode thread;
//   2. as a file through a 64-byte pread window (ReadFile on a memfd) with
//      three decode threads, which must yield exactly the same chunks and
//      warnings as (1);
//   3. by the info command (CollectInfo + both renderers).
// Crashes, sanitizer reports and a disagreement between (1) and (2) fail.
// Each chunk of a list is also parsed by BatchChunkParser (frame_pipeline.h,
// which both reads use), one kept across inputs as a decode slot keeps it:
// where it takes a chunk, it must agree with ParseFromArray into a fresh
// message.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "proto/framing.h"
#include "tools/analyze/info.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/frame_pipeline.h"
#include "tools/reader/trace_reader.h"

namespace {

using gpscope::reader::ChunkContext;
using gpscope::reader::ChunkVisitor;

class RecordingVisitor : public ChunkVisitor {
 public:
  absl::Status OnChunk(const ChunkContext& context, const gpscope::proto::Chunk& chunk) override {
    log.push_back("chunk@" + std::to_string(context.offset) + " seq " +
                  std::to_string(chunk.sequence()));
    if (chunk.has_batch()) {
      const absl::Status s = gpscope::reader::DecodeBatch(chunk.batch(), &events_);
      log.push_back(s.ok() ? "events " + std::to_string(events_.event_count())
                           : std::string(s.message()));
    }
    return absl::OkStatus();
  }
  // Warnings start with the file's name, which differs between the paths.
  void OnWarning(std::string_view warning) override {
    log.emplace_back(warning.substr(warning.find(": ")));
  }
  std::vector<std::string> log;

 private:
  gpscope::reader::DecodedBatch events_;
};

// BatchChunkParser against a fresh message's parse of the same bytes.
void CheckBatchChunkParser(const uint8_t* data, size_t size) {
  static gpscope::reader::BatchChunkParser* const parser = new gpscope::reader::BatchChunkParser();
  using Result = gpscope::reader::BatchChunkParser::Result;
  const Result r = parser->Parse(data, size);
  if (r == Result::kNotTaken) return;
  gpscope::proto::Chunk fresh;
  const bool ok = fresh.ParseFromArray(data, static_cast<int>(size));
  if (ok != (r == Result::kParsed)) __builtin_trap();
  if (ok && fresh.SerializeAsString() != parser->chunk()->SerializeAsString()) __builtin_trap();
}

// Frames each length-prefixed record of `data` as one chunk.
std::vector<uint8_t> FrameChunks(const uint8_t* data, size_t size) {
  static gpscope::format::FrameEncoder encoder(1 << 16);
  std::vector<uint8_t> file(gpscope::format::kFileHeaderBytes);
  gpscope::format::WriteFileHeader(file.data());
  while (size >= 2) {
    const size_t n = std::min<size_t>(size - 2, data[0] | data[1] << 8);
    CheckBatchChunkParser(data + 2, n);
    const uint8_t* frame = nullptr;
    const size_t frame_bytes = encoder.Encode(data + 2, n, &frame);
    if (frame_bytes == 0) __builtin_trap();  // the encoder must take any chunk up to its limit
    file.insert(file.end(), frame, frame + frame_bytes);
    data += 2 + n;
    size -= 2 + n;
  }
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t input_size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 etc. would log per input
    return true;
  }();
  (void)quiet;
  std::vector<uint8_t> framed;
  const uint8_t* data = input;
  size_t size = input_size;
  if (size < sizeof(gpscope::format::kFileMagic) ||
      std::memcmp(input, gpscope::format::kFileMagic, sizeof(gpscope::format::kFileMagic)) != 0) {
    framed = FrameChunks(input, input_size);
    data = framed.data();
    size = framed.size();
  }

  RecordingVisitor from_memory;
  gpscope::reader::ReadOptions one_thread;
  one_thread.decode_threads = 1;
  gpscope::reader::TraceReader memory_reader(from_memory, one_thread);
  const absl::Status memory_status = memory_reader.ReadBuffer("fuzz", data, size);

  const int fd = memfd_create("reader_fuzz", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) __builtin_trap();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  RecordingVisitor from_file;
  gpscope::reader::ReadOptions small_window;
  small_window.window_bytes = 64;
  small_window.decode_threads = 3;
  gpscope::reader::TraceReader file_reader(from_file, small_window);
  const absl::Status file_status = file_reader.ReadFile(path);
  if (from_memory.log != from_file.log || memory_status.ok() != file_status.ok()) {
    __builtin_trap();  // the byte sources and the threads must not change what is read
  }

  const gpscope::analyze::InfoReport report = gpscope::analyze::CollectInfo({path});
  const std::string text = gpscope::analyze::RenderInfoText(report);
  const std::string json = gpscope::analyze::RenderInfoJson(report);
  if (text.empty() || json.empty()) __builtin_trap();
  close(fd);
  return 0;
}
