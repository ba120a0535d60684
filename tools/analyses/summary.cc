// tools/analyses/summary.cc: see summary.h.
#include "tools/analyses/summary.h"

namespace gpscope::analyses {
namespace {

// The per-GPU numbers and the findings of a built model.
std::unique_ptr<SummaryResult> Analyse(model::TraceModel model, const ReportOptions& options) {
  auto result = std::make_unique<SummaryResult>();
  result->model = std::move(model);
  result->report = ComputeSummary(result->model, options);
  result->findings = EvaluateRules(result->model, result->report);
  return result;
}

}  // namespace

std::unique_ptr<SummaryResult> ComputeSummaryResult(const std::vector<std::string>& paths,
                                                    const model::ModelOptions& model_options,
                                                    const ReportOptions& options,
                                                    const std::vector<reader::EventSink*>& more_sinks) {
  return Analyse(model::BuildModel(paths, model_options, more_sinks), options);
}

std::unique_ptr<SummaryResult> ComputeSummaryResultFromBuffer(const std::string& name,
                                                              const uint8_t* data, size_t size,
                                                              const model::ModelOptions& model_options,
                                                              const ReportOptions& options) {
  return Analyse(model::BuildModelFromBuffer(name, data, size, model_options), options);
}

}  // namespace gpscope::analyses
