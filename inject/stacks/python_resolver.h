// inject/stacks/python_resolver.h: captured Python frames -> (file, function,
// line), off the hot path, without the GIL.
//
//   SelfMemoryReader mem;
//   PythonResolver resolver(*info.layout, info.types, &mem);
//   const PyCodeInfo* code = resolver.Code(ref.addr, ref.check);
//   int line = code ? resolver.Line(*code, ref.offset) : -1;
//
// The code object may have been freed since the capture, so every read goes
// through a MemoryReader (process_vm_readv: EFAULT instead of a fault) and
// is re-validated: the object's ob_type must still be PyCode_Type, its
// co_firstlineno the one captured (FrameRef::check), its strings str
// objects and its line table a bytes object. Strings are compact str
// objects read in place per the version's layout: ASCII data directly, other
// compact strings through their cached UTF-8 copy when present, else
// converted from their 1-, 2- or 4-byte code points. Line numbers come from
// decoding the line table bytes (line_table.h): no PyCode_Addr2Line, which
// may allocate and expects the GIL.
//
// Each (code address, first line) is resolved once and cached, including
// failures. A freed code object whose memory was reused by another code
// object with the same first line would be reported under the old name:
// the capture-time check catches every reuse with a different first line.
//
// Thread model: one thread (the collector's writer) owns a resolver.
// Allocates (the cache, the strings).
#ifndef GPSCOPE_INJECT_STACKS_PYTHON_RESOLVER_H_
#define GPSCOPE_INJECT_STACKS_PYTHON_RESOLVER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "inject/stacks/memory_reader.h"
#include "inject/stacks/python_layout.h"
#include "inject/stacks/python_stacks.h"

namespace gpscope::inject::stacks {

struct PyCodeInfo {
  std::string filename;   // co_filename
  std::string name;       // co_name (what traceback shows)
  std::string qualname;   // co_qualname (3.11+), else empty
  int first_line = 0;     // co_firstlineno
  std::vector<uint8_t> line_table;
  int64_t code_bytes = -1;  // bytecode length in bytes, -1 when unknown
};

enum class ResolveError : uint8_t {
  kNone,
  kUnreadable,  // the code object (or one of its fields) is no longer mapped
  kNotCode,     // the memory no longer holds a code object
  kStale,       // a code object with another first line: freed and reused
  kBadString,   // co_filename / co_name is not a readable compact str
  kBadTable,    // the line table is not a readable bytes object
};

class PythonResolver {
 public:
  // Strings and line tables longer than these are treated as unreadable.
  static constexpr size_t kMaxStringChars = 4096;
  static constexpr size_t kMaxTableBytes = 1 << 20;

  PythonResolver(const PythonLayout& layout, const PythonTypes& types, MemoryReader* reader)
      : layout_(layout), types_(types), reader_(reader) {}

  // The code object captured at `code` with co_firstlineno `first_line`;
  // nullptr when it can no longer be resolved (why: last_error()).
  const PyCodeInfo* Code(uint64_t code, int32_t first_line);
  ResolveError last_error() const { return last_error_; }

  // The source line of byte offset `offset`; -1 for none (as traceback's None).
  int Line(const PyCodeInfo& code, int32_t offset) const;

  // Reads the str object at `addr` as UTF-8 (exposed for tests).
  bool ReadString(uint64_t addr, std::string* out);

  size_t cached() const { return cache_.size(); }
  uint64_t failures() const { return failures_; }

 private:
  struct Key {
    uint64_t code;
    int32_t first_line;
    bool operator==(const Key& o) const { return code == o.code && first_line == o.first_line; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.code * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(k.first_line));
    }
  };
  struct Entry {
    ResolveError error;
    PyCodeInfo info;
  };

  ResolveError Resolve(uint64_t code, int32_t first_line, PyCodeInfo* out);
  bool ReadBytes(uint64_t addr, std::vector<uint8_t>* out, int64_t* size_out);

  PythonLayout layout_;
  PythonTypes types_;
  MemoryReader* reader_;
  std::unordered_map<Key, Entry, KeyHash> cache_;
  ResolveError last_error_ = ResolveError::kNone;
  uint64_t failures_ = 0;
};

// Appends code point `cp` to `out` as UTF-8 (surrogates and values beyond
// U+10FFFF become U+FFFD).
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace gpscope::inject::stacks

#endif  // GPSCOPE_INJECT_STACKS_PYTHON_RESOLVER_H_
