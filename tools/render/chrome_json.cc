// tools/render/chrome_json.cc: see chrome_json.h.
#include "tools/render/chrome_json.h"

#include <cmath>
#include <cstdio>

#include "tools/render/json_writer.h"

namespace gpscope::render {
namespace {

// Microseconds with ns fractions; a double holds them exactly for spans of
// weeks.
std::string Micros(int64_t ns) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

}  // namespace

ChromeJsonWriter::ChromeJsonWriter(std::ostream& out) : out_(out) {
  out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

void ChromeJsonWriter::Separator() {
  if (first_) {
    first_ = false;
  } else {
    out_ << ",\n";
  }
}

void ChromeJsonWriter::BeginProcess(const ExportProcess& p) {
  pids_[p.index] = p.pid;
  Separator();
  out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << p.pid
       << ",\"tid\":0,\"args\":{\"name\":" << JsonWriter::Quote(p.label) << "}}";
  if (p.rank >= 0) {
    Separator();
    out_ << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << p.pid
         << ",\"tid\":0,\"args\":{\"sort_index\":" << p.rank << "}}";
  }
}

void ChromeJsonWriter::DeclareTrack(uint32_t process, uint64_t tid, const std::string& name,
                                    uint32_t, int64_t sort_index) {
  const uint32_t pid = pids_[process];
  Separator();
  out_ << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << tid
       << ",\"args\":{\"name\":" << JsonWriter::Quote(name) << "}}";
  Separator();
  out_ << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << pid << ",\"tid\":" << tid
       << ",\"args\":{\"sort_index\":" << sort_index << "}}";
}

void ChromeJsonWriter::Head(const char* ph, const char* cat, const std::string& name,
                            uint32_t process, uint64_t tid, int64_t ts_ns) {
  Separator();
  out_ << "{\"ph\":\"" << ph << "\",\"cat\":\"" << cat << "\",\"name\":" << JsonWriter::Quote(name)
       << ",\"pid\":" << pids_[process] << ",\"tid\":" << tid << ",\"ts\":" << Micros(ts_ns);
  ++events_;
}

void ChromeJsonWriter::Slice(const ExportSlice& s, uint64_t tid) {
  Head(s.instant ? "i" : "X", s.category, s.name, s.process, tid, s.start_ns);
  if (!s.instant) out_ << ",\"dur\":" << Micros(s.end_ns > s.start_ns ? s.end_ns - s.start_ns : 0);
  out_ << ",\"args\":{";
  bool first = true;
  for (const ExportArg& a : s.args) {
    out_ << (first ? "" : ",") << JsonWriter::Quote(a.key) << ":";
    first = false;
    switch (a.kind) {
      case ExportArg::kInt: out_ << a.int_value; break;
      case ExportArg::kBool: out_ << (a.int_value ? "true" : "false"); break;
      case ExportArg::kString: out_ << JsonWriter::Quote(a.string_value); break;
    }
  }
  out_ << "}";
  if (s.instant) out_ << ",\"s\":\"t\"";
  if (s.stack_node != 0 && stacks_ != nullptr && s.stack_node <= stacks_->nodes().size()) {
    out_ << ",\"sf\":\"" << stacks_->nodes()[s.stack_node - 1].pid << "." << s.stack_node << "\"";
  }
  out_ << "}";
}

void ChromeJsonWriter::Flows(const std::vector<FlowMatcher::Flow>& flows) {
  for (const FlowMatcher::Flow& f : flows) {
    Head("s", "launch", "launch", f.from.process, f.from.tid, f.from.ts_ns);
    out_ << ",\"id\":" << f.id << "}";
    Head("f", "launch", "launch", f.to.process, f.to.tid, f.to.ts_ns);
    out_ << ",\"id\":" << f.id << ",\"bp\":\"e\"}";
  }
}

void ChromeJsonWriter::Counter(uint32_t process, uint32_t, const std::string& name, int64_t ts_ns,
                               double value) {
  Head("C", "metric", name, process, 0, ts_ns);
  char buf[64];
  // JSON has no NaN or infinity: a non-finite reading becomes null.
  if (std::isfinite(value)) {
    snprintf(buf, sizeof(buf), "%.6g", value);
  } else {
    snprintf(buf, sizeof(buf), "null");
  }
  out_ << ",\"args\":{\"value\":" << buf << "}}";
}

void ChromeJsonWriter::Finish(const reader::Timebase& timebase, const reader::TraceIndex* index) {
  out_ << "\n]";
  if (stacks_ != nullptr) stacks_->WriteDictionary(out_);  // only when the trace has stacks
  out_ << ",\"metadata\":{\"gpscope_time_origin\":{\"realtime_ns\":"
       << timebase.origin_realtime_ns() << ",\"utc\":" << JsonWriter::Quote(timebase.OriginUtc())
       << "}";
  if (index != nullptr && index->partial) {
    const reader::PartialRead& p = *index->partial;
    out_ << ",\"gpscope_partial\":{\"reason\":\"memory budget\",\"file\":"
         << JsonWriter::Quote(p.path) << ",\"offset\":" << p.offset
         << ",\"budget_bytes\":" << p.budget_bytes << ",\"message\":" << JsonWriter::Quote(p.Message())
         << "}";
  }
  out_ << "}}\n";
}

}  // namespace gpscope::render
