// proto/events.h: the plain event records that the collector's writer thread
// fills from CUPTI records and hands to BatchBuilder (proto/batch_builder.h),
// which encodes them into the columnar EventBatch of proto/gpscope/trace.proto;
// the reader (tools/reader/batch_decode.h) hands the same records back.
//
// One struct per event kind of proto/columns.h, one member per column, in the
// table's order; what each member means is said there:
//   KernelEvent MemcpyEvent MemsetEvent SyncEvent ApiCallEvent NvtxRangeEvent
//   NvtxMarkEvent OverheadEvent MetricSample StackSampleEvent
// A column's member is its name, except: start_delta_ns -> start_ns,
// timestamp_delta_ns -> timestamp_ns, duration_ns -> end_ns,
// correlation_delta -> correlation_id.
//
// These are fixed-size PODs: no strings, no pointers. Names and launch shapes
// are already interned to ids by the caller (InternedString / LaunchConfig
// entries are added to the batch separately, before the first event using
// them). All timestamps are CUPTI ns; enum members hold trace.proto values
// (proto/enums.h).
//
// Shared by inject/ (producer) and tests/tools; has no dependency on CUDA,
// CUPTI or libprotobuf.
#ifndef GPSCOPE_PROTO_EVENTS_H_
#define GPSCOPE_PROTO_EVENTS_H_

#include <cstdint>
#include <type_traits>

#include "proto/columns.h"

namespace gpscope::format {

#define GPSCOPE_EVENTS_MEMBER(number, name, wire, type, member) type member;
#define GPSCOPE_EVENTS_FITS(number, name, wire, type, member)                      \
  static_assert(WireFits<Wire::wire, type>(), "proto/columns.h: " #name " cannot be " #type);
#define GPSCOPE_EVENTS_STRUCT(Name, Message, field, number, Event, COLUMNS)        \
  struct Event {                                                                   \
    COLUMNS(GPSCOPE_EVENTS_MEMBER)                                                 \
  };                                                                               \
  COLUMNS(GPSCOPE_EVENTS_FITS)                                                     \
  static_assert(std::is_trivial_v<Event> && std::is_standard_layout_v<Event>);

GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_EVENTS_STRUCT)

#undef GPSCOPE_EVENTS_STRUCT
#undef GPSCOPE_EVENTS_FITS
#undef GPSCOPE_EVENTS_MEMBER

}  // namespace gpscope::format

#endif  // GPSCOPE_PROTO_EVENTS_H_
