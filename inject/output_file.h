// inject/output_file.h: the trace file of this process: its folder, its
// name, and when it opens.
//
//   OutputFile out;
//   out.Prepare(config, identity, &error);   // start-up: the folder, checked
//   out.Open(writer, &error);                // now, or...
//   out.set_open_at_context(true);           // ...at the first CUDA context:
//   out.MaybeOpen(writer, context_devices);  // the writer thread, every loop
//
// The per-node file opens when the process creates its first CUDA context
// (the ChunkWriter holds the frames until then), so a process that only
// initializes CUDA leaves no file: torchrun's agent calls cuInit and would
// otherwise add a file per node beside the ranks'. Only when CUPTI tells us
// about contexts (we hold the subscriber); otherwise at start.
//
// The folder is opened and checked against other users (common/safe_path.h);
// a file name taken by something gpscope must not append to (another
// user's file, a link, a FIFO) gets one line and a private name beside it.
//
// Thread model: Prepare() on the start-up thread; Open() there or on the
// writer thread (MaybeOpen); path() from any thread (the control thread's
// `status`), under a mutex: the name changes once if it is taken.
#ifndef GPSCOPE_INJECT_OUTPUT_FILE_H_
#define GPSCOPE_INJECT_OUTPUT_FILE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/identity.h"
#include "common/safe_path.h"
#include "inject/config.h"
#include "proto/chunk_writer.h"

namespace gpscope::inject {

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Start-up thread: the folder (GPSCOPE_OUTPUT), opened and checked, and
  // the file's name. False (with *error, one line) when it cannot be used.
  bool Prepare(const Config& config, const common::ProcessIdentity& identity, std::string* error);
  // Opens (creating) the file inside the folder and hands it to writer (may
  // be null). False (with *error) when it cannot be opened, or when writer
  // could not write the frames it held (then fd() >= 0 all the same).
  bool Open(format::ChunkWriter* writer, std::string* error);
  // Writer thread: opens the file at the process's first CUDA context (a
  // bit set in context_devices). True when the file is open. A file that
  // cannot be opened then is one error line (never tried again); the
  // records are dropped from there on (CUPTI stays on: turning it off from
  // this thread could race the application's CUDA calls).
  bool MaybeOpen(format::ChunkWriter* writer,
                 const std::atomic<uint64_t>& context_devices);

  // Open at the first context rather than now (see above).
  bool open_at_context() const { return open_at_context_; }
  void set_open_at_context(bool on) { open_at_context_ = on; }
  int fd() const { return fd_; }
  // Absolute: `gpscope attach` reads it from another working directory.
  std::string path();

 private:
  common::OutputDir dir_;  // GPSCOPE_OUTPUT, opened and checked
  std::string name_;       // in dir_
  std::string path_;       // dir_ + name_; guarded by path_mu_ once the writer runs
  std::mutex path_mu_;
  uint32_t permissions_ = 0640;
  uint32_t pid_ = 0;
  int fd_ = -1;
  bool open_at_context_ = false;
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_OUTPUT_FILE_H_
