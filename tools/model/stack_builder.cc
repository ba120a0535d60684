#include "tools/model/stack_builder.h"

#include <algorithm>
#include <utility>

#include "tools/model/symbolizer.h"
#include "tools/model/trace_model.h"
#include "tools/reader/limits.h"

namespace gpscope::model {
namespace {

// A sync this close after the gap began still caused it (trace_model.h).
constexpr uint64_t kSlackNs = kSyncSlackNs;
// Stacked sync calls looked at, from the latest, for one gap.
constexpr int kSyncScan = 64;

// `s` cut to `max_bytes` at a UTF-8 boundary (an ellipsis marks the cut).
std::string Cut(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  std::string out(s.substr(0, max_bytes + 1));  // CutUtf8 looks at the byte past the cut
  reader::CutUtf8(&out, max_bytes);
  return out + "...";
}

}  // namespace

FrameRecord ReadFrameRecord(const proto::StackFrame& f) {
  FrameRecord r;
  r.kind = static_cast<uint8_t>(f.kind() >= 0 && f.kind() <= 2 ? f.kind() : 0);
  r.defined = true;
  r.line = f.line();
  r.file_id = f.file_id();
  r.function_id = f.function_id();
  r.qualname_id = f.qualname_id();
  r.build_id_id = f.build_id_id();
  r.module_offset = f.module_offset();
  return r;
}

StackFrameText FrameText(uint32_t id, const FrameRecord* record,
                         absl::FunctionRef<std::string_view(uint32_t)> string_of,
                         size_t* text_bytes) {
  StackFrameText t;
  t.id = id;
  if (record == nullptr || !record->defined) return t;
  const FrameRecord& f = *record;
  t.defined = true;
  t.kind = f.kind;
  const size_t cut = *text_bytes < kMaxFrameTextBytes ? kFrameTextBytes : kCutFrameTextBytes;
  t.file = Cut(string_of(f.file_id), cut);
  t.function = Cut(string_of(f.function_id), cut);
  t.qualname = Cut(string_of(f.qualname_id), cut);
  t.build_id = Cut(string_of(f.build_id_id), cut);
  *text_bytes += t.file.size() + t.function.size() + t.qualname.size() + t.build_id.size();
  t.line = f.line;
  t.module_offset = f.module_offset;
  return t;
}

void StackBuilder::AddTables(const proto::EventBatch& b) {
  if (!HasTables(b)) return;
  model_.present = true;
  for (const proto::StackFrame& f : b.stack_frames()) {
    const uint32_t id = f.id();
    if (id == 0 || id > reader::kMaxStackFrameId) {  // the reader drops these; never size by them
      ++model_.tables_dropped;
      continue;
    }
    if (id >= frames_.size()) frames_.resize(std::max<size_t>(id + 1, frames_.size() * 3 / 2));
    frames_[id] = ReadFrameRecord(f);
  }
  for (const proto::Stack& s : b.stacks()) {
    const uint32_t id = s.id();
    const int n = std::min(s.frame_ids_size(), reader::kMaxFramesPerStack);
    if (id == 0 || id > reader::kMaxStackId || frame_refs_.size() + n > kMaxFrameRefs) {
      ++model_.tables_dropped;
      continue;
    }
    if (id >= stacks_.size()) stacks_.resize(std::max<size_t>(id + 1, stacks_.size() * 3 / 2));
    Stack& r = stacks_[id];
    if (r.defined && r.count == n &&
        std::equal(s.frame_ids().begin(), s.frame_ids().begin() + n,
                   frame_refs_.begin() + r.offset)) {
      continue;  // re-sent after a lost chunk: the same stack
    }
    r.offset = static_cast<uint32_t>(frame_refs_.size());
    r.count = static_cast<uint16_t>(n);
    r.defined = true;
    r.truncated = s.truncated() || s.frame_ids_size() > n;
    frame_refs_.insert(frame_refs_.end(), s.frame_ids().begin(), s.frame_ids().begin() + n);
  }
  if (!b.has_stack_samples()) return;
  rows_.clear();
  if (!reader::DecodeStackSamples(b, &rows_).ok()) {
    ++model_.undecodable;
    return;
  }
  for (const reader::StackSampleEvent& e : rows_) {
    ++model_.stack_samples;
    if (e.stack_id == 0) {
      ++model_.no_stack;
      continue;
    }
    auto [it, inserted] = pending_.try_emplace(e.correlation_id);
    if (!inserted) ++model_.unjoined;  // the same id twice: the first one never joined
    it->second = {e.timestamp_ns, e.thread_id, e.stack_id, e.trigger};
    if (inserted) pending_order_.push_back(e.correlation_id);
  }
  // Rows whose call did not come within the retention time (or past the
  // bound) never will.
  while (!pending_order_.empty()) {
    auto it = pending_.find(pending_order_.front());
    if (it != pending_.end()) {
      const bool stale = it->second.timestamp_ns + retention_ns_ < latest_api_ns_;
      if (!stale && pending_.size() <= kMaxPendingSamples) break;
      pending_.erase(it);
      ++model_.unjoined;
    }
    pending_order_.pop_front();
  }
}

void StackBuilder::OnApiCall(const format::ApiCallEvent& a, Call call, bool issues_work) {
  latest_api_ns_ = std::max(latest_api_ns_, a.start_ns);
  uint32_t stack = 0;
  bool sampled = false;
  bool main_thread = false;
  auto it = pending_.find(a.correlation_id);
  if (it != pending_.end() && it->second.thread_id == a.thread_id) {
    stack = it->second.stack_id;
    sampled = it->second.trigger == proto::STACK_SAMPLED;
    main_thread = it->second.trigger == proto::STACK_SYNC_MAIN_THREAD;
    pending_.erase(it);  // its entry in pending_order_ is skipped when pruned
    ++model_.joined;
    if (!StackDefined(stack)) {
      ++model_.unknown_stack_ids;
      stack = 0;
    }
  }
  const uint64_t duration = a.end_ns - a.start_ns;
  LastCall* last = nullptr;
  if (auto t = last_call_.find(a.thread_id); t != last_call_.end()) {
    last = &t->second;
  } else if (last_call_.size() < kMaxThreads) {
    last = &last_call_[a.thread_id];
    *last = {0, 0, 0};
  }
  if (call == Call::kSync || call == Call::kImplicit) {
    const bool implicit = call == Call::kImplicit;
    if (stack != 0) {
      StackCharge c;
      c.start_ns = a.start_ns;
      c.length_ns = duration;
      c.stack = stack;
      c.kind = StackCharge::kSyncCall;
      c.flags = (implicit ? StackCharge::kImplicit : 0) | (main_thread ? StackCharge::kMainThread : 0);
      Charge(c);
      const SyncCall s{a.start_ns, a.end_ns, stack, implicit};
      if (syncs_.empty() || syncs_.back().start_ns <= s.start_ns) {
        syncs_.push_back(s);
      } else {
        auto at = std::upper_bound(syncs_.begin(), syncs_.end(), s.start_ns,
                                   [](uint64_t t, const SyncCall& c) { return t < c.start_ns; });
        if (syncs_.end() - at <= kSyncScan) syncs_.insert(at, s);  // else far out of order: dropped
      }
      if (syncs_.size() > kMaxSyncCalls) syncs_.pop_front();
    } else {
      ++model_.sync_calls_unstacked;
      model_.sync_blocked_unstacked_ns += duration;
    }
  }
  if (issues_work && stack != 0) {
    if (call == Call::kLaunch) ++weights_[stack].launches;
    Launch l;
    l.start_ns = a.start_ns;
    l.end_ns = a.end_ns;
    l.stack_id = stack;
    l.sampled = sampled && call == Call::kLaunch;
    if (last != nullptr && last->end_ns != 0 && last->end_ns <= a.start_ns) {
      l.prev_end_ns = last->end_ns;
      l.prev_stack = last->stack_id;
    } else {
      l.prev_end_ns = a.start_ns;  // no earlier call on this thread: the trace's edge
    }
    auto [li, inserted] = launches_.try_emplace(a.correlation_id, l);
    if (!inserted) {
      RetireLaunch(li->second);
      li->second = l;
    } else {
      launch_order_.push_back(a.correlation_id);
    }
    while (launches_.size() > kMaxLaunches && !launch_order_.empty()) {
      auto old = launches_.find(launch_order_.front());
      launch_order_.pop_front();
      if (old == launches_.end()) continue;
      RetireLaunch(old->second);
      launches_.erase(old);
    }
  }
  if (last != nullptr && a.start_ns >= last->start_ns) *last = {a.start_ns, a.end_ns, stack};
}

GapStacks StackBuilder::ResolveGap(uint64_t a, uint64_t b, uint64_t sync_ns, bool after_sync,
                                   uint32_t correlation_id, uint32_t readback_correlation) {
  GapStacks g;
  g.start_ns = a;
  const Launch* l = nullptr;
  if (auto it = launches_.find(correlation_id); it != launches_.end()) l = &it->second;
  if (sync_ns > 0 || after_sync) {
    // The stacked sync the gap began in (started by a + slack, not returned
    // at a), latest end first; else the stacked implicit sync overlapping
    // the gap most.
    const SyncCall* best = nullptr;
    uint64_t best_overlap = 0;
    auto it = std::upper_bound(syncs_.begin(), syncs_.end(), b,
                               [](uint64_t t, const SyncCall& c) { return t < c.start_ns; });
    for (int n = 0; n < kSyncScan && it != syncs_.begin(); ++n) {
      --it;
      if (it->end_ns < a) continue;
      if (it->start_ns <= a + kSlackNs) {
        if (best == nullptr || best->start_ns > a + kSlackNs || it->end_ns > best->end_ns) {
          best = &*it;
        }
        continue;
      }
      // A call that did not begin the gap can only have held it up as an
      // implicit sync in the middle of it (host_calls.h: Classify counts
      // those wherever they overlap the gap).
      if (!it->implicit) continue;
      const uint64_t overlap = std::min(it->end_ns, b) - it->start_ns;
      if (best == nullptr || (best->start_ns > a + kSlackNs && overlap > best_overlap)) {
        best = &*it;
        best_overlap = overlap;
      }
    }
    if (best != nullptr) {
      g.sync_stack = best->stack_id;
      g.sync_implicit = best->implicit;
      g.began_in_sync = best->start_ns <= a + kSlackNs;
    }
    if (best != nullptr && l != nullptr) {
      g.host_between_ns = l->start_ns > best->end_ns ? l->start_ns - best->end_ns : 0;
    }
    // No stacked sync: a read-back's call (the copy whose end began the gap).
    if (best == nullptr && readback_correlation != 0) {
      if (auto r = launches_.find(readback_correlation); r != launches_.end()) {
        g.sync_stack = r->second.stack_id;
        g.began_in_sync = true;
        g.readback = true;
        if (l != nullptr) {
          g.host_between_ns = l->start_ns > r->second.end_ns ? l->start_ns - r->second.end_ns : 0;
        }
      }
    }
  }
  if (l != nullptr) {
    g.launch_known = true;
    g.launch_stack = l->stack_id;
    g.from_stack = l->prev_stack;
    if (g.sync_stack == 0) g.host_between_ns = l->start_ns - l->prev_end_ns;
  }
  if (g.began_in_sync) g.from_stack = g.sync_stack;
  else if (g.sync_stack != 0 && l != nullptr) g.host_between_ns = l->start_ns - l->prev_end_ns;
  return g;
}

void StackBuilder::ApplyGap(const GapStacks& s, uint64_t sync_ns, uint64_t host_ns,
                            bool after_sync) {
  // The parts as model_builder's ApplyGap lays them on the timeline: the
  // sync and implicit waits from the gap's start, then the host wait.
  if (sync_ns > 0) {
    if (s.sync_stack != 0) {
      StackCharge c;
      c.start_ns = s.start_ns;
      c.length_ns = sync_ns;
      c.stack = s.sync_stack;
      c.kind = StackCharge::kGapSync;
      c.flags = s.sync_implicit ? StackCharge::kImplicit : 0;
      Charge(c);
      model_.gpu_idle_attributed_ns += sync_ns;
    } else {
      model_.gpu_idle_unattributed_ns += sync_ns;
    }
  }
  if (host_ns == 0) return;
  StackCharge c;
  c.start_ns = s.start_ns + sync_ns;
  c.length_ns = host_ns;
  c.host_between_ns = s.host_between_ns;
  c.flags = StackCharge::kEdge;
  if (after_sync && s.began_in_sync) {
    c.kind = StackCharge::kGapHostAfter;
    c.stack = s.sync_stack;  // = s.from_stack
    c.other = s.launch_stack;
    if (sync_ns == 0) c.flags |= StackCharge::kCountsGap;
    if (s.readback) c.flags |= StackCharge::kReadback;
  } else if (s.launch_known) {
    c.kind = StackCharge::kGapHostBefore;
    c.stack = s.launch_stack;
    c.other = s.from_stack;
  } else {
    model_.gpu_idle_unattributed_ns += host_ns;
    return;
  }
  Charge(c);
  model_.gpu_idle_attributed_ns += host_ns;
  StackEdge e;
  e.from_stack = s.from_stack;
  e.to_stack = s.launch_stack;
  auto it = edges_.find(e.key());
  if (it == edges_.end()) {
    if (edges_.size() >= kMaxEdges) return;
    it = edges_.try_emplace(e.key(), e).first;
  }
  ++it->second.gaps;
  it->second.gpu_host_ns += host_ns;
  it->second.host_ns += s.host_between_ns;
}

void StackBuilder::Charge(const StackCharge& c) {
  weights_[c.stack].Add(c, c.length_ns, /*counted=*/true);
  if (charges_.size() >= max_charges_) {
    ++model_.charges_dropped;
    return;
  }
  charges_.push_back(c);
  model_.longest_charge_ns = std::max(model_.longest_charge_ns, c.length_ns);
}

void StackBuilder::OnKernelSwept(uint32_t correlation_id, uint64_t duration_ns,
                                 uint64_t watermark_ns) {
  if (auto it = launches_.find(correlation_id); it != launches_.end()) {
    it->second.kernel_ns += static_cast<double>(duration_ns);
  }
  if (watermark_ns > retention_ns_) PruneLaunches(watermark_ns - retention_ns_);
}

void StackBuilder::PruneLaunches(uint64_t before_ns) {
  while (!launch_order_.empty()) {
    auto it = launches_.find(launch_order_.front());
    if (it != launches_.end()) {
      if (it->second.start_ns >= before_ns) return;
      RetireLaunch(it->second);
      launches_.erase(it);
    }
    launch_order_.pop_front();
  }
  // Stacked syncs older than that cannot span a gap still to be swept.
  while (!syncs_.empty() && syncs_.front().end_ns < before_ns) syncs_.pop_front();
}

void StackBuilder::RetireLaunch(const Launch& l) {
  if (!l.sampled) return;
  StackWeights& w = weights_[l.stack_id];
  ++w.samples;
  w.sampled_kernel_ns += l.kernel_ns;
  w.sampled_kernel_ns2 += l.kernel_ns * l.kernel_ns;
  ++model_.samples;
  model_.sampled_kernel_ns += l.kernel_ns;
  model_.sampled_kernel_ns2 += l.kernel_ns * l.kernel_ns;
}

StackModel StackBuilder::Finish(const std::vector<std::string>& strings) {
  for (const auto& [corr, l] : launches_) RetireLaunch(l);
  launches_.clear();
  launch_order_.clear();
  model_.unjoined += pending_.size();
  pending_.clear();
  pending_order_.clear();
  StackModel m = std::move(model_);
  model_ = StackModel();
  // The stacks that cost something, in id order; their frames, each once.
  std::vector<uint32_t> ids;
  ids.reserve(weights_.size());
  for (const auto& [id, w] : weights_) ids.push_back(id);
  for (const auto& [key, e] : edges_) {  // an edge's stacks are shown even when they cost nothing
    if (e.from_stack != 0 && !weights_.contains(e.from_stack)) ids.push_back(e.from_stack);
    if (e.to_stack != 0 && !weights_.contains(e.to_stack)) ids.push_back(e.to_stack);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  absl::flat_hash_map<uint32_t, uint32_t> frame_index;  // frame id -> index into m.frames
  size_t text_bytes = 0;
  auto string_of = [&strings](uint32_t id) -> std::string_view {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view();
  };
  for (uint32_t id : ids) {
    WeightedStack ws;
    ws.id = id;
    if (auto it = weights_.find(id); it != weights_.end()) ws.w = it->second;
    if (StackDefined(id)) {
      const Stack& s = stacks_[id];
      ws.defined = true;
      ws.truncated = s.truncated;
      ws.frames.reserve(s.count);
      for (uint32_t i = 0; i < s.count; ++i) {
        const uint32_t fid = frame_refs_[s.offset + i];
        auto [fi, inserted] = frame_index.try_emplace(fid, static_cast<uint32_t>(m.frames.size()));
        if (inserted) {
          const FrameRecord* f = fid < frames_.size() ? &frames_[fid] : nullptr;
          StackFrameText t = FrameText(fid, f, string_of, &text_bytes);
          if (!t.defined) ++m.unknown_frame_ids;
          m.frames.push_back(std::move(t));
        }
        ws.frames.push_back(fi->second);
      }
    }
    m.stacks.push_back(std::move(ws));
  }
  // Native frames of non-exported functions came as module + offset only:
  // their names and lines from the modules' files here (symbolizer.h).
  m.frames_symbolized = SymbolizeFrames(&m.frames, &m.symbol_notes);
  for (const auto& [key, e] : edges_) m.edges.push_back(e);
  std::sort(m.edges.begin(), m.edges.end(), EdgeBefore);
  // Charges arrive nearly in time order (gaps are applied up to a reorder
  // window late): sorted by start for SitesInWindow's binary search.
  std::stable_sort(charges_.begin(), charges_.end(),
                   [](const StackCharge& x, const StackCharge& y) { return x.start_ns < y.start_ns; });
  m.charges = std::move(charges_);
  charges_ = {};
  weights_.clear();
  edges_.clear();
  return m;
}

}  // namespace gpscope::model
