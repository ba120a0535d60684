// tools/reader/frame_pipeline.cc: see frame_pipeline.h.
#include "tools/reader/frame_pipeline.h"

#include <sched.h>
#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "google/protobuf/arena.h"
#include "proto/columns.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::reader {
namespace {

// The arena's first block is the slot's, so Arena::Reset() keeps it: a
// stream of ordinary chunks then parses without touching malloc. It starts
// at 1 MiB and grows to what a chunk needed (a 1 MiB chunk of 77,000 events
// parses into ~6 MiB of columns), up to kArenaMaxBlockBytes; past it the
// arena takes more blocks from malloc, freed at the next Reset. Without the
// growth each frame's columns were allocated and freed again, which in a
// decode thread's malloc arena meant page faults frame after frame.
constexpr size_t kArenaInitialBlockBytes = 1u << 20;
constexpr size_t kArenaMaxBlockBytes = 32u << 20;

google::protobuf::ArenaOptions MakeArenaOptions(char* block, size_t bytes) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = bytes;
  options.start_block_size = kArenaInitialBlockBytes;
  options.max_block_size = 16u << 20;
  return options;
}


// ------------------------------------------ BatchChunkParser's scan --
//
// libprotobuf's Clear() deletes an EventBatch's column messages and a
// Chunk's batch (proto3 singular message fields), so BatchChunkParser
// takes them out before and puts back those the bytes hold. The scan reads
// tags and lengths only, of the chunk's top level and of its batch's; a
// chunk it does not take is parsed as before (into the slot's arena).

// Reads a varint of at most 10 bytes; false past `end` or beyond.
bool ScanVarint(const uint8_t*& p, const uint8_t* end, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return false;
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

// Calls field(number, wire_type, begin, end) for each field of a message's
// bytes, `begin`/`end` bounding a length-delimited field's payload (else
// both null); false when a tag or field cannot be read to its end, or on a
// group.
template <typename Field>
bool ScanFields(const uint8_t* p, const uint8_t* end, Field&& field) {
  while (p != end) {
    uint64_t tag = 0;
    if (!ScanVarint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return false;
    const uint32_t number = static_cast<uint32_t>(tag >> 3);
    const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    const uint8_t* begin = nullptr;
    const uint8_t* stop = nullptr;
    uint64_t n = 0;
    switch (wire_type) {
      case 0:
        if (!ScanVarint(p, end, &n)) return false;
        break;
      case 1:
      case 5: {
        const size_t bytes = wire_type == 1 ? 8 : 4;
        if (static_cast<size_t>(end - p) < bytes) return false;
        p += bytes;
        break;
      }
      case 2:
        if (!ScanVarint(p, end, &n) || n > static_cast<uint64_t>(end - p)) return false;
        begin = p;
        stop = p + n;
        p = stop;
        break;
      default:
        return false;  // groups (3, 4) and the invalid 6, 7
    }
    field(number, wire_type, begin, stop);
  }
  return true;
}

// Which of EventBatch's column fields a batch chunk holds; false when the
// chunk is not one the reused messages take (see above).
bool ScanBatchChunk(const uint8_t* data, size_t size, uint32_t* present) {
  constexpr uint32_t kBatchField = 5;  // Chunk.batch; 4 and 6: the body's other cases
  int batches = 0;
  bool other_body = false;
  const uint8_t* batch_begin = nullptr;
  const uint8_t* batch_end = nullptr;
  if (!ScanFields(data, data + size,
                  [&](uint32_t number, uint32_t wire_type, const uint8_t* b, const uint8_t* e) {
                    if (number == kBatchField && wire_type == 2) {
                      ++batches;
                      batch_begin = b;
                      batch_end = e;
                    } else if (number == 4 || number == 5 || number == 6) {
                      other_body = true;
                    }
                  }) ||
      batches != 1 || other_body) {
    return false;
  }
  uint32_t bits = 0;
  if (!ScanFields(batch_begin, batch_end,
                  [&bits](uint32_t number, uint32_t wire_type, const uint8_t*, const uint8_t*) {
                    if (wire_type == 2 && number < 32) bits |= 1u << number;
                  })) {
    return false;
  }
  *present = bits;
  return true;
}


}  // namespace

// ------------------------------------------------------ BatchChunkParser --

BatchChunkParser::BatchChunkParser() : chunk_(std::make_unique<proto::Chunk>()) {}
BatchChunkParser::~BatchChunkParser() = default;

void BatchChunkParser::Reclaim() {
  if (chunk_->has_batch()) {
    batch_.reset(chunk_->release_batch());
#define GPSCOPE_RECLAIM_KIND(Name, Message, field, number, Event, COLUMNS) \
  if (batch_->has_##field()) field##_.reset(batch_->release_##field());
    GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_RECLAIM_KIND)
#undef GPSCOPE_RECLAIM_KIND
  }
  chunk_->Clear();
}

BatchChunkParser::Result BatchChunkParser::Parse(const uint8_t* data, size_t size) {
  uint32_t present = 0;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !ScanBatchChunk(data, size, &present)) {
    return Result::kNotTaken;
  }
  Reclaim();
  if (batch_ == nullptr) batch_ = std::make_unique<proto::EventBatch>();
  batch_->Clear();
#define GPSCOPE_ATTACH_KIND(Name, Message, field, number, Event, COLUMNS) \
  if ((present & (1u << number)) != 0) {                                 \
    if (field##_ == nullptr) {                                           \
      field##_ = std::make_unique<proto::Message>();                     \
    } else {                                                             \
      field##_->Clear();                                                 \
    }                                                                    \
    batch_->set_allocated_##field(field##_.release());                   \
  }
  GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_ATTACH_KIND)
