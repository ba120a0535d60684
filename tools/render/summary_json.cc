// tools/render/summary_json.cc: summary as JSON, schema gpscope.summary/1
// (keys in summary_render.h).
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/names.h"
#include "tools/render/enum_names.h"
#include "tools/render/json_writer.h"
#include "tools/render/read_status.h"
#include "tools/render/sites_render.h"
#include "tools/render/summary_render.h"
#include "tools/render/time_origin.h"

namespace gpscope::render {
namespace {

using analyses::CopyRow;
using analyses::Distribution;
using analyses::Finding;
using analyses::GpuReport;
using analyses::KernelRow;
using analyses::ProcessReport;
using analyses::SummaryResult;
using analyses::Utilization;

std::string Uid(uint64_t uid) { return absl::StrFormat("%016x", uid); }

void Dist(JsonWriter& j, const Distribution& d) {
  j.BeginObject();
  j.Key("count").Uint(d.count).Key("total").Uint(d.total).Key("mean").Double(d.mean);
  j.Key("stddev").Double(d.stddev).Key("min").Double(d.min).Key("p50").Double(d.p50);
  j.Key("p95").Double(d.p95).Key("p99").Double(d.p99).Key("max").Double(d.max);
  j.EndObject();
}

void Util(JsonWriter& j, const Utilization& u) {
  j.BeginObject();
  if (u.source == Utilization::Source::kUnavailable) {
    j.Key("percent").Null();
  } else {
    j.Key("percent").Double(u.percent);
  }
  j.Key("source").String(u.source == Utilization::Source::kMeasured    ? "measured"
                         : u.source == Utilization::Source::kEstimated ? "estimated"
                                                                       : "unavailable");
  j.Key("basis").String(u.basis);
  j.EndObject();
}

void Step(JsonWriter& j, const model::StepRecord& s) {
  j.BeginObject();
  j.Key("index").Uint(s.index).Key("start_ns").Uint(s.start_ns).Key("end_ns").Uint(s.end_ns);
  j.Key("period_ns").Uint(s.period_ns()).Key("range_ns").Uint(s.range_ns);
  j.Key("compute_ns").Uint(s.compute_ns).Key("copy_ns").Uint(s.copy_ns);
  j.Key("idle_ns").Uint(s.idle_ns).Key("comm_ns").Uint(s.comm_ns);
  j.EndObject();
}

void WindowTableJson(JsonWriter& j, const analyses::WindowTable& w) {
  j.BeginObject();
  j.Key("requested_ns").Uint(w.requested_ns).Key("width_ns").Uint(w.width_ns);
  j.Key("coarsened").Bool(w.coarsened);
  j.Key("columns").BeginInlineArray().String("start_ns").String("end_ns");
  for (int c = 0; c < analyses::kWindowColumns; ++c) j.String(analyses::WindowColumnName(c));
  j.EndArray();
  j.Key("rows").BeginArray();
  for (const analyses::WindowRow& row : w.rows) {
    j.BeginInlineArray().Uint(row.start_ns).Uint(row.end_ns);
    for (double v : row.values) j.Double(v);
    j.EndArray();
  }
  j.EndArray();
  j.EndObject();
}

void CommJson(JsonWriter& j, const GpuReport& g) {
  j.BeginObject();
  j.Key("kernels").Uint(g.comm_kernels).Key("kernel_ns").Uint(g.comm_kernel_ns);
  j.Key("busy_ns").Double(g.comm_busy_ns).Key("share").Double(g.comm_share);
  j.Key("overlap_ns").Double(g.comm_overlap_ns);
  j.Key("overlap").NonNegativeOrNull(g.comm_overlap);
  j.Key("compute_busy_ns").Double(g.compute_busy_ns);
  j.Key("collectives").BeginArray();
  for (const analyses::CollectiveRow& c : g.collectives) {
    j.BeginObject().Key("kind").String(c.kind).Key("count").Uint(c.count);
    j.Key("kernel_ns").Uint(c.kernel_ns).Key("share_of_comm").Double(c.share_of_comm).EndObject();
  }
  j.EndArray();
  j.Key("nvtx_ranges").BeginObject().Key("count").Uint(g.comm_ranges);
  j.Key("total_ns").Uint(g.comm_range_ns).EndObject();
  j.EndObject();
}

void CopyJson(JsonWriter& j, const CopyRow& c) {
  j.BeginObject();
  j.Key("direction").String(c.direction).Key("memory").String(c.memory);
  j.Key("count").Uint(c.count).Key("bytes").Uint(c.bytes).Key("duration_ns").Uint(c.duration_ns);
  j.Key("gb_per_s").Double(c.gb_per_s).Key("share_of_gpu_time").Double(c.share_of_gpu_time);
  j.Key("sync").BeginObject();
  j.Key("count").Uint(c.sync_count).Key("bytes").Uint(c.sync_bytes);
  j.Key("duration_ns").Uint(c.sync_duration_ns);
  j.EndObject();
  j.EndObject();
}

void FindingJson(const SummaryResult& r, JsonWriter& j, const Finding& f) {
  j.BeginObject();
  j.Key("rule").String(f.rule).Key("title").String(f.title);
  j.Key("severity").String(analyses::SeverityName(f.severity));
  j.Key("cost_ns").Uint(f.cost_ns);
  j.Key("gpu").IndexOrNull(f.gpu).Key("process").IndexOrNull(f.process);
  j.Key("scope").String(f.scope).Key("summary").String(f.summary);
  j.Key("evidence").BeginArray();
  for (const analyses::EvidenceNumber& e : f.evidence) {
    j.BeginObject().Key("key").String(e.key).Key("value").Double(e.value);
    j.Key("unit").String(e.unit).EndObject();
  }
  j.EndArray();
  uint64_t uid = 0;
  if (f.gpu >= 0) uid = r.report.gpus[static_cast<size_t>(f.gpu)].gpu->process_uid;
  if (f.gpu < 0 && f.process >= 0) {
    uid = r.report.processes[static_cast<size_t>(f.process)].process->process_uid;
  }
  j.Key("ranges").BeginArray();
  for (const analyses::TimeRange& range : f.ranges) {
    j.BeginObject().Key("start_ns").Uint(range.start_ns).Key("end_ns").Uint(range.end_ns);
    // ns since the time origin (time_origin at the top): the report's,
    // export's and dump's time of the same instant.
    j.Key("offset_ns").Uint(r.model.timebase.ToOriginNs(uid, range.start_ns));
    j.Key("note").String(range.note).EndObject();
  }
  j.EndArray();
  j.Key("fixes").BeginArray();
  for (const std::string& fix : f.fixes) j.String(fix);
  j.EndArray();
  if (!f.sites.empty()) {  // call stacks (issue 20): index into source_lines.sites
    j.Key("sites").BeginArray();
    for (const analyses::SiteCitation& s : f.sites) {
      j.BeginObject().Key("site").Uint(s.site).Key("label").String(s.label);
      j.Key("role").String(s.role).Key("value_ns").Uint(s.value_ns).EndObject();
    }
    j.EndArray();
  }
  if (f.relation.empty()) {  // a top-level finding: what is grouped under it
    j.Key("grouped").BeginArray();
    for (const Finding& g : f.grouped) FindingJson(r, j, g);
    j.EndArray();
  } else {
    j.Key("relation").String(f.relation);
  }
  j.EndObject();
}

void GpuJson(const SummaryResult& r, JsonWriter& j, const GpuReport& g) {
  const model::GpuModel& m = *g.gpu;
  j.BeginObject();
  j.Key("index").Uint(g.gpu_index).Key("label").String(g.label);
  j.Key("process_uid").String(Uid(m.process_uid)).Key("pid").Uint(m.pid);
  j.Key("hostname").String(m.hostname).Key("device_id").Uint(m.device_id);
  if (m.has_device_info) {
    const proto::DeviceInfo& d = m.device;
    j.Key("device").BeginObject();
    j.Key("name").String(d.name()).Key("uuid").String(d.uuid());
    j.Key("pci_bus_id").String(d.pci_bus_id()).Key("sm_count").Uint(d.sm_count());
    j.Key("compute_capability")
        .String(absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()));
    j.Key("global_memory_bytes").Uint(d.global_memory_bytes());
    j.EndObject();
  } else {
    j.Key("device").Null();
  }
  j.Key("span").BeginObject();
  j.Key("first_ns").Uint(m.first_ns).Key("last_ns").Uint(m.last_ns).Key("length_ns").Uint(g.span_ns);
  j.EndObject();
  j.Key("window").BeginObject();
  j.Key("start_ns").Uint(g.window.start_ns).Key("end_ns").Uint(g.window.end_ns);
  j.Key("length_ns").Uint(g.window.length_ns()).Key("basis").String(g.window.basis);
  j.Key("untraced_ns").Uint(static_cast<uint64_t>(g.untraced_ns));
  j.EndObject();

