// tests/tools/comm_test.cc: communication and multi-rank analyses on
// synthetic traces: NCCL kernel naming (old, older and new), comm/compute
// overlap, clock alignment, the per-rank comparison and the straggler rule
// (a planted straggler is named although the processes' CUPTI clocks are
// seconds apart; a balanced job yields no finding), and the
// low-comm-overlap rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/testing/trace_builder.h"
#include "tools/analyses/ranks.h"
#include "tools/analyses/rules.h"
#include "tools/analyze/cli.h"
#include "tools/analyze/summary.h"
#include "tools/reader/clock_align.h"
#include "tools/model/collectives.h"
#include "tools/model/model_builder.h"

namespace gpscope {
namespace {

using analyses::Finding;
using analyses::Severity;
using model::CollectiveKind;
using testing::TraceBuilder;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;
constexpr uint64_t kReal0 = 1'700'000'000'000'000'000;  // CLOCK_REALTIME at the job's start

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "comm_test." + std::to_string(getpid()) + "." + name + ".gpscope";
}

std::vector<std::string> WarningRules(const std::vector<Finding>& findings) {
  std::vector<std::string> ids;
  for (const Finding& f : findings) {
    if (f.severity >= Severity::kWarning) ids.push_back(f.rule);
  }
  return ids;
}

std::string Describe(const std::vector<Finding>& findings) {
  std::string s;
  for (const Finding& f : findings) {
    s += f.rule + " (" + analyses::SeverityName(f.severity) + "): " + f.summary + "\n";
  }
  return s;
}

std::unique_ptr<analyze::SummaryResult> Analyze(const std::vector<std::string>& paths) {
  auto r = analyze::ComputeSummaryResult(paths, model::ModelOptions{}, analyses::ReportOptions{});
  for (const std::string& p : paths) unlink(p.c_str());
  return r;
}

format::KernelEvent Kernel(TraceBuilder::Process& p, uint64_t start_ns, uint64_t end_ns,
                           std::string_view name, uint32_t stream) {
  format::KernelEvent k{};
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  k.name_id = p.Intern(name);
  k.context_id = 1;
  k.stream_id = stream;
  return k;
}

// ------------------------------------------------------------ naming --

TEST(CollectivesTest, ClassifiesOldOlderAndNewNcclKernelNames) {
  EXPECT_EQ(model::ClassifyCommKernel("ncclKernel_AllReduce_RING_LL_Sum_float"),
            CollectiveKind::kAllReduce);
  EXPECT_EQ(model::ClassifyCommKernel("ncclAllReduceRingLLKernel_sum_f32"),
            CollectiveKind::kAllReduce);
  EXPECT_EQ(model::ClassifyCommKernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            CollectiveKind::kAllReduce);
  EXPECT_EQ(model::ClassifyCommKernel(
                "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            CollectiveKind::kAllReduce);
  EXPECT_EQ(model::ClassifyCommKernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
            CollectiveKind::kSendRecv);
  EXPECT_EQ(model::ClassifyCommKernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),
            CollectiveKind::kSendRecv);
  EXPECT_EQ(model::ClassifyCommKernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
            CollectiveKind::kReduceScatter);
  EXPECT_EQ(model::ClassifyCommKernel("ncclKernel_AllGather_RING_LL_Sum_int8_t"),
            CollectiveKind::kAllGather);
  EXPECT_EQ(model::ClassifyCommKernel("ncclDevKernel_Broadcast_RING_LL"),
            CollectiveKind::kBroadcast);
  EXPECT_EQ(model::ClassifyCommKernel("ncclKernel_Reduce_RING_LL_Sum_half"),
            CollectiveKind::kReduce);
  EXPECT_EQ(model::ClassifyCommKernel("ncclDevKernel_Generic_1"), CollectiveKind::kOther);
  // Not communication: ordinary kernels, even with "reduce" or NCCL types in
  // their parameters.
  EXPECT_EQ(model::ClassifyCommKernel("_Z6squarePfi"), CollectiveKind::kNone);
  EXPECT_EQ(model::ClassifyCommKernel("reduce_kernel<128, 4>"), CollectiveKind::kNone);
  EXPECT_EQ(model::ClassifyCommKernel("my_kernel(ncclDevKernelArgs*)"), CollectiveKind::kNone);
  // NVTX: only NCCL's domain.
  EXPECT_EQ(model::ClassifyCommRange("NCCL", "ncclAllReduce"), CollectiveKind::kAllReduce);
  EXPECT_EQ(model::ClassifyCommRange("NCCL", "ncclGroupEnd"), CollectiveKind::kOther);
  EXPECT_EQ(model::ClassifyCommRange("", "ncclAllReduce"), CollectiveKind::kNone);
}

// ----------------------------------------------------------- clocks --

// Offsets at the int64 limits (hostile clock snapshots; analyzer_fuzz found
// the signed overflow in drift_ns): the drift and the mapping stay defined.
TEST(ClockAlignTest, OffsetsAtTheLimitsDoNotOverflow) {
  reader::ClockAlign c;
  c.Add(1'000, 1'000 + 1'699'999'999'000'000'000ull);   // offset ~ +1.7e18
  c.Add(3'000, 3'000 + 0x8000000000000000ull);           // offset INT64_MIN
  EXPECT_EQ(c.drift_ns(), 1'699'999'999'000'000'000ull + 0x8000000000000000ull);
  // Between the two: the span does not fit in int64, so the nearer point's.
  EXPECT_EQ(c.ToRealtimeNs(1'500), 1'500 + 1'699'999'999'000'000'000ull);
  EXPECT_EQ(c.ToRealtimeNs(2'900), 2'900 + 0x8000000000000000ull);
}

TEST(ClockAlignTest, InterpolatesBetweenSnapshotsAndHoldsOutside) {
  reader::ClockAlign c;
  EXPECT_EQ(c.ToRealtimeNs(123), 123u);  // no snapshots: CUPTI is realtime-based
  c.Add(1'000 * kMs, kReal0);                       // offset kReal0 - 1 s
  c.Add(3'000 * kMs, kReal0 + 2'000 * kMs + 40 * kUs);  // 40 us of drift over 2 s
  c.Add(0, 5);  // no CUPTI: ignored
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.ToRealtimeNs(1'000 * kMs), kReal0);
  EXPECT_EQ(c.ToRealtimeNs(2'000 * kMs), kReal0 + 1'000 * kMs + 20 * kUs);  // halfway
  EXPECT_EQ(c.ToRealtimeNs(500 * kMs), kReal0 - 500 * kMs);                // before: first offset
  EXPECT_EQ(c.ToRealtimeNs(4'000 * kMs), kReal0 + 3'000 * kMs + 40 * kUs);  // after: last
  EXPECT_EQ(c.drift_ns(), 40 * kUs);
  for (uint64_t i = 0; i < 3 * reader::ClockAlign::kMaxPoints; ++i) {
    c.Add(4'000 * kMs + i * kMs, kReal0 + 3'000 * kMs + i * kMs + 40 * kUs);
  }
  // Thinned to every other snapshot: the first stays, and the mapping stays
  // within the drift.
  EXPECT_LE(c.size(), reader::ClockAlign::kMaxPoints);
  EXPECT_GT(c.size(), reader::ClockAlign::kMaxPoints / 4);
  EXPECT_EQ(c.ToRealtimeNs(1'000 * kMs), kReal0);
  EXPECT_GE(c.ToRealtimeNs(2'000 * kMs), kReal0 + 1'000 * kMs);
  EXPECT_LE(c.ToRealtimeNs(2'000 * kMs), kReal0 + 1'000 * kMs + 40 * kUs);
}

// ------------------------------------------------------------ overlap --

TEST(CommTest, OverlapIsComputeDuringCommunicationOverCommunicationTime) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xC0, 10);
  p.WriteHeader();
  const uint64_t t = 2 * kS;
  const char* ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  p.Add(Kernel(p, t, t + 10 * kMs, ar, 9));                         // comm [0, 10)
  p.Add(Kernel(p, t + 5 * kMs, t + 15 * kMs, "gemm", 7));           // compute [5, 15)
  p.Add(Kernel(p, t + 20 * kMs, t + 30 * kMs, "gemm", 7));          // compute [20, 30)
  p.Add(Kernel(p, t + 25 * kMs, t + 27 * kMs, "ncclKernel_AllGather_RING_LL_Sum_int8_t", 9));
  p.WriteEnd();
  const std::string path = TempPath("overlap");
  ASSERT_TRUE(trace.WriteFile(path));
  const model::TraceModel m = model::BuildModel({path});
  unlink(path.c_str());
  ASSERT_EQ(m.gpus.size(), 1u);
  const model::CommStats& c = m.gpus[0].comm;
  EXPECT_EQ(c.kernels, 2u);
  EXPECT_EQ(c.busy_ns, 12 * kMs);
  EXPECT_EQ(c.compute_busy_ns, 20 * kMs);
  EXPECT_EQ(c.overlap_ns, 7 * kMs);  // 5 ms + 2 ms
  EXPECT_EQ(c.by_kind[static_cast<size_t>(CollectiveKind::kAllReduce)].count, 1u);
  EXPECT_EQ(c.by_kind[static_cast<size_t>(CollectiveKind::kAllGather)].kernel_ns, 2 * kMs);
  ASSERT_EQ(m.gpus[0].collectives.size(), 2u);
  EXPECT_EQ(m.gpus[0].collectives[1].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(m.gpus[0].collectives[1].seq, 0u);  // the first all-gather
}

TEST(CommTest, ExposedCommunicationYieldsLowCommOverlap) {
  TraceBuilder trace;
  TraceBuilder::Process& p = trace.AddProcess(0xC1, 11);
  p.WriteHeader();
  uint64_t t = 2 * kS;
  for (int step = 0; step < 50; ++step) {
    p.Add(Kernel(p, t, t + 10 * kMs, "gemm_bf16", 7));
    p.Add(Kernel(p, t + 10 * kMs + 20 * kUs, t + 15 * kMs, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 9));
    t += 15 * kMs + 50 * kUs;
  }
  p.WriteEnd();
  const std::string path = TempPath("exposed");
  ASSERT_TRUE(trace.WriteFile(path));
  const auto r = Analyze({path});
  EXPECT_EQ(WarningRules(r->findings), std::vector<std::string>{"low-comm-overlap"})
      << Describe(r->findings);
  const analyses::GpuReport& g = r->report.gpus.at(0);
  EXPECT_NEAR(g.comm_share, 5.0 / 15.05, 0.01);
  EXPECT_NEAR(g.comm_overlap, 0.0, 1e-9);
  ASSERT_EQ(g.collectives.size(), 1u);
  EXPECT_EQ(g.collectives[0].kind, "all_reduce");
  EXPECT_EQ(g.collectives[0].count, 50u);
}

// -------------------------------------------------------- multi-rank --

// A data-parallel job: every step each rank computes (two kernels on
// stream 7), then all-reduces its gradients (stream 9), starting 3 ms before
// its compute ends (bucketed all-reduce overlapping backward). The
// all-reduce ends on every rank when the last rank's has run for 4 ms. Each
// process has its own CUPTI clock: CUPTI = realtime - offset, offsets seconds
// apart and drifting; snapshots in the header, every 10 steps and at the end
// record it, as the collector does.
struct JobOptions {
  int ranks = 4;
  int steps = 40;
  uint64_t compute_ns = 20 * kMs;
  int slow_rank = -1;
  uint64_t slow_extra_ns = 0;
  uint64_t jitter_ns = 100 * kUs;
};

class Job {
 public:
  explicit Job(const JobOptions& o) : o_(o) {}

  // CUPTI time of rank r at realtime t: offsets 3.14 s apart, drifting
  // 15 us per second per rank.
  uint64_t Cupti(int r, uint64_t real_ns) const {
    const double drift = 30.0 * kUs * r * static_cast<double>(real_ns - kReal0) / (2.0 * kS);
    return real_ns - (kReal0 - 2 * kS) + static_cast<uint64_t>(r) * 3'141'592'653 -
           static_cast<uint64_t>(drift);
  }

  void Snapshot(int r, proto::ClockSnapshot* c, uint64_t real_ns) const {
    c->set_cupti_ns(Cupti(r, real_ns));
    c->set_realtime_ns(real_ns);
    c->set_monotonic_ns(real_ns - kReal0 + 1'000 * kS);
  }

  // Writes ranks 0..n-1 into `files` files (ranks spread over "nodes").
  std::vector<std::string> Write(const std::string& name, int files = 2) {
    std::vector<std::unique_ptr<TraceBuilder>> traces;
    for (int f = 0; f < files; ++f) traces.push_back(std::make_unique<TraceBuilder>());
    std::vector<TraceBuilder::Process*> procs;
    for (int r = 0; r < o_.ranks; ++r) {
      const int node = r * files / o_.ranks;
      TraceBuilder::Process& p = traces[static_cast<size_t>(node)]->AddProcess(0x100 + r, 1000 + r);
      proto::ProcessHeader& h = p.header();
      h.set_hostname("node" + std::to_string(node));
      h.mutable_identity()->set_rank(r);
      h.mutable_identity()->set_world_size(o_.ranks);
      h.mutable_devices(0)->set_uuid("GPU-rank-" + std::to_string(r));
      h.clear_clocks();
      Snapshot(r, h.add_clocks(), kReal0);
      p.WriteHeader();
      procs.push_back(&p);
    }
    std::mt19937_64 rng(7);
    uint64_t start = kReal0 + 100 * kMs;
    for (int s = 0; s < o_.steps; ++s) {
      std::vector<uint64_t> compute_end(static_cast<size_t>(o_.ranks));
      for (int r = 0; r < o_.ranks; ++r) {
        const uint64_t jitter = o_.jitter_ns > 0 ? rng() % o_.jitter_ns : 0;
        compute_end[static_cast<size_t>(r)] =
            start + o_.compute_ns + jitter + (r == o_.slow_rank ? o_.slow_extra_ns : 0);
      }
      const uint64_t done = *std::max_element(compute_end.begin(), compute_end.end()) + 1 * kMs;
      for (int r = 0; r < o_.ranks; ++r) {
        TraceBuilder::Process& p = *procs[static_cast<size_t>(r)];
        const uint64_t ce = compute_end[static_cast<size_t>(r)];
        const uint64_t mid = start + (ce - start) / 2;
        p.Add(Kernel(p, Cupti(r, start), Cupti(r, mid), "fwd_gemm", 7));
        p.Add(Kernel(p, Cupti(r, mid + 2 * kUs), Cupti(r, ce), "bwd_gemm", 7));
        const uint64_t ar = ce - 3 * kMs;
        const uint64_t end = done + (rng() % 5) * kUs;  // ends agree to a few us
        p.Add(Kernel(p, Cupti(r, ar), Cupti(r, end), "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 9));
        p.Add(format::NvtxRangeEvent{Cupti(r, ar - 20 * kUs), Cupti(r, ar - 5 * kUs),
                                     p.Intern("ncclAllReduce"), p.Intern("NCCL"), 7, 0});
        p.Add(format::NvtxRangeEvent{Cupti(r, start), Cupti(r, done),
                                     p.Intern("step " + std::to_string(s)), 0, 7, 0});
        if (s % 10 == 9) {
          Snapshot(r, p.batch().add_clocks(), done);
          p.Flush();
        }
      }
      start = done + 300 * kUs;
    }
    std::vector<std::string> paths;
    for (int r = 0; r < o_.ranks; ++r) {
      proto::ProcessEnd end;
      Snapshot(r, end.mutable_clock(), start);
      procs[static_cast<size_t>(r)]->WriteEnd(end);
    }
    for (int f = 0; f < files; ++f) {
      paths.push_back(TempPath(name + std::to_string(f)));
      EXPECT_TRUE(traces[static_cast<size_t>(f)]->WriteFile(paths.back()));
    }
    return paths;
  }

 private:
  JobOptions o_;
};

TEST(RanksTest, PlantedStragglerIsNamedDespiteClockOffsets) {
  JobOptions o;
  o.slow_rank = 2;
  o.slow_extra_ns = 4 * kMs;
  const auto r = Analyze(Job(o).Write("straggler"));
  EXPECT_EQ(WarningRules(r->findings), std::vector<std::string>{"straggler-rank"})
      << Describe(r->findings);
  const analyses::RankReport& ranks = r->report.ranks;
  ASSERT_EQ(ranks.rows.size(), 4u);
  EXPECT_EQ(ranks.matched, 40u);
  ASSERT_GE(ranks.straggler, 0);
  const analyses::RankRow& s = ranks.rows[static_cast<size_t>(ranks.straggler)];
  EXPECT_EQ(s.rank, 2);
  // Late by the planted 4 ms (jitter up to 0.1 ms either way), started last every time.
  EXPECT_NEAR(s.mean_late_ns, 4.0 * kMs, 0.15 * kMs);
  EXPECT_EQ(s.last_share, 1.0);
  ASSERT_EQ(ranks.late_order.size(), 4u);
  EXPECT_EQ(ranks.late_order[0], static_cast<size_t>(ranks.straggler));
  EXPECT_LT(ranks.end_spread_ns, 10.0 * kUs);  // the clocks line up
  EXPECT_LE(ranks.end_spread_ns, ranks.end_spread_p95_ns);
  EXPECT_LE(ranks.end_spread_p95_ns, ranks.end_spread_max_ns);
  EXPECT_LT(ranks.end_spread_max_ns, 10.0 * kUs);  // ends planted within 4 us, drift interpolated
  // The finding says what it costs the others: ~4 ms of waiting per step.
  for (const analyses::Finding& f : r->findings) {
    if (f.rule != "straggler-rank") continue;
    double per_step = -1;
    for (const analyses::EvidenceNumber& e : f.evidence) {
      if (e.key == "others_wait_per_step_ns") per_step = e.value;
    }
    EXPECT_NEAR(per_step, 4.0 * kMs, 0.3 * kMs) << f.summary;
    EXPECT_NE(f.summary.find("per step"), std::string::npos) << f.summary;
  }
  // The others wait ~4 ms per step in the all-reduce; the straggler hardly.
  for (const analyses::RankRow& row : ranks.rows) {
    EXPECT_EQ(row.step_source, "nvtx");
    if (row.rank == 2) {
      EXPECT_LT(row.wait_ns, 40 * 0.2 * kMs);
    } else {
      EXPECT_NEAR(row.wait_ns, 40 * 4.0 * kMs, 40 * 0.2 * kMs);
      // Against the median of the others (mostly fast ranks): on time.
      EXPECT_LT(std::fabs(row.mean_late_ns), 0.15 * kMs) << row.label;
    }
  }
  // The processes' clocks really are seconds apart.
  EXPECT_GT(std::llabs(ranks.rows[0].clock_offset_ns - ranks.rows[3].clock_offset_ns),
            static_cast<long long>(9 * kS));
  // Rank 3 drifts 45 us per second of the ~1.1 s job.
  EXPECT_GT(ranks.rows[3].clock_drift_ns, 30 * kUs);
  EXPECT_LT(ranks.rows[3].clock_drift_ns, 70 * kUs);
  EXPECT_EQ(ranks.rows[0].clock_drift_ns, 0u);
  const Finding& f = *std::find_if(r->findings.begin(), r->findings.end(),
                                   [](const Finding& x) { return x.rule == "straggler-rank"; });
  EXPECT_NE(f.scope.find("rank 2"), std::string::npos) << f.scope;
  EXPECT_NEAR(static_cast<double>(f.cost_ns), 40 * 4.0 * kMs, 40 * 0.2 * kMs);
  // NCCL's NVTX ranges count as communication on the host side.
  EXPECT_EQ(r->report.gpus.at(0).comm_ranges, 40u);
}

TEST(RanksTest, StragglerFindingLinksToItsLatestCollectives) {
  JobOptions o;
  o.slow_rank = 2;
  o.slow_extra_ns = 4 * kMs;
  const auto r = Analyze(Job(o).Write("straggler-where"));
  const analyses::RankReport& ranks = r->report.ranks;
  ASSERT_GE(ranks.straggler, 0);
  const analyses::RankRow& s = ranks.rows[static_cast<size_t>(ranks.straggler)];
  ASSERT_EQ(s.latest.size(), analyses::kLateCollectivesKept);
  for (size_t i = 0; i < s.latest.size(); ++i) {
    const analyses::LateCollective& l = s.latest[i];
    if (i > 0) {
      EXPECT_GE(s.latest[i - 1].late_ns, l.late_ns);  // latest first
    }
    EXPECT_EQ(l.kind, model::CollectiveKind::kAllReduce);
    // The planted 4 ms, plus up to 0.1 ms of jitter either way.
    EXPECT_NEAR(l.late_ns, 4.0 * kMs, 0.15 * kMs);
    // The earliest other rank began 4 ms (give or take the jitter) before it, on its clock.
    EXPECT_NEAR(static_cast<double>(l.start_ns - l.others_start_ns), 4.0 * kMs, 0.25 * kMs);
    EXPECT_GT(l.end_ns, l.start_ns);
  }
  // The fast ranks were never later than the median of the others by 4 ms.
  for (const analyses::RankRow& row : ranks.rows) {
    if (row.rank == 2) continue;
    for (const analyses::LateCollective& l : row.latest) {
      EXPECT_LT(l.late_ns, 0.15 * kMs) << row.label;
    }
  }
  const Finding& f = *std::find_if(r->findings.begin(), r->findings.end(),
                                   [](const Finding& x) { return x.rule == "straggler-rank"; });
  ASSERT_EQ(f.ranges.size(), s.latest.size());
  for (size_t i = 0; i < f.ranges.size(); ++i) {
    EXPECT_EQ(f.ranges[i].start_ns, s.latest[i].others_start_ns);
    EXPECT_EQ(f.ranges[i].end_ns, s.latest[i].end_ns);
    EXPECT_EQ(f.ranges[i].note.rfind("all_reduce #", 0), 0u) << f.ranges[i].note;
    EXPECT_NE(f.ranges[i].note.find(" late"), std::string::npos) << f.ranges[i].note;
  }
}

TEST(RanksTest, BalancedJobWithSkewedClocksHasNoStraggler) {
  const auto r = Analyze(Job(JobOptions{}).Write("balanced"));
  EXPECT_TRUE(WarningRules(r->findings).empty()) << Describe(r->findings);
  const analyses::RankReport& ranks = r->report.ranks;
  EXPECT_EQ(ranks.straggler, -1);
  EXPECT_EQ(ranks.matched, 40u);
  for (const analyses::RankRow& row : ranks.rows) {
    EXPECT_LT(std::fabs(row.mean_late_ns), 0.1 * kMs) << row.label;
    EXPECT_LT(row.last_share, 0.5) << row.label;
    EXPECT_GE(row.comm_overlap, 0.5) << row.label;  // 3 of ~4 ms under backward
  }
}

TEST(RanksTest, TextJsonAndCsvShowTheRanks) {
  JobOptions o;
  o.slow_rank = 1;
  o.slow_extra_ns = 5 * kMs;
  const std::vector<std::string> paths = Job(o).Write("render");
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"summary"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), paths.begin(), paths.end());
    std::ostringstream out, err;
    EXPECT_EQ(analyze::Run(a, out, err), analyze::kExitOk) << err.str();
    return out.str();
  };
  const std::string text = run({});
  EXPECT_NE(text.find("RANKS (4 GPUs; 40 collectives matched"), std::string::npos) << text;
  EXPECT_NE(text.find("* rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("straggler-rank"), std::string::npos);
  for (absl::string_view line : absl::StrSplit(text, '\n')) EXPECT_LE(line.size(), 100u) << line;
  const std::string json = run({"--format", "json"});
  EXPECT_NE(json.find("\"straggler\": 1"), std::string::npos);
  EXPECT_NE(json.find("\"late_order\": [1, "), std::string::npos);
  const std::string csv = run({"--format", "csv", "--table", "ranks"});
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << csv;
  EXPECT_EQ(lines[0].substr(0, 30), "gpu,rank,pid,hostname,device_i");
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const std::string& l : lines) EXPECT_EQ(std::count(l.begin(), l.end(), ','), columns) << l;
  EXPECT_EQ(lines[2].substr(0, 4), "1,1,");  // rank 1, on GPU 1 (the second process)
  for (const std::string& p : paths) unlink(p.c_str());
}

}  // namespace
}  // namespace gpscope
