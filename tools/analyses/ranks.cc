// tools/analyses/ranks.cc: see ranks.h.
#include "tools/analyses/ranks.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/analyses/gpu_report.h"

namespace gpscope::analyses {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + hi) / 2;
}

const model::ProcessModel* ProcessOf(const model::TraceModel& model, const model::GpuModel& g) {
  for (const model::ProcessModel& p : model.processes) {
    if (p.process_uid == g.process_uid) return &p;
  }
  return nullptr;
}

using Key = std::pair<model::CollectiveKind, uint32_t>;

// A GPU's collective records by (kind, seq).
std::vector<const model::CollectiveRecord*> ByKey(const model::GpuModel& g) {
  std::vector<const model::CollectiveRecord*> v;
  v.reserve(g.collectives.size());
  for (const model::CollectiveRecord& r : g.collectives) v.push_back(&r);
  std::sort(v.begin(), v.end(), [](const auto* a, const auto* b) {
    return std::tie(a->kind, a->seq) < std::tie(b->kind, b->seq);
  });
  return v;
}

const model::CollectiveRecord* Find(const std::vector<const model::CollectiveRecord*>& v,
                                    const Key& key) {
  auto it = std::lower_bound(v.begin(), v.end(), key, [](const auto* r, const Key& k) {
    return std::make_pair(r->kind, r->seq) < k;
  });
  return it != v.end() && (*it)->kind == key.first && (*it)->seq == key.second ? *it : nullptr;
}

// Keeps the kLateCollectivesKept latest collectives of a GPU, latest first.
// `ahead_ns`: how long before this GPU's start the earliest other GPU began.
void KeepLate(const model::CollectiveRecord& r, double late_ns, double ahead_ns,
              std::vector<LateCollective>* kept) {
  if (late_ns <= 0) return;
  if (kept->size() == kLateCollectivesKept && late_ns <= kept->back().late_ns) return;
  LateCollective c;
  const uint64_t ahead = ahead_ns > 0 ? static_cast<uint64_t>(ahead_ns) : 0;
  c.others_start_ns = r.start_ns > ahead ? r.start_ns - ahead : 0;
  c.start_ns = r.start_ns;
  c.end_ns = r.end_ns;
  c.late_ns = late_ns;
  c.kind = r.kind;
  c.seq = r.seq;
  auto at = std::upper_bound(kept->begin(), kept->end(), late_ns,
                             [](double v, const LateCollective& x) { return v > x.late_ns; });
  kept->insert(at, c);
  if (kept->size() > kLateCollectivesKept) kept->pop_back();
}

void MatchCollectives(const model::TraceModel& model, const SummaryReport& summary,
                      RankReport& out) {
  std::vector<size_t> members;  // rows with collectives
  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (!model.gpus[out.rows[i].gpu_index].collectives.empty()) members.push_back(i);
  }
  if (members.size() < 2) return;
  uint32_t stride = 1;
  std::vector<std::vector<const model::CollectiveRecord*>> keyed;
  std::vector<const model::ProcessModel*> procs;
  // Steady windows [start, end): WHERE links show typical collectives, not the warm-up's.
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  for (size_t m : members) {
    const model::GpuModel& g = model.gpus[out.rows[m].gpu_index];
    const size_t gi = out.rows[m].gpu_index;
    windows.emplace_back(gi < summary.gpus.size() ? summary.gpus[gi].window.start_ns : g.first_ns,
                         gi < summary.gpus.size() ? summary.gpus[gi].window.end_ns : g.last_ns);
    stride = std::max(stride, g.collective_stride);
    keyed.push_back(ByKey(g));
    procs.push_back(ProcessOf(model, g));
  }
  out.stride = stride;
  const size_t n = members.size();
  std::vector<double> late(n, 0), wait(n, 0), last(n, 0);
  std::vector<double> end_spreads;
  std::vector<double> starts(n), ends(n), durations(n), others;
  std::vector<const model::CollectiveRecord*> records(n);
  std::vector<std::vector<LateCollective>> late_kept(n);
  for (const model::CollectiveRecord* r0 : keyed[0]) {
    if (r0->seq % stride != 0) continue;
    const Key key{r0->kind, r0->seq};
    bool everywhere = true;
    for (size_t i = 0; i < n && everywhere; ++i) {
      const model::CollectiveRecord* r = i == 0 ? r0 : Find(keyed[i], key);
      if (r == nullptr) {
        everywhere = false;
        break;
      }
      const reader::ClockAlign* clocks = procs[i] != nullptr ? &procs[i]->clocks : nullptr;
      records[i] = r;
      starts[i] = static_cast<double>(clocks ? clocks->ToRealtimeNs(r->start_ns) : r->start_ns);
      ends[i] = static_cast<double>(clocks ? clocks->ToRealtimeNs(r->end_ns) : r->end_ns);
      durations[i] = static_cast<double>(r->end_ns - r->start_ns);
    }
    if (!everywhere) continue;
    ++out.matched;
    const double min_duration = *std::min_element(durations.begin(), durations.end());
    const size_t latest =
        static_cast<size_t>(std::max_element(starts.begin(), starts.end()) - starts.begin());
    for (size_t i = 0; i < n; ++i) {
      others.clear();
      for (size_t j = 0; j < n; ++j) {
        if (j != i) others.push_back(starts[j]);
      }
      const double late_i = starts[i] - Median(others);
      late[i] += late_i;
      wait[i] += durations[i] - min_duration;
      if (records[i]->start_ns >= windows[i].first && records[i]->start_ns < windows[i].second) {
        KeepLate(*records[i], late_i,
                 starts[i] - *std::min_element(others.begin(), others.end()), &late_kept[i]);
      }
    }
    last[latest] += 1;
    // Only collectives every rank leaves together bound the alignment: a
    // broadcast's or reduce's root may finish before the others receive
    // (seen on the H200: DDP's start-up broadcasts end 17-34 ms apart).
    const model::CollectiveKind k = r0->kind;
    if (k != model::CollectiveKind::kAllReduce && k != model::CollectiveKind::kAllGather &&
        k != model::CollectiveKind::kReduceScatter && k != model::CollectiveKind::kAllToAll) {
      continue;
    }
    end_spreads.push_back(*std::max_element(ends.begin(), ends.end()) -
                          *std::min_element(ends.begin(), ends.end()));
  }
  if (out.matched == 0) return;
  const double matched = static_cast<double>(out.matched);
  for (size_t i = 0; i < n; ++i) {
    RankRow& row = out.rows[members[i]];
    row.collectives = out.matched;
    row.mean_late_ns = late[i] / matched;
    row.last_share = last[i] / matched;
    row.wait_ns = wait[i] * stride;
    row.latest = std::move(late_kept[i]);
  }
  if (end_spreads.empty()) return;
  std::sort(end_spreads.begin(), end_spreads.end());
  out.end_spread_max_ns = end_spreads.back();
  out.end_spread_p95_ns = end_spreads[static_cast<size_t>(0.95 * static_cast<double>(end_spreads.size() - 1))];
  out.end_spread_ns = Median(std::move(end_spreads));
}

}  // namespace

