// tools/render/chrome_stacks.h: call stacks (issue 20) for the Chrome trace
// export: the trace's StackFrame/Stack tables become the trace-event
// format's `stackFrames` dictionary (a tree: each node names its parent,
// outermost frame at the root), and an API event whose call has a stack
// gets `"sf":"<node>"`, the node of its innermost frame. Node ids are
// "<pid>.<n>", unique in the file.
//
//   ChromeStacks stacks;
//   stacks.AddBatch(uid, pid, batch, strings);      // per batch, before its API events
//   std::string sf = stacks.Take(uid, thread, corr);  // "" without a stack
//   stacks.WriteDictionary(out);                      // ,"stackFrames":{...} (nothing if none)
//
// Bounded like the model (stack_builder.h): ids within reader/limits.h,
// kMaxNodes tree nodes, kMaxPending samples waiting for their call.
//
// Thread model: one thread.
#ifndef GPSCOPE_TOOLS_RENDER_CHROME_STACKS_H_
#define GPSCOPE_TOOLS_RENDER_CHROME_STACKS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gpscope/trace.pb.h"

namespace gpscope::render {

class ChromeStacks {
 public:
  static constexpr size_t kMaxNodes = 1 << 22;
  static constexpr size_t kMaxPending = 1 << 18;

  // `strings`: the process's InternedString lookup (id -> text, "" unknown).
  void AddBatch(uint64_t process_uid, uint32_t pid, const proto::EventBatch& batch,
                const std::function<std::string(uint32_t)>& strings);
  // The node of the API call's stack, "" when it has none; the sample is
  // used up.
  std::string Take(uint64_t process_uid, uint32_t thread_id, uint32_t correlation_id);
  // The same as a node index + 1 (0: none), for the HTML report.
  uint32_t TakeNode(uint64_t process_uid, uint32_t thread_id, uint32_t correlation_id);
  // The node of a stack's innermost frame (index + 1, 0: none).
  uint32_t LeafOf(uint64_t process_uid, uint32_t stack_id) const;
  bool any() const { return any_; }
  // `,"stackFrames":{...}` when any stack was seen; nothing otherwise.
  void WriteDictionary(std::ostream& out) const;

  struct Node {
    uint32_t parent = 0;  // index + 1 into nodes_ (0: root)
    uint32_t pid = 0;
    uint32_t text = 0;    // index into texts(): the frame as people read it
    const char* category = "";
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  // Frame text, one per (process, frame id) used: each string of a frame
  // at most kFrameTextBytes, kCutFrameTextBytes past kMaxTextBytes in all.
  const std::vector<std::string>& texts() const { return texts_; }
  const std::string& name(const Node& n) const { return texts_[n.text]; }
  static constexpr size_t kMaxTextBytes = 64u << 20;
  static constexpr size_t kFrameTextBytes = 4096;
  static constexpr size_t kCutFrameTextBytes = 256;

 private:
  struct Process {
    absl::flat_hash_map<uint32_t, proto::StackFrame> frames;  // by id
    absl::flat_hash_map<uint32_t, uint32_t> text_of;  // frame id -> texts_ index
    absl::flat_hash_map<uint32_t, uint32_t> leaf;  // stack id -> node index + 1
    absl::flat_hash_map<uint64_t, uint32_t> child;  // (parent << 32 | frame id) -> node index + 1
    absl::flat_hash_map<uint32_t, std::pair<uint32_t, uint32_t>> pending;  // corr -> (thread, stack)
    std::deque<uint32_t> pending_order;
  };

  bool any_ = false;
  std::vector<Node> nodes_;
  std::vector<std::string> texts_;
  size_t text_bytes_ = 0;
  absl::flat_hash_map<uint64_t, Process> processes_;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_CHROME_STACKS_H_
