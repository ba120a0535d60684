// proto/enums.h against the code protoc generates from trace.proto: every
// mirrored enum has exactly the .proto's names and values, both ways, so a
// value added to the schema (or renumbered) and not mirrored fails here.
#include "proto/enums.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpscope/trace.pb.h"

namespace gpscope {
namespace {

using google::protobuf::EnumDescriptor;

template <size_t N>
void ExpectSame(const EnumDescriptor* generated, const wire::EnumValue (&mirror)[N]) {
  ASSERT_NE(generated, nullptr);
  std::map<std::string, int> want;
  for (int i = 0; i < generated->value_count(); ++i) {
    want[generated->value(i)->name()] = generated->value(i)->number();
  }
  std::map<std::string, int> got;
  for (const wire::EnumValue& v : mirror) {
    EXPECT_TRUE(got.emplace(v.name, static_cast<int>(v.value)).second)
        << generated->name() << ": " << v.name << " twice in proto/enums.h";
  }
  EXPECT_EQ(got, want) << generated->name() << ": proto/enums.h differs from trace.proto";
}

TEST(WireEnums, EveryMirroredEnumMatchesTheSchema) {
  ExpectSame(proto::MemcpyKind_descriptor(), wire::kMemcpyKindValues);
  ExpectSame(proto::MemoryKind_descriptor(), wire::kMemoryKindValues);
  ExpectSame(proto::SyncKind_descriptor(), wire::kSyncKindValues);
  ExpectSame(proto::ApiDomain_descriptor(), wire::kApiDomainValues);
  ExpectSame(proto::OverheadKind_descriptor(), wire::kOverheadKindValues);
  ExpectSame(proto::MetricScope_descriptor(), wire::kMetricScopeValues);
  ExpectSame(proto::DropReason_descriptor(), wire::kDropReasonValues);
  ExpectSame(proto::LostReason_descriptor(), wire::kLostReasonValues);
  ExpectSame(proto::EndReason_descriptor(), wire::kEndReasonValues);
  ExpectSame(proto::FrameKind_descriptor(), wire::kFrameKindValues);
  ExpectSame(proto::StackTrigger_descriptor(), wire::kStackTriggerValues);
}

TEST(WireEnums, EveryEnumOfTheSchemaIsMirrored) {
  // A new enum in trace.proto must be added to proto/enums.h and above.
  const auto* file = proto::DropReason_descriptor()->file();
  EXPECT_EQ(file->enum_type_count(), 11) << "an enum was added to or removed from trace.proto";
}

TEST(WireEnums, TheEnumeratorsAreTheTableValues) {
  EXPECT_EQ(wire::DROP_WRITE_FAILED, static_cast<uint32_t>(proto::DROP_WRITE_FAILED));
  EXPECT_EQ(wire::LOST_WRITE_ERROR, static_cast<uint32_t>(proto::LOST_WRITE_ERROR));
  EXPECT_EQ(wire::END_SIGNAL, static_cast<uint32_t>(proto::END_SIGNAL));
  EXPECT_EQ(wire::STACK_SAMPLED, static_cast<uint32_t>(proto::STACK_SAMPLED));
}

}  // namespace
}  // namespace gpscope
