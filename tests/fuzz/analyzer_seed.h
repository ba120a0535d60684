// tests/fuzz/analyzer_seed.h: the seed input of analyzer_fuzz.cc (its
// mutator starts over from it now and then) and of the committed seed
// tests/fuzz/analyzer_corpus/stack_tables.chunks (make_analyzer_seed.cc).
#ifndef GPSCOPE_TESTS_FUZZ_ANALYZER_SEED_H_
#define GPSCOPE_TESTS_FUZZ_ANALYZER_SEED_H_

#include <cstdint>
#include <iterator>
#include <vector>

#include "gpscope/trace.pb.h"

namespace gpscope::fuzz {

// A small, ordinary trace: header, one batch with every kind (call stacks
// too: frames, stacks, samples joined to the launch), end.
inline std::vector<proto::Chunk> AnalyzerSeed() {
  std::vector<proto::Chunk> chunks(3);
  for (size_t i = 0; i < chunks.size(); ++i) {
    chunks[i].set_process_uid(0x1234);
    chunks[i].set_pid(42);
    chunks[i].set_sequence(i);
  }
  proto::ProcessHeader* h = chunks[0].mutable_header();
  h->set_format_version(1);
  h->set_hostname("node0");
  h->add_cmdline("python");
  h->add_cmdline("train.py");
  h->mutable_identity()->set_rank(0);
  h->mutable_identity()->set_world_size(1);
  proto::DeviceInfo* d = h->add_devices();
  d->set_device_id(0);
  d->set_name("NVIDIA H100");
  d->set_sm_count(132);
  d->set_max_threads_per_sm(2048);
  d->set_max_blocks_per_sm(32);
  d->set_max_registers_per_sm(65536);
  d->set_max_shared_memory_per_sm_bytes(233472);
  proto::ClockSnapshot* clock = h->add_clocks();
  clock->set_cupti_ns(1'000'000'000);
  clock->set_realtime_ns(1'700'000'000'000'000'000ull);
  proto::EventBatch* b = chunks[1].mutable_batch();
  b->set_base_ns(1'000'000'000);
  const char* names[] = {"", "gemm_kernel", "ncclDevKernel_AllReduce", "cudaLaunchKernel",
                         "step 1", "cudaStreamSynchronize"};
  for (uint32_t i = 1; i < std::size(names); ++i) {
    proto::InternedString* s = b->add_strings();
    s->set_id(i);
    s->set_value(names[i]);
  }
  proto::LaunchConfig* c = b->add_launch_configs();
  c->set_id(1);
  c->set_grid_x(264);
  c->set_grid_y(1);
  c->set_grid_z(1);
  c->set_block_x(256);
  c->set_block_y(1);
  c->set_block_z(1);
  c->set_registers_per_thread(64);
  proto::Kernels* k = b->mutable_kernels();
  for (int i = 0; i < 4; ++i) {
    k->add_start_delta_ns(i == 0 ? 1000 : 20000);
    k->add_duration_ns(15000);
    k->add_name_id(i % 2 ? 2 : 1);
    k->add_launch_config_id(1);
    k->add_device_id(0);
    k->add_context_id(1);
    k->add_stream_id(7);
    k->add_correlation_delta(1);
    k->add_graph_id(0);
    k->add_graph_node_id(0);
  }
  proto::Memcpys* m = b->mutable_memcpys();
  m->add_start_delta_ns(500);
  m->add_duration_ns(400);
  m->add_bytes(4096);
  m->add_copy_kind(proto::MEMCPY_HTOD);
  m->add_src_kind(proto::MEMORY_PAGEABLE);
  m->add_dst_kind(proto::MEMORY_DEVICE);
  m->add_device_id(0);
  m->add_context_id(1);
  m->add_stream_id(7);
  m->add_correlation_delta(10);
  m->add_flags(0);
  m->add_graph_id(0);
  m->add_dst_device_id(0);
  proto::ApiCalls* a = b->mutable_api_calls();
  a->add_start_delta_ns(0);
  a->add_duration_ns(3000);
  a->add_domain(proto::API_RUNTIME);
  a->add_cbid(211);
  a->add_thread_id(99);
  a->add_correlation_delta(1);
  a->add_return_value(0);
  a->add_api_name_id(3);
  proto::Syncs* y = b->mutable_syncs();
  y->add_start_delta_ns(90000);
  y->add_duration_ns(5000);
  y->add_sync_kind(proto::SYNC_STREAM_SYNCHRONIZE);
  y->add_context_id(1);
  y->add_stream_id(7);
  y->add_event_id(0xffffffffu);
  y->add_correlation_delta(20);
  y->add_thread_id(99);
  proto::NvtxRanges* r = b->mutable_nvtx_ranges();
  r->add_start_delta_ns(0);
  r->add_duration_ns(100000);
  r->add_name_id(4);
  r->add_domain_id(0);
  r->add_thread_id(99);
  r->add_depth(0);
  proto::MetricDescriptor* md = b->add_metric_descriptors();
  md->set_id(1);
  md->set_name("gpm.sm_util");
  md->set_unit("percent");
  md->set_scope(proto::SCOPE_DEVICE);
  proto::MetricSamples* ms = b->mutable_metrics();
  ms->add_timestamp_delta_ns(50000);
  ms->add_metric_id(1);
  ms->add_value(75.0);
  // Call stacks (issue 20): a Python and a native frame, a stack of both, a
  // stack naming an undefined frame, samples for the launch (thread 99,
  // correlation 1) and for a call that never comes.
  const uint32_t first_new = static_cast<uint32_t>(std::size(names));
  const char* stack_strings[] = {"/home/u/train.py", "train_step",
                                 "/usr/local/cuda/lib64/libcudart.so.13",
                                 "_Z16cudaLaunchKernelPKvv"};
  for (uint32_t i = 0; i < std::size(stack_strings); ++i) {
    proto::InternedString* s = b->add_strings();
    s->set_id(first_new + i);
    s->set_value(stack_strings[i]);
  }
  proto::StackFrame* py = b->add_stack_frames();
  py->set_id(1);
  py->set_kind(proto::FRAME_PYTHON);
  py->set_file_id(first_new);
  py->set_function_id(first_new + 1);
  py->set_line(42);
  proto::StackFrame* native = b->add_stack_frames();
  native->set_id(2);
  native->set_kind(proto::FRAME_NATIVE);
  native->set_file_id(first_new + 2);
  native->set_function_id(first_new + 3);
  native->set_module_offset(0x1234);
  proto::Stack* st = b->add_stacks();
  st->set_id(1);
  st->add_frame_ids(2);
  st->add_frame_ids(1);
  proto::Stack* st2 = b->add_stacks();
  st2->set_id(2);
  st2->add_frame_ids(7);
  st2->add_frame_ids(1);
  st2->set_truncated(true);
  proto::StackSamples* ss = b->mutable_stack_samples();
  ss->add_timestamp_delta_ns(0);
  ss->add_thread_id(99);
  ss->add_correlation_delta(1);
  ss->add_stack_id(1);
  ss->add_trigger(proto::STACK_AFTER_IDLE);
  ss->add_timestamp_delta_ns(90000);
  ss->add_thread_id(99);
  ss->add_correlation_delta(1000);
  ss->add_stack_id(2);
  ss->add_trigger(proto::STACK_SYNC);
  b->add_drops()->set_count(3);
  b->add_lost_intervals()->set_start_ns(1'000'200'000);
  b->add_capabilities()->set_component("gpm");
  proto::ProcessEnd* e = chunks[2].mutable_end();
  e->set_end_ns(1'001'000'000);
  e->set_reason(proto::END_EXIT);
  return chunks;
}

}  // namespace gpscope::fuzz

#endif  // GPSCOPE_TESTS_FUZZ_ANALYZER_SEED_H_
