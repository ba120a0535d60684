// tests/tools/batch_columns_test.cc: the four expansions of proto/columns.h
// against each other, for every kind and every column. Random events of all
// kinds go through the collector's encoder (BatchBuilder) and through the
// libprotobuf test builder (TraceBuilder): the two chunks are the same bytes,
// and the reader decodes them back to the events sent. The column checks
// reject a batch in which any one column of any kind is a value short.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpscope/trace.pb.h"
#include "proto/batch_builder.h"
#include "proto/columns.h"
#include "tests/testing/event_compare.h"
#include "tests/testing/trace_builder.h"
#include "tools/reader/batch_decode.h"

namespace gpscope {
namespace {

using format::BatchBuilder;
using google::protobuf::FieldDescriptor;

// The collector's entry points, one per kind.
bool Add(BatchBuilder& b, const format::KernelEvent& e) { return b.AddKernel(e); }
bool Add(BatchBuilder& b, const format::MemcpyEvent& e) { return b.AddMemcpy(e); }
bool Add(BatchBuilder& b, const format::MemsetEvent& e) { return b.AddMemset(e); }
bool Add(BatchBuilder& b, const format::SyncEvent& e) { return b.AddSync(e); }
bool Add(BatchBuilder& b, const format::ApiCallEvent& e) { return b.AddApiCall(e); }
bool Add(BatchBuilder& b, const format::NvtxRangeEvent& e) { return b.AddNvtxRange(e); }
bool Add(BatchBuilder& b, const format::NvtxMarkEvent& e) { return b.AddNvtxMark(e); }
bool Add(BatchBuilder& b, const format::OverheadEvent& e) { return b.AddOverhead(e); }
bool Add(BatchBuilder& b, const format::MetricSample& e) { return b.AddMetricSample(e); }
bool Add(BatchBuilder& b, const format::StackSampleEvent& e) { return b.AddStackSample(e); }

// Any value of T, extremes often: 0, all ones, the sign bit of an int32 or
// int64 (negative enums, wrapping deltas), or random bits (NaNs included).
template <typename T>
T Draw(std::mt19937_64& rng) {
  uint64_t bits = rng();
  switch (rng() % 6) {
    case 0: bits = 0; break;
    case 1: bits = ~uint64_t{0}; break;
    case 2: bits = uint64_t{1} << 31 | (bits & 0xff); break;
    case 3: bits = uint64_t{1} << 63 | (bits & 0xff); break;
    default: break;
  }
  T v;
  if constexpr (sizeof(T) == 8) {
    std::memcpy(&v, &bits, 8);
  } else {
    v = static_cast<T>(bits);
  }
  return v;
}

#define GPSCOPE_DRAW_MEMBER(number, name, wire, type, member) e.member = Draw<type>(rng);
#define GPSCOPE_DRAW_KIND(Name, Message, field, number, Event, COLUMNS) \
  format::Event Draw##Name(std::mt19937_64& rng) {                      \
    format::Event e{};                                                  \
    COLUMNS(GPSCOPE_DRAW_MEMBER)                                        \
    return e;                                                           \
  }
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_DRAW_KIND)
#undef GPSCOPE_DRAW_KIND
#undef GPSCOPE_DRAW_MEMBER

struct Sent {
#define GPSCOPE_SENT_MEMBER(Name, Message, field, number, Event, COLUMNS) \
  std::vector<format::Event> field;
  GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_SENT_MEMBER)
#undef GPSCOPE_SENT_MEMBER
};