#undef GPSCOPE_ATTACH_KIND
  chunk_->set_allocated_batch(batch_.release());
  const bool parsed = chunk_->ParseFrom<google::protobuf::MessageLite::kMerge>(
      google::protobuf::StringPiece(reinterpret_cast<const char*>(data), size));
  return parsed ? Result::kParsed : Result::kFailed;
}

int DefaultDecodeThreads() {
  if (const char* env = std::getenv("GPSCOPE_DECODE_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 64) return static_cast<int>(n);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  // One core is the reading thread's (the scan and the consumer: the model,
  // which takes most of the time); decode threads take the others.
  return std::clamp(cores, 1, kMaxDecodeThreads);
}

struct FramePipeline::Slot {
  Slot() : dctx(ZSTD_createDCtx()) { NewArena(kArenaInitialBlockBytes); }
  ~Slot() {
    arena.reset();  // before its block
    ZSTD_freeDCtx(dctx);
  }
  void NewArena(size_t bytes) {
    arena.reset();
    arena_block.reset(new char[bytes]);  // uninitialised: the arena writes what it uses
    arena_block_bytes = bytes;
    arena.emplace(MakeArenaOptions(arena_block.get(), bytes));
  }

  // Input, set by Submit.
  const uint8_t* payload = nullptr;
  uint32_t payload_bytes = 0;
  uint32_t raw_bytes = 0;
  std::vector<uint8_t> payload_copy;
  // Working memory, reused frame after frame.
  std::unique_ptr<uint8_t[]> raw;
  size_t raw_capacity = 0;
  std::unique_ptr<char[]> arena_block;
  size_t arena_block_bytes = 0;
  size_t arena_wanted_bytes = 0;  // what the last chunk took, when more than the block
  std::optional<google::protobuf::Arena> arena;
  BatchChunkParser batch_parser;  // batch chunks: the arena takes the others
  ZSTD_DCtx* dctx;
  std::unique_ptr<PreparedChunk> prepared;
  // Output.
  DecodedFrame out;
  bool done = true;  // guarded by mu_ while threads_ run
};

FramePipeline::FramePipeline(const ChunkVisitor& visitor, int threads) : visitor_(visitor) {
  const size_t workers = threads <= 1 ? 0 : static_cast<size_t>(threads) - 1;
  const size_t slots = workers == 0 ? 1 : workers + kSlotsBeyondThreads;
  for (size_t i = 0; i < slots; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    free_.push_back(slots_.back().get());
  }
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
}

FramePipeline::~FramePipeline() {
  Clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void FramePipeline::Submit(const uint8_t* payload, uint32_t payload_bytes, uint32_t raw_bytes,
                           bool copy) {
  Slot* slot = free_.front();
  free_.pop_front();
  if (copy) {
    slot->payload_copy.assign(payload, payload + payload_bytes);
    payload = slot->payload_copy.data();
  }
  slot->payload = payload;
  slot->payload_bytes = payload_bytes;
  slot->raw_bytes = raw_bytes;
  order_.push_back(slot);
  if (threads_.empty()) {
    Decode(*slot);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot->done = false;
    queue_.push_back(slot);
  }
  work_cv_.notify_one();
}

bool FramePipeline::FrontReady() {
  if (threads_.empty()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return order_.front()->done;
}

DecodedFrame& FramePipeline::Front() {
  Slot* slot = order_.front();
  if (!threads_.empty()) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [slot] { return slot->done; });
  }
  return slot->out;
}

void FramePipeline::Pop() {
  free_.push_back(order_.front());
  order_.pop_front();
}

void FramePipeline::Clear() {
  if (!threads_.empty()) {
    std::unique_lock<std::mutex> lock(mu_);
    for (Slot* s : queue_) s->done = true;  // not taken yet: never decoded
    queue_.clear();
    done_cv_.wait(lock, [this] {
      return std::all_of(order_.begin(), order_.end(), [](const Slot* s) { return s->done; });
    });
  }
  while (!order_.empty()) Pop();
}

void FramePipeline::Work() {
  for (;;) {
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      slot = queue_.front();
      queue_.pop_front();
    }
    Decode(*slot);
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot->done = true;
    }
    done_cv_.notify_all();
  }
}

