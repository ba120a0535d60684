// inject/stacks/memory_image.cc: see memory_image.h.
#include "inject/stacks/memory_image.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "inject/stacks/python_resolver.h"

namespace gpscope::inject::stacks {
namespace {

constexpr char kMagic[8] = {'G', 'P', 'S', 'P', 'Y', 'I', 'M', '1'};
constexpr uint32_t kMaxRegionBytes = 16u << 20;
constexpr uint32_t kMaxCount = 1u << 20;

void PutU32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }

struct Cursor {
  const std::string& data;
  size_t at = 0;
  bool ok = true;
  bool Take(void* out, size_t n) {
    if (!ok || data.size() - at < n) return ok = false;
    std::memcpy(out, data.data() + at, n);
    at += n;
    return true;
  }
  uint32_t U32() {
    uint32_t v = 0;
    Take(&v, 4);
    return v;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Take(&v, 8);
    return v;
  }
};

std::string ResolveText(PythonResolver* resolver, const std::vector<FrameRef>& frames) {
  std::string text;
  for (const FrameRef& f : frames) {
    const PyCodeInfo* code = resolver->Code(f.addr, f.check);
    if (code == nullptr) {
      text += "?\t?\t-2\n";
      continue;
    }
    text += code->filename + "\t" + code->name + "\t" + std::to_string(resolver->Line(*code, f.offset)) +
            "\n";
  }
  return text;
}

}  // namespace

bool ImageReader::Read(uint64_t addr, void* out, size_t size) {
  if (size == 0) return true;
  // The last region starting at or before addr.
  auto it = std::upper_bound(regions_->begin(), regions_->end(), addr,
                             [](uint64_t a, const MemoryRegion& r) { return a < r.addr; });
  if (it == regions_->begin()) return false;
  --it;
  const uint64_t offset = addr - it->addr;
  if (offset > it->bytes.size() || it->bytes.size() - offset < size) return false;
  std::memcpy(out, it->bytes.data() + offset, size);
  return true;
}

bool RecordingReader::Read(uint64_t addr, void* out, size_t size) {
  if (!inner_->Read(addr, out, size)) return false;
  MemoryRegion r;
  r.addr = addr;
  r.bytes.assign(static_cast<const uint8_t*>(out), static_cast<const uint8_t*>(out) + size);
  reads_.push_back(std::move(r));
  return true;
}

std::vector<MemoryRegion> RecordingReader::Regions() const {
  std::vector<const MemoryRegion*> sorted;
  for (const MemoryRegion& r : reads_) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(),
            [](const MemoryRegion* a, const MemoryRegion* b) { return a->addr < b->addr; });
  std::vector<MemoryRegion> merged;
  for (const MemoryRegion* r : sorted) {
    if (r->bytes.empty()) continue;
    if (!merged.empty()) {
      MemoryRegion& last = merged.back();
      const uint64_t last_end = last.addr + last.bytes.size();
      if (r->addr <= last_end) {
        const uint64_t end = r->addr + r->bytes.size();
        if (end > last_end) {
          last.bytes.insert(last.bytes.end(), r->bytes.begin() + (last_end - r->addr), r->bytes.end());
        }
        continue;
      }
    }
    merged.push_back(*r);
  }
  return merged;
}

