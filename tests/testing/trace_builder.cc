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

// ------------------------------------------- events (proto/columns.h) --

template <format::Wire W, typename Element, typename Event, typename T>
void TraceBuilder::Process::AddColumn(google::protobuf::RepeatedField<Element>* column,
                                      const Event& e, T v, uint64_t& previous) {
  using format::Wire;
  if constexpr (W == Wire::kTimeDelta) {
    if (!base_set_) {  // the batch's first event: base_ns is its time unless set before
      if (batch_.base_ns() == 0) batch_.set_base_ns(v);
      base_set_ = true;
      for (uint32_t i = 0; i < format::kNumColumns; ++i) {
        if (format::kColumnWires[i] == Wire::kTimeDelta) previous_[i] = batch_.base_ns();
      }
    }
    // Unsigned subtraction then two's complement: mirrors the reader's wrap.
    column->Add(static_cast<int64_t>(v - previous));
    previous = v;
  } else if constexpr (W == Wire::kCorrelationDelta) {
    column->Add(static_cast<int64_t>(v) - static_cast<int64_t>(previous));
    previous = v;
  } else if constexpr (W == Wire::kDuration) {
    column->Add(v - e.start_ns);
  } else {
    column->Add(static_cast<Element>(v));  // an enum column holds ints
  }
}

#define GPSCOPE_BUILD_COLUMN(number, name, wire, type, member) \
  AddColumn<format::Wire::wire>(c->mutable_##name(), e, e.member, *previous++);
#define GPSCOPE_BUILD_KIND(Name, Message, field, number, Event, COLUMNS)           \
  TraceBuilder::Process& TraceBuilder::Process::Add(const format::Event& e) {      \
    proto::Message* c = batch_.mutable_##field();                                  \
    uint64_t* previous = previous_ + format::kKinds[format::k##Name].first_column; \
    COLUMNS(GPSCOPE_BUILD_COLUMN)                                                  \
    return *this;                                                                  \
  }
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_BUILD_KIND)
#undef GPSCOPE_BUILD_KIND
#undef GPSCOPE_BUILD_COLUMN

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
  format::StackSampleEvent e{};
  e.timestamp_ns = timestamp_ns;
  e.thread_id = thread_id;
  e.correlation_id = correlation_id;
  e.stack_id = stack_id;
  e.trigger = static_cast<uint32_t>(trigger);
  return Add(e);
}

size_t TraceBuilder::Process::open_events() const {
  // The reader's CountEvents, restated: this library must not depend on it.
  size_t n = 0;
#define GPSCOPE_COLUMN_SIZE(number, name, wire, type, member) c.name##_size(),
#define GPSCOPE_COUNT_KIND(Name, Message, field, number, Event, COLUMNS) \
  {                                                                      \
    const proto::Message& c = batch_.field();                            \
    const int sizes[] = {COLUMNS(GPSCOPE_COLUMN_SIZE)};                  \
    n += static_cast<size_t>(sizes[0]);                                  \
  }
  GPSCOPE_EVENT_KINDS(GPSCOPE_COUNT_KIND)
#undef GPSCOPE_COLUMN_SIZE
#undef GPSCOPE_COUNT_KIND
  return n;
}

TraceBuilder::Process& TraceBuilder::Process::Flush() {
  if (batch_.ByteSizeLong() == 0) return *this;
  events_written_ += open_events();
  proto::Chunk chunk = NewChunk();
  chunk.mutable_batch()->Swap(&batch_);
  trace_->AppendChunk(chunk);
  batch_.Clear();
  base_set_ = false;
  for (uint64_t& c : previous_) c = 0;
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
