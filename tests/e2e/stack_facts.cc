// tests/e2e/stack_facts.cc: the call stacks of gpscope traces as JSON lines,
// for tests/e2e/stacks_gpu.sh (it does not depend on the analyzer's reading
// of them, which is built separately).
//
//   stack_facts FILE...
//
// One line per StackSamples row, joined to its API record by (process,
// thread id, correlation id):
//   {"pid":P,"tid":T,"corr":C,"trigger":"SYNC|AFTER_IDLE|SAMPLED|SYNC_MAIN_THREAD|?",
//    "api":"cudaMemcpy_v3020" ("" when no API record has that id),
//    "api_ns":DURATION, "truncated":B,
//    "frames":[{"kind":"py|native|?","file":F,"func":N,"line":L,"offset":O}, ...]}
// frames innermost first (stack id 0: []). Then one summary line:
//   {"summary":1,"samples":N,"joined":N,"stacks":N,"frames":N,"stack_drops":N,
//    "order_errors":N,"warnings":N,"capabilities":[[component,available,reason],...]}
// order_errors counts ids used before (in an earlier chunk than) their
// definition: frames before stacks before samples is the collector's promise.
// Exit status 0, or 2 with one line on stderr when a file cannot be read.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tools/reader/batch_decode.h"
#include "tools/reader/trace_reader.h"

