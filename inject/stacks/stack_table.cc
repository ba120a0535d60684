// inject/stacks/stack_table.cc: see stack_table.h.
#include "inject/stacks/stack_table.h"

#include <cstring>
#include <string_view>

#include "inject/stacks/native_stacks.h"
#include "inject/stacks/python_resolver.h"

namespace gpscope::inject::stacks {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

void AppendU64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), sizeof v); }

}  // namespace

uint64_t HashCapture(const StackCapture& c) {
  uint64_t h = Mix(static_cast<uint64_t>(c.kind), (static_cast<uint64_t>(c.flags) << 8) | c.depth);
  for (int i = 0; i < c.depth; ++i) {
    h = Mix(h, c.frames[i].addr);
    h = Mix(h, (static_cast<uint64_t>(static_cast<uint32_t>(c.frames[i].offset)) << 32) |
                   static_cast<uint32_t>(c.frames[i].check));
  }
  return h;
}

ResolvedFrame ProcessFrameResolver::Resolve(StackKind kind, const FrameRef& ref) {
  ResolvedFrame f;
  if (kind == StackKind::kPython) {
    f.kind = FrameKind::kPython;
    if (python_ == nullptr) return f;
    const PyCodeInfo* code = python_->Code(ref.addr, ref.check);
    if (code == nullptr) return f;
    f.file = code->filename;
    f.function = code->name;
    f.qualname = code->qualname;
    const int line = python_->Line(*code, ref.offset);
    f.line = line > 0 ? line : 0;
    f.resolved = true;
    return f;
  }
  f.kind = FrameKind::kNative;
  f.module_offset = ref.addr;
  if (native_ == nullptr) return f;
  const NativeFrameInfo n = native_->Symbolize(ref.addr);
  if (n.module == nullptr) return f;
  f.file = n.module->path;
  f.build_id = n.module->build_id;
  f.module_offset = n.module_offset;
  f.function = n.function;
  f.resolved = true;
  return f;
}

StackTable::StackTable(FrameResolver* resolver, const Limits& limits)
    : resolver_(resolver), limits_(limits), slots_(1024, 0) {}

bool StackTable::SameRaw(const Raw& r, const StackCapture& c) const {
  if (r.depth != c.depth || r.kind != c.kind || r.flags != c.flags) return false;
  const FrameRef* a = &arena_[r.first];
  for (int i = 0; i < c.depth; ++i) {
    if (a[i].addr != c.frames[i].addr || a[i].offset != c.frames[i].offset ||
        a[i].check != c.frames[i].check) {
      return false;
    }
  }
  return true;
}

void StackTable::InsertSlot(uint32_t raw_index) {
  const size_t mask = slots_.size() - 1;
  size_t i = raw_[raw_index].hash & mask;
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = raw_index + 1;
}

void StackTable::Grow() {
  slots_.assign(slots_.size() * 2, 0);
  for (uint32_t i = 0; i < raw_.size(); ++i) InsertSlot(i);
}

uint32_t StackTable::Intern(const StackCapture& c) {
  if (c.depth == 0 || c.kind == StackKind::kNone || c.depth > kMaxStackDepth) return 0;
  const uint64_t h = HashCapture(c);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask; slots_[i] != 0; i = (i + 1) & mask) {
    const Raw& r = raw_[slots_[i] - 1];
    if (r.hash == h && SameRaw(r, c)) return r.stack_id;
  }
  // A new raw stack.
  const uint32_t id = Resolve(c);
  if (id == 0) return 0;
  if (raw_.size() >= limits_.max_raw) return id;  // resolved, but not remembered raw
  Raw r{h, static_cast<uint32_t>(arena_.size()), c.depth, c.kind, c.flags, id};
  arena_.insert(arena_.end(), c.frames, c.frames + c.depth);
  raw_.push_back(r);
  if (2 * raw_.size() > slots_.size()) {
    Grow();
  } else {
    InsertSlot(static_cast<uint32_t>(raw_.size() - 1));
  }
  return id;
}

