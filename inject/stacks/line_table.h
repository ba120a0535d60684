// inject/stacks/line_table.h: instruction byte offset -> source line, for the
// three line-table formats of CPython 3.9-3.13, decoded from the bytes alone
// (no Python call, no GIL, no allocation).
//
//   int line = LineForOffset(LineTableKind::kLocations, table, n, first_line, 42);
//
// Formats, as CPython documents them:
//   kLnotab (3.9, co_lnotab; Objects/lnotab_notes.txt of 3.9): pairs of
//     (unsigned byte-offset increment, signed line increment) starting at
//     (0, co_firstlineno); the line of an offset is the line reached by the
//     last pair whose address is <= the offset.
//   kPep626 (3.10, co_linetable; Objects/lnotab_notes.txt of 3.10): pairs of
//     (unsigned range length in bytes, signed line delta) describing
//     consecutive ranges from offset 0; delta -128 means "no line" for that
//     range (the running line is unchanged); zero-length ranges only carry
//     their delta forward.
//   kLocations (3.11+, co_linetable; Objects/locations.md): entries whose
//     first byte has bit 7 set, bits 3-6 a code, bits 0-2 the length - 1 in
//     2-byte code units. Code 15: no location; 14: long form (svarint line
//     delta, varint end-line delta, varint column+1, varint end column+1);
//     13: no columns (svarint line delta); 10-12: one-line form (line delta
//     code-10, then start and end column bytes); 0-9: short form (line
//     delta 0, one column byte). varint: 6-bit groups, least significant
//     first, 0x40 set while more follow; svarint: varint v, value v>>1,
//     negated when v&1.
//
// Results follow PyCode_Addr2Line: an offset < 0 gives first_line; an offset
// with no line (or past the end of the table) gives -1 (traceback shows
// None). A malformed table never reads past `size` bytes.
//
// Thread model: pure functions, any thread.
#ifndef GPSCOPE_INJECT_STACKS_LINE_TABLE_H_
#define GPSCOPE_INJECT_STACKS_LINE_TABLE_H_

#include <cstddef>
#include <cstdint>

#include "inject/stacks/python_layout.h"

namespace gpscope::inject::stacks {

int LineForOffset(LineTableKind kind, const uint8_t* table, size_t size, int first_line,
                  int byte_offset);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_LINE_TABLE_H_
