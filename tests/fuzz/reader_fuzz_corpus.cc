// tests/fuzz/reader_fuzz_corpus.cc: writes reader_fuzz's seed inputs into
// the directory given as argv[1] (tests/fuzz/corpus/ holds their output).
// Small on purpose: libFuzzer mutates small inputs fastest.
#include <zstd.h>

#include <cstdio>
#include <string>

#include "proto/framing.h"
#include "tests/testing/trace_builder.h"

using gpscope::testing::TraceBuilder;

namespace {

void Save(const TraceBuilder& trace, const std::string& dir, const std::string& name,
          size_t cut_bytes = 0) {
  std::vector<uint8_t> bytes = trace.bytes();
  bytes.resize(bytes.size() - cut_bytes);
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(name.c_str());
  }
  if (f != nullptr) std::fclose(f);
}

// One of every event kind and notice.
void AddEverything(TraceBuilder::Process& p, uint64_t t) {
  p.AddKernel(t, 100, "k");
  gpscope::format::MemcpyEvent copy{t + 5, t + 9, 4096, 1, 1, 3, 0, 1, 7, 2, 1, 0, 0};
  p.Add(copy);
  p.Add(gpscope::format::MemsetEvent{t + 10, t + 11, 64, 0, 3, 0, 1, 7, 3, 0, 0});
  p.Add(gpscope::format::SyncEvent{t + 12, t + 20, 3, 1, 7, 0xffffffffu, 4, 99});
  p.Add(gpscope::format::ApiCallEvent{t - 5, t + 1, 1, 211, 99, 1, 0, p.Intern("cudaLaunch")});
  p.Add(gpscope::format::NvtxRangeEvent{t - 10, t + 30, p.Intern("step"), 0, 99, 0});
  p.Add(gpscope::format::NvtxMarkEvent{t + 3, p.Intern("m"), 0, 99});
  p.Add(gpscope::format::OverheadEvent{t + 1, t + 2, 2, 99, 0});
  p.Add(gpscope::format::MetricSample{t + 4, 1, 42.5});
  p.batch().add_drops()->set_count(3);
  p.batch().add_lost_intervals()->set_start_ns(t);
  p.batch().add_capabilities()->set_component("gpm");
  p.batch().add_clocks()->set_cupti_ns(t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  {
    TraceBuilder trace;
    Save(trace, dir, "header_only.gps");
  }
  {
    TraceBuilder trace;
    TraceBuilder::Process& p = trace.AddProcess(1, 100);
    p.WriteHeader();
    AddEverything(p, 1'000'000'000);
    p.Flush().WriteEnd();
    Save(trace, dir, "every_kind.gps");
    Save(trace, dir, "every_kind_torn.gps", 7);
  }
  {
    TraceBuilder trace;
    TraceBuilder::Process& a = trace.AddProcess(2, 200);
    TraceBuilder::Process& b = trace.AddProcess(3, 300);
    a.WriteHeader();
    b.header().set_ppid(2);
    b.WriteHeader();
    a.AddKernel(10, 5, "a").Flush();
    trace.AppendBytes("garbage GPSF", 12);
    b.SkipSequence(2).AddKernel(20, 5, "b").Flush();
    a.WriteEnd();
    Save(trace, dir, "two_processes_damaged.gps");
  }
  {
    // The chunk-list form (see reader_fuzz.cc): u16 length + serialized
    // Chunk, taken back out of a built trace's frames.
    TraceBuilder trace;
    TraceBuilder::Process& p = trace.AddProcess(4, 400);
    p.WriteHeader();
    AddEverything(p, 2'000'000'000);
    p.Flush().SkipSequence(1).AddKernel(2'100'000'000, 9, "late").Flush().WriteEnd();
    std::vector<uint8_t> list;
    const std::vector<uint8_t>& bytes = trace.bytes();
    for (size_t offset : trace.frame_offsets()) {
      gpscope::format::FrameView view{};
      gpscope::format::ParseFrame(bytes.data() + offset, bytes.size() - offset, &view);
      std::vector<uint8_t> raw(view.raw_bytes);
      ZSTD_decompress(raw.data(), raw.size(), view.payload, view.payload_bytes);
      list.push_back(static_cast<uint8_t>(raw.size()));
      list.push_back(static_cast<uint8_t>(raw.size() >> 8));
      list.insert(list.end(), raw.begin(), raw.end());
    }
    FILE* f = std::fopen((dir + "/chunk_list.bin").c_str(), "wb");
    if (f == nullptr || std::fwrite(list.data(), 1, list.size(), f) != list.size()) {
      std::perror("chunk_list.bin");
    }
    if (f != nullptr) std::fclose(f);
  }
  return 0;
}