RankReport ComputeRanks(const model::TraceModel& model, const SummaryReport& summary) {
  RankReport out;
  for (const GpuReport& g : summary.gpus) {
    const model::GpuModel& m = *g.gpu;
    const model::ProcessModel* p = ProcessOf(model, m);
    RankRow row;
    row.gpu_index = g.gpu_index;
    row.rank = p != nullptr ? p->rank : -1;
    row.pid = m.pid;
    row.hostname = m.hostname;
    row.device_id = m.device_id;
    row.label = row.rank >= 0 ? absl::StrCat("rank ", row.rank, " (GPU ", m.device_id,
                                             m.hostname.empty() ? "" : " on ", m.hostname, ")")
                              : absl::StrCat("pid ", m.pid, " GPU ", m.device_id,
                                             m.hostname.empty() ? "" : " on ", m.hostname);
    row.step_source = g.step_source;
    if (g.step_period.count > 0) {
      row.step_p50_ns = g.step_period.p50;
      row.step_p95_ns = g.step_period.p95;
    }
    row.window_ns = g.traced_window_ns();
    row.compute_busy_ns = g.compute_busy_ns;
    row.comm_busy_ns = g.comm_busy_ns;
    row.busy_share = g.busy_share;
    row.idle_ns = std::max(0.0, row.window_ns - g.busy_ns);
    row.comm_overlap = g.comm_overlap;
    if (p != nullptr) {
      row.clock_offset_ns = p->clocks.offset_ns();
      row.clock_drift_ns = p->clocks.drift_ns();
      row.clock_snapshots = p->clocks.size();
    }
    out.rows.push_back(std::move(row));
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const RankRow& a, const RankRow& b) {
    const int32_t ra = a.rank < 0 ? INT32_MAX : a.rank;
    const int32_t rb = b.rank < 0 ? INT32_MAX : b.rank;
    return std::tie(ra, a.pid, a.device_id) < std::tie(rb, b.pid, b.device_id);
  });
  MatchCollectives(model, summary, out);

  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (out.rows[i].collectives > 0) out.late_order.push_back(i);
  }
  std::stable_sort(out.late_order.begin(), out.late_order.end(), [&out](size_t a, size_t b) {
    return out.rows[a].mean_late_ns > out.rows[b].mean_late_ns;
  });
  // The straggler: the latest starter, if late enough to trust (ranks.h).
  int best = -1;
  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (out.rows[i].collectives == 0) continue;
    if (best < 0 || out.rows[i].mean_late_ns > out.rows[static_cast<size_t>(best)].mean_late_ns) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0 || out.matched < kStragglerMinCollectives) return out;
  const RankRow& s = out.rows[static_cast<size_t>(best)];
  const double min_late = std::max({kStragglerMinLateNs, kStragglerStepShare * s.step_p50_ns,
                                    2 * out.end_spread_ns});
  if (s.last_share < kStragglerLastShare || s.mean_late_ns < min_late) return out;
  out.straggler = best;
  std::vector<double> others;
  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (static_cast<int>(i) != best && out.rows[i].collectives > 0) {
      others.push_back(out.rows[i].compute_busy_ns / std::max(1.0, out.rows[i].window_ns));
    }
  }
  const double median = Median(others);
  if (median > 0) {
    out.straggler_excess_compute = s.compute_busy_ns / std::max(1.0, s.window_ns) / median - 1;
  }
  return out;
}

}  // namespace gpscope::analyses
