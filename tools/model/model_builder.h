// tools/model/model_builder.h: builds a TraceModel (trace_model.h) from trace
// files in one streaming pass, in memory that does not grow with the number
// of events.
//
// The model is one event sink of the reader's pass (reader/event_sink.h):
// names, launch shapes, devices, metric descriptors and clocks come from the
// reader's ProcessTables, already checked; the builder keeps only caches
// derived from them by id (a name's API class, whether it names a step...).
// GPU records go through a ReorderQueue (CUPTI delivers them late and
// roughly in order) and are swept in start order per device (busy union,
// idle gaps) and per stream (HTA idle breakdown). Launch calls wait in a
// table by correlation id (kept for ModelOptions::api_retention_ns) until
// their GPU op is swept; sync calls wait in an interval index for the gaps
// they caused. So memory is bounded by names + streams + the events of one
// reorder window (+ the launch calls of the retention time), not by run
// length.
//
//   TraceModel model = BuildModel({"run.gpscope"}, ModelOptions{});
//   // or beside other sinks in the same pass (the report's timeline):
//   ModelBuilder builder(options);
//   reader::ReadResult read = reader::ReadEvents(paths, {&builder, &timeline});
//   TraceModel model = builder.Finish(std::move(read));
//
// Work per batch runs in two phases. The arrival (each event's stats, the
// caches by id, GpuOps) runs in OnBatch on the reader's thread; the sweep
// (the reorder queue and everything it feeds: gaps, unions, launch
// matching, steps, the timelines) runs on a sweep thread of the builder's,
// fed the arrival's changes to its state as commands through a bounded
// queue (ModelOptions::threads; model_builder.cc, "threads").
// The commands keep the order one thread would apply them in, so the
// model is the same either way.
//
// Thread model: the reader calls the sink methods from one thread; the
// builder's sweep thread touches only the sweep's state and the commands
// handed to it, and is joined by Finish() (or the destructor). A call-stack
// table, or a kernel the sweep would have to look up by name, makes the
// builder finish the queue and go on on the reader's thread alone. A
// builder is used for one pass.
#ifndef GPSCOPE_TOOLS_MODEL_MODEL_BUILDER_H_
#define GPSCOPE_TOOLS_MODEL_MODEL_BUILDER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tools/model/trace_model.h"
#include "tools/reader/event_reader.h"
#include "tools/reader/event_sink.h"

namespace gpscope::model {

class ModelBuilder : public reader::EventSink {
 public:
  explicit ModelBuilder(const ModelOptions& options = {});
  ~ModelBuilder() override;
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  void OnHeader(const reader::ProcessTables& tables, const proto::ProcessHeader& header,
                const reader::ChunkPlace& place) override;
  // Never stops the reader: a batch that did not decode becomes a warning.
  void OnBatch(const reader::ResolvedBatch& batch) override;
  void OnEnd(const reader::ProcessTables& tables, const proto::ProcessEnd& end,
             const reader::ChunkPlace& place) override;
  void OnWarning(std::string_view warning) override;
  // No: the model keys its streams itself (StreamSlot, by context and stream).
  bool WantsStreams() const override { return false; }

  // Ends the pass (drains the reorder queues, closes open intervals and
  // steps) and returns the model, which takes the reader's index, tables
  // and timebase.
  TraceModel Finish(reader::ReadResult read);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The reader's options for a model of these options (warnings kept).
reader::ReadOptions ReadOptionsFor(const ModelOptions& options);

// Reads `paths` in one pass (unreadable files are recorded in
// model.index.files) and builds the model; `more_sinks` (the report's
// timeline) see the same pass.
TraceModel BuildModel(const std::vector<std::string>& paths, const ModelOptions& options = {},
                      const std::vector<reader::EventSink*>& more_sinks = {});
// The same for one trace in memory (`name` in its messages), read on the
// caller's thread: a capture window cut out of a growing trace
// (reader/window_cut.h) by the node monitor.
TraceModel BuildModelFromBuffer(const std::string& name, const uint8_t* data, size_t size,
                                const ModelOptions& options = {});

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
