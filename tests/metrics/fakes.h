// tests/metrics/fakes.h: a scripted HostSource and a recording
// MetricSink for the sampler tests.
#ifndef GPSCOPE_TESTS_INJECT_METRICS_FAKES_H_
#define GPSCOPE_TESTS_INJECT_METRICS_FAKES_H_

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "metrics/host_stats.h"
#include "metrics/sampler.h"

namespace gpscope::metrics::testing {

// HostSource whose readings the test sets before each read.
class FakeHost : public HostSource {
 public:
  bool open_ok = true;
  bool threads_ok = true;
  HostSnapshot snapshot;           // returned by Read()
  std::vector<ThreadCpu> threads;  // returned by ReadThreads()
  uint64_t threads_mono_ns = 0;
  int reads = 0, thread_reads = 0;

  bool Open(const char** reason) override {
    if (!open_ok) *reason = "fake host closed";
    return open_ok;
  }
  void Read(HostSnapshot* out) override {
    ++reads;
    *out = snapshot;
  }
  bool ReadThreads(ThreadCpu* out, size_t cap, ThreadScan* scan) override {
    ++thread_reads;
    if (!threads_ok) return false;
    *scan = ThreadScan{};
    scan->total = threads.size();
    scan->count = std::min(cap, threads.size());
    scan->mono_ns = threads_mono_ns;
    for (size_t i = 0; i < scan->count; ++i) out[i] = threads[i];
    return true;
  }
  uint64_t ticks_per_second() const override { return 100; }

  static ThreadCpu Thread(uint32_t tid, uint64_t ticks, const char* comm) {
    ThreadCpu t;
    t.tid = tid;
    t.cpu_ticks = ticks;
    // As the kernel does: at most 15 characters, NUL-terminated (t.comm is zeroed).
    std::memcpy(t.comm, comm, std::min(std::strlen(comm), sizeof(t.comm) - 1));
    return t;
  }
};

// Records everything, in order; can refuse descriptors/notices.
class RecordingSink : public MetricSink {
 public:
  struct Event {
    char kind;  // 'd', 'c', 's'
    uint32_t id;
  };
  bool refuse = false;
  std::vector<MetricDef> defs;
  std::vector<CapabilityDef> caps;
  std::vector<format::MetricSample> samples;
  std::vector<Event> order;

  bool OnDescriptor(const MetricDef& d) override {
    if (refuse) return false;
    defs.push_back(d);
    order.push_back({'d', d.id});
    return true;
  }
  bool OnCapability(const CapabilityDef& c) override {
    if (refuse) return false;
    caps.push_back(c);
    order.push_back({'c', 0});
    return true;
  }
  void OnSample(const format::MetricSample& s) override {
    samples.push_back(s);
    order.push_back({'s', s.metric_id});
  }

  const MetricDef* Def(const std::string& name, uint32_t pid = 0, uint32_t tid = 0) const {
    for (const MetricDef& d : defs) {
      if (name == d.name && (pid == 0 || d.pid == pid) && (tid == 0 || d.thread_id == tid)) {
        return &d;
      }
    }
    return nullptr;
  }
  int CountDefs(const std::string& prefix) const {
    int n = 0;
    for (const MetricDef& d : defs) n += std::string(d.name).rfind(prefix, 0) == 0;
    return n;
  }
  std::vector<const CapabilityDef*> Caps(const std::string& component) const {
    std::vector<const CapabilityDef*> out;
    for (const CapabilityDef& c : caps) {
      if (component == c.component) out.push_back(&c);
    }
    return out;
  }
  // Values of metric `id` with timestamp `ts` (or any, when ts == 0).
  std::vector<double> Values(uint32_t id, uint64_t ts = 0) const {
    std::vector<double> out;
    for (const auto& s : samples) {
      if (s.metric_id == id && (ts == 0 || s.timestamp_ns == ts)) out.push_back(s.value);
    }
    return out;
  }
  std::vector<double> Values(const MetricDef* d, uint64_t ts = 0) const {
    return d != nullptr ? Values(d->id, ts) : std::vector<double>{};
  }
};

}  // namespace gpscope::metrics::testing

#endif  // GPSCOPE_TESTS_INJECT_METRICS_FAKES_H_