bool WritePythonImage(const std::string& path, const PythonImage& image, std::string* error) {
  std::string s(kMagic, sizeof kMagic);
  PutU32(&s, static_cast<uint32_t>(image.minor));
  PutU32(&s, static_cast<uint32_t>(image.micro));
  PutU64(&s, image.tstate);
  PutU64(&s, image.types.code);
  PutU64(&s, image.types.frame);
  PutU64(&s, image.types.unicode);
  PutU64(&s, image.types.bytes);
  PutU32(&s, static_cast<uint32_t>(image.frames.size()));
  for (const FrameRef& f : image.frames) {
    PutU64(&s, f.addr);
    PutU32(&s, static_cast<uint32_t>(f.offset));
    PutU32(&s, static_cast<uint32_t>(f.check));
  }
  PutU32(&s, static_cast<uint32_t>(image.expected.size()));
  s += image.expected;
  PutU32(&s, static_cast<uint32_t>(image.regions.size()));
  for (const MemoryRegion& r : image.regions) {
    PutU64(&s, r.addr);
    PutU32(&s, static_cast<uint32_t>(r.bytes.size()));
    s.append(reinterpret_cast<const char*>(r.bytes.data()), r.bytes.size());
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    *error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  const bool ok = std::fwrite(s.data(), 1, s.size(), f) == s.size();
  if (std::fclose(f) != 0 || !ok) {
    *error = path + ": write failed";
    return false;
  }
  return true;
}

bool ReadPythonImage(const std::string& path, PythonImage* image, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::string data;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  std::fclose(f);
  Cursor c{data};
  char magic[8];
  if (!c.Take(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) {
    *error = path + ": not a gpscope Python memory image (no GPSPYIM1 magic)";
    return false;
  }
  *image = PythonImage();
  image->minor = static_cast<int>(c.U32());
  image->micro = static_cast<int>(c.U32());
  image->tstate = c.U64();
  image->types.code = c.U64();
  image->types.frame = c.U64();
  image->types.unicode = c.U64();
  image->types.bytes = c.U64();
  const uint32_t frames = c.U32();
  if (frames > kMaxCount) c.ok = false;
  for (uint32_t i = 0; c.ok && i < frames; ++i) {
    FrameRef r;
    r.addr = c.U64();
    r.offset = static_cast<int32_t>(c.U32());
    r.check = static_cast<int32_t>(c.U32());
    image->frames.push_back(r);
  }
  const uint32_t text = c.U32();
  if (c.ok && text <= data.size() - c.at) {
    image->expected = data.substr(c.at, text);
    c.at += text;
  } else {
    c.ok = false;
  }
  const uint32_t regions = c.U32();
  if (regions > kMaxCount) c.ok = false;
  for (uint32_t i = 0; c.ok && i < regions; ++i) {
    MemoryRegion r;
    r.addr = c.U64();
    const uint32_t size = c.U32();
    if (!c.ok || size > kMaxRegionBytes || size > data.size() - c.at) {
      c.ok = false;
      break;
    }
    r.bytes.assign(data.begin() + static_cast<long>(c.at), data.begin() + static_cast<long>(c.at + size));
    c.at += size;
    if (!image->regions.empty() &&
        image->regions.back().addr + image->regions.back().bytes.size() > r.addr) {
      c.ok = false;  // not sorted and disjoint
      break;
    }
    image->regions.push_back(std::move(r));
  }
  if (!c.ok || c.at != data.size()) {
    *error = path + ": truncated or malformed memory image";
    return false;
  }
  return true;
}

int RecordPythonImage(const PythonInfo& info, const std::string& path, const std::string& expected,
                      std::string* error) {
  if (!info.enabled || info.layout == nullptr) {
    *error = "Python stacks are off: " + info.reason;
    return -1;
  }
  auto get_tstate =
      reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  void* ts = get_tstate ? get_tstate() : nullptr;
  if (ts == nullptr) {
    *error = "this thread has no Python thread state";
    return -1;
  }
  SelfMemoryReader self;
  RecordingReader recorder(&self);
  PyWalkTarget target{info.layout, info.types.code, info.types.frame};
  FrameRef frames[kMaxStackDepth];
  const WalkResult w =
      WalkPythonFrames(target, CheckedLoads{&recorder}, reinterpret_cast<uint64_t>(ts), frames,
                       kMaxStackDepth);
  if (w.status != WalkStatus::kComplete) {
    *error = std::string("the walk did not complete: ") + WalkFaultName(w.fault);
    return -1;
  }
  PythonImage image;
  image.minor = info.minor;
  image.micro = info.micro;
  image.tstate = reinterpret_cast<uint64_t>(ts);
  image.types = info.types;
  image.frames.assign(frames, frames + w.depth);
  PythonResolver resolver(*info.layout, info.types, &recorder);
  const std::string resolved = ResolveText(&resolver, image.frames);
  if (resolved != expected) {
    *error = "resolved frames differ from the expected ones:\n" + resolved + "--- expected:\n" + expected;
    return -1;
  }
  image.expected = expected;
  image.regions = recorder.Regions();
  if (!WritePythonImage(path, image, error)) return -1;
  return w.depth;
}

ImageReplay ReplayPythonImage(const PythonImage& image) {
  ImageReplay r;
  const PythonLayout* layout = FindPythonLayout(3, image.minor);
  if (layout == nullptr) {
    r.error = "no layout for CPython 3." + std::to_string(image.minor);
    return r;
  }
  ImageReader reader(&image.regions);
  PyWalkTarget target{layout, image.types.code, image.types.frame};
  FrameRef frames[kMaxStackDepth];
  r.walk = WalkPythonFrames(target, CheckedLoads{&reader}, image.tstate, frames, kMaxStackDepth);
  r.frames.assign(frames, frames + r.walk.depth);
  PythonResolver resolver(*layout, image.types, &reader);
  r.resolved = ResolveText(&resolver, r.frames);
  return r;
}

}  // namespace gpscope::inject::stacks