TEST(BatchColumnsTest, BothEncodersWriteTheSameBytesAndTheReaderDecodesThemBack) {
  std::mt19937_64 rng(0x636f6c756d6e73);
  for (int round = 0; round < 50; ++round) {
    // (Not 0: to TraceBuilder that means "the first event's time".)
    const uint64_t base_ns = round % 5 == 0 ? 1 : rng();
    BatchBuilder builder(4 << 20);
    ASSERT_TRUE(builder.ok());
    builder.Begin(base_ns);
    testing::TraceBuilder trace;
    testing::TraceBuilder::Process& p = trace.AddProcess(0xfeed, 17);
    p.batch().set_base_ns(base_ns);
    Sent sent;
    // Kinds interleaved at random, a few events each: every column keeps
    // its own delta state.
    const int events = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < events; ++i) {
      switch (rng() % format::kNumEventKinds) {
#define GPSCOPE_ADD_CASE(Name, Message, field, number, Event, COLUMNS) \
  case format::k##Name: {                                              \
    const format::Event e = Draw##Name(rng);                           \
    ASSERT_TRUE(Add(builder, e));                                      \
    p.Add(e);                                                          \
    sent.field.push_back(e);                                           \
    break;                                                             \
  }
        GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_ADD_CASE)
#undef GPSCOPE_ADD_CASE
      }
    }
    std::vector<uint8_t> out(builder.max_chunk_bytes());
    const size_t n = builder.FinishChunk(0xfeed, 17, 3, out.data(), out.size());
    ASSERT_GT(n, 0u);
    const std::string ours(reinterpret_cast<const char*>(out.data()), n);

    proto::Chunk reference;
    reference.set_process_uid(0xfeed);
    reference.set_pid(17);
    reference.set_sequence(3);
    *reference.mutable_batch() = p.batch();
    if (ours != reference.SerializeAsString()) {
      proto::Chunk parsed;
      ASSERT_TRUE(parsed.ParseFromString(ours));
      ASSERT_EQ(parsed.DebugString(), reference.DebugString()) << "round " << round;
      FAIL() << "round " << round << ": the same fields, different bytes";
    }

    proto::Chunk parsed;
    ASSERT_TRUE(parsed.ParseFromString(ours));
    reader::DecodedBatch decoded;
    ASSERT_TRUE(reader::DecodeBatch(parsed.batch(), &decoded).ok());
    EXPECT_EQ(reader::CountEvents(parsed.batch()), decoded.event_count());
    std::vector<format::StackSampleEvent> stack_samples;
    ASSERT_TRUE(reader::DecodeStackSamples(parsed.batch(), &stack_samples).ok());
#define GPSCOPE_EXPECT_KIND(Name, Message, field, number, Event, COLUMNS) \
  EXPECT_EQ(decoded.field, sent.field) << #field " round " << round;
    GPSCOPE_EVENT_KINDS(GPSCOPE_EXPECT_KIND)
#undef GPSCOPE_EXPECT_KIND
    EXPECT_EQ(stack_samples, sent.stack_samples) << "round " << round;
  }
}

// Decodes kind k of `batch` on its own.
absl::Status DecodeKind(uint32_t k, const proto::EventBatch& batch) {
  switch (k) {
#define GPSCOPE_DECODE_CASE(Name, Message, field, number, Event, COLUMNS) \
  case format::k##Name: {                                                 \
    std::vector<format::Event> events;                                    \
    return reader::Decode##Name(batch, &events);                          \
  }
    GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_DECODE_CASE)
#undef GPSCOPE_DECODE_CASE
  }
  return absl::InternalError("no such kind");
}

TEST(BatchColumnsTest, AColumnOneValueShortIsRejectedNamingItForEveryColumnOfEveryKind) {
  std::mt19937_64 rng(7);
  testing::TraceBuilder trace;
  testing::TraceBuilder::Process& p = trace.AddProcess(1, 2);
#define GPSCOPE_TWO_EVENTS(Name, Message, field, number, Event, COLUMNS) \
  p.Add(Draw##Name(rng)).Add(Draw##Name(rng));
  GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_TWO_EVENTS)
#undef GPSCOPE_TWO_EVENTS
  const proto::EventBatch& full = p.batch();
  for (uint32_t k = 0; k < format::kNumEventKinds; ++k) {
    ASSERT_TRUE(DecodeKind(k, full).ok());
  }

  const auto* reflection = full.GetReflection();
  for (uint32_t k = 0; k < format::kNumEventKinds; ++k) {
    const format::KindInfo& kind = format::kKinds[k];
    const FieldDescriptor* kind_field = full.GetDescriptor()->FindFieldByName(kind.name);
    ASSERT_NE(kind_field, nullptr);
    for (uint32_t j = 0; j < kind.column_count; ++j) {
      proto::EventBatch batch = full;
      google::protobuf::Message* m = reflection->MutableMessage(&batch, kind_field);
      const FieldDescriptor* column = m->GetDescriptor()->FindFieldByName(kind.columns[j].name);
      ASSERT_NE(column, nullptr);
      m->GetReflection()->RemoveLast(m, column);
      const absl::Status s = DecodeKind(k, batch);
      // Column 0 short: the first other column is the one that disagrees.
      const std::string expected =
          j == 0 ? std::string(kind.name) + ": column " + kind.columns[1].name +
                       " has 2 values, " + kind.columns[0].name + " has 1"
                 : std::string(kind.name) + ": column " + kind.columns[j].name + " has 1 values, " +
                       kind.columns[0].name + " has 2";
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << kind.name << "." << kind.columns[j].name;
      EXPECT_EQ(s.message(), expected);
    }
  }
}

}  // namespace
}  // namespace gpscope
