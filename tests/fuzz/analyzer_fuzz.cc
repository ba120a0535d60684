// tests/fuzz/analyzer_fuzz.cc: a structure-aware libFuzzer target for the
// whole analyzer (issue 17). Debian 12 has no libprotobuf-mutator, so
// LLVMFuzzerCustomMutator below does its job: an input is a list of
// serialized gpscope.proto.Chunk messages (u32 little-endian length, then
// the bytes); the mutator parses them and changes one thing with protobuf
// reflection, to the values collectors never write: ids and counts at
// 0 / 1 / 2^30 / 2^31 / 2^32-1, timestamps near 2^64, NaN and infinities,
// hostile and long strings, one more value in one column (inconsistent
// columns), a whole extra event in every column, repeated/removed/
// duplicated messages, process uids and sequence numbers moved, a chunk
// copied or dropped. Every chunk stays a valid message, so the reader
// frames it and the consumers see it.
//
// Each input is framed into a trace file (valid checksums) on a memfd and
// run through every command of gpscope-analyze in process (cli.h Run():
// summary text/JSON/CSV, report data, export, dump, info, metrics, diff),
// under a 512 MiB memory budget. Crashes, sanitizer reports, output that
// is not valid UTF-8 and raw control characters in text output fail.
//
//   build-fuzz/tests/fuzz/analyzer_fuzz -max_len=65536 -max_total_time=60 CORPUS_DIR
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/stubs/logging.h"
#include "gpscope/trace.pb.h"
#include "proto/framing.h"
#include "tests/fuzz/analyzer_seed.h"
#include "tools/analyze/cli.h"
#include "tools/render/text_sanitize.h"

namespace {

namespace pb = google::protobuf;
namespace proto = gpscope::proto;

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }

 private:
  uint64_t s_;
};

// ------------------------------------------------------------ limit values --

uint64_t LimitU64(Rng& rng) {
  static const uint64_t kValues[] = {0,
                                     1,
                                     2,
                                     7,
                                     255,
                                     1u << 20,
                                     1u << 30,
                                     0x7fffffffu,
                                     0x80000000u,
                                     0xffffffffu,
                                     1ull << 32,
                                     1'000'000'000ull,
                                     1'700'000'000'000'000'000ull,
                                     1ull << 63,
                                     std::numeric_limits<uint64_t>::max() - 1000,
                                     std::numeric_limits<uint64_t>::max()};
  if (rng.OneIn(8)) return rng.Next();
  return kValues[rng.Below(std::size(kValues))];
}

int64_t LimitI64(Rng& rng) {
  static const int64_t kValues[] = {0, 1, -1, 1000, -1000, std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min(), 1ll << 40, -(1ll << 40)};
  if (rng.OneIn(8)) return static_cast<int64_t>(rng.Next());
  return kValues[rng.Below(std::size(kValues))];
}

double LimitDouble(Rng& rng) {
  static const double kValues[] = {std::nan(""),
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(),
                                   0.0,
                                   -0.0,
                                   1e308,
                                   -1e308,
                                   5e-324,
                                   100.0,
                                   1.8e19,
                                   50.0};
  return kValues[rng.Below(std::size(kValues))];
}

std::string HostileString(Rng& rng, size_t room) {
  static const char* const kParts[] = {
      "\x1b]0;title\x07", "\x1b[2J", "\x07",           "\302\23331m",   "\xe2\x80\xae",
      "\xe2\x81\xa6",     "\n",      "\r",             "\t",             "=HYPERLINK(\"x\")",
      "+1",               "-1",      "@SUM(A1)",       "\xc3\xa9",       "gemm_kernel",
      "ncclDevKernel_AllReduce", "step 3", "cudaLaunchKernel", "gpm.sm_util", "\"quote\\",
      "</script>",        "\xf0\x9f\x98\x80"};
  std::string s;
  const size_t parts = 1 + rng.Below(6);
  for (size_t i = 0; i < parts; ++i) s += kParts[rng.Below(std::size(kParts))];
  if (rng.OneIn(4)) s.push_back('\0');
  if (rng.OneIn(6)) s.append(std::min<size_t>(room, 1 + rng.Below(70000)), 'x');  // long
  return s;
}

