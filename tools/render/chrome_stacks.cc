#include "tools/render/chrome_stacks.h"

#include <algorithm>

#include "tools/analyses/sites.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/limits.h"
#include "tools/render/json_writer.h"
#include "tools/render/sites_render.h"

namespace gpscope::render {

void ChromeStacks::AddBatch(uint64_t process_uid, uint32_t pid, const proto::EventBatch& b,
                            const std::function<std::string(uint32_t)>& strings) {
  if (b.stack_frames_size() == 0 && b.stacks_size() == 0 && !b.has_stack_samples()) return;
  any_ = true;
  Process& p = processes_[process_uid];
  for (const proto::StackFrame& f : b.stack_frames()) {
    if (f.id() == 0 || f.id() > reader::kMaxStackFrameId) continue;
    p.frames[f.id()] = f;
  }
  for (const proto::Stack& s : b.stacks()) {
    if (s.id() == 0 || s.id() > reader::kMaxStackId || p.leaf.contains(s.id())) continue;
    // From the outermost frame in: each prefix is one node.
    uint32_t at = 0;
    const int n = std::min(s.frame_ids_size(), reader::kMaxFramesPerStack);
    for (int i = n - 1; i >= 0; --i) {
      const uint32_t fid = s.frame_ids(i);
      auto [it, inserted] = p.child.try_emplace((uint64_t{at} << 32) | fid, 0);
      if (inserted) {
        if (nodes_.size() >= kMaxNodes) {
          p.child.erase(it);
          break;
        }
        auto f = p.frames.find(fid);
        const int kind = f != p.frames.end() ? f->second.kind() : 0;
        auto [ti, new_text] = p.text_of.try_emplace(fid, static_cast<uint32_t>(texts_.size()));
        if (new_text) {  // described once per frame
          model::StackFrameText t;
          t.id = fid;
          if (f != p.frames.end()) {
            const size_t cut = text_bytes_ < kMaxTextBytes ? kFrameTextBytes : kCutFrameTextBytes;
            auto text = [&](uint32_t id) {
              std::string s = strings(id);
              if (s.size() > cut) {
                size_t n = cut;
                while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
                s.resize(n);
                s += "...";
              }
              return s;
            };
            t.defined = true;
            t.kind = kind;
            t.file = text(f->second.file_id());
            t.function = text(f->second.function_id());
            t.qualname = text(f->second.qualname_id());
            t.line = f->second.line();
            t.module_offset = f->second.module_offset();
          }
          texts_.push_back(analyses::DescribeFrame(t).text);
          text_bytes_ += texts_.back().size();
        }
        nodes_.push_back({at, pid, ti->second, FrameKindName(kind)});
        it->second = static_cast<uint32_t>(nodes_.size());
      }
      at = it->second;
    }
    if (at != 0) p.leaf[s.id()] = at;
  }
  if (!b.has_stack_samples()) return;
  std::vector<reader::StackSampleEvent> rows;
  if (!reader::DecodeStackSamples(b, &rows).ok()) return;
  for (const reader::StackSampleEvent& e : rows) {
    if (e.stack_id == 0) continue;
    auto [it, inserted] = p.pending.try_emplace(e.correlation_id);
    it->second = {e.thread_id, e.stack_id};
    if (inserted) p.pending_order.push_back(e.correlation_id);
  }
  // Samples waiting longest (their call never came) go first.
  while (p.pending_order.size() > 2 * kMaxPending) {
    p.pending.erase(p.pending_order.front());
    p.pending_order.pop_front();
  }
}

uint32_t ChromeStacks::TakeNode(uint64_t process_uid, uint32_t thread_id,
                                uint32_t correlation_id) {
  auto pit = processes_.find(process_uid);
  if (pit == processes_.end()) return 0;
  Process& p = pit->second;
  auto it = p.pending.find(correlation_id);
  if (it == p.pending.end() || it->second.first != thread_id) return 0;
  const uint32_t stack = it->second.second;
  p.pending.erase(it);
  auto leaf = p.leaf.find(stack);
  return leaf == p.leaf.end() ? 0 : leaf->second;
}

uint32_t ChromeStacks::LeafOf(uint64_t process_uid, uint32_t stack_id) const {
  auto pit = processes_.find(process_uid);
  if (pit == processes_.end()) return 0;
  auto leaf = pit->second.leaf.find(stack_id);
  return leaf == pit->second.leaf.end() ? 0 : leaf->second;
}

std::string ChromeStacks::Take(uint64_t process_uid, uint32_t thread_id, uint32_t correlation_id) {
  const uint32_t node = TakeNode(process_uid, thread_id, correlation_id);
  if (node == 0) return "";
  return std::to_string(nodes_[node - 1].pid) + "." + std::to_string(node);
}

void ChromeStacks::WriteDictionary(std::ostream& out) const {
  if (!any_) return;
  out << ",\"stackFrames\":{";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (i > 0) out << ",\n";
    out << "\"" << n.pid << "." << (i + 1) << "\":{\"category\":\"" << n.category
        << "\",\"name\":" << JsonWriter::Quote(texts_[n.text]);
    if (n.parent != 0) out << ",\"parent\":\"" << n.pid << "." << n.parent << "\"";
    out << "}";
  }
  out << "}";
}

}  // namespace gpscope::render
