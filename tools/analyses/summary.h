// tools/analyses/summary.h: what `gpscope-analyze summary` (and diff, the
// report, the launcher's report) computes: the model built from the trace
// files in one pass, the per-GPU and per-process numbers
// (analyses::ComputeSummary) and the findings (analyses::EvaluateRules).
// Rendering is render/summary_render.h's.
//
//   std::unique_ptr<SummaryResult> r =
//       ComputeSummaryResult({"run.gpscope"}, model::ModelOptions{}, ReportOptions{});
//   for (const Finding& f : r->findings) ...
//
// Thread model: single-threaded; the result is immutable once returned.
#ifndef GPSCOPE_TOOLS_ANALYSES_SUMMARY_H_
#define GPSCOPE_TOOLS_ANALYSES_SUMMARY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/analyses/gpu_report.h"
#include "tools/analyses/rules.h"
#include "tools/model/model_builder.h"
#include "tools/model/trace_model.h"
#include "tools/reader/event_sink.h"

namespace gpscope::analyses {

struct SummaryResult {
  model::TraceModel model;
  SummaryReport report;  // points into model: keep them together
  std::vector<Finding> findings;
};

// Builds the model from `paths` in one pass (beside `more_sinks`: the
// report's timeline) and runs the analyses. The result is heap allocated
// because the report points into the model.
std::unique_ptr<SummaryResult> ComputeSummaryResult(
    const std::vector<std::string>& paths, const model::ModelOptions& model_options,
    const ReportOptions& options, const std::vector<reader::EventSink*>& more_sinks = {});

// The same for one trace in memory: a capture window that the node monitor
// cut out of a growing trace (window_summary.h).
std::unique_ptr<SummaryResult> ComputeSummaryResultFromBuffer(const std::string& name,
                                                              const uint8_t* data, size_t size,
                                                              const model::ModelOptions& model_options,
                                                              const ReportOptions& options);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_SUMMARY_H_
