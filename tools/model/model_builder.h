// tools/model/model_builder.h: builds a TraceModel (trace_model.h) from trace
// files in one streaming pass, in memory that does not grow with the number
// of events.
//
// Per process it keeps the name tables, launch shapes, devices and metric
// descriptors; GPU records go through a ReorderQueue (CUPTI delivers them
// late and roughly in order) and are swept in start order per device (busy
// union, idle gaps) and per stream (HTA idle breakdown). Launch calls wait in
// a table by correlation id (kept for ModelOptions::api_retention_ns) until
// their GPU op is swept; sync calls wait in an interval index for the gaps
// they caused. So memory is bounded by names + streams + the events of one
// reorder window (+ the launch calls of the retention time), not by run
// length.
//
//   TraceModel model = BuildModel({"run.gpscope"}, ModelOptions{});
//   // or, as any ChunkVisitor:
//   ModelBuilder builder(options);
//   reader::TraceReader reader(builder);
//   reader.ReadFile(path);
//   TraceModel model = builder.Finish(reader.TakeIndex());
//
// Thread model: one thread; a builder is used for one pass.
#ifndef GPSCOPE_TOOLS_MODEL_MODEL_BUILDER_H_
#define GPSCOPE_TOOLS_MODEL_MODEL_BUILDER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tools/model/trace_model.h"
#include "tools/reader/trace_reader.h"

namespace gpscope::model {

class ModelBuilder : public reader::ChunkVisitor {
 public:
  explicit ModelBuilder(const ModelOptions& options = {});
  ~ModelBuilder() override;
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // Never stops the reader: a batch that does not decode becomes a warning.
  absl::Status OnChunk(const reader::ChunkContext& context, const proto::Chunk& chunk) override;
  void OnWarning(std::string_view warning) override;

  // Ends the pass (drains the reorder queues, closes open intervals and
  // steps) and returns the model; `index` is the reader's.
  TraceModel Finish(reader::TraceIndex index);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads `paths` (unreadable files are recorded in model.index.files) and
// builds the model.
TraceModel BuildModel(const std::vector<std::string>& paths, const ModelOptions& options = {});

// Whether an NVTX range name marks a training step: "step 12", "Step#3",
// "ProfilerStep#7", "iteration 5", "iter_9", "train_step", "training step 4",
// "train_iteration"... (case-insensitive; trailing number and separators
// optional).
bool IsStepName(std::string_view name);

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", "cudaMemcpyAsync_ptsz_v7000"
// -> "cudaMemcpyAsync".
std::string_view NormalizeApiName(std::string_view name);

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_MODEL_BUILDER_H_
