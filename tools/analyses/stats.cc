// tools/analyses/stats.cc: see stats.h.
#include "tools/analyses/stats.h"

#include <algorithm>
#include <cmath>

#include "tools/analyses/gpu_report.h"
#include "tools/analyses/names.h"

namespace gpscope::analyses {
namespace {

uint64_t Duration(uint64_t start_ns, uint64_t end_ns) {
  return end_ns > start_ns ? end_ns - start_ns : 0;
}

// Largest total first, then by name and domain: a stable order for tests.
template <typename Row, typename Total>
void SortRows(std::vector<Row>& rows, Total total) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (total(a) != total(b)) return total(a) > total(b);
    if (a.name != b.name) return a.name < b.name;
    return a.domain < b.domain;
  });
}

}  // namespace

std::string StyledName(std::string_view name, NameStyle style) {
  switch (style) {
    case NameStyle::kShort: return CompactKernelName(name);
    case NameStyle::kBase: return KernelBaseName(name);
    case NameStyle::kFull: break;
  }
  return Demangle(name);
}

DurationSummary Summarize(std::vector<uint64_t>& d) {
  DurationSummary s;
  if (d.empty()) return s;
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  s.count = n;
  for (uint64_t v : d) s.total_ns += v;
  s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(n);
  s.median_ns = n % 2 == 1 ? static_cast<double>(d[n / 2])
                           : (static_cast<double>(d[n / 2 - 1]) + static_cast<double>(d[n / 2])) / 2;
  // Nearest rank: the ceil(0.95 n)-th smallest, in integers (no rounding
  // error at exact multiples).
  const size_t rank = (95 * n + 99) / 100;
  s.p95_ns = d[rank - 1];
  s.min_ns = d.front();
  s.max_ns = d.back();
  if (n > 1) {
    double sum_sq = 0;
    for (uint64_t v : d) {
      const double x = static_cast<double>(v) - s.mean_ns;
      sum_sq += x * x;
    }
    s.stddev_ns = std::sqrt(sum_sq / static_cast<double>(n - 1));
  }
  return s;
}

uint32_t StatsCollector::GroupOf(absl::flat_hash_map<std::string, uint32_t>& index,
                                 std::vector<Group>& groups, std::string_view name,
                                 std::string_view domain) {
  // A NUL cannot be in either part's meaning here: it separates them.
  std::string key(domain);
  key.push_back('\0');
  key.append(name.data(), name.size());
  auto [it, inserted] = index.try_emplace(std::move(key), static_cast<uint32_t>(groups.size()));
  if (inserted) {
    Group g;
    g.name = std::string(name);
    g.domain = std::string(domain);
    groups.push_back(std::move(g));
  }
  return it->second;
}

void StatsCollector::OnBatch(const reader::ResolvedBatch& rb) {
  if (!rb.decode_status.ok()) return;  // counted by the model's completeness
  const reader::ProcessTables& t = rb.tables;
  Process& p = processes_[t.process_uid()];
  const reader::DecodedBatch& e = rb.events;
  // Unknown string ids (hostile or damaged input) resolve to "" (ProcessTables::String).
  for (const format::NvtxRangeEvent& r : e.nvtx_ranges) {
    const uint32_t g = GroupOf(nvtx_index_, nvtx_groups_, t.String(r.name_id), t.String(r.domain_id));
    nvtx_groups_[g].durations.push_back(Duration(r.start_ns, r.end_ns));
    p.ranges.push_back({r.start_ns, r.end_ns, r.thread_id, g});
  }
  for (const format::ApiCallEvent& a : e.api_calls) {
    const uint32_t g = GroupOf(api_index_, api_groups_, t.String(a.api_name_id), "");
    api_groups_[g].durations.push_back(Duration(a.start_ns, a.end_ns));
    if (a.correlation_id != 0) p.calls.push_back({a.start_ns, a.thread_id, a.correlation_id});
  }
  auto op = [&p](uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns) {
    if (correlation_id == 0) return;
    OpSpan& s = p.ops[correlation_id];
    s.start_ns = std::min(s.start_ns, start_ns);
    s.end_ns = std::max(s.end_ns, end_ns);
    ++s.ops;
  };
  for (const format::KernelEvent& k : e.kernels) {
    const uint32_t g = GroupOf(kernel_index_, kernel_groups_, t.String(k.name_id), "");
    kernel_groups_[g].durations.push_back(Duration(k.start_ns, k.end_ns));
    op(k.correlation_id, k.start_ns, k.end_ns);
  }
  for (const format::MemcpyEvent& m : e.memcpys) {
    const uint32_t g = GroupOf(mem_index_, mem_groups_,
                               CopyDirectionName(static_cast<int>(m.copy_kind)), "memcpy");
    mem_groups_[g].durations.push_back(Duration(m.start_ns, m.end_ns));
    mem_groups_[g].bytes += m.bytes;
    op(m.correlation_id, m.start_ns, m.end_ns);
  }
  for (const format::MemsetEvent& m : e.memsets) {
    const uint32_t g = GroupOf(mem_index_, mem_groups_, "memset", "memset");
    mem_groups_[g].durations.push_back(Duration(m.start_ns, m.end_ns));
    mem_groups_[g].bytes += m.bytes;
    op(m.correlation_id, m.start_ns, m.end_ns);
  }
}

