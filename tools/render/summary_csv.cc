// tools/render/summary_csv.cc: summary's CSV tables (columns in
// summary_render.h).
#include <string>

#include "tools/render/csv_writer.h"
#include "tools/render/sites_render.h"
#include "tools/render/summary_render.h"

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

int RankOf(const SummaryResult& r, const GpuReport& g) {
  for (const model::ProcessModel& p : r.model.processes) {
    if (p.process_uid == g.gpu->process_uid) return p.rank;
  }
  return -1;
}

void KernelsCsv(const SummaryResult& r, CsvWriter& csv) {
  csv.Row({"gpu", "rank", "name", "demangled", "count", "total_ns", "share", "mean_ns", "p50_ns",
           "p95_ns", "p99_ns", "min_ns", "max_ns", "stddev_ns", "tiny_count", "collective"});
  for (const GpuReport& g : r.report.gpus) {
    for (const KernelRow& k : g.top_kernels) {
      const Distribution& d = k.duration;
      csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(k.name).Field(k.demangled);
      csv.Field(d.count).Field(d.total).Field(k.share).Field(d.mean).Field(d.p50).Field(d.p95);
      csv.Field(d.p99).Field(d.min).Field(d.max).Field(d.stddev).Field(k.tiny);
      csv.Field(k.collective).EndRow();
    }
  }
}

void WindowsCsv(const SummaryResult& r, CsvWriter& csv, bool minutes) {
  // start_ns/end_ns: the process's CUPTI ns; since_origin_ns: the start on
  // the common timebase, ns since time_origin_utc (every output's origin).
  csv.Field("gpu").Field("rank").Field("start_ns").Field("end_ns").Field("since_origin_ns");
  csv.Field("time_origin_utc");
  for (int c = 0; c < analyses::kWindowColumns; ++c) csv.Field(analyses::WindowColumnName(c));
  csv.EndRow();
  const std::string origin = r.model.timebase.OriginUtc();
  for (const GpuReport& g : r.report.gpus) {
    for (const analyses::WindowRow& row : (minutes ? g.minutes : g.windows).rows) {
      csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(row.start_ns).Field(row.end_ns);
      csv.Field(r.model.timebase.ToOriginNs(g.gpu->process_uid, row.start_ns)).Field(origin);
      for (double v : row.values) csv.Field(v);
      csv.EndRow();
    }
  }
}

void CopiesCsv(const SummaryResult& r, CsvWriter& csv) {
  csv.Row({"gpu", "rank", "direction", "memory", "count", "bytes", "duration_ns", "gb_per_s",
           "share_of_gpu_time", "sync_count", "sync_bytes", "sync_duration_ns"});
  for (const GpuReport& g : r.report.gpus) {
    for (const std::vector<CopyRow>* rows : {&g.copies, &g.memsets}) {
      for (const CopyRow& c : *rows) {
        csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(c.direction).Field(c.memory);
        csv.Field(c.count).Field(c.bytes).Field(c.duration_ns).Field(c.gb_per_s);
        csv.Field(c.share_of_gpu_time).Field(c.sync_count).Field(c.sync_bytes);
        csv.Field(c.sync_duration_ns).EndRow();
      }
    }
  }
}

void StepsCsv(const SummaryResult& r, CsvWriter& csv) {
  csv.Row({"gpu", "rank", "source", "anchor", "count", "period_p50_ns", "period_p95_ns",
           "period_mean_ns", "compute_ns", "copy_ns", "comm_ns", "idle_ns", "warmup_period_ns"});
  for (const GpuReport& g : r.report.gpus) {
    if (!g.has_steps) continue;
    csv.Field(g.gpu_index).Field(RankOf(r, g)).Field(g.step_source).Field(g.step_anchor);
    csv.Field(g.step_count).Field(g.step_period.p50).Field(g.step_period.p95);
    csv.Field(g.step_period.mean).Field(g.step_compute_ns).Field(g.step_copy_ns);
    csv.Field(g.step_comm_ns).Field(g.step_idle_ns).Field(g.warmup_step.period_ns()).EndRow();
  }
}

void RanksCsv(const SummaryResult& r, CsvWriter& csv) {
  const analyses::RankReport& ranks = r.report.ranks;
  csv.Row({"gpu", "rank", "pid", "hostname", "device_id", "step_source", "step_p50_ns",
           "step_p95_ns", "window_ns", "compute_busy_ns", "comm_busy_ns", "idle_ns",
           "busy_share", "comm_overlap", "collectives", "wait_ns", "mean_late_ns", "last_share",
           "straggler", "clock_offset_ns", "clock_drift_ns"});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < ranks.rows.size(); ++i) {
    const analyses::RankRow& row = ranks.rows[i];
    csv.Field(row.gpu_index).Field(row.rank).Field(row.pid).Field(row.hostname);
    csv.Field(row.device_id).Field(row.step_source).Field(row.step_p50_ns).Field(row.step_p95_ns);
    csv.Field(row.window_ns).Field(row.compute_busy_ns).Field(row.comm_busy_ns);
    csv.Field(row.idle_ns).Field(row.busy_share);
    csv.Field(row.comm_overlap >= 0 ? row.comm_overlap : nan).Field(row.collectives);
    csv.Field(row.wait_ns).Field(row.mean_late_ns).Field(row.last_share);
    csv.Field(static_cast<int>(i) == ranks.straggler ? 1 : 0).Field(row.clock_offset_ns);
    csv.Field(row.clock_drift_ns).EndRow();
  }
}


constexpr const char* kCsvTables[] = {"kernels", "windows", "minutes", "copies",
                                      "steps",   "ranks",   "lines"};


}  // namespace

bool IsSummaryCsvTable(std::string_view table) {
  for (const char* t : kCsvTables) {
    if (table == t) return true;
  }
  return false;
}

std::string RenderSummaryCsv(const SummaryResult& r, std::string_view table) {
  std::string out;
  CsvWriter csv(&out);
  if (table == "kernels") KernelsCsv(r, csv);
  if (table == "windows" || table == "minutes") WindowsCsv(r, csv, table == "minutes");
  if (table == "copies") CopiesCsv(r, csv);
  if (table == "steps") StepsCsv(r, csv);
  if (table == "ranks") RanksCsv(r, csv);
  if (table == "lines") render::SitesCsv(r.model, r.report, csv);
  return out;
}


}  // namespace gpscope::render
