// tools/render/text_block.cc: see text_block.h.
#include "tools/render/text_block.h"

#include "tools/render/text_sanitize.h"

namespace gpscope::render {

void TextBlock::Wrap(std::string_view raw, size_t column, size_t hang) {
  const std::string printable = Printable(raw);
  std::string_view text = printable;
  size_t at = column;
  bool first = true;
  while (first || !text.empty()) {
    // Past the width (a long label): the rest of the line is not wrapped.
    const size_t room = width_ > at ? width_ - at : std::string_view::npos / 2;
    std::string_view line = CutUtf8(text, room);
    if (line.empty() && !text.empty()) line = CutUtf8(text, room + 4);  // one character
    if (text.size() > room) {
      const size_t space = line.rfind(' ');
      if (space != std::string_view::npos && space > 0) line = line.substr(0, space);
    }
    if (!first) out_.append(at, ' ');
    out_.append(line.data(), line.size());
    out_.push_back('\n');
    text.remove_prefix(line.size());
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    first = false;
    at = hang;
  }
}

void TextBlock::Para(size_t indent, std::string_view text, size_t hang) {
  out_.append(indent, ' ');
  Wrap(text, indent, hang == std::string::npos ? indent : hang);
}

void TextBlock::Row(std::string_view label, std::string_view value, size_t indent,
                    size_t label_width, size_t hang_extra) {
  std::string head(indent, ' ');
  head.append(label.data(), label.size());
  if (head.size() < label_width) {
    head.append(label_width - head.size(), ' ');
  } else {
    head.push_back(' ');
  }
  const size_t hang = head.size() + hang_extra;
  // The head is wrapped with the value (a value with no space breaks after it).
  Para(0, head + std::string(value), hang);
}

void TextBlock::Line(std::string_view text) {
  out_.append(text.data(), text.size());
  out_.push_back('\n');
}

}  // namespace gpscope::render
