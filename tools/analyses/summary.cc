// tools/analyses/summary.cc: see summary.h.
#include "tools/analyses/summary.h"

namespace gpscope::analyses {

std::unique_ptr<SummaryResult> ComputeSummaryResult(const std::vector<std::string>& paths,
                                                    const model::ModelOptions& model_options,
                                                    const ReportOptions& options,
                                                    const std::vector<reader::EventSink*>& more_sinks) {
  auto result = std::make_unique<SummaryResult>();
  result->model = model::BuildModel(paths, model_options, more_sinks);
  result->report = ComputeSummary(result->model, options);
  result->findings = EvaluateRules(result->model, result->report);
  return result;
}

}  // namespace gpscope::analyses
