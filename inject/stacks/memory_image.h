// inject/stacks/memory_image.h: recorded memory images of a real Python
// frame chain, so the walker and resolver can be tested against an
// interpreter that is not installed here (CPython 3.12.3 on the H200).
//
// An image holds every byte range the walk and the resolution read (the
// thread state, _PyCFrame, frames, code objects, their strings and line
// tables) at their original addresses, the type-object addresses, what the
// capture saw, and the traceback the recording script computed. Replaying
// it walks the chain again from the recorded thread state and resolves the
// frames through an ImageReader instead of process_vm_readv; the result
// must equal the recorded traceback.
//
//   // Record (inside the interpreter, GIL released: py_stacks_testlib's
//   // gps_record_image, driven by tests/inject/stacks/record_py_image.py):
//   RecordPythonImage(InitPythonStacks(), "cpython-3.12.3.pyimg", traceback_text, &error);
//   // Replay (tests/inject/stacks/memory_image_test.cc):
//   PythonImage image;  ReadPythonImage(path, &image, &error);
//   ImageReplay r = ReplayPythonImage(image);   // r.resolved == image.expected
//
// File format (little-endian): "GPSPYIM1"; u32 minor, u32 micro; u64
// thread state, PyCode_Type, PyFrame_Type, PyUnicode_Type, PyBytes_Type
// addresses; u32 frame count, each (u64 addr, i32 offset, i32 check); u32
// length + the expected text ("file\tfunction\tline\n" per frame,
// innermost first); u32 region count, each (u64 address, u32 size, bytes).
//
// Thread model: cold, single thread; allocates.
#ifndef GPSCOPE_INJECT_STACKS_MEMORY_IMAGE_H_
#define GPSCOPE_INJECT_STACKS_MEMORY_IMAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "inject/stacks/capture_record.h"
#include "inject/stacks/memory_reader.h"
#include "inject/stacks/python_stacks.h"
#include "inject/stacks/python_walker.h"

namespace gpscope::inject::stacks {

struct MemoryRegion {
  uint64_t addr = 0;
  std::vector<uint8_t> bytes;
};

struct PythonImage {
  int minor = 0;
  int micro = 0;
  uint64_t tstate = 0;
  PythonTypes types;
  std::vector<FrameRef> frames;
  std::string expected;
  std::vector<MemoryRegion> regions;  // sorted by address, disjoint
};

// Reads from a set of regions; a read must fall inside one region.
class ImageReader : public MemoryReader {
 public:
  explicit ImageReader(const std::vector<MemoryRegion>* regions) : regions_(regions) {}
  bool Read(uint64_t addr, void* out, size_t size) override;

 private:
  const std::vector<MemoryRegion>* regions_;
};

// Passes reads through to `inner` and remembers every successful one.
class RecordingReader : public MemoryReader {
 public:
  explicit RecordingReader(MemoryReader* inner) : inner_(inner) {}
  bool Read(uint64_t addr, void* out, size_t size) override;
  // The recorded reads, merged into sorted disjoint regions.
  std::vector<MemoryRegion> Regions() const;

 private:
  MemoryReader* inner_;
  std::vector<MemoryRegion> reads_;
};

bool WritePythonImage(const std::string& path, const PythonImage& image, std::string* error);
bool ReadPythonImage(const std::string& path, PythonImage* image, std::string* error);

// Records the calling thread's chain. `info` must be an enabled result of
// InitPythonStacks. Returns the number of frames, or -1 with *error.
int RecordPythonImage(const PythonInfo& info, const std::string& path, const std::string& expected,
                      std::string* error);

struct ImageReplay {
  WalkResult walk;
  std::vector<FrameRef> frames;
  std::string resolved;  // the same format as PythonImage::expected
  std::string error;     // set when the image's version has no layout
};
ImageReplay ReplayPythonImage(const PythonImage& image);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_MEMORY_IMAGE_H_
