// tests/testing/event_compare.h: equality and gtest printing for the event
// records of proto/events.h, member by member as proto/columns.h lists them,
// so a round trip compares every column (a new one included) and a failure
// names the member that differs.
//
//   EXPECT_EQ(decoded.kernels, sent_kernels);  // prints KernelEvent{start_ns=...}
//
// Header-only; the operators are in gpscope::format so ADL finds them.
#ifndef GPSCOPE_TESTS_TESTING_EVENT_COMPARE_H_
#define GPSCOPE_TESTS_TESTING_EVENT_COMPARE_H_

#include <cstring>
#include <ostream>
#include <type_traits>

#include "proto/columns.h"
#include "proto/events.h"

namespace gpscope::format {

namespace event_compare_internal {
// Doubles compare by bits: a NaN sent is a NaN decoded.
template <typename T>
bool Same(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  } else {
    return a == b;
  }
}
}  // namespace event_compare_internal

#define GPSCOPE_EVENT_COMPARE_MEMBER(number, name, wire, type, member) \
  &&event_compare_internal::Same(a.member, b.member)
#define GPSCOPE_EVENT_PRINT_MEMBER(number, name, wire, type, member) \
  *os << separator << #member "=" << +e.member;                      \
  separator = ", ";
#define GPSCOPE_EVENT_COMPARE_KIND(Name, Message, field, number, Event, COLUMNS) \
  inline bool operator==(const Event& a, const Event& b) {                       \
    return true COLUMNS(GPSCOPE_EVENT_COMPARE_MEMBER);                           \
  }                                                                              \
  inline bool operator!=(const Event& a, const Event& b) { return !(a == b); }   \
  inline void PrintTo(const Event& e, std::ostream* os) {                        \
    const char* separator = "";                                                  \
    *os << #Event "{";                                                           \
    COLUMNS(GPSCOPE_EVENT_PRINT_MEMBER)                                          \
    *os << "}";                                                                  \
  }
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_EVENT_COMPARE_KIND)
#undef GPSCOPE_EVENT_COMPARE_KIND
#undef GPSCOPE_EVENT_PRINT_MEMBER
#undef GPSCOPE_EVENT_COMPARE_MEMBER

}  // namespace gpscope::format

#endif  // GPSCOPE_TESTS_TESTING_EVENT_COMPARE_H_
