// tests/testing/trace_builder.cc: see trace_builder.h.
#include "tests/testing/trace_builder.h"

#include <fstream>
#include <stdexcept>
#include <utility>

namespace gpscope::testing {

proto::ProcessHeader DefaultHeader(uint32_t pid) {
  proto::ProcessHeader h;
  h.set_format_version(format::kFormatVersion);
  h.set_gpscope_version("0.1.0-test");
  h.set_hostname("testhost");
  h.set_pid(pid);
  h.set_ppid(1);
  h.add_cmdline("python");
  h.add_cmdline("train.py");
  h.set_exe_path("/usr/bin/python3");
  h.set_start_realtime_ns(1'700'000'000'000'000'000);
  h.mutable_identity()->set_rank(-1);
  h.mutable_identity()->set_local_rank(-1);
  h.mutable_identity()->set_node_rank(-1);
  proto::DeviceInfo* d = h.add_devices();
  d->set_device_id(0);
  d->set_name("NVIDIA H100 80GB HBM3");
  d->set_uuid("GPU-00000000-1111-2222-3333-444444444444");
  d->set_pci_bus_id("0000:18:00.0");
  d->set_compute_capability_major(9);
  d->set_compute_capability_minor(0);
  d->set_sm_count(132);
  d->set_global_memory_bytes(85'520'809'984);
  proto::ClockSnapshot* c = h.add_clocks();
  c->set_cupti_ns(1'000'000'000);
  c->set_realtime_ns(1'700'000'000'000'000'000);
  c->set_monotonic_ns(5'000'000'000);
  h.set_cuda_driver_version(13000);
  h.set_cupti_api_version(130001);
  h.set_driver_version("580.159.04");
  return h;
}

// ---------------------------------------------------------------- Process --

TraceBuilder::Process::Process(TraceBuilder* trace, uint64_t uid, uint32_t pid)
    : trace_(trace), uid_(uid), pid_(pid), header_(DefaultHeader(pid)) {}

proto::Chunk TraceBuilder::Process::NewChunk() {
  proto::Chunk chunk;
  chunk.set_process_uid(uid_);
  chunk.set_pid(pid_);
  chunk.set_sequence(next_sequence_++);
  ++chunks_written_;
  return chunk;
}

TraceBuilder::Process& TraceBuilder::Process::WriteHeader() {
  proto::Chunk chunk = NewChunk();
  *chunk.mutable_header() = header_;
  trace_->AppendChunk(chunk);
  return *this;
}

uint32_t TraceBuilder::Process::Intern(std::string_view text) {
  if (text.empty()) return 0;
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(strings_.size() + 1);
  strings_.emplace(std::string(text), id);
  proto::InternedString* s = batch_.add_strings();
  s->set_id(id);
  s->set_value(std::string(text));
  return id;
}

int64_t TraceBuilder::Process::StartDelta(Kind kind, uint64_t start_ns) {
  if (!base_set_) {
    if (batch_.base_ns() == 0) batch_.set_base_ns(start_ns);
    base_set_ = true;
    for (uint64_t& p : previous_ns_) p = batch_.base_ns();
  }
  // Unsigned subtraction then two's complement: mirrors the reader's wrap.
  const int64_t delta = static_cast<int64_t>(start_ns - previous_ns_[kind]);
  previous_ns_[kind] = start_ns;
  return delta;
}

int64_t TraceBuilder::Process::CorrelationDelta(Kind kind, uint32_t correlation_id) {
  const int64_t delta =
      static_cast<int64_t>(correlation_id) - static_cast<int64_t>(previous_correlation_[kind]);
  previous_correlation_[kind] = correlation_id;
  return delta;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::KernelEvent& e) {
  proto::Kernels* c = batch_.mutable_kernels();
  c->add_start_delta_ns(StartDelta(kKernel, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_name_id(e.name_id);
  c->add_launch_config_id(e.launch_config_id);
  c->add_device_id(e.device_id);
  c->add_context_id(e.context_id);
  c->add_stream_id(e.stream_id);
  c->add_correlation_delta(CorrelationDelta(kKernel, e.correlation_id));
  c->add_graph_id(e.graph_id);
  c->add_graph_node_id(e.graph_node_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::MemcpyEvent& e) {
  proto::Memcpys* c = batch_.mutable_memcpys();
  c->add_start_delta_ns(StartDelta(kMemcpy, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_bytes(e.bytes);
  c->add_copy_kind(static_cast<proto::MemcpyKind>(e.copy_kind));
  c->add_src_kind(static_cast<proto::MemoryKind>(e.src_kind));
  c->add_dst_kind(static_cast<proto::MemoryKind>(e.dst_kind));
  c->add_device_id(e.device_id);
  c->add_context_id(e.context_id);
  c->add_stream_id(e.stream_id);
  c->add_correlation_delta(CorrelationDelta(kMemcpy, e.correlation_id));
  c->add_flags(e.flags);
  c->add_graph_id(e.graph_id);
  c->add_dst_device_id(e.dst_device_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::MemsetEvent& e) {
  proto::Memsets* c = batch_.mutable_memsets();
  c->add_start_delta_ns(StartDelta(kMemset, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_bytes(e.bytes);
  c->add_value(e.value);
  c->add_memory_kind(static_cast<proto::MemoryKind>(e.memory_kind));
  c->add_device_id(e.device_id);
  c->add_context_id(e.context_id);
  c->add_stream_id(e.stream_id);
  c->add_correlation_delta(CorrelationDelta(kMemset, e.correlation_id));
  c->add_flags(e.flags);
  c->add_graph_id(e.graph_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::SyncEvent& e) {
  proto::Syncs* c = batch_.mutable_syncs();
  c->add_start_delta_ns(StartDelta(kSync, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_sync_kind(static_cast<proto::SyncKind>(e.sync_kind));
  c->add_context_id(e.context_id);
  c->add_stream_id(e.stream_id);
  c->add_event_id(e.event_id);
  c->add_correlation_delta(CorrelationDelta(kSync, e.correlation_id));
  c->add_thread_id(e.thread_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::ApiCallEvent& e) {
  proto::ApiCalls* c = batch_.mutable_api_calls();
  c->add_start_delta_ns(StartDelta(kApi, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_domain(static_cast<proto::ApiDomain>(e.domain));
  c->add_cbid(e.cbid);
  c->add_thread_id(e.thread_id);
  c->add_correlation_delta(CorrelationDelta(kApi, e.correlation_id));
  c->add_return_value(e.return_value);
  c->add_api_name_id(e.api_name_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::NvtxRangeEvent& e) {
  proto::NvtxRanges* c = batch_.mutable_nvtx_ranges();
  c->add_start_delta_ns(StartDelta(kRange, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_name_id(e.name_id);
  c->add_domain_id(e.domain_id);
  c->add_thread_id(e.thread_id);
  c->add_depth(e.depth);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::NvtxMarkEvent& e) {
  proto::NvtxMarks* c = batch_.mutable_nvtx_marks();
  c->add_timestamp_delta_ns(StartDelta(kMark, e.timestamp_ns));
  c->add_name_id(e.name_id);
  c->add_domain_id(e.domain_id);
  c->add_thread_id(e.thread_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::OverheadEvent& e) {
  proto::Overheads* c = batch_.mutable_overheads();
  c->add_start_delta_ns(StartDelta(kOverhead, e.start_ns));
  c->add_duration_ns(e.end_ns - e.start_ns);
  c->add_overhead_kind(static_cast<proto::OverheadKind>(e.overhead_kind));
  c->add_thread_id(e.thread_id);
  c->add_device_id(e.device_id);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::Add(const format::MetricSample& e) {
  proto::MetricSamples* c = batch_.mutable_metrics();
  c->add_timestamp_delta_ns(StartDelta(kMetric, e.timestamp_ns));
  c->add_metric_id(e.metric_id);
  c->add_value(e.value);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::AddKernel(uint64_t start_ns, uint64_t duration_ns,
                                                        std::string_view name, uint32_t stream_id) {
  format::KernelEvent e{};
  e.start_ns = start_ns;
  e.end_ns = start_ns + duration_ns;
  e.name_id = Intern(name);
  e.context_id = 1;
  e.stream_id = stream_id;
  e.correlation_id = next_correlation_++;
  return Add(e);
}

uint32_t TraceBuilder::Process::AddPythonFrame(std::string_view file, uint32_t line,
                                              std::string_view function) {
  proto::StackFrame* f = batch_.add_stack_frames();
  f->set_id(next_frame_id_++);
  f->set_kind(proto::FRAME_PYTHON);
  f->set_file_id(Intern(file));
  f->set_function_id(Intern(function));
  f->set_line(line);
  return f->id();
}

uint32_t TraceBuilder::Process::AddNativeFrame(std::string_view module, uint64_t module_offset,
                                              std::string_view symbol) {
  proto::StackFrame* f = batch_.add_stack_frames();
  f->set_id(next_frame_id_++);
  f->set_kind(proto::FRAME_NATIVE);
  f->set_file_id(Intern(module));
  f->set_function_id(Intern(symbol));
  f->set_module_offset(module_offset);
  return f->id();
}

uint32_t TraceBuilder::Process::AddStack(const std::vector<uint32_t>& frame_ids, bool truncated) {
  proto::Stack* s = batch_.add_stacks();
  s->set_id(next_stack_id_++);
  for (uint32_t f : frame_ids) s->add_frame_ids(f);
  s->set_truncated(truncated);
  return s->id();
}

TraceBuilder::Process& TraceBuilder::Process::AddStackSample(uint64_t timestamp_ns,
                                                             uint32_t thread_id,
                                                             uint32_t correlation_id,
                                                             uint32_t stack_id,
                                                             proto::StackTrigger trigger) {
  proto::StackSamples* c = batch_.mutable_stack_samples();
  c->add_timestamp_delta_ns(StartDelta(kStackSample, timestamp_ns));
  c->add_thread_id(thread_id);
  c->add_correlation_delta(CorrelationDelta(kStackSample, correlation_id));
  c->add_stack_id(stack_id);
  c->add_trigger(trigger);
  return *this;
}

size_t TraceBuilder::Process::open_events() const {
  // The reader's CountEvents, restated: this library must not depend on it.
  const proto::EventBatch& b = batch_;
  return static_cast<size_t>(
      b.kernels().start_delta_ns_size() + b.memcpys().start_delta_ns_size() +
      b.memsets().start_delta_ns_size() + b.syncs().start_delta_ns_size() +
      b.api_calls().start_delta_ns_size() + b.nvtx_ranges().start_delta_ns_size() +
      b.nvtx_marks().timestamp_delta_ns_size() + b.overheads().start_delta_ns_size() +
      b.metrics().timestamp_delta_ns_size());
}

TraceBuilder::Process& TraceBuilder::Process::Flush() {
  if (batch_.ByteSizeLong() == 0) return *this;
  events_written_ += open_events();
  proto::Chunk chunk = NewChunk();
  chunk.mutable_batch()->Swap(&batch_);
  trace_->AppendChunk(chunk);
  batch_.Clear();
  base_set_ = false;
  for (uint64_t& c : previous_correlation_) c = 0;
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::WriteEnd(proto::ProcessEnd end) {
  Flush();
  proto::Chunk chunk = NewChunk();
  if (end.reason() == proto::END_UNKNOWN) end.set_reason(proto::END_EXIT);
  if (end.chunks_written() == 0) end.set_chunks_written(chunks_written_);
  if (end.events_written() == 0) end.set_events_written(events_written_);
  *chunk.mutable_end() = std::move(end);
  trace_->AppendChunk(chunk);
  return *this;
}

TraceBuilder::Process& TraceBuilder::Process::SkipSequence(uint64_t count) {
  next_sequence_ += count;
  return *this;
}

// ----------------------------------------------------------- TraceBuilder --

TraceBuilder::TraceBuilder(int zstd_level) : zstd_level_(zstd_level) {
  bytes_.resize(format::kFileHeaderBytes);
  format::WriteFileHeader(bytes_.data());
}

TraceBuilder::~TraceBuilder() = default;

TraceBuilder::Process& TraceBuilder::AddProcess(uint64_t process_uid, uint32_t pid) {
  processes_.push_back(std::unique_ptr<Process>(new Process(this, process_uid, pid)));
  return *processes_.back();
}

size_t TraceBuilder::AppendChunk(const proto::Chunk& chunk) {
  const std::string raw = chunk.SerializeAsString();
  if (raw.size() > encoder_max_bytes_) {
    encoder_max_bytes_ = std::max<size_t>(raw.size(), 1u << 20);
    encoder_ = std::make_unique<format::FrameEncoder>(encoder_max_bytes_, zstd_level_);
  }
  const uint8_t* frame = nullptr;
  const size_t frame_bytes =
      encoder_->Encode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &frame);
  // A test helper that silently wrote nothing would make tests pass vacuously.
  if (frame_bytes == 0) throw std::runtime_error("TraceBuilder: FrameEncoder::Encode failed");
  const size_t offset = bytes_.size();
  frame_offsets_.push_back(offset);
  bytes_.insert(bytes_.end(), frame, frame + frame_bytes);
  return offset;
}

void TraceBuilder::AppendBytes(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), p, p + bytes);
}

bool TraceBuilder::WriteFile(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes_.data()),
            static_cast<std::streamsize>(bytes_.size()));
  out.close();
  return out.good();
}

}  // namespace gpscope::testing
