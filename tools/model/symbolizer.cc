#include "tools/model/symbolizer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpscope/trace.pb.h"
#include "tools/model/elf_symbols.h"

namespace gpscope::model {
namespace {

std::vector<std::string>& Dirs() {
  static std::vector<std::string>* dirs = new std::vector<std::string>();
  return *dirs;
}

// A regular file mapped read-only; empty when it cannot be.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        static_cast<uint64_t>(st.st_size) <= kMaxModuleBytes) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = p;
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  bool ok() const { return data_ != nullptr; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

struct Opened {
  std::unique_ptr<MappedFile> file;
  std::optional<ElfSymbols> elf;
  std::string path;
};

std::string Basename(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string Short(std::string_view id) {
  return id.size() > 12 ? std::string(id.substr(0, 12)) + ".." : std::string(id);
}

bool IsHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// Looks at one candidate: opened when it is an ELF file with the build id;
// a mismatch or an unreadable ELF is remembered for the note.
bool Try(const std::string& path, const std::string& build_id, Opened* out, std::string* mismatch) {
  auto file = std::make_unique<MappedFile>(path);
  if (!file->ok()) return false;
  absl::StatusOr<ElfSymbols> elf = ElfSymbols::Parse(file->bytes());
  if (!elf.ok()) {
    if (mismatch->empty()) *mismatch = absl::StrCat(path, ": ", elf.status().message());
    return false;
  }
  if (elf->build_id() != build_id) {
    if (mismatch->empty()) {
      *mismatch = absl::StrCat(path, ": its build id ",
                               elf->build_id().empty() ? "(none)" : Short(elf->build_id()),
                               " differs from the trace's ", Short(build_id));
    }
    return false;
  }
  out->file = std::move(file);
  out->elf = std::move(*elf);
  out->path = path;
  return true;
}

// Files named `name` below `dir`, in a bounded walk.
std::vector<std::string> FindByName(const std::string& dir, const std::string& name) {
  std::vector<std::string> found;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  size_t seen = 0;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > kMaxWalkEntries || found.size() >= 16) break;
    if (it->path().filename() == name) found.push_back(it->path().string());
  }
  return found;
}

struct Module {
  std::string path, build_id;
  std::vector<size_t> frames;  // indexes into the frames
};

}  // namespace

void SetSymbolDirs(std::vector<std::string> dirs) { Dirs() = std::move(dirs); }
const std::vector<std::string>& SymbolDirs() { return Dirs(); }

size_t SymbolizeFrames(std::vector<StackFrameText>* frames, std::vector<SymbolNote>* notes,
                       const std::vector<std::string>& dirs) {
  std::map<std::pair<std::string, std::string>, Module> modules;
  for (size_t i = 0; i < frames->size(); ++i) {
    const StackFrameText& f = (*frames)[i];
    if (!f.defined || f.kind != proto::FRAME_NATIVE || f.file.empty() || f.file[0] != '/') continue;
    Module& m = modules[{f.file, f.build_id}];
    m.path = f.file;
    m.build_id = f.build_id;
    m.frames.push_back(i);
  }
  size_t symbolized = 0, looked_for = 0, notes_left_out = 0, modules_left_out = 0;
  auto note = [&](const std::string& module, std::string text) {
    if (notes->size() < kMaxSymbolNotes) notes->push_back({module, std::move(text)});
    else ++notes_left_out;
  };
  for (auto& [key, m] : modules) {
    if (++looked_for > kMaxModules) {
      ++modules_left_out;
      continue;
    }
    // A recorded build id is lowercase hex (trace.proto); anything else
    // cannot be matched, nor put into a debug-file path.
    if (!IsHex(m.build_id) || m.build_id.size() < 4) continue;
    std::string mismatch;
    Opened bin;
    bool have_bin = Try(m.path, m.build_id, &bin, &mismatch);
    const std::string name = Basename(m.path);
    for (size_t d = 0; d < dirs.size() && !have_bin; ++d) {
      have_bin = Try(absl::StrCat(dirs[d], "/", name), m.build_id, &bin, &mismatch);
      if (have_bin) break;
      for (const std::string& p : FindByName(dirs[d], name)) {
        if ((have_bin = Try(p, m.build_id, &bin, &mismatch))) break;
      }
    }
    // The separate debug file, by build id, when the binary has no line
    // table (or there is no binary).
    Opened debug;
    bool have_debug = false;
    if (!have_bin || !bin.elf->has_line_table()) {
      const std::string rel = absl::StrCat(".build-id/", m.build_id.substr(0, 2), "/",
                                           m.build_id.substr(2), ".debug");
      std::vector<std::string> roots = dirs;
      roots.push_back("/usr/lib/debug");
      for (const std::string& root : roots) {
        if ((have_debug = Try(absl::StrCat(root, "/", rel), m.build_id, &debug, &mismatch))) break;
      }
    }
    if (!have_bin && !have_debug) {
      if (!mismatch.empty()) {
        note(m.path, absl::StrCat(mismatch, "; its frames are not symbolized"));
      }
      continue;
    }
    std::vector<uint64_t> at;
    for (size_t i : m.frames) at.push_back((*frames)[i].module_offset);
    std::sort(at.begin(), at.end());
    at.erase(std::unique(at.begin(), at.end()), at.end());
    ElfSymbols::Damage damage;
    std::vector<ElfSymbols::Result> from_bin, from_debug;
    if (have_bin) from_bin = bin.elf->Lookup(at, &damage);
    if (have_debug) from_debug = debug.elf->Lookup(at, &damage);
    const bool compressed = (have_bin && bin.elf->line_table_compressed() && !have_debug) ||
                            (have_debug && debug.elf->line_table_compressed());
    if (compressed) {
      note(m.path, absl::StrCat(have_debug ? debug.path : bin.path,
                                ": its line table is compressed (not read): functions only"));
    } else if (damage.bad_units > 0 || damage.bad_symbols > 0) {
      note(m.path, absl::StrCat(have_debug ? debug.path : bin.path, ": ", damage.bad_units,
                                " malformed line-table units and ", damage.bad_symbols,
                                " bad symbol names skipped"));
    }
    for (size_t i : m.frames) {
      StackFrameText& f = (*frames)[i];
      const size_t k = static_cast<size_t>(
          std::lower_bound(at.begin(), at.end(), f.module_offset) - at.begin());
      ElfSymbols::Result r = have_bin ? from_bin[k] : ElfSymbols::Result{};
      if (have_debug) {
        if (r.function.empty()) r.function = from_debug[k].function;
        if (r.line == 0) {
          r.file = from_debug[k].file;
          r.line = from_debug[k].line;
        }
      }
      if (r.function.empty() && r.line == 0) continue;
      f.symbol = std::move(r.function);
      if (r.line != 0) {
        f.source_file = std::move(r.file);
        f.source_line = r.line;
      }
      ++symbolized;
    }
  }
  if (modules_left_out > 0 || notes_left_out > 0) {
    notes->push_back({"", absl::StrCat(modules_left_out, " more modules not looked for (past ",
                                       kMaxModules, "), ", notes_left_out,
                                       " more notes left out")});
  }
  return symbolized;
}

}  // namespace gpscope::model
