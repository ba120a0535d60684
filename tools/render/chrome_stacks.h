// tools/render/chrome_stacks.h: call stacks (issue 20) for the exports and
// the HTML report: the trace's StackFrame/Stack tables as a tree of nodes
// (each names its parent, outermost frame at the root), written as the
// Chrome trace-event format's `stackFrames` dictionary (an API event whose
// call has a stack gets `"sf":"<node>"`, the node of its innermost frame;
// node ids are "<pid>.<n>", unique in the file), as Perfetto's interned
// callstacks (perfetto_trace.h) and as the report's flame view
// (report_stacks.h).
//
// A frame reads as summary shows it: the frames are read with the model's
// code (model/stack_builder.h FrameText), native ones symbolized from the
// modules' files on this machine (model/symbolizer.h, checked against the
// recorded build id) and described by analyses::DescribeFrame:
// "main.cc:17 step(int) (prog+0x1139)", "train.py:42 train_step".
//
//   ChromeStacks stacks;
//   stacks.AddBatch(tables, batch);                   // per batch, before its API events
//   std::string sf = stacks.Take(uid, thread, corr);  // "" without a stack
//   stacks.Resolve();                                 // names the frames added so far
//   stacks.WriteDictionary(out);                      // ,"stackFrames":{...} (nothing if none)
//
// Resolve() symbolizes each frame once, the frames added since its last
// call together (a module's file is read once per call): the Chrome export
// and the report call it once at the end, the Perfetto export, which writes
// a slice's stack as it goes, after each batch that added frames.
//
// Bounded like the model (stack_builder.h): ids within reader/limits.h,
// kMaxNodes tree nodes, frame text within model::kMaxFrameTextBytes,
// kMaxPending samples waiting for their call.
//
// Thread model: one thread.
#ifndef GPSCOPE_TOOLS_RENDER_CHROME_STACKS_H_
#define GPSCOPE_TOOLS_RENDER_CHROME_STACKS_H_

#include <cstdint>
#include <deque>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gpscope/trace.pb.h"
#include "tools/model/stack_builder.h"
#include "tools/model/stack_model.h"
#include "tools/model/trace_model.h"
#include "tools/reader/process_tables.h"

namespace gpscope::render {

class ChromeStacks {
 public:
  static constexpr size_t kMaxNodes = 1 << 22;
  static constexpr size_t kMaxPending = 1 << 18;

  // The stack tables of a batch of the process of `tables`.
  void AddBatch(const reader::ProcessTables& tables, const proto::EventBatch& batch);
  // The node of the API call's stack, "" when it has none; the sample is
  // used up.
  std::string Take(uint64_t process_uid, uint32_t thread_id, uint32_t correlation_id);
  // The same as a node index + 1 (0: none), for the HTML report.
  uint32_t TakeNode(uint64_t process_uid, uint32_t thread_id, uint32_t correlation_id);
  // The node of a stack's innermost frame (index + 1, 0: none).
  uint32_t LeafOf(uint64_t process_uid, uint32_t stack_id) const;
  bool any() const { return any_; }
  // Symbolizes and describes the frames added since the last call.
  // `symbolized`: a model built in the same pass (the report), whose
  // frames are taken as they are instead of being symbolized again.
  void Resolve(const model::TraceModel* symbolized = nullptr);
  // `,"stackFrames":{...}` when any stack was seen; nothing otherwise.
  void WriteDictionary(std::ostream& out) const;

  struct Node {
    uint32_t parent = 0;  // index + 1 into nodes_ (0: root)
    uint32_t pid = 0;
    uint32_t frame = 0;   // index into frames()
    const char* category = "";
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  // One per (process, frame id) used by a stack, as read and, once
  // resolved, symbolized.
  const std::vector<model::StackFrameText>& frames() const { return frames_; }
  // frames()[frame] as people read it (analyses::DescribeFrame); "" until
  // resolved.
  const std::string& text(size_t frame) const {
    static const std::string* const kNone = new std::string();
    return frame < texts_.size() ? texts_[frame] : *kNone;
  }
  const std::string& name(const Node& n) const { return text(n.frame); }

 private:
  struct Process {
    absl::flat_hash_map<uint32_t, model::FrameRecord> frames;  // by id
    absl::flat_hash_map<uint32_t, uint32_t> frame_of;  // frame id -> frames_ index
    absl::flat_hash_map<uint32_t, uint32_t> leaf;  // stack id -> node index + 1
    absl::flat_hash_map<uint64_t, uint32_t> child;  // (parent << 32 | frame id) -> node index + 1
    absl::flat_hash_map<uint32_t, std::pair<uint32_t, uint32_t>> pending;  // corr -> (thread, stack)
    std::deque<uint32_t> pending_order;
  };

  bool any_ = false;
  std::vector<Node> nodes_;
  std::vector<model::StackFrameText> frames_;
  std::vector<uint64_t> frame_process_;  // frames_[i]'s process uid
  std::vector<std::string> texts_;       // resolved frames' text
  size_t text_bytes_ = 0;                // frames_' strings (model::FrameText)
  absl::flat_hash_map<uint64_t, Process> processes_;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_CHROME_STACKS_H_