// Runs on a decode thread (or the reader's, without threads): touches only
// `slot` and the visitor's const Prepare.
void FramePipeline::Decode(Slot& slot) const {
  DecodedFrame& out = slot.out;
  out = DecodedFrame{};
  if (slot.raw_bytes > slot.raw_capacity) {
    slot.raw.reset(new uint8_t[slot.raw_bytes]);  // uninitialised on purpose: zstd fills it
    slot.raw_capacity = slot.raw_bytes;
  }
  const size_t got = ZSTD_decompressDCtx(slot.dctx, slot.raw.get(), slot.raw_bytes, slot.payload,
                                         slot.payload_bytes);
  if (ZSTD_isError(got) || got != slot.raw_bytes) {
    out.result = DecodedFrame::Result::kNoDecompress;
    out.zstd_error = ZSTD_isError(got) ? ZSTD_getErrorName(got) : nullptr;
    return;
  }
  proto::Chunk* chunk = nullptr;
  bool parsed = false;
  const BatchChunkParser::Result reused = slot.batch_parser.Parse(slot.raw.get(), slot.raw_bytes);
  if (reused != BatchChunkParser::Result::kNotTaken) {
    chunk = slot.batch_parser.chunk();
    parsed = reused == BatchChunkParser::Result::kParsed;
  } else {
    if (slot.arena_wanted_bytes > slot.arena_block_bytes) {
      slot.NewArena(slot.arena_wanted_bytes);  // the last chunk is no longer used
    } else {
      slot.arena->Reset();
    }
    chunk = google::protobuf::Arena::CreateMessage<proto::Chunk>(&*slot.arena);
    parsed = chunk->ParseFromArray(slot.raw.get(), static_cast<int>(slot.raw_bytes));
    const size_t used = slot.arena->SpaceAllocated();
    slot.arena_wanted_bytes =
        used > slot.arena_block_bytes ? std::min(used + used / 4, kArenaMaxBlockBytes) : 0;
  }
  if (!parsed) {
    out.result = DecodedFrame::Result::kNoChunk;
    return;
  }
  out.check = CheckChunk(chunk);
  out.chunk = chunk;
  visitor_.Prepare(*chunk, &slot.prepared);
  out.prepared = slot.prepared.get();
}

}  // namespace gpscope::reader
