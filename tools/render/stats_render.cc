// tools/render/stats_render.cc: see stats_render.h.
#include "tools/render/stats_render.h"

#include <algorithm>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/render/csv_writer.h"
#include "tools/render/json_writer.h"
#include "tools/render/text_format.h"
#include "tools/render/text_sanitize.h"
#include "tools/render/time_origin.h"

namespace gpscope::render {
namespace {

using Cell = std::variant<std::string, uint64_t, double>;

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

void TimeCells(const analyses::DurationSummary& d, std::vector<Cell>& row) {
  row.insert(row.end(), {Cell(d.total_ns), Cell(d.count), Cell(d.mean_ns), Cell(d.median_ns),
                         Cell(d.p95_ns), Cell(d.min_ns), Cell(d.max_ns), Cell(d.stddev_ns)});
}

const std::vector<std::string> kTimeColumns = {"total_ns", "count", "mean_ns", "median_ns",
                                               "p95_ns", "min_ns", "max_ns", "stddev_ns"};

Table Summary(std::string title, const std::vector<analyses::StatsRow>& rows, bool domain,
              bool bytes) {
  Table t;
  t.title = std::move(title);
  t.columns = {"share"};
  t.columns.insert(t.columns.end(), kTimeColumns.begin(), kTimeColumns.end());
  if (bytes) t.columns.push_back("bytes");
  if (domain) t.columns.push_back("domain");
  t.columns.push_back("name");
  for (const analyses::StatsRow& r : rows) {
    std::vector<Cell> row = {Cell(r.share)};
    TimeCells(r.time, row);
    if (bytes) row.emplace_back(r.bytes);
    if (domain) row.emplace_back(r.domain);
    row.emplace_back(r.name);
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table Build(const analyses::StatsReport& r, std::string_view name) {
  if (name == "nvtx_sum") return Summary("NVTX range summary", r.nvtx_sum, true, false);
  if (name == "cuda_api_sum") return Summary("CUDA API summary", r.cuda_api_sum, false, false);
  if (name == "cuda_gpu_kern_sum") {
    return Summary("CUDA GPU kernel summary", r.cuda_gpu_kern_sum, false, false);
  }
  if (name == "cuda_gpu_mem_sum") {
    return Summary("CUDA GPU memory operations (copies by direction, memsets)", r.cuda_gpu_mem_sum,
                   true, true);
  }
  Table t;
  t.title = "NVTX GPU projection (GPU work launched inside each range, same thread)";
  t.columns = {"total_proj_ns", "total_range_ns", "ranges", "proj_mean_ns", "proj_median_ns",
               "proj_p95_ns", "proj_min_ns", "proj_max_ns", "proj_stddev_ns", "gpu_ops",
               "mean_gpu_ops", "domain", "name"};
  for (const analyses::ProjectionRow& p : r.nvtx_gpu_proj) {
    const analyses::DurationSummary& d = p.projected;
    t.rows.push_back({Cell(d.total_ns), Cell(p.total_range_ns), Cell(p.ranges), Cell(d.mean_ns),
                      Cell(d.median_ns), Cell(d.p95_ns), Cell(d.min_ns), Cell(d.max_ns),
                      Cell(d.stddev_ns), Cell(p.gpu_ops), Cell(p.mean_gpu_ops), Cell(p.domain),
                      Cell(p.name)});
  }
  return t;
}

std::string TextCell(const std::string& column, const Cell& c) {
  if (const std::string* s = std::get_if<std::string>(&c)) return Printable(*s);
  if (const uint64_t* u = std::get_if<uint64_t>(&c)) return Count(*u);
  const double v = std::get<double>(c);
  if (column == "share") return Percent(v);
  if (column == "mean_gpu_ops") return absl::StrFormat("%.1f", v);
  return Count(v);
}

}  // namespace

const std::vector<std::string_view>& StatsReportNames() {
  static const std::vector<std::string_view> names = {
      "nvtx_sum", "nvtx_gpu_proj", "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_sum"};
  return names;
}

bool IsStatsReport(std::string_view name) {
  const std::vector<std::string_view>& n = StatsReportNames();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::string RenderStatsText(const analyses::StatsReport& report,
                            const std::vector<std::string_view>& reports,
                            const reader::Timebase& timebase) {
  std::string out = absl::StrCat("gpscope stats: ", report.processes,
                                 report.processes == 1 ? " process" : " processes", "\n",
                                 TimeOriginText(timebase), "\n");
  for (std::string_view name : reports) {
    const Table t = Build(report, name);
    absl::StrAppend(&out, "\n", std::string(name), ": ", t.title, "\n");
    if (t.rows.empty()) {
      absl::StrAppend(&out, "  none\n");
      continue;
    }
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> width(t.columns.size());
    for (size_t i = 0; i < t.columns.size(); ++i) width[i] = t.columns[i].size();
    for (const std::vector<Cell>& row : t.rows) {
      std::vector<std::string> texts;
      for (size_t i = 0; i < row.size(); ++i) {
        texts.push_back(TextCell(t.columns[i], row[i]));
        if (i + 1 < row.size()) width[i] = std::max(width[i], texts.back().size());
      }
      cells.push_back(std::move(texts));
    }
    // Numbers right-aligned; the last column (the name) left-aligned, uncut.
    auto line = [&](const std::vector<std::string>& texts) {
      std::string l = " ";
      for (size_t i = 0; i < texts.size(); ++i) {
        const bool last = i + 1 == texts.size();
        const bool text_column = last || t.columns[i] == "domain";
        l += ' ';
        if (!text_column && texts[i].size() < width[i]) l.append(width[i] - texts[i].size(), ' ');
        l += texts[i];
        if (text_column && !last && texts[i].size() < width[i]) {
          l.append(width[i] - texts[i].size(), ' ');
        }
      }
      absl::StrAppend(&out, l, "\n");
    };
    line(t.columns);
    for (const std::vector<std::string>& texts : cells) line(texts);
  }
  return out;
}

std::string RenderStatsJson(const analyses::StatsReport& report,
                            const std::vector<std::string_view>& reports,
                            const reader::Timebase& timebase, std::string_view names) {
  std::string out;
  JsonWriter json(&out);
  json.BeginObject();
  json.Key("schema").String("gpscope.stats/1");
  WriteTimeOrigin(timebase, json);
  json.Key("names").String(names);
  json.Key("processes").Uint(report.processes);
  json.Key("reports").BeginObject();
  for (std::string_view name : reports) {
    const Table t = Build(report, name);
    json.Key(name).BeginObject();
    json.Key("title").String(t.title);
    json.Key("columns").BeginInlineArray();
    for (const std::string& c : t.columns) json.String(c);
    json.EndArray();
    json.Key("rows").BeginArray();
    for (const std::vector<Cell>& row : t.rows) {
      json.BeginInlineArray();
      for (const Cell& c : row) {
        if (const std::string* s = std::get_if<std::string>(&c)) {
          json.String(*s);
        } else if (const uint64_t* u = std::get_if<uint64_t>(&c)) {
          json.Uint(*u);
        } else {
          json.Double(std::get<double>(c));
        }
      }
      json.EndArray();
    }
    json.EndArray();
    json.EndObject();
  }
  json.EndObject();
  json.EndObject();
  out += "\n";
  return out;
}

std::string RenderStatsCsv(const analyses::StatsReport& report, std::string_view name,
                           const reader::Timebase& timebase) {
  std::string out = TimeOriginCsvLine(timebase);
  if (!out.empty() && out.back() != '\n') out += "\n";
  const Table t = Build(report, name);
  CsvWriter csv(&out);
  for (const std::string& c : t.columns) csv.Field(c);
  csv.EndRow();
  for (const std::vector<Cell>& row : t.rows) {
    for (const Cell& c : row) {
      if (const std::string* s = std::get_if<std::string>(&c)) {
        csv.Field(*s);
      } else if (const uint64_t* u = std::get_if<uint64_t>(&c)) {
        csv.Field(*u);
      } else {
        csv.Field(std::get<double>(c));
      }
    }
    csv.EndRow();
  }
  return out;
}

}  // namespace gpscope::render