// ---------------------------------------------------------------- mutation --

void SetScalar(pb::Message* m, const pb::FieldDescriptor* f, Rng& rng, int index, size_t room) {
  const pb::Reflection* r = m->GetReflection();
  const bool add = index < 0;
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      const uint32_t v = static_cast<uint32_t>(LimitU64(rng));
      add ? r->AddUInt32(m, f, v) : f->is_repeated() ? r->SetRepeatedUInt32(m, f, index, v)
                                                      : r->SetUInt32(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t v = LimitU64(rng);
      add ? r->AddUInt64(m, f, v) : f->is_repeated() ? r->SetRepeatedUInt64(m, f, index, v)
                                                      : r->SetUInt64(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      const int32_t v = static_cast<int32_t>(LimitI64(rng));
      add ? r->AddInt32(m, f, v) : f->is_repeated() ? r->SetRepeatedInt32(m, f, index, v)
                                                     : r->SetInt32(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      const int64_t v = LimitI64(rng);
      add ? r->AddInt64(m, f, v) : f->is_repeated() ? r->SetRepeatedInt64(m, f, index, v)
                                                     : r->SetInt64(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = LimitDouble(rng);
      add ? r->AddDouble(m, f, v) : f->is_repeated() ? r->SetRepeatedDouble(m, f, index, v)
                                                      : r->SetDouble(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      const bool v = rng.OneIn(2);
      add ? r->AddBool(m, f, v) : f->is_repeated() ? r->SetRepeatedBool(m, f, index, v)
                                                    : r->SetBool(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const int v = static_cast<int>(rng.Below(12)) - 1;  // unknown values too (proto3)
      add ? r->AddEnumValue(m, f, v) : f->is_repeated() ? r->SetRepeatedEnumValue(m, f, index, v)
                                                         : r->SetEnumValue(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      const std::string v = HostileString(rng, room);
      add ? r->AddString(m, f, v) : f->is_repeated() ? r->SetRepeatedString(m, f, index, v)
                                                      : r->SetString(m, f, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
}

// Whether every field of m is a repeated scalar: one event kind's columns.
bool IsColumns(const pb::Descriptor* d) {
  if (d->field_count() == 0) return false;
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (!f->is_repeated() || f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) return false;
  }
  return true;
}

void Mutate(pb::Message* m, Rng& rng, size_t room, int depth) {
  const pb::Descriptor* d = m->GetDescriptor();
  const pb::Reflection* r = m->GetReflection();
  if (IsColumns(d) && rng.OneIn(3)) {
    // A whole event: one value in every column (consistent), `count` times.
    const size_t count = rng.OneIn(8) ? 1 + rng.Below(2000) : 1;
    for (size_t n = 0; n < count; ++n) {
      for (int i = 0; i < d->field_count(); ++i) SetScalar(m, d->field(i), rng, -1, room);
    }
    return;
  }
  const pb::FieldDescriptor* f = d->field(static_cast<int>(rng.Below(d->field_count())));
  // Stay inside the chunk's oneof body most of the time.
  if (f->containing_oneof() != nullptr && !r->HasField(*m, f) && !rng.OneIn(8)) {
    if (const pb::FieldDescriptor* set = r->GetOneofFieldDescriptor(*m, f->containing_oneof())) {
      f = set;
    }
  }
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    if (!f->is_repeated()) {
      Mutate(r->MutableMessage(m, f), rng, room, depth + 1);
      return;
    }
    const int n = r->FieldSize(*m, f);
    if (n > 0 && rng.OneIn(6)) {
      r->RemoveLast(m, f);
    } else if (n > 0 && rng.OneIn(5)) {
      r->AddMessage(m, f)->CopyFrom(r->GetRepeatedMessage(*m, f, static_cast<int>(rng.Below(n))));
    } else if (n == 0 || rng.OneIn(3)) {
      Mutate(r->AddMessage(m, f), rng, room, depth + 1);
    } else {
      Mutate(r->MutableRepeatedMessage(m, f, static_cast<int>(rng.Below(n))), rng, room, depth + 1);
    }
    return;
  }
  if (!f->is_repeated()) {
    SetScalar(m, f, rng, 0, room);
    return;
  }
  const int n = r->FieldSize(*m, f);
  if (n > 0 && rng.OneIn(5)) {
    r->RemoveLast(m, f);  // a column one value short
  } else if (n == 0 || rng.OneIn(3)) {
    SetScalar(m, f, rng, -1, room);  // one value more (or a new list entry)
  } else {
    SetScalar(m, f, rng, static_cast<int>(rng.Below(n)), room);
  }
}

// ------------------------------------------------------------- chunk lists --

std::vector<proto::Chunk> ParseList(const uint8_t* data, size_t size) {
  std::vector<proto::Chunk> chunks;
  while (size >= 4) {
    uint32_t n = 0;
    std::memcpy(&n, data, 4);
    data += 4;
    size -= 4;
    if (n > size) break;
    proto::Chunk c;
    if (c.ParseFromArray(data, static_cast<int>(n))) chunks.push_back(std::move(c));
    data += n;
    size -= n;
  }
  return chunks;
}

std::string SerializeList(const std::vector<proto::Chunk>& chunks) {
  std::string out;
  for (const proto::Chunk& c : chunks) {
    std::string bytes;
    c.SerializeToString(&bytes);
    const uint32_t n = static_cast<uint32_t>(bytes.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += bytes;
  }
  return out;
}

// A small, ordinary trace (analyzer_seed.h).
std::vector<proto::Chunk> Seed() { return gpscope::fuzz::AnalyzerSeed(); }

// Call stacks (issue 20): what the generic mutations reach slowly. A stack
// of up to 100,000 frame ids (the reader keeps 256), a frame or stack id at
// a limit, or a sample naming ids at the limits or the API call's
// correlation id on another thread.
void MutateStacks(proto::EventBatch* b, Rng& rng, size_t room) {
  switch (rng.Below(4)) {
    case 0: {
      proto::Stack* s = b->stacks_size() > 0 && rng.OneIn(2)
                            ? b->mutable_stacks(static_cast<int>(rng.Below(b->stacks_size())))
                            : b->add_stacks();
      if (s->id() == 0) s->set_id(static_cast<uint32_t>(LimitU64(rng)));
      const size_t n = std::min<size_t>(1 + rng.Below(100'000), room / 2 + 1);
      for (size_t i = 0; i < n; ++i) s->add_frame_ids(static_cast<uint32_t>(rng.Below(4) + 1));
      break;
    }
    case 1: {
      proto::StackFrame* f = b->add_stack_frames();
      f->set_id(static_cast<uint32_t>(LimitU64(rng)));
      f->set_kind(static_cast<proto::FrameKind>(rng.Below(4)));
      f->set_file_id(static_cast<uint32_t>(LimitU64(rng)));
      f->set_function_id(static_cast<uint32_t>(rng.Below(8)));
      f->set_module_offset(LimitU64(rng));
      break;
    }
    case 2: {
      proto::Stack* s = b->add_stacks();
      s->set_id(static_cast<uint32_t>(LimitU64(rng)));
      s->add_frame_ids(static_cast<uint32_t>(LimitU64(rng)));
      s->set_truncated(rng.OneIn(2));
      break;
    }
    default: {
      proto::StackSamples* m = b->mutable_stack_samples();
      m->add_timestamp_delta_ns(static_cast<int64_t>(LimitU64(rng)));
      m->add_thread_id(rng.OneIn(2) ? 99 : static_cast<uint32_t>(LimitU64(rng)));
      m->add_correlation_delta(rng.OneIn(2) ? 1 : static_cast<int64_t>(LimitU64(rng)));
      m->add_stack_id(rng.OneIn(2) ? 1 : static_cast<uint32_t>(LimitU64(rng)));
      m->add_trigger(static_cast<proto::StackTrigger>(rng.Below(5)));
      break;
    }
  }
}

// ------------------------------------------------------------ the harness --

bool HasRawControl(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = gpscope::render::DecodeUtf8(text, i, &cp);
    if (n == 0) return true;  // not UTF-8
    if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f ||
        gpscope::render::IsUnsafeCodePoint(cp)) {
      return true;
    }
    i += n;
  }
  return false;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  std::vector<proto::Chunk> chunks = ParseList(data, size);
  if (chunks.empty() || rng.OneIn(200)) chunks = Seed();
  const size_t room = max_size > size ? (max_size - size) / 2 : 16;
  const size_t steps = 1 + rng.Below(3);
  for (size_t step = 0; step < steps; ++step) {
    const size_t which = rng.Below(chunks.size());
    switch (rng.Below(12)) {
      case 0:  // copy a chunk (a duplicate or, renumbered, another process)
        chunks.push_back(chunks[which]);
        if (rng.OneIn(2)) chunks.back().set_process_uid(LimitU64(rng));
        break;
      case 1:
        if (chunks.size() > 1) chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(which));
        break;
      case 2:
        chunks[which].set_sequence(LimitU64(rng));
        break;
      case 3:
        chunks[which].set_pid(static_cast<uint32_t>(LimitU64(rng)));
        break;
      case 4:
        if (chunks[which].has_batch()) {
          MutateStacks(chunks[which].mutable_batch(), rng, room);
          break;
        }
        Mutate(&chunks[which], rng, room, 0);
        break;
      default:
        Mutate(&chunks[which], rng, room, 0);
    }
  }
  std::string out = SerializeList(chunks);
  if (out.size() > max_size) return size;  // too big: keep the input as it was
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  std::vector<proto::Chunk> chunks = ParseList(input, size);
  if (chunks.empty()) return 0;

  // Frame the chunks into a trace file on a memfd.
  static gpscope::format::FrameEncoder encoder(gpscope::format::kMaxFrameBytes);
  std::string file(gpscope::format::kFileHeaderBytes, '\0');
  gpscope::format::WriteFileHeader(reinterpret_cast<uint8_t*>(file.data()));
  for (const proto::Chunk& c : chunks) {
    std::string raw;
    c.SerializeToString(&raw);
    const uint8_t* frame = nullptr;
    const size_t n = encoder.Encode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &frame);
    if (n == 0) __builtin_trap();
    file.append(reinterpret_cast<const char*>(frame), n);
  }
  const int fd = memfd_create("analyzer_fuzz", MFD_CLOEXEC);
  if (fd < 0 || write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) {
    __builtin_trap();
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  static const std::string sqlite_path =
      "/tmp/gpscope-analyzer-fuzz-" + std::to_string(getpid()) + ".sqlite";

  struct Case {
    std::vector<std::string> args;
    bool text;  // text output: no raw control characters at all
    bool binary = false;  // protobuf output: only stderr is checked
  };
  const std::vector<Case> cases = {
      {{"summary", path}, true},
      {{"summary", "--format", "json", path}, false},
      {{"summary", "--format", "csv", "--table", "kernels", path}, true},
      {{"summary", "--format", "csv", "--table", "windows", path}, true},
      {{"summary", "--format", "csv", "--table", "lines", path}, true},
      {{"report", "--data-only", "--no-compress", "-o", "-", path}, false},
      {{"export", path}, false},
      {{"export", "--format", "perfetto", path}, false, true},
      {{"dump", path}, false},
      {{"info", path}, true},
      {{"info", "--format", "json", path}, false},
      {{"metrics", path}, true},
      {{"metrics", "--format", "json", path}, false},
      {{"diff", path, path}, true},
      {{"stats", path}, true},
      {{"stats", "--format", "json", "--names", "base", path}, false},
      {{"export", "--format", "sqlite", "-o", sqlite_path, path}, false},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin() + 1, {"--max-memory", "512M"});
    std::ostringstream out, err;
    const int code = gpscope::analyze::Run(args, out, err);
    if (code != 0 && code != 1) __builtin_trap();  // 2 is usage: the harness is wrong
    const std::string o = out.str();
    // JSON escapes everything too, so every output is checked; stderr as well.
    if ((!c.binary && HasRawControl(o)) || HasRawControl(err.str())) __builtin_trap();
  }
  unlink(sqlite_path.c_str());
  close(fd);
  return 0;
}
