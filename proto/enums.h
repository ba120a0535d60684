// The trace schema's enums for code that cannot link libprotobuf (the
// collector, libc-only; the encoder; the node monitor's writer): the values
// of proto/gpscope/trace.proto, the one source of truth, mirrored here once
// so nobody retypes a literal (`reason = 5;  // DROP_WRITE_FAILED`).
//
// Each enum is an X-macro list, expanded into a plain uint32_t-backed enum
// in namespace gpscope::wire (the names as in the .proto) and a table of
// {name, value} pairs. tests/proto/enums_test.cc checks every table against
// the generated descriptors both ways (same names, same values, nothing
// missing), so a value added to the .proto and not here fails a test.
#ifndef GPSCOPE_PROTO_ENUMS_H_
#define GPSCOPE_PROTO_ENUMS_H_

#include <cstddef>
#include <cstdint>

namespace gpscope::wire {

struct EnumValue {
  const char *name;
  uint32_t value;
};

#define GPSCOPE_WIRE_MEMCPY_KIND(X)                                            \
  X(MEMCPY_UNKNOWN, 0)                                                         \
  X(MEMCPY_HTOD, 1)                                                            \
  X(MEMCPY_DTOH, 2)                                                            \
  X(MEMCPY_HTOA, 3)                                                            \
  X(MEMCPY_ATOH, 4)                                                            \
  X(MEMCPY_ATOA, 5)                                                            \
  X(MEMCPY_ATOD, 6)                                                            \
  X(MEMCPY_DTOA, 7)                                                            \
  X(MEMCPY_DTOD, 8)                                                            \
  X(MEMCPY_HTOH, 9)                                                            \
  X(MEMCPY_PTOP, 10)

#define GPSCOPE_WIRE_MEMORY_KIND(X)                                            \
  X(MEMORY_UNKNOWN, 0)                                                         \
  X(MEMORY_PAGEABLE, 1)                                                        \
  X(MEMORY_PINNED, 2)                                                          \
  X(MEMORY_DEVICE, 3)                                                          \
  X(MEMORY_ARRAY, 4)                                                           \
  X(MEMORY_MANAGED, 5)                                                         \
  X(MEMORY_DEVICE_STATIC, 6)                                                   \
  X(MEMORY_MANAGED_STATIC, 7)

#define GPSCOPE_WIRE_SYNC_KIND(X)                                              \
  X(SYNC_UNKNOWN, 0)                                                           \
  X(SYNC_EVENT_SYNCHRONIZE, 1)                                                 \
  X(SYNC_STREAM_WAIT_EVENT, 2)                                                 \
  X(SYNC_STREAM_SYNCHRONIZE, 3)                                                \
  X(SYNC_CONTEXT_SYNCHRONIZE, 4)

#define GPSCOPE_WIRE_API_DOMAIN(X)                                             \
  X(API_UNKNOWN, 0)                                                            \
  X(API_RUNTIME, 1)                                                            \
  X(API_DRIVER, 2)

#define GPSCOPE_WIRE_OVERHEAD_KIND(X)                                          \
  X(OVERHEAD_UNKNOWN, 0)                                                       \
  X(OVERHEAD_DRIVER_COMPILER, 1)                                               \
  X(OVERHEAD_CUPTI_BUFFER_FLUSH, 2)                                            \
  X(OVERHEAD_CUPTI_INSTRUMENTATION, 3)                                         \
  X(OVERHEAD_CUPTI_RESOURCE, 4)                                                \
  X(OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING, 5)                              \
  X(OVERHEAD_LAZY_FUNCTION_LOADING, 6)                                         \
  X(OVERHEAD_COMMAND_BUFFER_FULL, 7)                                           \
  X(OVERHEAD_ACTIVITY_BUFFER_REQUEST, 8)                                       \
  X(OVERHEAD_UVM_ACTIVITY_INIT, 9)

#define GPSCOPE_WIRE_METRIC_SCOPE(X)                                           \
  X(SCOPE_UNKNOWN, 0)                                                          \
  X(SCOPE_DEVICE, 1)                                                           \
  X(SCOPE_PROCESS, 2)                                                          \
  X(SCOPE_HOST, 3)                                                             \
  X(SCOPE_THREAD, 4)

#define GPSCOPE_WIRE_DROP_REASON(X)                                            \
  X(DROP_UNKNOWN, 0)                                                           \
  X(DROP_CUPTI_BUFFER_POOL_EMPTY, 1)                                           \
  X(DROP_CUPTI_REPORTED, 2)                                                    \
  X(DROP_CUPTI_INCOMPLETE_RECORD, 3)                                           \
  X(DROP_RING_FULL, 4)                                                         \
  X(DROP_WRITE_FAILED, 5)                                                      \
  X(DROP_BUFFER_STOLEN, 6)                                                     \
  X(DROP_ENCODE_OVERFLOW, 7)                                                   \
  X(DROP_EXIT_FLUSH_TIMEOUT, 8)                                                \
  X(DROP_STACKS, 9)

#define GPSCOPE_WIRE_LOST_REASON(X)                                            \
  X(LOST_UNKNOWN, 0)                                                           \
  X(LOST_YIELDED_TO_OTHER_PROFILER, 1)                                         \
  X(LOST_OTHER_PROFILER_ACTIVE, 2)                                             \
  X(LOST_TRACING_DISABLED, 3)                                                  \
  X(LOST_WRITE_ERROR, 4)

#define GPSCOPE_WIRE_END_REASON(X)                                             \
  X(END_UNKNOWN, 0)                                                            \
  X(END_EXIT, 1)                                                               \
  X(END_SIGNAL, 2)                                                             \
  X(END_FINALIZE, 3)                                                           \
  X(END_WINDOW_CUT, 4)

#define GPSCOPE_WIRE_FRAME_KIND(X)                                             \
  X(FRAME_UNKNOWN, 0)                                                          \
  X(FRAME_PYTHON, 1)                                                           \
  X(FRAME_NATIVE, 2)

#define GPSCOPE_WIRE_STACK_TRIGGER(X)                                          \
  X(STACK_TRIGGER_UNKNOWN, 0)                                                  \
  X(STACK_SYNC, 1)                                                             \
  X(STACK_AFTER_IDLE, 2)                                                       \
  X(STACK_SAMPLED, 3)                                                          \
  X(STACK_SYNC_MAIN_THREAD, 4)

#define GPSCOPE_WIRE_ENUMERATOR(name, value) name = value,
#define GPSCOPE_WIRE_TABLE_ROW(name, value) {#name, value},

enum MemcpyKind : uint32_t {
  GPSCOPE_WIRE_MEMCPY_KIND(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kMemcpyKindValues[] = {
    GPSCOPE_WIRE_MEMCPY_KIND(GPSCOPE_WIRE_TABLE_ROW)};

enum MemoryKind : uint32_t {
  GPSCOPE_WIRE_MEMORY_KIND(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kMemoryKindValues[] = {
    GPSCOPE_WIRE_MEMORY_KIND(GPSCOPE_WIRE_TABLE_ROW)};

enum SyncKind : uint32_t { GPSCOPE_WIRE_SYNC_KIND(GPSCOPE_WIRE_ENUMERATOR) };
inline constexpr EnumValue kSyncKindValues[] = {
    GPSCOPE_WIRE_SYNC_KIND(GPSCOPE_WIRE_TABLE_ROW)};

enum ApiDomain : uint32_t { GPSCOPE_WIRE_API_DOMAIN(GPSCOPE_WIRE_ENUMERATOR) };
inline constexpr EnumValue kApiDomainValues[] = {
    GPSCOPE_WIRE_API_DOMAIN(GPSCOPE_WIRE_TABLE_ROW)};

enum OverheadKind : uint32_t {
  GPSCOPE_WIRE_OVERHEAD_KIND(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kOverheadKindValues[] = {
    GPSCOPE_WIRE_OVERHEAD_KIND(GPSCOPE_WIRE_TABLE_ROW)};

enum MetricScope : uint32_t {
  GPSCOPE_WIRE_METRIC_SCOPE(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kMetricScopeValues[] = {
    GPSCOPE_WIRE_METRIC_SCOPE(GPSCOPE_WIRE_TABLE_ROW)};

enum DropReason : uint32_t {
  GPSCOPE_WIRE_DROP_REASON(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kDropReasonValues[] = {
    GPSCOPE_WIRE_DROP_REASON(GPSCOPE_WIRE_TABLE_ROW)};

enum LostReason : uint32_t {
  GPSCOPE_WIRE_LOST_REASON(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kLostReasonValues[] = {
    GPSCOPE_WIRE_LOST_REASON(GPSCOPE_WIRE_TABLE_ROW)};

enum EndReason : uint32_t { GPSCOPE_WIRE_END_REASON(GPSCOPE_WIRE_ENUMERATOR) };
inline constexpr EnumValue kEndReasonValues[] = {
    GPSCOPE_WIRE_END_REASON(GPSCOPE_WIRE_TABLE_ROW)};

enum FrameKind : uint32_t { GPSCOPE_WIRE_FRAME_KIND(GPSCOPE_WIRE_ENUMERATOR) };
inline constexpr EnumValue kFrameKindValues[] = {
    GPSCOPE_WIRE_FRAME_KIND(GPSCOPE_WIRE_TABLE_ROW)};

enum StackTrigger : uint32_t {
  GPSCOPE_WIRE_STACK_TRIGGER(GPSCOPE_WIRE_ENUMERATOR)
};
inline constexpr EnumValue kStackTriggerValues[] = {
    GPSCOPE_WIRE_STACK_TRIGGER(GPSCOPE_WIRE_TABLE_ROW)};

#undef GPSCOPE_WIRE_ENUMERATOR
#undef GPSCOPE_WIRE_TABLE_ROW

} // namespace gpscope::wire

#endif // GPSCOPE_PROTO_ENUMS_H_
