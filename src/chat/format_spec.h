// Python's format(value, spec), the mini-language of str.format's `{:spec}` fields:
// [[fill]align][sign][#][0][width][,|_][.precision][type].
#pragma once
#include <string>
#include <string_view>

#include "chat/value.h"

namespace minfer::chat {

std::string format_value(const Value& v, std::string_view spec);

}  // namespace minfer::chat