  j.Key("four_numbers").BeginObject();
  j.Key("sm_util");
  Util(j, g.sm_util);
  j.Key("dram_bw_util");
  Util(j, g.dram_util);
  j.Key("kernel_duration_ns").BeginObject();
  j.Key("p50").Double(g.kernel_duration.p50).Key("p95").Double(g.kernel_duration.p95);
  j.EndObject();
  j.Key("idle_gap_share").Double(g.idle_gap_share);
  j.Key("idle_gap_share_span").Double(g.idle_gap_share_span);
  j.EndObject();

  j.Key("sampled").BeginObject();
  j.Key("throttled_share").NonNegativeOrNull(g.throttled_share);
  j.Key("clock_reason_samples").Double(g.clock_reason_samples);
  j.Key("other_process_sm_util").NonNegativeOrNull(g.other_process_sm);
  j.Key("other_processes").BeginArray();
  for (const GpuReport::Other& o : g.other_processes) {
    j.BeginObject().Key("pid").Uint(o.pid).Key("label").String(o.label);
    j.Key("mean_sm_util").Double(o.mean_sm_util).Key("max_sm_util").Double(o.max_sm_util);
    j.Key("samples").Uint(o.samples).EndObject();
  }
  j.EndArray();
  j.EndObject();

  j.Key("busy").BeginObject();
  j.Key("busy_ns").Double(g.busy_ns).Key("kernel_busy_ns").Double(g.kernel_busy_ns);
  j.Key("kernel_ns").Double(g.kernel_ns).Key("copy_ns").Double(g.copy_ns);
  j.Key("memset_ns").Double(g.memset_ns).Key("busy_share").Double(g.busy_share);
  j.EndObject();