StatsReport StatsCollector::Finish(const StatsOptions& options) {
  StatsReport r;
  r.processes = processes_.size();
  auto table = [](std::vector<Group>& groups) {
    std::vector<StatsRow> rows;
    uint64_t all = 0;
    for (Group& g : groups) {
      StatsRow row;
      row.name = g.name;
      row.domain = g.domain;
      row.bytes = g.bytes;
      row.time = Summarize(g.durations);
      all += row.time.total_ns;
      rows.push_back(std::move(row));
    }
    for (StatsRow& row : rows) {
      row.share = all ? static_cast<double>(row.time.total_ns) / static_cast<double>(all) : 0;
    }
    SortRows(rows, [](const StatsRow& x) { return x.time.total_ns; });
    return rows;
  };

  // Kernels: names styled, then groups that now share a name merged.
  {
    std::vector<Group> merged;
    absl::flat_hash_map<std::string, uint32_t> index;
    for (Group& g : kernel_groups_) {
      const uint32_t m = GroupOf(index, merged, StyledName(g.name, options.names), "");
      std::vector<uint64_t>& to = merged[m].durations;
      to.insert(to.end(), g.durations.begin(), g.durations.end());
    }
    r.cuda_gpu_kern_sum = table(merged);
  }

  // The projection, per process and thread: each range takes the calls
  // that began inside it (calls sorted by thread, then start).
  std::vector<std::vector<uint64_t>> projected(nvtx_groups_.size());
  std::vector<uint64_t> range_ns(nvtx_groups_.size(), 0), ops(nvtx_groups_.size(), 0);
  for (auto& [uid, p] : processes_) {
    std::sort(p.calls.begin(), p.calls.end(), [](const Call& a, const Call& b) {
      return a.thread_id != b.thread_id ? a.thread_id < b.thread_id : a.start_ns < b.start_ns;
    });
    for (const Range& range : p.ranges) {
      auto it = std::lower_bound(p.calls.begin(), p.calls.end(), range,
                                 [](const Call& c, const Range& x) {
                                   return c.thread_id != x.thread_id ? c.thread_id < x.thread_id
                                                                     : c.start_ns < x.start_ns;
                                 });
      OpSpan span;
      for (; it != p.calls.end() && it->thread_id == range.thread_id &&
             it->start_ns <= range.end_ns;
           ++it) {
        auto op = p.ops.find(it->correlation_id);
        if (op == p.ops.end()) continue;
        span.start_ns = std::min(span.start_ns, op->second.start_ns);
        span.end_ns = std::max(span.end_ns, op->second.end_ns);
        span.ops += op->second.ops;
      }
      if (span.ops == 0) continue;
      projected[range.group].push_back(Duration(span.start_ns, span.end_ns));
      range_ns[range.group] += Duration(range.start_ns, range.end_ns);
      ops[range.group] += span.ops;
    }
  }
  for (size_t g = 0; g < nvtx_groups_.size(); ++g) {
    if (projected[g].empty()) continue;
    ProjectionRow row;
    row.name = nvtx_groups_[g].name;
    row.domain = nvtx_groups_[g].domain;
    row.ranges = projected[g].size();
    row.total_range_ns = range_ns[g];
    row.projected = Summarize(projected[g]);
    row.gpu_ops = ops[g];
    row.mean_gpu_ops = static_cast<double>(ops[g]) / static_cast<double>(row.ranges);
    r.nvtx_gpu_proj.push_back(std::move(row));
  }
  SortRows(r.nvtx_gpu_proj, [](const ProjectionRow& x) { return x.projected.total_ns; });

  r.nvtx_sum = table(nvtx_groups_);
  r.cuda_api_sum = table(api_groups_);
  r.cuda_gpu_mem_sum = table(mem_groups_);
  return r;
}

}  // namespace gpscope::analyses
