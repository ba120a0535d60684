// tools/reader/batch_decode.cc: see batch_decode.h. Every kind's decoder and
// its column checks are proto/columns.h expanded: one loop per kind over the
// events, reading each column through a raw pointer (the hot path of every
// command: 50M events in bench/scale.sh).
#include "tools/reader/batch_decode.h"

#include <cstdint>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "tools/status_macros.h"

namespace gpscope::reader {
namespace {

using format::Wire;
using google::protobuf::RepeatedField;

// The column checks (untrusted input): every column of a kind holds as many
// values as its first. `sizes` are the columns' lengths in table order.
template <size_t N>
absl::Status CheckColumns(const format::KindInfo& kind, const int (&sizes)[N]) {
  static_assert(N >= 1);
  for (size_t j = 1; j < N; ++j) {
    if (sizes[j] != sizes[0]) {
      return absl::DataLossError(absl::StrCat(kind.name, ": column ", kind.columns[j].name, " has ",
                                              sizes[j], " values, ", kind.columns[0].name, " has ",
                                              sizes[0]));
    }
  }
  return absl::OkStatus();
}

// One column of a kind being decoded, as proto/columns.h's `wire` says.
// Delta columns keep a running sum, in unsigned arithmetic: a corrupt or
// hostile column wraps instead of overflowing a signed integer.
template <Wire W, typename Element>
class ColumnReader {
 public:
  ColumnReader(const RepeatedField<Element>& values, uint64_t base_ns)
      : values_(values.data()), sum_(W == Wire::kTimeDelta ? base_ns : 0) {}

  // Row i's member value; `e` holds the row's earlier columns.
  template <typename T, typename Event>
  T Get(int i, const Event& e) {
    if constexpr (W == Wire::kTimeDelta || W == Wire::kCorrelationDelta) {
      sum_ += static_cast<uint64_t>(values_[i]);
      return static_cast<T>(sum_);
    } else if constexpr (W == Wire::kDuration) {
      return e.start_ns + values_[i];
    } else {
      return static_cast<T>(values_[i]);
    }
  }

 private:
  const Element* values_;
  uint64_t sum_;
};

template <Wire W, typename Element>
ColumnReader<W, Element> ReadColumn(const RepeatedField<Element>& values, uint64_t base_ns) {
  return ColumnReader<W, Element>(values, base_ns);
}

// Grows *out by n and returns the first new element.
template <typename Event>
Event* Extend(std::vector<Event>* out, int n) {
  const size_t old = out->size();
  out->resize(old + static_cast<size_t>(n));
  return out->data() + old;
}

}  // namespace

// The columns' lengths, in row order; the first is the kind's event count.
#define GPSCOPE_COLUMN_SIZE(number, name, wire, type, member) c.name##_size(),
#define GPSCOPE_COLUMN_READER(number, name, wire, type, member) \
  auto name##_column = ReadColumn<Wire::wire>(c.name(), batch.base_ns());
#define GPSCOPE_DECODE_COLUMN(number, name, wire, type, member) \
  e->member = name##_column.template Get<type>(i, *e);
#define GPSCOPE_DEFINE_DECODE(Name, Message, field, number, Event, COLUMNS)                     \
  absl::Status Decode##Name(const proto::EventBatch& batch, std::vector<format::Event>* out) { \
    const proto::Message& c = batch.field();                                                  \
    const int sizes[] = {COLUMNS(GPSCOPE_COLUMN_SIZE)};                                       \
    GPSCOPE_RETURN_IF_ERROR(CheckColumns(format::kKinds[format::k##Name], sizes));            \
    const int n = sizes[0];                                                                   \
    format::Event* e = Extend(out, n);                                                        \
    COLUMNS(GPSCOPE_COLUMN_READER)                                                            \
    for (int i = 0; i < n; ++i, ++e) {                                                        \
      COLUMNS(GPSCOPE_DECODE_COLUMN)                                                          \
    }                                                                                         \
    return absl::OkStatus();                                                                  \
  }
GPSCOPE_ALL_EVENT_KINDS(GPSCOPE_DEFINE_DECODE)
#undef GPSCOPE_DEFINE_DECODE
#undef GPSCOPE_DECODE_COLUMN
#undef GPSCOPE_COLUMN_READER

void DecodedBatch::Clear() {
#define GPSCOPE_CLEAR_KIND(Name, Message, field, number, Event, COLUMNS) field.clear();
  GPSCOPE_EVENT_KINDS(GPSCOPE_CLEAR_KIND)
#undef GPSCOPE_CLEAR_KIND
}

size_t DecodedBatch::event_count() const {
  size_t n = 0;
#define GPSCOPE_COUNT_KIND(Name, Message, field, number, Event, COLUMNS) n += field.size();
  GPSCOPE_EVENT_KINDS(GPSCOPE_COUNT_KIND)
#undef GPSCOPE_COUNT_KIND
  return n;
}

size_t CountEvents(const proto::EventBatch& batch) {
  size_t n = 0;
#define GPSCOPE_COUNT_KIND(Name, Message, field, number, Event, COLUMNS) \
  {                                                                      \
    const proto::Message& c = batch.field();                             \
    const int sizes[] = {COLUMNS(GPSCOPE_COLUMN_SIZE)};                  \
    n += static_cast<size_t>(sizes[0]);                                  \
  }
  GPSCOPE_EVENT_KINDS(GPSCOPE_COUNT_KIND)
#undef GPSCOPE_COUNT_KIND
  return n;
}

absl::Status DecodeBatch(const proto::EventBatch& batch, DecodedBatch* out) {
  out->Clear();
#define GPSCOPE_DECODE_KIND(Name, Message, field, number, Event, COLUMNS) \
  GPSCOPE_RETURN_IF_ERROR(Decode##Name(batch, &out->field));
  GPSCOPE_EVENT_KINDS(GPSCOPE_DECODE_KIND)
#undef GPSCOPE_DECODE_KIND
  return absl::OkStatus();
}

#undef GPSCOPE_COLUMN_SIZE

}  // namespace gpscope::reader