namespace {

using namespace gpscope;  // NOLINT

std::string Json(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

struct Sample {
  uint32_t tid, corr, stack_id, trigger;
  uint64_t chunk;
};

struct Process {
  uint32_t pid = 0;
  std::map<uint32_t, std::string> strings;
  std::map<uint32_t, std::pair<proto::StackFrame, uint64_t>> frames;
  std::map<uint32_t, std::pair<proto::Stack, uint64_t>> stacks;
  std::vector<Sample> samples;
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint64_t>> api;  // (tid, corr)
  uint64_t chunks = 0;
  uint64_t stack_drops = 0;
  std::vector<proto::CapabilityNotice> capabilities;
};

struct Visitor : reader::ChunkVisitor {
  std::map<uint64_t, Process> processes;
  absl::Status OnChunk(const reader::ChunkContext&, const proto::Chunk& c) override {
    Process& p = processes[c.process_uid()];
    p.pid = c.pid();
    const uint64_t chunk = p.chunks++;
    if (!c.has_batch()) return absl::OkStatus();
    const proto::EventBatch& b = c.batch();
    for (const auto& s : b.strings()) p.strings[s.id()] = s.value();
    for (const auto& f : b.stack_frames()) p.frames[f.id()] = {f, chunk};
    for (const auto& s : b.stacks()) p.stacks[s.id()] = {s, chunk};
    for (const auto& d : b.drops()) {
      if (d.reason() == proto::DROP_STACKS) p.stack_drops += d.count();
    }
    for (const auto& cap : b.capabilities()) p.capabilities.push_back(cap);
    if (b.has_stack_samples()) {
      const auto& ss = b.stack_samples();
      int64_t corr = 0;
      for (int i = 0; i < ss.thread_id_size(); ++i) {
        corr += ss.correlation_delta(i);
        p.samples.push_back({ss.thread_id(i), static_cast<uint32_t>(corr), ss.stack_id(i),
                             static_cast<uint32_t>(ss.trigger(i)), chunk});
      }
    }
    reader::DecodedBatch d;
    absl::Status st = reader::DecodeBatch(b, &d);
    if (!st.ok()) return st;
    for (const auto& a : d.api_calls) {
      p.api[{a.thread_id, a.correlation_id}] = {a.api_name_id, a.end_ns - a.start_ns};
    }
    return absl::OkStatus();
  }
};

const char* TriggerName(uint32_t t) {
  switch (t) {
    case proto::STACK_SYNC: return "SYNC";
    case proto::STACK_AFTER_IDLE: return "AFTER_IDLE";
    case proto::STACK_SAMPLED: return "SAMPLED";
    case proto::STACK_SYNC_MAIN_THREAD: return "SYNC_MAIN_THREAD";
    default: return "?";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: stack_facts FILE...\n");
    return 2;
  }
  std::vector<std::string> files(argv + 1, argv + argc);
  Visitor v;
  absl::StatusOr<reader::TraceIndex> index = reader::ReadTraces(files, v);
  if (!index.ok()) {
    fprintf(stderr, "stack_facts: %s\n", std::string(index.status().message()).c_str());
    return 2;
  }
  uint64_t samples = 0, joined = 0, stacks = 0, frames = 0, drops = 0, order_errors = 0;
  std::string caps;
  for (auto& [uid, p] : v.processes) {
    auto str = [&](uint32_t id) {
      auto it = p.strings.find(id);
      return it == p.strings.end() ? std::string() : it->second;
    };
    stacks += p.stacks.size();
    frames += p.frames.size();
    drops += p.stack_drops;
    for (const auto& c : p.capabilities) {
      if (c.component().rfind("stacks", 0) != 0) continue;
      caps += std::string(caps.empty() ? "" : ",") + "[" + Json(c.component()) + "," +
              (c.available() ? "true" : "false") + "," + Json(c.reason()) + "]";
    }
    for (const Sample& s : p.samples) {
      ++samples;
      std::string api;
      uint64_t api_ns = 0;
      auto a = p.api.find({s.tid, s.corr});
      if (a != p.api.end()) {
        ++joined;
        api = str(a->second.first);
        api_ns = a->second.second;
      }
      std::string out = "{\"pid\":" + std::to_string(p.pid) + ",\"tid\":" + std::to_string(s.tid) +
                        ",\"corr\":" + std::to_string(s.corr) + ",\"trigger\":\"" +
                        TriggerName(s.trigger) + "\",\"api\":" + Json(api) +
                        ",\"api_ns\":" + std::to_string(api_ns);
      bool truncated = false;
      std::string fr;
      auto st = p.stacks.find(s.stack_id);
      if (st != p.stacks.end()) {
        if (st->second.second > s.chunk) ++order_errors;
        truncated = st->second.first.truncated();
        for (uint32_t id : st->second.first.frame_ids()) {
          auto f = p.frames.find(id);
          if (f == p.frames.end()) {
            ++order_errors;
            continue;
          }
          if (f->second.second > st->second.second) ++order_errors;
          const proto::StackFrame& x = f->second.first;
          const char* kind = x.kind() == proto::FRAME_PYTHON   ? "py"
                             : x.kind() == proto::FRAME_NATIVE ? "native"
                                                               : "?";
          fr += std::string(fr.empty() ? "" : ",") + "{\"kind\":\"" + kind + "\",\"file\":" +
                Json(str(x.file_id())) + ",\"func\":" + Json(str(x.function_id())) +
                ",\"line\":" + std::to_string(x.line()) +
                ",\"offset\":" + std::to_string(x.module_offset()) + "}";
        }
      } else if (s.stack_id != 0) {
        ++order_errors;
      }
      out += std::string(",\"truncated\":") + (truncated ? "true" : "false") + ",\"frames\":[" +
             fr + "]}";
      puts(out.c_str());
    }
  }
  printf("{\"summary\":1,\"samples\":%llu,\"joined\":%llu,\"stacks\":%llu,\"frames\":%llu,"
         "\"stack_drops\":%llu,\"order_errors\":%llu,\"warnings\":%zu,\"capabilities\":[%s]}\n",
         static_cast<unsigned long long>(samples), static_cast<unsigned long long>(joined),
         static_cast<unsigned long long>(stacks), static_cast<unsigned long long>(frames),
         static_cast<unsigned long long>(drops), static_cast<unsigned long long>(order_errors),
         index->warnings.size(), caps.c_str());
  return 0;
}
