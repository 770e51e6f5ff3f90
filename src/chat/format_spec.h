// Python's format(value, spec), the mini-language of str.format's `{:spec}` fields:
// [[fill]align][sign][#][0][width][,|_][.precision][type].
#pragma once
#include <string>
#include <string_view>

#include "chat/value.h"

namespace minfer::chat {

std::string format_value(const Value& v, std::string_view spec);

// A field of `width` code points as format lays it out: sign (and prefix) + body aligned '<',
// '>', '^' (the odd column on the right) or '=' (the fill between the sign and the body).
// Widths reach kMaxWidth (65536) at most from format's specs; callers bound theirs.
std::string pad_field(const std::string& body, size_t width, char align, const std::string& fill = " ",
                      const std::string& sign = {});

}  // namespace minfer::chat