uint32_t StackTable::InternFrame(const ResolvedFrame& f) {
  std::string key;
  key.reserve(f.file.size() + f.function.size() + f.qualname.size() + f.build_id.size() + 24);
  key.push_back(static_cast<char>(f.kind));
  key += f.file;
  key.push_back('\0');
  key += f.function;
  key.push_back('\0');
  key += f.qualname;
  key.push_back('\0');
  key += f.build_id;
  key.push_back('\0');
  AppendU64(&key, static_cast<uint64_t>(static_cast<uint32_t>(f.line)));
  AppendU64(&key, f.kind == FrameKind::kNative ? f.module_offset : 0);
  auto it = frame_ids_.find(key);
  if (it != frame_ids_.end()) return it->second;
  if (frames_.size() >= limits_.max_frames) return 0;
  const uint32_t id = static_cast<uint32_t>(frames_.size() + 1);
  frames_.push_back(StackFrameEntry{id, f});
  frame_ids_.emplace(std::move(key), id);
  return id;
}

bool StackTable::Dropped(const ResolvedFrame& f) const {
  if (f.kind != FrameKind::kNative || limits_.drop_leading_native_modules.empty()) return false;
  const size_t slash = f.file.rfind('/');
  const std::string_view base =
      slash == std::string::npos ? std::string_view(f.file) : std::string_view(f.file).substr(slash + 1);
  for (const std::string& prefix : limits_.drop_leading_native_modules) {
    if (!prefix.empty() && base.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

uint32_t StackTable::Resolve(const StackCapture& c) {
  std::vector<uint32_t> ids;
  ids.reserve(c.depth);
  bool leading = true;
  for (int i = 0; i < c.depth; ++i) {
    const ResolvedFrame f = resolver_->Resolve(c.kind, c.frames[i]);
    if (leading && i + 1 < c.depth && Dropped(f)) continue;
    leading = false;
    if (!f.resolved) ++unresolved_;
    const uint32_t id = InternFrame(f);
    if (id == 0) {
      ++dropped_;
      return 0;
    }
    ids.push_back(id);
  }
  const bool truncated = (c.flags & kStackTruncated) != 0;
  std::string key(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(uint32_t));
  key.push_back(truncated ? 1 : 0);
  auto it = stack_ids_.find(key);
  if (it != stack_ids_.end()) return it->second;
  if (stacks_.size() >= limits_.max_stacks) {
    ++dropped_;
    return 0;
  }
  const uint32_t id = static_cast<uint32_t>(stacks_.size() + 1);
  stacks_.push_back(StackEntry{id, std::move(ids), truncated});
  stack_ids_.emplace(std::move(key), id);
  return id;
}

void StackTable::TakeNew(std::vector<StackFrameEntry>* frames, std::vector<StackEntry>* stacks) {
  frames->insert(frames->end(), frames_.begin() + static_cast<long>(frames_sent_), frames_.end());
  stacks->insert(stacks->end(), stacks_.begin() + static_cast<long>(stacks_sent_), stacks_.end());
  frames_sent_ = frames_.size();
  stacks_sent_ = stacks_.size();
}

void StackTable::ResendAll() {
  frames_sent_ = 0;
  stacks_sent_ = 0;
}

size_t StackTable::bytes() const {
  size_t n = raw_.capacity() * sizeof(Raw) + arena_.capacity() * sizeof(FrameRef) +
             slots_.capacity() * sizeof(uint32_t);
  for (const StackFrameEntry& f : frames_) {
    n += sizeof f + f.frame.file.capacity() + f.frame.function.capacity() +
         f.frame.qualname.capacity() + f.frame.build_id.capacity();
  }
  for (const StackEntry& s : stacks_) n += sizeof s + s.frame_ids.capacity() * sizeof(uint32_t);
  // The two key maps hold about as much again.
  return 2 * n;
}

}  // namespace gpscope::inject::stacks