  j.Key("idle").BeginObject();
  j.Key("gaps_at_least_threshold").BeginObject();
  j.Key("host_wait_ns").Double(g.gap_idle.host_ns).Key("sync_wait_ns").Double(g.gap_idle.sync_ns);
  j.Key("other_ns").Double(g.gap_idle.other_ns).Key("count").Double(g.gap_count);
  j.Key("implicit_sync_ns").Double(g.gap_idle.implicit_ns);
  j.Key("input_host_wait_ns").Double(g.input_host_ns);
  j.Key("after_sync_host_wait_ns").Double(g.after_sync_host_ns);
  j.EndObject();
  j.Key("gaps_below_threshold").BeginObject();
  j.Key("host_wait_ns").Double(g.short_gap_idle.host_ns);
  j.Key("sync_wait_ns").Double(g.short_gap_idle.sync_ns);
  j.Key("kernel_wait_ns").Double(g.short_gap_idle.kernel_ns);
  j.Key("implicit_sync_ns").Double(g.short_gap_idle.implicit_ns);
  j.Key("after_sync_host_wait_ns").Double(g.short_after_sync_host_ns);
  j.EndObject();
  j.Key("long_gaps").BeginObject();
  j.Key("count").Double(g.long_gap_count).Key("total_ns").Double(g.long_gap_ns);
  j.EndObject();
  j.Key("pauses").BeginObject();
  j.Key("count").Double(g.pause_count).Key("total_ns").Double(g.pause_ns);
  j.Key("copy_ns").Double(g.pause_copy_ns);
  j.EndObject();
  j.Key("one_time").BeginObject();
  j.Key("count").Double(g.one_time_count).Key("total_ns").Double(g.one_time_ns);
  j.EndObject();
  j.Key("per_stream").BeginObject();
  j.Key("host_wait_ns").Double(g.stream_idle.host_ns);
  j.Key("sync_wait_ns").Double(g.stream_idle.sync_ns);
  j.Key("kernel_wait_ns").Double(g.stream_idle.kernel_ns);
  j.Key("other_ns").Double(g.stream_idle.other_ns);
  j.Key("implicit_sync_ns").Double(g.stream_idle.implicit_ns);
  j.EndObject();
  j.Key("streams").BeginArray();
  for (const model::StreamModel& s : m.streams) {
    j.BeginObject();
    j.Key("context_id").Uint(s.context_id).Key("stream_id").Uint(s.stream_id);
    j.Key("ops").Uint(s.ops).Key("busy_ns").Uint(s.busy_ns);
    j.Key("first_ns").Uint(s.first_ns).Key("last_ns").Uint(s.last_ns);
    j.Key("idle_ns").BeginObject();
    j.Key("host_wait").Uint(s.idle_ns[0]).Key("sync_wait").Uint(s.idle_ns[1]);
    j.Key("kernel_wait").Uint(s.idle_ns[2]).Key("other").Uint(s.idle_ns[3]);
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();

  j.Key("kernels").BeginObject();
  j.Key("count").Uint(g.kernel_count).Key("names").Uint(g.kernel_names);
  j.Key("tiny_count").Uint(g.tiny_kernels).Key("shorter_than_launch").Uint(g.shorter_than_launch);
  j.Key("launches_matched").Uint(g.launches_matched);
  j.Key("est_sm_efficiency").NonNegativeOrNull(g.est_sm_efficiency);
  j.Key("duration_ns");
  Dist(j, g.kernel_duration);
  j.Key("est_occupancy").NonNegativeOrNull(g.est_occupancy);
  j.Key("occupancy_known_share").Double(g.occupancy_known_share);
  j.Key("large_tile_share").Double(g.large_tile_share);
  j.Key("library_share").Double(g.library_share);
  j.Key("top").BeginArray();
  for (const KernelRow& k : g.top_kernels) {
    const Distribution& d = k.duration;
    j.BeginObject();
    j.Key("name").String(k.name).Key("demangled").String(k.demangled);
    j.Key("count").Uint(d.count).Key("total_ns").Uint(d.total).Key("share").Double(k.share);
    j.Key("mean_ns").Double(d.mean).Key("median_ns").Double(d.p50).Key("min_ns").Double(d.min);
    j.Key("max_ns").Double(d.max).Key("p95_ns").Double(d.p95).Key("p99_ns").Double(d.p99);
    j.Key("stddev_ns").Double(d.stddev).Key("tiny_count").Uint(k.tiny);
    j.Key("shorter_than_launch").Uint(k.shorter_than_launch);
    j.Key("est_sm_efficiency").NonNegativeOrNull(k.est_sm_efficiency);
    j.Key("blocks").BeginObject().Key("min").Uint(k.min_blocks).Key("max").Uint(k.max_blocks);
    j.EndObject();
    if (k.collective.empty()) {
      j.Key("collective").Null();
    } else {
      j.Key("collective").String(k.collective);
    }
    j.Key("est_occupancy").NonNegativeOrNull(k.est_occupancy);
    j.Key("library").String(k.library);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();

  j.Key("copies").BeginObject();
  j.Key("share_of_gpu_time").Double(g.copy_share_of_gpu_time);
  j.Key("rows").BeginArray();
  for (const CopyRow& c : g.copies) CopyJson(j, c);
  j.EndArray();
  j.Key("memsets").BeginArray();
  for (const CopyRow& c : g.memsets) CopyJson(j, c);
  j.EndArray();
  j.Key("window").BeginObject();
  j.Key("pageable_count").Double(g.pageable_copy_count);
  j.Key("pageable_ns").Double(g.pageable_copy_ns).Key("d2h_count").Double(g.d2h_copy_count);
  j.EndObject();
  j.EndObject();

  j.Key("host").BeginObject();
  j.Key("queue_delay_ns");
  Dist(j, g.queue_delay);
  j.Key("queue_delay_outliers").Uint(g.queue_delay_outliers);
  j.Key("launches_unmatched").Uint(g.launches_unmatched);
  j.Key("sync_calls").Double(g.sync_calls).Key("sync_blocked_ns").Double(g.sync_blocked_ns);
  j.Key("implicit_syncs").BeginArray();
  for (const analyses::ImplicitGroupRow& row : g.implicit) {
    j.BeginObject().Key("group").String(model::ImplicitGroupKey(row.group));
    j.Key("calls").Double(row.calls).Key("blocked_ns").Double(row.blocked_ns);
    j.Key("gpu_idle_ns").Double(row.gpu_idle_ns).Key("top_call").String(row.top_call);
    j.EndObject();
  }
  j.EndArray();
  j.Key("long_launches").Double(g.long_launches);
  j.Key("long_launches_blocking").Double(g.long_launches_blocking);
  j.EndObject();

  if (g.has_steps) {
    j.Key("steps").BeginObject();
    j.Key("count").Uint(g.step_count).Key("example_name").String(g.step_example);
    j.Key("period_ns");
    Dist(j, g.step_period);
    j.Key("range_ns");
    Dist(j, g.step_range);
    j.Key("per_step").BeginObject();
    j.Key("compute_ns").Double(g.step_compute_ns).Key("copy_ns").Double(g.step_copy_ns);
    j.Key("idle_ns").Double(g.step_idle_ns).Key("comm_ns").Double(g.step_comm_ns);
    j.EndObject();
    j.Key("warmup");
    Step(j, g.warmup_step);
    j.Key("slowest").BeginArray();
    for (const model::StepRecord& s : g.slowest_steps) Step(j, s);
    j.EndArray();
    j.Key("source").String(g.step_source);
    if (g.step_source == "inferred") {
      j.Key("anchor").String(g.step_anchor).Key("candidates").Uint(g.step_candidates);
    } else {
      j.Key("anchor").Null().Key("candidates").Null();
    }
    j.EndObject();
  } else {
    j.Key("steps").Null();
  }
  j.Key("late_ops").Uint(m.late_ops);
  j.Key("communication");
  CommJson(j, g);
  j.Key("windows");
  WindowTableJson(j, g.windows);
  j.Key("minutes");
  WindowTableJson(j, g.minutes);
  (void)r;
  j.EndObject();
}

void ProcessJson(const SummaryResult& r, JsonWriter& j, const ProcessReport& pr) {
  (void)r;
  const model::ProcessModel& p = *pr.process;
  j.BeginObject();
  j.Key("index").Uint(pr.process_index).Key("process_uid").String(Uid(p.process_uid));
  j.Key("pid").Uint(p.pid).Key("hostname").String(p.hostname).Key("path").String(p.path);
  j.Key("cmdline").BeginArray();
  for (const std::string& a : p.cmdline) j.String(a);
  j.EndArray();
  j.Key("events").Uint(p.events).Key("api_calls").Uint(p.api_calls);
  j.Key("gpus").BeginArray();
  for (size_t g : p.gpus) j.Uint(g);
  j.EndArray();
  j.Key("launch_call_ns");
  Dist(j, pr.launch_call);
  j.Key("launch_call_outliers").Uint(pr.launch_call_outliers);
  j.Key("sync").BeginObject();
  j.Key("source").String(p.sync_from_records ? "records" : "api");
  j.Key("threads").BeginArray();
  for (const auto& [thread, s] : p.sync_by_thread) {
    j.BeginObject().Key("thread_id").Uint(thread).Key("calls").Uint(s.calls);
    j.Key("blocked_ns").Uint(s.blocked_ns).Key("max_ns").Uint(s.max_ns).EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.Key("completeness").BeginObject();
  j.Key("complete").Bool(pr.complete);
  j.Key("dropped").BeginObject();
  for (const auto& [reason, n] : p.dropped) j.Key(DropName(reason)).Uint(n);
  j.EndObject();
  j.Key("dropped_total").Uint(pr.dropped);
  j.Key("lost_intervals").BeginObject();
  j.Key("count").Uint(p.lost_interval_count).Key("total_ns").Uint(p.lost_interval_ns);
  // Of those, outside capture windows (reason TRACING_DISABLED): by choice.
  j.Key("outside_window_count").Uint(p.window_off_count);
  j.Key("outside_window_ns").Uint(p.window_off_ns);
  j.Key("first").BeginArray();
  for (const proto::LostInterval& l : p.lost_intervals) {
    j.BeginObject().Key("start_ns").Uint(l.start_ns()).Key("end_ns").Uint(l.end_ns());
    j.Key("reason").String(LostName(l.reason())).Key("detail").String(l.detail()).EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.Key("lost_frames").Uint(p.lost_chunks);
  j.Key("undecodable_batches").Uint(p.undecodable_batches);
  j.Key("clean_exit").Bool(p.clean_end);
  if (p.clean_end) {
    j.Key("end_reason").String(EndName(p.end_reason));
  } else {
    j.Key("end_reason").Null();
  }
  j.Key("unavailable").BeginArray();
  for (const std::string& u : p.unavailable) j.String(u);
  j.EndArray();
  if (!p.cupti_refusals.empty()) {  // only then: the goldens' key lists stay as they were
    j.Key("cupti_refusals").BeginArray();
    for (const proto::CuptiClientRefusal& c : p.cupti_refusals) {
      j.BeginObject().Key("api").String(c.api()).Key("caller").String(c.caller());
      j.Key("count").Uint(c.count()).Key("first_ns").Uint(c.first_ns());
      j.Key("last_ns").Uint(c.last_ns()).Key("result").Uint(c.result()).EndObject();
    }
    j.EndArray();
  }
  j.EndObject();
  // What the collector cost (its own samples), percent of one core; null
  // where the trace has no such samples.
  j.Key("collector").BeginObject();
  for (const auto& [key, c] : {std::pair<const char*, const model::CpuSeries*>{"all_threads", &p.collector_cpu},
                               {"sampler", &p.sampler_cpu}}) {
    j.Key(key).BeginObject();
    if (c->samples > 0) {
      j.Key("cpu_pct_mean").Double(c->mean_pct()).Key("cpu_pct_max").Double(c->pct_max);
    } else {
      j.Key("cpu_pct_mean").Null().Key("cpu_pct_max").Null();
    }
    j.Key("samples").Uint(c->samples).EndObject();
  }
  j.EndObject();
  j.Key("identity").BeginObject();
  j.Key("rank").Int(p.rank).Key("local_rank").Int(p.local_rank);
  j.Key("world_size").Int(p.world_size).Key("job_id").String(p.job_id);
  j.EndObject();
  j.Key("clocks").BeginObject();
  j.Key("snapshots").Uint(p.clocks.size()).Key("offset_ns").Int(p.clocks.offset_ns());
  j.Key("drift_ns").Uint(p.clocks.drift_ns());
  j.EndObject();
  j.EndObject();
}

void RanksJson(JsonWriter& j, const analyses::RankReport& ranks) {
  j.BeginObject();
  j.Key("matched_collectives").Uint(ranks.matched).Key("stride").Uint(ranks.stride);
  j.Key("end_spread_ns").Double(ranks.end_spread_ns);
  j.Key("end_spread_p95_ns").Double(ranks.end_spread_p95_ns);
  j.Key("end_spread_max_ns").Double(ranks.end_spread_max_ns);
  j.Key("straggler").IndexOrNull(ranks.straggler);
  j.Key("late_order").BeginInlineArray();
  for (size_t i : ranks.late_order) j.Uint(i);
  j.EndArray();
  j.Key("rows").BeginArray();
  for (const analyses::RankRow& r : ranks.rows) {
    j.BeginObject();
    j.Key("gpu").Uint(r.gpu_index).Key("rank").Int(r.rank).Key("pid").Uint(r.pid);
    j.Key("hostname").String(r.hostname).Key("device_id").Uint(r.device_id);
    j.Key("label").String(r.label).Key("step_source").String(r.step_source);
    j.Key("step_p50_ns").Double(r.step_p50_ns).Key("step_p95_ns").Double(r.step_p95_ns);
    j.Key("window_ns").Double(r.window_ns).Key("compute_busy_ns").Double(r.compute_busy_ns);
    j.Key("comm_busy_ns").Double(r.comm_busy_ns).Key("busy_share").Double(r.busy_share);
    j.Key("idle_ns").Double(r.idle_ns);
    j.Key("comm_overlap").NonNegativeOrNull(r.comm_overlap);
    j.Key("collectives").Uint(r.collectives).Key("wait_ns").Double(r.wait_ns);
    j.Key("mean_late_ns").Double(r.mean_late_ns).Key("last_share").Double(r.last_share);
    j.Key("clock_offset_ns").Int(r.clock_offset_ns).Key("clock_drift_ns").Uint(r.clock_drift_ns);
    j.Key("clock_snapshots").Uint(r.clock_snapshots);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}


}  // namespace

std::string RenderSummaryJson(const SummaryResult& r) {
  std::string out;
  JsonWriter j(&out);
  const model::TraceModel& m = r.model;
  j.BeginObject();
  j.Key("schema").String("gpscope.summary/1");
  render::WriteTimeOrigin(m.timebase, j);
  WritePartialJson(m.index, j);
  j.Key("options").BeginObject();
  j.Key("idle_gap_threshold_ns").Uint(r.report.idle_gap_threshold_ns);
  j.Key("long_gap_ns").Uint(r.report.long_gap_ns);
  j.Key("top_kernels").Uint(r.report.options.top_kernels);
  j.Key("window_ns").Uint(r.model.options.window_ns);
  j.EndObject();
  j.Key("events").Uint(m.events);
  j.Key("files").BeginArray();
  for (const reader::FileInfo& f : m.index.files) {
    j.BeginObject().Key("path").String(f.path);
    if (f.status.ok()) {
      j.Key("error").Null();
    } else {
      j.Key("error").String(std::string(f.status.message()));
    }
    j.Key("frames").Uint(f.frames).Key("damaged_regions").Uint(f.damaged_regions);
    j.Key("skipped_bytes").Uint(f.skipped_bytes).Key("truncated").Bool(f.truncated);
    j.EndObject();
  }
  j.EndArray();
  j.Key("findings").BeginArray();
  for (const Finding& f : r.findings) FindingJson(r, j, f);
  j.EndArray();
  j.Key("rules").BeginArray();
  for (const analyses::RuleInfo& rule : analyses::RuleCatalogue()) {
    j.BeginObject().Key("id").String(rule.id).Key("title").String(rule.title);
    j.Key("trigger").String(rule.trigger).Key("source").String(rule.source).EndObject();
  }
  j.EndArray();
  j.Key("gpus").BeginArray();
  for (const GpuReport& g : r.report.gpus) GpuJson(r, j, g);
  j.EndArray();
  j.Key("processes").BeginArray();
  for (const ProcessReport& p : r.report.processes) ProcessJson(r, j, p);
  j.EndArray();
  j.Key("ranks");
  RanksJson(j, r.report.ranks);
  render::SitesJson(m, r.report, j);  // "source_lines", only with call stacks
  j.Key("warnings").BeginArray();
  for (const std::string& w : m.index.warnings) j.String(w);
  j.EndArray();
  j.Key("warnings_omitted").Uint(m.index.warnings_omitted);
  j.EndObject();
  out.push_back('\n');
  return out;
}

}  // namespace gpscope::render
