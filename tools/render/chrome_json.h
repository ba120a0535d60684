// tools/render/chrome_json.h: Chrome trace-event JSON (chrome://tracing,
// ui.perfetto.dev's JSON importer, speedscope) from the exporter's events
// (chrome_tracks.h). Each track is a (pid, tid) pair; "X" slices, "i"
// instants, "C" counters, launch flows as "s"/"f" pairs (the "f" binds to
// the slice that encloses it, "bp":"e"), call stacks as `stackFrames` with
// an `sf` per API slice (chrome_stacks.h). `ts`/`dur` are microseconds with
// ns fractions since the time origin; the metadata names it.
//
//   ChromeJsonWriter w(out);
//   w.set_stacks(&stacks);
//   ... exporter calls ...
//   w.Finish(timebase, &index);
//
// Thread model: one thread.
#ifndef GPSCOPE_TOOLS_RENDER_CHROME_JSON_H_
#define GPSCOPE_TOOLS_RENDER_CHROME_JSON_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tools/reader/event_reader.h"
#include "tools/reader/timebase.h"
#include "tools/render/chrome_stacks.h"
#include "tools/render/chrome_tracks.h"

namespace gpscope::render {

class ChromeJsonWriter : public TraceExportSink {
 public:
  explicit ChromeJsonWriter(std::ostream& out);
  // Where `sf` nodes and the stackFrames dictionary come from (may be unset).
  void set_stacks(const ChromeStacks* stacks) { stacks_ = stacks; }

  void BeginProcess(const ExportProcess& p) override;
  void DeclareTrack(uint32_t process, uint64_t tid, const std::string& name, uint32_t thread_id,
                    int64_t sort_index) override;
  void Slice(const ExportSlice& s, uint64_t tid) override;
  void Flows(const std::vector<FlowMatcher::Flow>& flows) override;
  void Counter(uint32_t process, uint32_t counter, const std::string& name, int64_t ts_ns,
               double value) override;
  // The stack dictionary and the metadata (time origin, partial read).
  void Finish(const reader::Timebase& timebase, const reader::TraceIndex* index);
  uint64_t events() const { return events_; }

 private:
  void Separator();
  void Head(const char* ph, const char* cat, const std::string& name, uint32_t process,
            uint64_t tid, int64_t ts_ns);

  std::ostream& out_;
  const ChromeStacks* stacks_ = nullptr;
  absl::flat_hash_map<uint32_t, uint32_t> pids_;  // process index -> pid
  bool first_ = true;
  uint64_t events_ = 0;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_CHROME_JSON_H_
