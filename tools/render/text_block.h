// tools/render/text_block.h: the one text block the text renderers write
// into: paragraphs and "label  value" rows wrapped at spaces to a width
// (100 columns), every string from the trace made printable on the way in
// (render::Printable: control characters escaped, bytes that are not UTF-8
// replaced), lines cut only on character boundaries.
//
//   TextBlock t;                       // 100 columns
//   t.Line("GPU 0");
//   t.Row("SM util", "37.2% (gpm.sm_util)");      // "  SM util       37.2% ..."
//   t.Para(2, long_text, 4);           // wrapped, continuation lines at 4
//   t.Raw("  label       "); t.Wrap(value, 14, 14);  // a row laid out by hand
//   std::string text = t.Take();
//
// Thread model: one block per thread.
#ifndef GPSCOPE_TOOLS_RENDER_TEXT_BLOCK_H_
#define GPSCOPE_TOOLS_RENDER_TEXT_BLOCK_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace gpscope::render {

class TextBlock {
 public:
  static constexpr size_t kDefaultWidth = 100;
  static constexpr size_t kDefaultLabelWidth = 16;  // "  kernel time   "

  explicit TextBlock(size_t width = kDefaultWidth) : width_(width) {}

  // `text` at `indent`, wrapped at spaces; continuation lines at `hang`
  // (default: indent).
  void Para(size_t indent, std::string_view text, size_t hang = std::string::npos);
  // "  label         value", the value wrapped under itself (`hang_extra`
  // more columns in); a label as wide as the column gets one space.
  void Row(std::string_view label, std::string_view value, size_t indent = 2,
           size_t label_width = kDefaultLabelWidth, size_t hang_extra = 0);
  // `text` continuing the current line, which is at `column` already (the
  // caller wrote what comes before it with Raw), wrapped; continuation
  // lines at `hang`.
  void Wrap(std::string_view text, size_t column, size_t hang);
  // One line as it is (the renderer's own text) and its newline.
  void Line(std::string_view text = "");
  // Text as it is, no newline.
  void Raw(std::string_view text) { out_.append(text.data(), text.size()); }

  size_t width() const { return width_; }
  std::string Take() { return std::move(out_); }

 private:
  size_t width_;
  std::string out_;
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_TEXT_BLOCK_H_
