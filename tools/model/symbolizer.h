// tools/model/symbolizer.h: offline symbolization of native stack frames
// (issue 20). The collector names a native frame by its module's path, the
// module's GNU build id and an offset (trace.proto StackFrame; the function
// only where dladdr finds an exported symbol). Where the module's file is on
// the analysing machine, this maps the offset to its function (.symtab /
// .dynsym) and source file:line (DWARF .debug_line), with elf_symbols.h.
//
// Where a module's file is looked for, in order (the first whose build id
// matches the recorded one is used):
//   1. the recorded path;
//   2. under each --symbols DIR (SetSymbolDirs): DIR/<file name>, then any
//      file of that name below DIR (a bounded walk: kMaxWalkEntries);
// and, for its line table when that file has none (a stripped binary), or
// when no binary is found, its separate debug file by build id, as gdb
// looks for it: DIR/.build-id/xx/yyyy.debug for each DIR, then
// /usr/lib/debug/.build-id/xx/yyyy.debug.
// A file whose build id differs from the recorded one is never used: one
// note per module says so (StackModel::symbol_notes). A module recorded
// without a build id is not symbolized (nothing says the file is the same).
//
//   SetSymbolDirs({"/build/symbols"});   // gpscope-analyze --symbols DIR
//   SymbolizeFrames(&model.frames, &model.symbol_notes);
//
// Files are mapped read-only (only the pages read count towards the
// memory budget) and unmapped when done; only regular files are opened
// (never a FIFO or a device named by a hostile trace), without blocking.
//
// Thread model: SetSymbolDirs before the analysis starts (the command
// line); SymbolizeFrames from the model's one thread.
#ifndef GPSCOPE_TOOLS_MODEL_SYMBOLIZER_H_
#define GPSCOPE_TOOLS_MODEL_SYMBOLIZER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/model/stack_model.h"

namespace gpscope::model {

inline constexpr size_t kMaxWalkEntries = 100000;  // directory entries looked at per --symbols DIR
inline constexpr uint64_t kMaxModuleBytes = uint64_t{16} << 30;
// Modules looked for per process, and notes kept (a hostile trace can name
// one file under many build ids); past them, one note counts the rest.
inline constexpr size_t kMaxModules = 4096;
inline constexpr size_t kMaxSymbolNotes = 64;

// The --symbols directories (every command's option; cli.cc).
void SetSymbolDirs(std::vector<std::string> dirs);
const std::vector<std::string>& SymbolDirs();

// Fills `symbol`, `source_file` and `source_line` of the native frames of
// `frames` whose module is found (see the header); adds one line per module
// whose file could not be used to `notes` (module path first).
// Returns the number of frames given a function or a line.
size_t SymbolizeFrames(std::vector<StackFrameText>* frames, std::vector<SymbolNote>* notes,
                       const std::vector<std::string>& dirs = SymbolDirs());

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_SYMBOLIZER_H_
