// tools/reader/frame_pipeline.cc: see frame_pipeline.h.
#include "tools/reader/frame_pipeline.h"

#include <sched.h>
#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "google/protobuf/arena.h"
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

}  // namespace

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
  if (slot.arena_wanted_bytes > slot.arena_block_bytes) {
    slot.NewArena(slot.arena_wanted_bytes);  // the last chunk is no longer used
  } else {
    slot.arena->Reset();
  }
  proto::Chunk* chunk = google::protobuf::Arena::CreateMessage<proto::Chunk>(&*slot.arena);
  const bool parsed = chunk->ParseFromArray(slot.raw.get(), static_cast<int>(slot.raw_bytes));
  const size_t used = slot.arena->SpaceAllocated();
  slot.arena_wanted_bytes =
      used > slot.arena_block_bytes ? std::min(used + used / 4, kArenaMaxBlockBytes) : 0;
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
