// JSON <-> Value: variables in, and the `tojson` filter out (Python's json.dumps).
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>

#include "chat/value.h"

namespace minfer::chat {

Value from_json(const nlohmann::ordered_json& j);

// json.dumps's arguments, as Hugging Face's `tojson` filter passes them (ensure_ascii=False by
// default).
struct JsonStyle {
  bool pretty = false;      // indent is not None: a newline before each item
  std::string indent;       // per level, when pretty
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

std::string to_json(const Value& v, const JsonStyle& style = {});

}  // namespace minfer::chat
