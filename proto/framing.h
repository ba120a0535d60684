// proto/framing.h: the on-disk layout of a gpscope trace file.
//
//   file   := file_header frame*
//   file_header (16 bytes) := "GPSCOPE\n" (8) | format_version u32 LE | flags u32 LE (0)
//   frame  := frame_header (16 bytes) | payload
//   frame_header := kFrameMagic u32 LE | payload_bytes u32 LE | raw_bytes u32 LE | crc32c u32 LE
//   payload := zstd frame holding one serialized gpscope.proto.Chunk of raw_bytes
//
// crc32c covers bytes 4..11 of the frame header (both lengths) followed by the
// payload, so a corrupt length is caught as well as a corrupt payload. The
// magic lets a reader resynchronise after damage: scan forward for the next
// kFrameMagic whose checksum holds.
//
// Appending: every process of a node appends to one file opened with
// O_APPEND, and each frame goes out in exactly one write(), so frames of
// different processes never interleave on local filesystems. NFS does not
// make O_APPEND atomic: IsNetworkFilesystem() lets the collector fall back to
// one file per process there (the reader treats both layouts the same).
//
// The file header is created atomically: it is written to a temporary file
// that is then link()ed to the final name, so no process ever appends a frame
// to a file whose header is not complete.
//
// Thread model: FrameEncoder is single-threaded (the collector's writer
// thread owns one). The free functions are thread-safe.
#ifndef GPSCOPE_PROTO_FRAMING_H_
#define GPSCOPE_PROTO_FRAMING_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace gpscope::format {

inline constexpr char kFileMagic[8] = {'G', 'P', 'S', 'C', 'O', 'P', 'E', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kFileHeaderBytes = 16;
inline constexpr uint32_t kFrameMagic = 0x46535047;  // "GPSF" little-endian
inline constexpr size_t kFrameHeaderBytes = 16;
// Upper bound on payload_bytes and raw_bytes a reader accepts; larger values
// are treated as corruption.
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;

// Writes the 16-byte file header into out.
void WriteFileHeader(uint8_t out[kFileHeaderBytes]);

// Compresses serialized Chunk bytes into a complete frame (header + payload).
// All memory is allocated in the constructor; Encode() never allocates.
class FrameEncoder {
 public:
  // max_raw_bytes: the largest chunk Encode() will accept.
  // zstd_level: 1 is the collector's default (fast); higher for tools.
  explicit FrameEncoder(size_t max_raw_bytes, int zstd_level = 1);
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;

  // True when construction got its memory and zstd context.
  bool ok() const;

  // On success points *frame at the encoded frame (valid until the next call)
  // and returns its size; returns 0 on failure (raw_bytes too large, zstd error).
  size_t Encode(const uint8_t* raw, size_t raw_bytes, const uint8_t** frame);

 private:
  struct Impl;
  Impl* impl_;
};

// The permission bits of a trace file gpscope creates (before the umask):
// the file holds the command line and environment, so others may not read
// it (docs/security.md).
inline constexpr mode_t kDefaultFileMode = 0640;

// Opens `name` in the directory `dir_fd` for appending frames, creating it
// with a complete file header and permission bits `mode` when it does not
// exist (atomically, see above). Never follows a symbolic link at `name`
// (ELOOP) and refuses anything but a regular file (EINVAL) without blocking
// on it (a FIFO). Returns an fd opened with O_WRONLY|O_APPEND|O_CLOEXEC, or
// -1 with errno set and a one-line reason in err (NUL-terminated, truncated
// to err_bytes). Who owns the file is the caller's to check (fstat on the
// fd: common/safe_path.h). Cold path: may allocate.
int OpenForAppendAt(int dir_fd, const char* name, mode_t mode, char* err, size_t err_bytes);
// The same for a path (its directory opened as given), mode kDefaultFileMode.
int OpenForAppend(const char* path, char* err, size_t err_bytes);

// Writes one frame with a single write() call. A short write (disk full)
// leaves a torn frame that readers skip; the rest is not retried, because a
// second write() could interleave with another process's frame. Retries only
// on EINTR before anything was written. Returns true when all bytes landed;
// otherwise false with *err_no set (ENOSPC for a short write).
bool AppendFrame(int fd, const uint8_t* frame, size_t frame_bytes, int* err_no);

// True when `dir` is on a filesystem where O_APPEND writes are not atomic
// across hosts/processes (NFS, CIFS/SMB, FUSE-based network filesystems).
bool IsNetworkFilesystem(const char* dir);
bool IsNetworkFilesystemFd(int dir_fd);
bool IsNetworkFilesystemType(uint32_t statfs_f_type);

// --- reading (used by tools/, the fuzzer and tests) ---

enum class FrameStatus {
  kOk,            // a valid frame: header and checksum good
  kNeedMoreData,  // buffer ends inside the header or payload (torn tail)
  kBadMagic,      // no frame magic at this offset
  kBadLength,     // lengths out of range
  kBadChecksum,   // checksum mismatch
};

struct FrameView {
  const uint8_t* payload;
  uint32_t payload_bytes;
  uint32_t raw_bytes;
  size_t frame_bytes;  // header + payload
};

// Parses the frame starting at data[0]. Never reads past data[size-1].
// Whenever the 16-byte header is complete and its lengths are in range
// (kOk, kNeedMoreData, kBadChecksum), *out holds them: a streaming reader
// learns from kNeedMoreData how many bytes (out->frame_bytes) to fetch.
FrameStatus ParseFrame(const uint8_t* data, size_t size, FrameView* out);

// Returns the offset of the next kFrameMagic in data[from, size), or size.
size_t FindNextFrameMagic(const uint8_t* data, size_t size, size_t from);

// Checks a file header. Returns false if magic or version are unknown and
// sets *version to what was read.
bool ParseFileHeader(const uint8_t* data, size_t size, uint32_t* version);

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_FRAMING_H_
