// tools/reader/limits.h: what a trace file may make the analyzer do. Trace
// files travel between people, so every value in one is untrusted: the
// reader checks each chunk here (CheckChunk) before any consumer sees it,
// and stops reading when the process passes its memory budget.
//
// The one validation point: TraceReader calls CheckChunk on every chunk it
// hands to a ChunkVisitor, so every consumer (model, timeline, export,
// dump, info, metrics) gets chunks whose interned-table ids are within the
// limits below and whose strings are at most kMaxStringBytes. Consumers
// still look up ids that *reference* a table (a kernel's name_id, an
// event's device_id) with bounds checks: those are limited by what the
// trace defined, never used to size a table.
//
//   reader::SetMemoryBudgetBytes(512u << 20);   // gpscope-analyze --max-memory 512M
//   if (reader::MemoryBudgetExceeded()) ...     // RSS over the budget
//
// Thread model: CheckChunk is a pure function. The budget is one
// process-wide setting, read and written by the analyzer's one thread.
#ifndef GPSCOPE_TOOLS_READER_LIMITS_H_
#define GPSCOPE_TOOLS_READER_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gpscope/trace.pb.h"

namespace gpscope::reader {

// Interned ids are dense from 1 (trace.proto): a process that defines 4 M
// names is already far past any real program (PyTorch jobs define ~10 k).
// Entries with larger ids are dropped, so a table indexed by id is at most
// this long.
inline constexpr uint32_t kMaxStringId = 1u << 22;
inline constexpr uint32_t kMaxLaunchConfigId = 1u << 20;
inline constexpr uint32_t kMaxMetricId = 1u << 20;
// Call stacks (issue 20, trace.proto StackFrame / Stack): the collector
// keeps at most 262144 frames and 65536 stacks per process by default and
// 64 frames per stack; these bounds leave room for larger settings. A
// stack longer than kMaxFramesPerStack keeps its innermost frames and is
// marked truncated.
inline constexpr uint32_t kMaxStackFrameId = 1u << 20;
inline constexpr uint32_t kMaxStackId = 1u << 20;
inline constexpr int kMaxFramesPerStack = 256;
// Longest string kept from a trace (kernel names, host names, details); a
// longer one is cut at a UTF-8 character boundary. Mangled C++ template
// kernel names reach a few KiB.
inline constexpr size_t kMaxStringBytes = 64u << 10;
// Repeated header/notice entries kept per chunk (devices, clock snapshots,
// argv, environment, configuration).
inline constexpr int kMaxListEntries = 4096;
// Distinct GPUs, contexts and streams the reader's tables keep per process
// (process_tables.h); past them a GPU op resolves to no stream and is
// counted, not analysed (one process sees its node's GPUs, 16 on the
// largest nodes, and CUDA enumerates one MIG instance per process; a context
// per GPU and process is the rule). Each modelled GPU costs a few MiB of
// timelines and window tables: 256 let a 27 KB hostile file (analyzer_fuzz)
// build 199 of them, 600 MB and 116 s under ASan (32: twice the largest node).
inline constexpr size_t kMaxDevicesPerProcess = 32;
inline constexpr size_t kMaxContextsPerProcess = 4096;
inline constexpr size_t kMaxStreamsPerProcess = 1u << 16;

// Largest decompressed chunk the analyzer accepts. gpscope's writers make
// chunks of at most 1 MiB (the collector) and 64 KiB (the node monitor);
// the format allows 64 MiB, which a decompression bomb of a few KiB can
// claim (and ~30x that once parsed), so larger frames are skipped.
inline constexpr uint32_t kMaxChunkRawBytes = 16u << 20;

// The default memory budget of gpscope-analyze (--max-memory).
inline constexpr uint64_t kDefaultMemoryBudgetBytes = uint64_t{2} << 30;
// Bytes of parsed protobuf a decompressed byte can become (an empty
// repeated message is 2 bytes on the wire and ~56 in memory): a frame is
// decompressed only when its raw size times this fits in the budget.
inline constexpr uint64_t kParsedBytesPerRawByte = 32;

// What CheckChunk changed, for one warning per chunk.
struct ChunkCheck {
  uint64_t ids_dropped = 0;      // interned entries with an id past the limits
  uint64_t strings_cut = 0;      // strings longer than kMaxStringBytes
  uint64_t entries_dropped = 0;  // list entries past kMaxListEntries
  // Text fields that were not valid UTF-8 (the schema's text fields are
  // bytes): each bad byte is now U+FFFD, so every output is valid UTF-8.
  uint64_t strings_repaired = 0;
  bool changed() const { return ids_dropped + strings_cut + entries_dropped > 0; }
};

// Brings `chunk` within the limits above, in place.
ChunkCheck CheckChunk(proto::Chunk* chunk);

// Replaces every byte of `s` that does not start a well-formed UTF-8
// sequence with U+FFFD; returns whether it changed anything.
bool RepairUtf8(std::string* s);

// Cuts `s` to at most `max_bytes`, at a UTF-8 character boundary.
void CutUtf8(std::string* s, size_t max_bytes);

// ---------------------------------------------------------- memory budget --

// The whole command's budget (--max-memory); 0 means none.
void SetMemoryBudgetBytes(uint64_t bytes);
uint64_t MemoryBudgetBytes();
// The share of the budget reading may use: what is read is analysed and
// rendered afterwards, which costs about as much again (the HTML report
// more: it sets 1/4). Default 1/2.
void SetReadingShare(double share);
// MemoryBudgetBytes() x the reading share: where reading stops.
uint64_t ReadingLimitBytes();
// This process's resident set size (/proc/self/statm), 0 when unknown.
uint64_t ResidentBytes();
// Whether RSS plus `extra_bytes` passes the reading limit.
bool MemoryBudgetExceeded(uint64_t extra_bytes = 0);

// "2G", "512M", "1536MiB", "4GB", "1048576" (bytes), "unlimited" (0).
// Units are binary (K = 1024). At least 16 MiB.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);
// 2147483648 -> "2.0 GiB".
std::string FormatByteSize(uint64_t bytes);

}  // namespace gpscope::reader

#endif  // GPSCOPE_TOOLS_READER_LIMITS_H_
