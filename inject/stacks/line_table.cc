// inject/stacks/line_table.cc: see line_table.h (written from the format
// descriptions there).
#include "inject/stacks/line_table.h"

#include <cstdint>

namespace gpscope::inject::stacks {
namespace {

// Lines accumulate in 64 bits: a hostile table of many large deltas must
// not overflow an int (it only yields a nonsense line).
int Clamp(int64_t line) {
  if (line > INT32_MAX) return INT32_MAX;
  if (line < INT32_MIN + 1) return INT32_MIN + 1;
  return static_cast<int>(line);
}

int Lnotab(const uint8_t* t, size_t n, int first_line, int offset) {
  int64_t line = first_line;
  int64_t addr = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    addr += t[i];
    if (addr > offset) break;
    line += static_cast<int8_t>(t[i + 1]);
  }
  return Clamp(line);
}

int Pep626(const uint8_t* t, size_t n, int first_line, int offset) {
  if (offset < 0) return first_line;
  int64_t line = first_line;
  int64_t end = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    const int length = t[i];
    const int delta = static_cast<int8_t>(t[i + 1]);
    end += length;
    int range_line = -1;
    if (delta != -128) {
      line += delta;
      range_line = Clamp(line);
    }
    if (length == 0) continue;  // carries its delta only
    if (offset < end) return range_line;
  }
  return -1;
}

// Reads a location-table varint at t[*i]; false when the table ends inside it.
bool Varint(const uint8_t* t, size_t n, size_t* i, uint32_t* out) {
  if (*i >= n) return false;
  uint8_t b = t[(*i)++];
  uint32_t v = b & 63;
  int shift = 0;
  while (b & 64) {
    if (*i >= n) return false;
    b = t[(*i)++];
    shift += 6;
    if (shift > 30) return false;  // longer than any 32-bit value
    v |= static_cast<uint32_t>(b & 63) << shift;
  }
  *out = v;
  return true;
}

bool Svarint(const uint8_t* t, size_t n, size_t* i, int* out) {
  uint32_t v = 0;
  if (!Varint(t, n, i, &v)) return false;
  *out = (v & 1) ? -static_cast<int>(v >> 1) : static_cast<int>(v >> 1);
  return true;
}

int Locations(const uint8_t* t, size_t n, int first_line, int offset) {
  if (offset < 0) return first_line;
  int64_t line = first_line;
  int64_t addr = 0;
  size_t i = 0;
  // An entry starts at a byte with bit 7 set; skip anything else (as
  // CPython's own reader does).
  while (i < n && !(t[i] & 0x80)) ++i;
  while (i < n) {
    const uint8_t first = t[i++];
    const int code = (first >> 3) & 15;
    const int units = (first & 7) + 1;
    int delta = 0;
    bool no_line = false;
    if (code == 15) {
      no_line = true;
    } else if (code == 14 || code == 13) {
      size_t j = i;
      if (!Svarint(t, n, &j, &delta)) return -1;
    } else if (code >= 10) {
      delta = code - 10;
    }
    line += delta;
    const int64_t end = addr + 2 * static_cast<int64_t>(units);
    if (offset < end) return no_line ? -1 : Clamp(line);
    addr = end;
    while (i < n && !(t[i] & 0x80)) ++i;
  }
  return -1;
}

}  // namespace

int LineForOffset(LineTableKind kind, const uint8_t* table, size_t size, int first_line,
                  int byte_offset) {
  switch (kind) {
    case LineTableKind::kLnotab:
      return Lnotab(table, size, first_line, byte_offset);
    case LineTableKind::kPep626:
      return Pep626(table, size, first_line, byte_offset);
    case LineTableKind::kLocations:
      return Locations(table, size, first_line, byte_offset);
  }
  return -1;
}

}  // namespace gpscope::inject::stacks
