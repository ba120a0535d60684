// tools/render/diff_render.h: `gpscope-analyze diff` as text (100 columns)
// and as JSON ("gpscope.diff/1", keys in tools/analyze/diff.h), from
// analyses::ComputeDiff's result and what the command knows of each side.
//
//   std::string text = RenderDiffText(d, base_side, new_side);
//   std::string json = RenderDiffJson(d, DiffRenderOptions{...}, base_side, new_side);
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_RENDER_DIFF_RENDER_H_
#define GPSCOPE_TOOLS_RENDER_DIFF_RENDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/analyses/diff.h"
#include "tools/render/json_writer.h"

namespace gpscope::render {

// One side as the header lines and "base"/"new" objects show it.
struct DiffSide {
  std::vector<std::string> files;
  size_t gpus = 0;
  uint64_t events = 0;
  std::string partial_text;  // "PARTIAL RESULT: ..." or "" (read in full)
  // Writes the side's "partial" key into its JSON object (nothing when read
  // in full); may be empty.
  std::function<void(JsonWriter&)> write_partial_json;
};

// The run options the JSON's "options" object states.
struct DiffRenderOptions {
  uint64_t idle_gap_threshold_ns = 0;
  uint64_t window_ns = 0;
  analyses::DiffOptions diff;
};

// One line of text per regression ("step_p50_ns grew 30.0% (...)").
std::string RegressionText(const analyses::Regression& r);

std::string RenderDiffText(const analyses::RunDiff& d, const DiffSide& base, const DiffSide& now);
std::string RenderDiffJson(const analyses::RunDiff& d, const DiffRenderOptions& options,
                           const DiffSide& base, const DiffSide& now);

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_DIFF_RENDER_H_
