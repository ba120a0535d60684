// proto/framing.cc: see framing.h. Links into the injected library: no
// abseil, no libprotobuf, no exceptions; only the cold paths allocate.
#include "proto/framing.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_initStaticCCtx: a context that never allocates
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zstd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "proto/crc32c.h"

namespace gpscope::format {
namespace {

inline void StoreLE32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

inline uint32_t LoadLE32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Checksum of a frame: both length fields, then the payload.
uint32_t FrameChecksum(const uint8_t* header, const uint8_t* payload, size_t payload_bytes) {
  return Crc32cExtend(Crc32c(header + 4, 8), payload, payload_bytes);
}

void SetError(char* err, size_t err_bytes, const char* fmt, ...) {
  if (err == nullptr || err_bytes == 0) return;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(err, err_bytes, fmt, ap);
  va_end(ap);
}

// Fails with errno preserved (snprintf may clobber it).
int FailWith(int saved_errno, int fd) {
  if (fd >= 0) close(fd);
  errno = saved_errno;
  return -1;
}

}  // namespace

void WriteFileHeader(uint8_t out[kFileHeaderBytes]) {
  std::memcpy(out, kFileMagic, sizeof(kFileMagic));
  StoreLE32(out + 8, kFormatVersion);
  StoreLE32(out + 12, 0);
}

// ------------------------------------------------------------ FrameEncoder --

struct FrameEncoder::Impl {
  ZSTD_CCtx* cctx = nullptr;  // lives inside `workspace`
  void* workspace = nullptr;
  uint8_t* out = nullptr;  // frame header + ZSTD_compressBound(max_raw_bytes)
  size_t out_capacity = 0;
  size_t max_raw_bytes = 0;
  int level = 1;
};

FrameEncoder::FrameEncoder(size_t max_raw_bytes, int zstd_level) : impl_(new (std::nothrow) Impl) {
  if (impl_ == nullptr) return;
  if (max_raw_bytes > kMaxFrameBytes) max_raw_bytes = kMaxFrameBytes;
  impl_->max_raw_bytes = max_raw_bytes;
  impl_->level = zstd_level;
  // ZSTD_estimateCCtxSize covers every input size up to the level's largest
  // parameters, so the static context never needs to grow.
  const size_t workspace_bytes = ZSTD_estimateCCtxSize(zstd_level);
  impl_->workspace = std::malloc(workspace_bytes);
  if (impl_->workspace != nullptr) {
    impl_->cctx = ZSTD_initStaticCCtx(impl_->workspace, workspace_bytes);
  }
  impl_->out_capacity = kFrameHeaderBytes + ZSTD_compressBound(max_raw_bytes);
  impl_->out = static_cast<uint8_t*>(std::malloc(impl_->out_capacity));
}

FrameEncoder::~FrameEncoder() {
  if (impl_ == nullptr) return;
  std::free(impl_->workspace);  // the static cctx needs no ZSTD_freeCCtx
  std::free(impl_->out);
  delete impl_;
}

bool FrameEncoder::ok() const {
  return impl_ != nullptr && impl_->cctx != nullptr && impl_->out != nullptr;
}

size_t FrameEncoder::Encode(const uint8_t* raw, size_t raw_bytes, const uint8_t** frame) {
  if (!ok() || raw_bytes > impl_->max_raw_bytes) return 0;
  uint8_t* header = impl_->out;
  uint8_t* payload = header + kFrameHeaderBytes;
  const size_t payload_bytes = ZSTD_compressCCtx(
      impl_->cctx, payload, impl_->out_capacity - kFrameHeaderBytes, raw, raw_bytes, impl_->level);
  if (ZSTD_isError(payload_bytes) || payload_bytes > kMaxFrameBytes) return 0;
  StoreLE32(header, kFrameMagic);
  StoreLE32(header + 4, static_cast<uint32_t>(payload_bytes));
  StoreLE32(header + 8, static_cast<uint32_t>(raw_bytes));
  StoreLE32(header + 12, FrameChecksum(header, payload, payload_bytes));
  *frame = header;
  return kFrameHeaderBytes + payload_bytes;
}

// ---------------------------------------------------------------- writing --

int OpenForAppendAt(int dir_fd, const char* name, mode_t mode, char* err, size_t err_bytes) {
  // O_NOFOLLOW: a symbolic link planted at the name is never followed (it
  // could point at another trace or any file the caller may write);
  // O_NONBLOCK: a FIFO planted there cannot block the open. Anything but a
  // regular file is refused below.
  constexpr int kOpenFlags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  int fd = openat(dir_fd, name, kOpenFlags);
  if (fd < 0 && errno == ENOENT) {
    // Publish a complete header atomically: write it to a private temp file
    // and link() that to the final name. Exactly one creator wins; everyone
    // else gets EEXIST and appends to the winner's file. The temp name has
    // random bits, and O_EXCL never follows a link planted there.
    static std::atomic<unsigned> counter{0};
    uint8_t header[kFileHeaderBytes];
    WriteFileHeader(header);
    std::string tmp;
    int tmp_fd = -1;
    for (int attempt = 0; attempt < 100 && tmp_fd < 0; ++attempt) {
      uint32_t salt = 0;
      if (getrandom(&salt, sizeof(salt), GRND_NONBLOCK) != sizeof(salt)) salt = 0;
      char suffix[48];
      snprintf(suffix, sizeof(suffix), ".tmp.%d.%u.%08x", static_cast<int>(getpid()),
               counter.fetch_add(1, std::memory_order_relaxed), salt);
      tmp = std::string(name) + suffix;
      tmp_fd = openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                      mode);
      if (tmp_fd < 0 && errno != EEXIST) break;
    }
    if (tmp_fd < 0) {
      const int e = errno;
      SetError(err, err_bytes, "%s: cannot create temporary file: %s", tmp.c_str(), strerror(e));
      return FailWith(e, -1);
    }
    const ssize_t n = write(tmp_fd, header, sizeof(header));
    const int write_errno = errno;
    close(tmp_fd);
    if (n != static_cast<ssize_t>(sizeof(header))) {
      const int e = n < 0 ? write_errno : ENOSPC;
      unlinkat(dir_fd, tmp.c_str(), 0);
      SetError(err, err_bytes, "%s: cannot write file header: %s", tmp.c_str(), strerror(e));
      return FailWith(e, -1);
    }
    const int link_rc = linkat(dir_fd, tmp.c_str(), dir_fd, name, 0);
    const int link_errno = errno;
    unlinkat(dir_fd, tmp.c_str(), 0);
    if (link_rc != 0 && link_errno != EEXIST) {
      SetError(err, err_bytes, "%s: cannot create trace file: %s", name, strerror(link_errno));
      return FailWith(link_errno, -1);
    }
    fd = openat(dir_fd, name, kOpenFlags);
  }
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP) {
      SetError(err, err_bytes, "%s: is a symbolic link; refusing to follow it", name);
    } else if (e == ENXIO || e == ENODEV || e == EWOULDBLOCK) {
      // A FIFO nobody reads (O_NONBLOCK), a device: never a trace.
      SetError(err, err_bytes, "%s: not a regular file; refusing to append to it", name);
      return FailWith(EINVAL, -1);
    } else {
      SetError(err, err_bytes, "%s: cannot open for appending: %s", name, strerror(e));
    }
    return FailWith(e, -1);
  }
  struct stat wst;
  if (fstat(fd, &wst) != 0 || !S_ISREG(wst.st_mode)) {
    SetError(err, err_bytes, "%s: not a regular file; refusing to append to it", name);
    return FailWith(EINVAL, fd);
  }
  fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);  // drop O_NONBLOCK (no effect on a regular file)

  // Verify the header of the file we actually hold: read it through a second
  // descriptor and compare inodes, in case the name was replaced meanwhile.
  uint8_t header[kFileHeaderBytes];
  ssize_t got = -1;
  int read_errno = 0;
  const int rd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat rst;
  if (rd < 0 || fstat(rd, &rst) != 0) {
    read_errno = errno;
  } else if (wst.st_ino != rst.st_ino || wst.st_dev != rst.st_dev) {
    read_errno = ESTALE;
  } else {
    got = pread(rd, header, sizeof(header), 0);
    read_errno = errno;
  }
  if (rd >= 0) close(rd);
  if (got < 0) {
    SetError(err, err_bytes, "%s: cannot read back the file header: %s", name,
             strerror(read_errno));
    return FailWith(read_errno, fd);
  }
  uint32_t version = 0;
  if (!ParseFileHeader(header, static_cast<size_t>(got), &version)) {
    if (static_cast<size_t>(got) < kFileHeaderBytes ||
        std::memcmp(header, kFileMagic, sizeof(kFileMagic)) != 0) {
      SetError(err, err_bytes, "%s: not a gpscope trace (bad file magic); refusing to append",
               name);
    } else {
      SetError(err, err_bytes, "%s: trace format version %u, this gpscope writes %u", name, version,
               kFormatVersion);
    }
    return FailWith(EINVAL, fd);
  }
  return fd;
}

