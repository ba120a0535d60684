// tools/status_macros.h: the two return-if-error macros abseil 20220623 lacks.
//
//   GPSCOPE_RETURN_IF_ERROR(ReadHeader(path));
//   GPSCOPE_ASSIGN_OR_RETURN(TraceIndex index, ReadTraces(paths, visitor));
//
// Thread model: macros only.
#ifndef GPSCOPE_TOOLS_STATUS_MACROS_H_
#define GPSCOPE_TOOLS_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPSCOPE_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    const ::absl::Status gpscope_status_ = (expr);     \
    if (!gpscope_status_.ok()) return gpscope_status_; \
  } while (0)

#define GPSCOPE_STATUS_CONCAT_INNER_(a, b) a##b
#define GPSCOPE_STATUS_CONCAT_(a, b) GPSCOPE_STATUS_CONCAT_INNER_(a, b)

#define GPSCOPE_ASSIGN_OR_RETURN(lhs, rexpr) \
  GPSCOPE_ASSIGN_OR_RETURN_IMPL_(GPSCOPE_STATUS_CONCAT_(gpscope_statusor_, __LINE__), lhs, rexpr)

#define GPSCOPE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

#endif  // GPSCOPE_TOOLS_STATUS_MACROS_H_
