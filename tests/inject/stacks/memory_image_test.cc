// tests/inject/stacks/memory_image_test.cc: replays recorded memory images
// of real CPython frame chains (tests/inject/stacks/data/*.pyimg, recorded
// with py_stacks_test.py's record mode, see docs/stacks.md) through the
// walker and the resolver, with process_vm_readv replaced by a reader over
// the image: the walk must find the recorded frames and resolve them to the
// traceback the recording interpreter printed.
#include "inject/stacks/memory_image.h"

#include <dirent.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "inject/stacks/python_resolver.h"

namespace gpscope::inject::stacks {
namespace {

std::vector<std::string> Images() {
  std::vector<std::string> out;
  DIR* d = opendir(GPSCOPE_PY_IMAGE_DIR);
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 6 && name.substr(name.size() - 6) == ".pyimg") {
      out.push_back(std::string(GPSCOPE_PY_IMAGE_DIR) + "/" + name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(MemoryImageTest, EveryRecordedChainReplaysToItsTraceback) {
  const std::vector<std::string> images = Images();
  ASSERT_GE(images.size(), 1u) << "no *.pyimg in " << GPSCOPE_PY_IMAGE_DIR;
  for (const std::string& path : images) {
    SCOPED_TRACE(path);
    PythonImage image;
    std::string error;
    ASSERT_TRUE(ReadPythonImage(path, &image, &error)) << error;
    ASSERT_GE(image.frames.size(), 4u);
    const ImageReplay r = ReplayPythonImage(image);
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.walk.status, WalkStatus::kComplete) << WalkFaultName(r.walk.fault);
    ASSERT_EQ(r.frames.size(), image.frames.size());
    for (size_t i = 0; i < r.frames.size(); ++i) {
      EXPECT_EQ(r.frames[i].addr, image.frames[i].addr) << i;
      EXPECT_EQ(r.frames[i].offset, image.frames[i].offset) << i;
      EXPECT_EQ(r.frames[i].check, image.frames[i].check) << i;
    }
    EXPECT_EQ(r.resolved, image.expected);
    // The recording's innermost frames are the recorder's own functions.
    EXPECT_NE(image.expected.find("\tleaf\t"), std::string::npos);
    EXPECT_NE(image.expected.find("\t<module>\t"), std::string::npos);
  }
}

TEST(MemoryImageTest, AMissingCodeObjectResolvesToUnknownNotToGarbage) {
  const std::vector<std::string> images = Images();
  ASSERT_GE(images.size(), 1u);
  PythonImage image;
  std::string error;
  ASSERT_TRUE(ReadPythonImage(images.front(), &image, &error)) << error;
  // Drop the region holding the innermost frame's code object: the walk
  // cannot read it (checked reads) and stops as inconsistent.
  const uint64_t code = image.frames[0].addr;
  const uint64_t code_end = code + FindPythonLayout(3, image.minor)->code_basicsize;
  auto& regions = image.regions;
  const size_t before = regions.size();
  regions.erase(std::remove_if(regions.begin(), regions.end(),
                               [code, code_end](const MemoryRegion& r) {
                                 return r.addr < code_end && r.addr + r.bytes.size() > code;
                               }),
                regions.end());
  ASSERT_LT(regions.size(), before);
  const ImageReplay r = ReplayPythonImage(image);
  EXPECT_EQ(r.walk.status, WalkStatus::kInconsistent);
  EXPECT_EQ(r.walk.fault, WalkFault::kUnreadable);
  EXPECT_EQ(r.frames.size(), 0u);
  // Resolving the recorded refs against the damaged image marks that frame.
  ImageReader reader(&image.regions);
  PythonResolver resolver(*FindPythonLayout(3, image.minor), image.types, &reader);
  EXPECT_EQ(resolver.Code(image.frames[0].addr, image.frames[0].check), nullptr);
  EXPECT_EQ(resolver.last_error(), ResolveError::kUnreadable);
  EXPECT_NE(resolver.Code(image.frames[1].addr, image.frames[1].check), nullptr);
}

TEST(MemoryImageTest, TruncatedOrForeignFilesAreRejected) {
  const std::vector<std::string> images = Images();
  ASSERT_GE(images.size(), 1u);
  FILE* f = std::fopen(images.front().c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string data;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  std::fclose(f);
  const std::string tmp = testing::TempDir() + "/truncated.pyimg";
  for (size_t cut : {size_t{0}, size_t{5}, size_t{60}, data.size() / 2, data.size() - 1}) {
    FILE* o = std::fopen(tmp.c_str(), "wb");
    std::fwrite(data.data(), 1, cut, o);
    std::fclose(o);
    PythonImage image;
    std::string error;
    EXPECT_FALSE(ReadPythonImage(tmp, &image, &error)) << cut;
    EXPECT_NE(error.find(tmp), std::string::npos) << error;
  }
  PythonImage image;
  std::string error;
  EXPECT_FALSE(ReadPythonImage(testing::TempDir() + "/does-not-exist.pyimg", &image, &error));
}

TEST(MemoryImageTest, ImageReaderServesOnlyRecordedBytes) {
  std::vector<MemoryRegion> regions(2);
  regions[0].addr = 0x1000;
  regions[0].bytes = {1, 2, 3, 4};
  regions[1].addr = 0x1004;  // adjacent but separate: a read may not span them
  regions[1].bytes = {5, 6};
  ImageReader r(&regions);
  uint8_t out[4] = {};
  EXPECT_TRUE(r.Read(0x1001, out, 3));
  EXPECT_EQ(out[2], 4);
  EXPECT_FALSE(r.Read(0x1002, out, 4));
  EXPECT_FALSE(r.Read(0xfff, out, 1));
  EXPECT_TRUE(r.Read(0x1005, out, 1));
  EXPECT_EQ(out[0], 6);
  EXPECT_FALSE(r.Read(0x1006, out, 1));
}

TEST(MemoryImageTest, RecordingReaderMergesOverlappingReads) {
  std::vector<MemoryRegion> source(1);
  source[0].addr = 0x2000;
  for (int i = 0; i < 64; ++i) source[0].bytes.push_back(static_cast<uint8_t>(i));
  ImageReader inner(&source);
  RecordingReader rec(&inner);
  uint8_t out[16];
  ASSERT_TRUE(rec.Read(0x2010, out, 8));
  ASSERT_TRUE(rec.Read(0x2000, out, 4));
  ASSERT_TRUE(rec.Read(0x2014, out, 8));  // overlaps the first
  EXPECT_FALSE(rec.Read(0x3000, out, 1));
  const std::vector<MemoryRegion> merged = rec.Regions();
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].addr, 0x2000u);
  EXPECT_EQ(merged[0].bytes.size(), 4u);
  EXPECT_EQ(merged[1].addr, 0x2010u);
  ASSERT_EQ(merged[1].bytes.size(), 12u);
  EXPECT_EQ(merged[1].bytes[11], 0x1b);
}

}  // namespace
}  // namespace gpscope::inject::stacks