int OpenForAppend(const char* path, char* err, size_t err_bytes) {
  const char* slash = strrchr(path, '/');
  const std::string dir = slash == nullptr ? "." : slash == path ? "/" : std::string(path, slash);
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    const int e = errno;
    SetError(err, err_bytes, "%s: cannot open its directory: %s", path, strerror(e));
    return FailWith(e, -1);
  }
  char inner[224] = "";
  const int fd = OpenForAppendAt(dir_fd, slash == nullptr ? path : slash + 1, kDefaultFileMode,
                                 inner, sizeof(inner));
  const int e = errno;
  close(dir_fd);
  if (fd < 0) {
    // The messages name the file; callers of this form gave a path.
    SetError(err, err_bytes, "%s%s", slash == nullptr ? "" : dir.c_str(),
             slash == nullptr ? inner : (std::string("/") + inner).c_str());
  }
  errno = e;
  return fd;
}

bool AppendFrame(int fd, const uint8_t* frame, size_t frame_bytes, int* err_no) {
  for (;;) {
    const ssize_t n = write(fd, frame, frame_bytes);
    if (n == static_cast<ssize_t>(frame_bytes)) return true;
    if (n < 0 && errno == EINTR) continue;  // nothing was written: safe to retry
    *err_no = n < 0 ? errno : ENOSPC;
    return false;
  }
}

