// tests/tools/monitor/duty_trace.h: one traced process with two capture
// windows, as the collector writes them under GPSCOPE_DUTY, for the tests of
// the monitor's --traces (window_tracker_test.cc, monitor_test.cc).
//
//   DutyTrace d;
//   BuildDutyTrace(&d);
//   append d.bytes()[0, d.first_window_bytes)   // header + window 1 (busy)
//   append the rest                             // time off, window 2 (idle-heavy), the end
//
// Window 1 is a compute-bound loop (the GPU never idles); window 2 launches
// a few short kernels every 20 ms of the host's own code (host-bound,
// critical). Between them, the LostInterval(TRACING_DISABLED) the collector
// writes when the next window opens. Thread model: single-threaded.
#ifndef GPSCOPE_TESTS_TOOLS_MONITOR_DUTY_TRACE_H_
#define GPSCOPE_TESTS_TOOLS_MONITOR_DUTY_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tests/testing/synth.h"
#include "tests/testing/trace_builder.h"

namespace gpscope::testing {

struct DutyTrace {
  TraceBuilder trace;
  size_t first_window_bytes = 0;  // the file once window 1 is written
  uint64_t first_window_end_ns = 0;  // CUPTI ns
  uint64_t second_window_start_ns = 0;
  const std::vector<uint8_t>& bytes() const { return trace.bytes(); }
};

// `duty`: the header's GPSCOPE_DUTY ("" for windows of another kind).
inline void BuildDutyTrace(DutyTrace* d, const std::string& duty = "1s/10s",
                           uint64_t uid = 0xD00D, uint32_t pid = 4242) {
  Synth s(d->trace, uid, pid, {}, [&duty](proto::ProcessHeader& h) {
    h.set_hostname("node7");
    h.mutable_identity()->set_job_id("job-42");
    h.mutable_identity()->set_rank(3);
    proto::KeyValue* kv = h.add_config();
    kv->set_key("GPSCOPE_DUTY");
    kv->set_value(duty);
  });
  LoopOptions busy;
  HealthyLoop(s, busy, 2'000'000'000);
  s.p().Flush();
  d->first_window_bytes = d->trace.bytes().size();
  d->first_window_end_ns = s.gpu_free_ns() + kSynthMs;

  // The next window opens at 20 s: the collector writes the time between.
  d->second_window_start_ns = 20'000'000'000;
  proto::LostInterval* off = s.p().batch().add_lost_intervals();
  off->set_start_ns(d->first_window_end_ns);
  off->set_end_ns(d->second_window_start_ns);
  off->set_reason(proto::LOST_TRACING_DISABLED);
  off->set_detail("outside the capture window");
  HostBoundLoop(s, d->second_window_start_ns);
  s.p().Flush();
  s.p().WriteEnd();
}

}  // namespace gpscope::testing

#endif  // GPSCOPE_TESTS_TOOLS_MONITOR_DUTY_TRACE_H_
