#include "tools/render/chrome_stacks.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "tools/analyses/sites.h"
#include "tools/model/symbolizer.h"
#include "tools/reader/batch_decode.h"
#include "tools/reader/limits.h"
#include "tools/render/json_writer.h"
#include "tools/render/sites_render.h"

namespace gpscope::render {

void ChromeStacks::AddBatch(const reader::ProcessTables& tables, const proto::EventBatch& b) {
  if (b.stack_frames_size() == 0 && b.stacks_size() == 0 && !b.has_stack_samples()) return;
  any_ = true;
  Process& p = processes_[tables.process_uid()];
  for (const proto::StackFrame& f : b.stack_frames()) {
    if (f.id() == 0 || f.id() > reader::kMaxStackFrameId) continue;
    p.frames[f.id()] = model::ReadFrameRecord(f);
  }
  auto string_of = [&tables](uint32_t id) -> std::string_view { return tables.String(id); };
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
        // Read once per frame, with the strings defined by now (a frame's
        // strings come no later than the frame: docs/stacks.md).
        auto [fi, new_frame] = p.frame_of.try_emplace(fid, static_cast<uint32_t>(frames_.size()));
        if (new_frame) {
          auto f = p.frames.find(fid);
          frames_.push_back(model::FrameText(fid, f != p.frames.end() ? &f->second : nullptr,
                                             string_of, &text_bytes_));
          frame_process_.push_back(tables.process_uid());
        }
        nodes_.push_back(
            {at, tables.pid(), fi->second, FrameKindName(frames_[fi->second].kind)});
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

void ChromeStacks::Resolve(const model::TraceModel* symbolized) {
  if (texts_.size() == frames_.size()) return;
  // The model's frames, symbolized already, by (process uid, frame id).
  absl::flat_hash_map<std::pair<uint64_t, uint32_t>, const model::StackFrameText*> known;
  if (symbolized != nullptr) {
    for (const model::ProcessModel& p : symbolized->processes) {
      for (const model::StackFrameText& f : p.stacks.frames) {
        if (f.defined) known.try_emplace(std::pair(p.process_uid, f.id), &f);
      }
    }
  }
  // The others go to the symbolizer together: each module's file is read
  // once for all of them.
  std::vector<model::StackFrameText> todo;
  std::vector<size_t> todo_at;
  for (size_t i = texts_.size(); i < frames_.size(); ++i) {
    model::StackFrameText& f = frames_[i];
    if (f.kind != proto::FRAME_NATIVE) continue;
    if (auto k = known.find(std::pair(frame_process_[i], f.id)); k != known.end()) {
      f.symbol = k->second->symbol;
      f.source_file = k->second->source_file;
      f.source_line = k->second->source_line;
      continue;
    }
    todo_at.push_back(i);
    todo.push_back(std::move(f));
  }
  // The notes (a module whose build id differs) are summary's to say
  // (sites_render.cc): the export and the report's timeline only name frames.
  std::vector<model::SymbolNote> notes;
  model::SymbolizeFrames(&todo, &notes);
  for (size_t k = 0; k < todo.size(); ++k) frames_[todo_at[k]] = std::move(todo[k]);
  texts_.reserve(frames_.size());
  for (size_t i = texts_.size(); i < frames_.size(); ++i) {
    texts_.push_back(analyses::DescribeFrame(frames_[i]).text);
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
        << "\",\"name\":" << JsonWriter::Quote(name(n));
    if (n.parent != 0) out << ",\"parent\":\"" << n.pid << "." << n.parent << "\"";
    out << "}";
  }
  out << "}";
}

}  // namespace gpscope::render