bool IsNetworkFilesystem(const char* dir) {
  struct statfs st;
  if (statfs(dir, &st) != 0) return false;
  return IsNetworkFilesystemType(static_cast<uint32_t>(st.f_type));
}

bool IsNetworkFilesystemFd(int fd) {
  struct statfs st;
  if (fstatfs(fd, &st) != 0) return false;
  return IsNetworkFilesystemType(static_cast<uint32_t>(st.f_type));
}

bool IsNetworkFilesystemType(uint32_t f_type) {
  // Magic numbers from linux/magic.h and the filesystems' sources.
  switch (f_type) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE (sshfs, s3fs, gcsfuse, ...)
    case 0x01021997:  // 9P
    case 0x00C36400:  // CephFS
    case 0x5346414F:  // AFS
    case 0x6B414653:  // kAFS
    case 0x73757245:  // Coda
    case 0x564C:      // NCP
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------- reading --

FrameStatus ParseFrame(const uint8_t* data, size_t size, FrameView* out) {
  uint8_t magic[4];
  StoreLE32(magic, kFrameMagic);
  if (std::memcmp(data, magic, size < 4 ? size : 4) != 0) return FrameStatus::kBadMagic;
  if (size < kFrameHeaderBytes) return FrameStatus::kNeedMoreData;
  const uint32_t payload_bytes = LoadLE32(data + 4);
  const uint32_t raw_bytes = LoadLE32(data + 8);
  // A zstd frame is never larger than ZSTD_compressBound of its content.
  if (payload_bytes == 0 || payload_bytes > kMaxFrameBytes || raw_bytes > kMaxFrameBytes ||
      payload_bytes > ZSTD_COMPRESSBOUND(raw_bytes)) {
    return FrameStatus::kBadLength;
  }
  out->payload = data + kFrameHeaderBytes;
  out->payload_bytes = payload_bytes;
  out->raw_bytes = raw_bytes;
  out->frame_bytes = kFrameHeaderBytes + payload_bytes;
  if (size < out->frame_bytes) return FrameStatus::kNeedMoreData;
  if (FrameChecksum(data, out->payload, payload_bytes) != LoadLE32(data + 12)) {
    return FrameStatus::kBadChecksum;
  }
  return FrameStatus::kOk;
}

size_t FindNextFrameMagic(const uint8_t* data, size_t size, size_t from) {
  uint8_t magic[4];
  StoreLE32(magic, kFrameMagic);
  while (from + 4 <= size) {
    const void* hit = std::memchr(data + from, magic[0], size - from - 3);
    if (hit == nullptr) break;
    from = static_cast<size_t>(static_cast<const uint8_t*>(hit) - data);
    if (std::memcmp(data + from, magic, 4) == 0) return from;
    ++from;
  }
  return size;
}

bool ParseFileHeader(const uint8_t* data, size_t size, uint32_t* version) {
  *version = 0;
  if (size < kFileHeaderBytes) return false;
  *version = LoadLE32(data + 8);
  return std::memcmp(data, kFileMagic, sizeof(kFileMagic)) == 0 && *version >= 1 &&
         *version <= kFormatVersion;
}

}  // namespace gpscope::format
