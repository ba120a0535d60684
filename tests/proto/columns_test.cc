// proto/columns.h against the descriptors protoc generates from trace.proto:
// every event kind is the EventBatch field of its message, every column has
// the .proto's number, name and type (repeated, packed), and both ways: a
// column or a columnar kind added to the .proto and not to the table (or
// renumbered, renamed, retyped) fails here. enums_test.cc does the same for
// proto/enums.h.
#include "proto/columns.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gpscope/trace.pb.h"

namespace gpscope::format {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// The protobuf type that carries each wire encoding.
FieldDescriptor::Type ProtoType(Wire w) {
  switch (w) {
    case Wire::kTimeDelta:
    case Wire::kCorrelationDelta:
      return FieldDescriptor::TYPE_SINT64;
    case Wire::kDuration:
    case Wire::kUint64:
      return FieldDescriptor::TYPE_UINT64;
    case Wire::kUint32:
      return FieldDescriptor::TYPE_UINT32;
    case Wire::kEnum:
      return FieldDescriptor::TYPE_ENUM;
    case Wire::kDouble:
      return FieldDescriptor::TYPE_DOUBLE;
  }
  return FieldDescriptor::MAX_TYPE;
}

// Where `kind` (a row of kKinds) and the schema's EventBatch disagree, one
// line each; empty when they agree.
std::vector<std::string> Differences(const KindInfo& kind, const Descriptor* batch) {
  std::vector<std::string> out;
  const FieldDescriptor* f = batch->FindFieldByName(kind.name);
  if (f == nullptr) return {absl::StrCat("EventBatch has no field ", kind.name)};
  if (f->number() != static_cast<int>(kind.number)) {
    out.push_back(absl::StrCat(kind.name, ": number ", kind.number, ", schema ", f->number()));
  }
  if (f->is_repeated() || f->type() != FieldDescriptor::TYPE_MESSAGE) {
    out.push_back(absl::StrCat(kind.name, ": not a single message in the schema"));
    return out;
  }
  const Descriptor* m = f->message_type();
  if (m->name() != kind.message) {
    out.push_back(absl::StrCat(kind.name, ": message ", kind.message, ", schema ", m->name()));
  }
  // Table -> schema.
  for (uint32_t j = 0; j < kind.column_count; ++j) {
    const ColumnInfo& c = kind.columns[j];
    const std::string where = absl::StrCat(m->name(), ".", c.name);
    const FieldDescriptor* col = m->FindFieldByName(c.name);
    if (col == nullptr) {
      out.push_back(absl::StrCat(where, ": not in the schema"));
      continue;
    }
    if (col->number() != static_cast<int>(c.number)) {
      out.push_back(absl::StrCat(where, ": number ", c.number, ", schema ", col->number()));
    }
    if (col->type() != ProtoType(c.wire)) {
      out.push_back(absl::StrCat(where, ": the table's encoding needs ",
                                 FieldDescriptor::TypeName(ProtoType(c.wire)), ", schema has ",
                                 col->type_name()));
    }
    if (!col->is_repeated() || !col->is_packed()) {
      out.push_back(absl::StrCat(where, ": not a packed repeated field in the schema"));
    }
  }
  // Schema -> table.
  std::set<std::string> listed;
  for (uint32_t j = 0; j < kind.column_count; ++j) listed.insert(kind.columns[j].name);
  for (int i = 0; i < m->field_count(); ++i) {
    if (listed.count(m->field(i)->name()) == 0) {
      out.push_back(absl::StrCat(m->name(), ".", m->field(i)->name(), " (field ",
                                 m->field(i)->number(), "): not in proto/columns.h"));
    }
  }
  return out;
}

TEST(ColumnsTest, EveryKindAndColumnMatchesTheSchema) {
  const Descriptor* batch = proto::EventBatch::descriptor();
  for (const KindInfo& kind : kKinds) {
    EXPECT_EQ(Differences(kind, batch), std::vector<std::string>{}) << kind.name;
  }
}

TEST(ColumnsTest, EverySingleMessageOfEventBatchIsAKindOfTheTable) {
  // EventBatch's columnar kinds are its non-repeated message fields; the
  // rest (strings, launch configs, drops...) are repeated sub-messages.
  const Descriptor* batch = proto::EventBatch::descriptor();
  std::set<std::string> listed;
  for (const KindInfo& kind : kKinds) EXPECT_TRUE(listed.insert(kind.name).second) << kind.name;
  std::set<std::string> schema;
  for (int i = 0; i < batch->field_count(); ++i) {
    const FieldDescriptor* f = batch->field(i);
    if (!f->is_repeated() && f->type() == FieldDescriptor::TYPE_MESSAGE) schema.insert(f->name());
  }
  EXPECT_EQ(listed, schema) << "a columnar kind was added to or removed from EventBatch";
}

TEST(ColumnsTest, NamesFollowTheSchemasConventionsForDeltaColumns) {
  // trace.proto names a column by how it is encoded; a timestamp marked
  // kUint64, or a delta column marked plain, would decode to garbage.
  for (const KindInfo& kind : kKinds) {
    for (uint32_t j = 0; j < kind.column_count; ++j) {
      const ColumnInfo& c = kind.columns[j];
      const std::string name = c.name;
      EXPECT_EQ(c.wire == Wire::kTimeDelta, absl::EndsWith(name, "_delta_ns"))
          << kind.name << "." << name;
      EXPECT_EQ(c.wire == Wire::kDuration, name == "duration_ns") << kind.name << "." << name;
      EXPECT_EQ(c.wire == Wire::kCorrelationDelta, name == "correlation_delta")
          << kind.name << "." << name;
    }
  }
}

TEST(ColumnsTest, TheConstantsAreTheTables) {
  uint32_t total = 0;
  for (uint32_t k = 0; k < kNumEventKinds; ++k) {
    EXPECT_EQ(kKinds[k].first_column, total) << kKinds[k].name;
    for (uint32_t j = 0; j < kKinds[k].column_count; ++j) {
      EXPECT_EQ(kColumnWires[total + j], kKinds[k].columns[j].wire) << kKinds[k].name;
    }
    total += kKinds[k].column_count;
  }
  EXPECT_EQ(total, kNumColumns);
  EXPECT_STREQ(kKinds[kKernels].name, "kernels");
  EXPECT_STREQ(kKinds[kMetrics].message, "MetricSamples");
  EXPECT_STREQ(kKinds[kStackSamples].name, "stack_samples");
}

// The checks above can fail: a table that is off in each way is caught.
TEST(ColumnsTest, AWrongTableIsReported) {
  const Descriptor* batch = proto::EventBatch::descriptor();
  const ColumnInfo renumbered[] = {{1, "timestamp_delta_ns", Wire::kTimeDelta},
                                   {3, "metric_id", Wire::kUint32},
                                   {2, "value", Wire::kDouble}};
  EXPECT_EQ(Differences({"metrics", "MetricSamples", 14, renumbered, 3, 0}, batch),
            (std::vector<std::string>{"MetricSamples.metric_id: number 3, schema 2",
                                      "MetricSamples.value: number 2, schema 3"}));
  const ColumnInfo retyped[] = {{1, "timestamp_delta_ns", Wire::kUint64},
                                {2, "metric_id", Wire::kUint32},
                                {3, "value", Wire::kDouble}};
  EXPECT_EQ(Differences({"metrics", "MetricSamples", 14, retyped, 3, 0}, batch),
            (std::vector<std::string>{"MetricSamples.timestamp_delta_ns: the table's encoding "
                                      "needs uint64, schema has sint64"}));
  const ColumnInfo missing[] = {{1, "timestamp_delta_ns", Wire::kTimeDelta},
                                {2, "metric_id", Wire::kUint32},
                                {4, "unit_id", Wire::kUint32}};
  EXPECT_EQ(Differences({"metrics", "MetricSamples", 14, missing, 3, 0}, batch),
            (std::vector<std::string>{"MetricSamples.unit_id: not in the schema",
                                      "MetricSamples.value (field 3): not in proto/columns.h"}));
  EXPECT_EQ(Differences({"metrics", "Kernels", 15, kKinds[kMetrics].columns, 3, 0}, batch),
            (std::vector<std::string>{"metrics: number 15, schema 14",
                                      "metrics: message Kernels, schema MetricSamples"}));
  EXPECT_EQ(Differences({"strings", "InternedString", 2, renumbered, 0, 0}, batch),
            (std::vector<std::string>{"strings: not a single message in the schema"}));
}

}  // namespace
}  // namespace gpscope::format
