// tools/reader/batch_decode.cc: see batch_decode.h.
#include "tools/reader/batch_decode.h"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tools/status_macros.h"

namespace gpscope::reader {
namespace {

using google::protobuf::RepeatedField;

struct Column {
  absl::string_view name;
  int size;
};

absl::Status CheckColumns(absl::string_view kind, absl::string_view first, int n,
                          std::initializer_list<Column> columns) {
  for (const Column& c : columns) {
    if (c.size != n) {
      return absl::DataLossError(
          absl::StrCat(kind, ": column ", c.name, " has ", c.size, " values, ", first, " has ", n));
    }
  }
  return absl::OkStatus();
}

// Running sum of a zigzag delta column. Unsigned arithmetic: a corrupt or
// hostile column wraps instead of overflowing a signed integer.
class DeltaCursor {
 public:
  DeltaCursor(const RepeatedField<int64_t>& deltas, uint64_t origin)
      : deltas_(deltas.data()), value_(origin) {}
  uint64_t Next(int i) { return value_ += static_cast<uint64_t>(deltas_[i]); }

 private:
  const int64_t* deltas_;
  uint64_t value_;
};

// Grows *out by n and returns the first new element.
template <typename Event>
Event* Extend(std::vector<Event>* out, int n) {
  const size_t old = out->size();
  out->resize(old + static_cast<size_t>(n));
  return out->data() + old;
}

}  // namespace

void DecodedBatch::Clear() {
  kernels.clear();
  memcpys.clear();
  memsets.clear();
  syncs.clear();
  api_calls.clear();
  nvtx_ranges.clear();
  nvtx_marks.clear();
  overheads.clear();
  metrics.clear();
}

size_t DecodedBatch::event_count() const {
  return kernels.size() + memcpys.size() + memsets.size() + syncs.size() + api_calls.size() +
         nvtx_ranges.size() + nvtx_marks.size() + overheads.size() + metrics.size();
}

size_t CountEvents(const proto::EventBatch& b) {
  return static_cast<size_t>(
      b.kernels().start_delta_ns_size() + b.memcpys().start_delta_ns_size() +
      b.memsets().start_delta_ns_size() + b.syncs().start_delta_ns_size() +
      b.api_calls().start_delta_ns_size() + b.nvtx_ranges().start_delta_ns_size() +
      b.nvtx_marks().timestamp_delta_ns_size() + b.overheads().start_delta_ns_size() +
      b.metrics().timestamp_delta_ns_size());
}

absl::Status DecodeKernels(const proto::EventBatch& batch, std::vector<format::KernelEvent>* out) {
  const proto::Kernels& c = batch.kernels();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("kernels", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"name_id", c.name_id_size()},
                                        {"launch_config_id", c.launch_config_id_size()},
                                        {"device_id", c.device_id_size()},
                                        {"context_id", c.context_id_size()},
                                        {"stream_id", c.stream_id_size()},
                                        {"correlation_delta", c.correlation_delta_size()},
                                        {"graph_id", c.graph_id_size()},
                                        {"graph_node_id", c.graph_node_id_size()}}));
  format::KernelEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  DeltaCursor correlation(c.correlation_delta(), 0);
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->graph_node_id = c.graph_node_id(i);
    e->name_id = c.name_id(i);
    e->launch_config_id = c.launch_config_id(i);
    e->device_id = c.device_id(i);
    e->context_id = c.context_id(i);
    e->stream_id = c.stream_id(i);
    e->correlation_id = static_cast<uint32_t>(correlation.Next(i));
    e->graph_id = c.graph_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeMemcpys(const proto::EventBatch& batch, std::vector<format::MemcpyEvent>* out) {
  const proto::Memcpys& c = batch.memcpys();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("memcpys", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"bytes", c.bytes_size()},
                                        {"copy_kind", c.copy_kind_size()},
                                        {"src_kind", c.src_kind_size()},
                                        {"dst_kind", c.dst_kind_size()},
                                        {"device_id", c.device_id_size()},
                                        {"context_id", c.context_id_size()},
                                        {"stream_id", c.stream_id_size()},
                                        {"correlation_delta", c.correlation_delta_size()},
                                        {"flags", c.flags_size()},
                                        {"graph_id", c.graph_id_size()},
                                        {"dst_device_id", c.dst_device_id_size()}}));
  format::MemcpyEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  DeltaCursor correlation(c.correlation_delta(), 0);
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->bytes = c.bytes(i);
    e->copy_kind = static_cast<uint32_t>(c.copy_kind(i));
    e->src_kind = static_cast<uint32_t>(c.src_kind(i));
    e->dst_kind = static_cast<uint32_t>(c.dst_kind(i));
    e->device_id = c.device_id(i);
    e->context_id = c.context_id(i);
    e->stream_id = c.stream_id(i);
    e->correlation_id = static_cast<uint32_t>(correlation.Next(i));
    e->flags = c.flags(i);
    e->graph_id = c.graph_id(i);
    e->dst_device_id = c.dst_device_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeMemsets(const proto::EventBatch& batch, std::vector<format::MemsetEvent>* out) {
  const proto::Memsets& c = batch.memsets();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("memsets", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"bytes", c.bytes_size()},
                                        {"value", c.value_size()},
                                        {"memory_kind", c.memory_kind_size()},
                                        {"device_id", c.device_id_size()},
                                        {"context_id", c.context_id_size()},
                                        {"stream_id", c.stream_id_size()},
                                        {"correlation_delta", c.correlation_delta_size()},
                                        {"flags", c.flags_size()},
                                        {"graph_id", c.graph_id_size()}}));
  format::MemsetEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  DeltaCursor correlation(c.correlation_delta(), 0);
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->bytes = c.bytes(i);
    e->value = c.value(i);
    e->memory_kind = static_cast<uint32_t>(c.memory_kind(i));
    e->device_id = c.device_id(i);
    e->context_id = c.context_id(i);
    e->stream_id = c.stream_id(i);
    e->correlation_id = static_cast<uint32_t>(correlation.Next(i));
    e->flags = c.flags(i);
    e->graph_id = c.graph_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeSyncs(const proto::EventBatch& batch, std::vector<format::SyncEvent>* out) {
  const proto::Syncs& c = batch.syncs();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("syncs", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"sync_kind", c.sync_kind_size()},
                                        {"context_id", c.context_id_size()},
                                        {"stream_id", c.stream_id_size()},
                                        {"event_id", c.event_id_size()},
                                        {"correlation_delta", c.correlation_delta_size()},
                                        {"thread_id", c.thread_id_size()}}));
  format::SyncEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  DeltaCursor correlation(c.correlation_delta(), 0);
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->sync_kind = static_cast<uint32_t>(c.sync_kind(i));
    e->context_id = c.context_id(i);
    e->stream_id = c.stream_id(i);
    e->event_id = c.event_id(i);
    e->correlation_id = static_cast<uint32_t>(correlation.Next(i));
    e->thread_id = c.thread_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeApiCalls(const proto::EventBatch& batch,
                            std::vector<format::ApiCallEvent>* out) {
  const proto::ApiCalls& c = batch.api_calls();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("api_calls", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"domain", c.domain_size()},
                                        {"cbid", c.cbid_size()},
                                        {"thread_id", c.thread_id_size()},
                                        {"correlation_delta", c.correlation_delta_size()},
                                        {"return_value", c.return_value_size()},
                                        {"api_name_id", c.api_name_id_size()}}));
  format::ApiCallEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  DeltaCursor correlation(c.correlation_delta(), 0);
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->domain = static_cast<uint32_t>(c.domain(i));
    e->cbid = c.cbid(i);
    e->thread_id = c.thread_id(i);
    e->correlation_id = static_cast<uint32_t>(correlation.Next(i));
    e->return_value = c.return_value(i);
    e->api_name_id = c.api_name_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeStackSamples(const proto::EventBatch& batch,
                                std::vector<StackSampleEvent>* out) {
  const proto::StackSamples& c = batch.stack_samples();
  const int n = c.timestamp_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("stack_samples", "timestamp_delta_ns", n,
                                       {{"thread_id", c.thread_id_size()},
                                        {"correlation_delta", c.correlation_delta_size()},
                                        {"stack_id", c.stack_id_size()},
                                        {"trigger", c.trigger_size()}}));
  StackSampleEvent* e = Extend(out, n);
  DeltaCursor time(c.timestamp_delta_ns(), batch.base_ns());
  DeltaCursor correlation(c.correlation_delta(), 0);
  for (int i = 0; i < n; ++i, ++e) {
    e->timestamp_ns = time.Next(i);
    e->thread_id = c.thread_id(i);
    e->correlation_id = static_cast<uint32_t>(correlation.Next(i));
    e->stack_id = c.stack_id(i);
    e->trigger = c.trigger(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeNvtxRanges(const proto::EventBatch& batch,
                              std::vector<format::NvtxRangeEvent>* out) {
  const proto::NvtxRanges& c = batch.nvtx_ranges();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("nvtx_ranges", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"name_id", c.name_id_size()},
                                        {"domain_id", c.domain_id_size()},
                                        {"thread_id", c.thread_id_size()},
                                        {"depth", c.depth_size()}}));
  format::NvtxRangeEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->name_id = c.name_id(i);
    e->domain_id = c.domain_id(i);
    e->thread_id = c.thread_id(i);
    e->depth = c.depth(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeNvtxMarks(const proto::EventBatch& batch,
                             std::vector<format::NvtxMarkEvent>* out) {
  const proto::NvtxMarks& c = batch.nvtx_marks();
  const int n = c.timestamp_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("nvtx_marks", "timestamp_delta_ns", n,
                                       {{"name_id", c.name_id_size()},
                                        {"domain_id", c.domain_id_size()},
                                        {"thread_id", c.thread_id_size()}}));
  format::NvtxMarkEvent* e = Extend(out, n);
  DeltaCursor timestamp(c.timestamp_delta_ns(), batch.base_ns());
  for (int i = 0; i < n; ++i, ++e) {
    e->timestamp_ns = timestamp.Next(i);
    e->name_id = c.name_id(i);
    e->domain_id = c.domain_id(i);
    e->thread_id = c.thread_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeOverheads(const proto::EventBatch& batch,
                             std::vector<format::OverheadEvent>* out) {
  const proto::Overheads& c = batch.overheads();
  const int n = c.start_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(CheckColumns("overheads", "start_delta_ns", n,
                                       {{"duration_ns", c.duration_ns_size()},
                                        {"overhead_kind", c.overhead_kind_size()},
                                        {"thread_id", c.thread_id_size()},
                                        {"device_id", c.device_id_size()}}));
  format::OverheadEvent* e = Extend(out, n);
  DeltaCursor start(c.start_delta_ns(), batch.base_ns());
  for (int i = 0; i < n; ++i, ++e) {
    e->start_ns = start.Next(i);
    e->end_ns = e->start_ns + c.duration_ns(i);
    e->overhead_kind = static_cast<uint32_t>(c.overhead_kind(i));
    e->thread_id = c.thread_id(i);
    e->device_id = c.device_id(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeMetrics(const proto::EventBatch& batch, std::vector<format::MetricSample>* out) {
  const proto::MetricSamples& c = batch.metrics();
  const int n = c.timestamp_delta_ns_size();
  GPSCOPE_RETURN_IF_ERROR(
      CheckColumns("metrics", "timestamp_delta_ns", n,
                   {{"metric_id", c.metric_id_size()}, {"value", c.value_size()}}));
  format::MetricSample* e = Extend(out, n);
  DeltaCursor timestamp(c.timestamp_delta_ns(), batch.base_ns());
  for (int i = 0; i < n; ++i, ++e) {
    e->timestamp_ns = timestamp.Next(i);
    e->metric_id = c.metric_id(i);
    e->value = c.value(i);
  }
  return absl::OkStatus();
}

absl::Status DecodeBatch(const proto::EventBatch& batch, DecodedBatch* out) {
  out->Clear();
  GPSCOPE_RETURN_IF_ERROR(DecodeKernels(batch, &out->kernels));
  GPSCOPE_RETURN_IF_ERROR(DecodeMemcpys(batch, &out->memcpys));
  GPSCOPE_RETURN_IF_ERROR(DecodeMemsets(batch, &out->memsets));
  GPSCOPE_RETURN_IF_ERROR(DecodeSyncs(batch, &out->syncs));
  GPSCOPE_RETURN_IF_ERROR(DecodeApiCalls(batch, &out->api_calls));
  GPSCOPE_RETURN_IF_ERROR(DecodeNvtxRanges(batch, &out->nvtx_ranges));
  GPSCOPE_RETURN_IF_ERROR(DecodeNvtxMarks(batch, &out->nvtx_marks));
  GPSCOPE_RETURN_IF_ERROR(DecodeOverheads(batch, &out->overheads));
  return DecodeMetrics(batch, &out->metrics);
}

}  // namespace gpscope::reader
