// Python str and dict methods reachable from templates (`s.strip()`, `d.items()`, ...).
#include <cmath>
#include <algorithm>
#include <cstdio>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/render_budget.h"
#include "chat/utf8.h"

namespace minfer::chat {
namespace {

const Value* arg(const CallArgs& a, size_t i, const char* name) { return a.get(i, name); }

std::string str_arg(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = arg(a, i, name);
  if (!v) eval_fail(std::string(method) + "() missing argument '" + name + "'");
  if (!v->is_string())
    eval_fail(std::string(method) + "() argument must be str, not " + type_name(*v));
  return v->s;
}

Value strip_method(const std::string& s, const CallArgs& a, bool left, bool right) {
  const Value* chars = arg(a, 0, "chars");
  if (!chars || chars->is_none()) return Value::str(utf8::strip(s, left, right, nullptr));
  if (!chars->is_string()) eval_fail("strip arg must be None or str");
  const auto cps = utf8::decode(chars->s);
  const std::u32string set(cps.begin(), cps.end());
  return Value::str(utf8::strip(s, left, right, &set));
}

int64_t int_arg(const CallArgs& a, size_t i, const char* name, int64_t dflt) {
  const Value* v = arg(a, i, name);
  if (!v || v->is_none()) return dflt;
  if (v->kind == Value::Int) return v->i;
  eval_fail(std::string("'") + name + "' must be an integer");
}

Value split(const std::string& s, const CallArgs& a, bool from_right) {
  const Value* sepv = arg(a, 0, "sep");
  int64_t maxsplit = int_arg(a, 1, "maxsplit", -1);
  List parts;
  if (!sepv || sepv->is_none()) {
    // Runs of whitespace separate; leading/trailing whitespace gives no empty parts.
    auto cps = utf8::decode(s);
    std::vector<std::string> words;
    if (!from_right) {
      size_t i = 0;
      while (i < cps.size()) {
        while (i < cps.size() && utf8::is_space(cps[i])) ++i;
        if (i == cps.size()) break;
        if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
          size_t e = cps.size();
          while (e > i && utf8::is_space(cps[e - 1])) --e;
          words.push_back(utf8::encode({cps.begin() + long(i), cps.begin() + long(e)}));
          break;
        }
        size_t j = i;
        while (j < cps.size() && !utf8::is_space(cps[j])) ++j;
        check_items(words.size() + 1);
        words.push_back(utf8::encode({cps.begin() + long(i), cps.begin() + long(j)}));
        i = j;
      }
    } else {
      size_t e = cps.size();
      while (e > 0) {
        while (e > 0 && utf8::is_space(cps[e - 1])) --e;
        if (e == 0) break;
        if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < e && utf8::is_space(cps[b])) ++b;
          words.push_back(utf8::encode({cps.begin() + long(b), cps.begin() + long(e)}));
          break;
        }
        size_t b = e;
        while (b > 0 && !utf8::is_space(cps[b - 1])) --b;
        check_items(words.size() + 1);
        words.push_back(utf8::encode({cps.begin() + long(b), cps.begin() + long(e)}));
        e = b;
      }
      std::reverse(words.begin(), words.end());
    }
    for (auto& w : words) parts.push_back(Value::str(std::move(w)));
    return Value::make_list(std::move(parts));
  }
  if (!sepv->is_string()) eval_fail("must be str or None, not " + type_name(*sepv));
  const std::string& sep = sepv->s;
  if (sep.empty()) eval_fail("empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    size_t start = 0;
    while (true) {
      const size_t at = (maxsplit >= 0 && int64_t(pieces.size()) >= maxsplit)
                            ? std::string::npos
                            : s.find(sep, start);
      if (at == std::string::npos) {
        pieces.push_back(s.substr(start));
        break;
      }
      check_items(pieces.size() + 1);
      pieces.push_back(s.substr(start, at - start));
      start = at + sep.size();
    }
  } else {
    size_t end = s.size();
    while (true) {
      size_t at = std::string::npos;
      if (!(maxsplit >= 0 && int64_t(pieces.size()) >= maxsplit) && end >= sep.size())
        at = s.rfind(sep, end - sep.size());
      if (at == std::string::npos) {
        pieces.push_back(s.substr(0, end));
        break;
      }
      check_items(pieces.size() + 1);
      pieces.push_back(s.substr(at + sep.size(), end - at - sep.size()));
      end = at;
    }
    std::reverse(pieces.begin(), pieces.end());
  }
  for (auto& p : pieces) parts.push_back(Value::str(std::move(p)));
  return Value::make_list(std::move(parts));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& v) {
    if (!v.is_string()) eval_fail("startswith/endswith first arg must be str or a tuple of str");
    if (v.s.size() > s.size()) return false;
    return prefix ? s.compare(0, v.s.size(), v.s) == 0
                  : s.compare(s.size() - v.s.size(), v.s.size(), v.s) == 0;
  };
  if (affix.is_list()) {
    for (const auto& v : *affix.list)
      if (one(v)) return true;
    return false;
  }
  return one(affix);
}

std::string replace(const std::string& s, const std::string& from, const std::string& to,
                    int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between characters (and at both ends).
    const auto cps = utf8::decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        check_string_size(out.size() + to.size());
        out += to;
        ++done;
      }
      if (i < cps.size()) utf8::append(out, cps[i]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(from, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    check_string_size(out.size() + to.size());
    out += to;
    pos = at + from.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// str.format with {} / {0} / {name} fields; format specs are not supported.
std::string str_format(const std::string& fmt, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = fmt.find('}', i);
      if (close == std::string::npos) eval_fail("Single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        eval_fail("format specs in str.format are not supported: {" + field + "}");
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < a.pos.size() ? &a.pos[auto_index] : nullptr;
        ++auto_index;
      } else if (field.find_first_not_of("0123456789") == std::string::npos) {
        const size_t k = std::stoul(field);
        v = k < a.pos.size() ? &a.pos[k] : nullptr;
      } else {
        v = a.kwarg(field);
      }
      if (!v) eval_fail("format(): no argument for field {" + field + "}");
      const std::string text = to_str(*v);
      check_string_size(out.size() + text.size());
      out += text;
      i = close;
    } else if (c == '}') {
      eval_fail("Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return out;
}

template <typename Pred>
Value all_chars(const std::string& s, Pred p) {
  const auto cps = utf8::decode(s);
  if (cps.empty()) return Value::boolean(false);
  for (char32_t c : cps)
    if (!p(c)) return Value::boolean(false);
  return Value::boolean(true);
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "upper") return Value::str(utf8::upper(s));
  if (name == "lower") return Value::str(utf8::lower(s));
  if (name == "title") return Value::str(utf8::title(s));
  if (name == "capitalize") return Value::str(utf8::capitalize(s));
  if (name == "strip") return strip_method(s, a, true, true);
  if (name == "lstrip") return strip_method(s, a, true, false);
  if (name == "rstrip") return strip_method(s, a, false, true);
  if (name == "split") return split(s, a, false);
  if (name == "rsplit") return split(s, a, true);
  if (name == "splitlines") {
    List lines;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        check_items(lines.size() + 1);
        lines.push_back(Value::str(s.substr(start, i - start)));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) lines.push_back(Value::str(s.substr(start)));
    return Value::make_list(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* affix = arg(a, 0, "prefix");
    if (!affix) eval_fail(name + "() takes at least 1 argument");
    return Value::boolean(affix_match(s, *affix, name == "startswith"));
  }
  if (name == "replace")
    return Value::str(replace(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                              int_arg(a, 2, "count", -1)));
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    const std::string sub = str_arg(a, 0, "sub", name.c_str());
    if (name == "count") {
      if (sub.empty()) return Value::integer(int64_t(utf8::length(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    const size_t at = name == "rfind" ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name == "index") eval_fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(int64_t(utf8::length(s.substr(0, at))));
  }
  if (name == "join") {
    const Value* it = arg(a, 0, "iterable");
    if (!it) eval_fail("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const auto& v : iterate(*it)) {
      if (!v.is_string()) eval_fail("sequence item: expected str instance, " + type_name(v) + " found");
      check_string_size(out.size() + s.size() + v.s.size());
      if (!first) out += s;
      first = false;
      out += v.s;
    }
    return Value::str(std::move(out));
  }
  if (name == "format") return Value::str(str_format(s, a));
  if (name == "isdigit") return all_chars(s, utf8::is_digit);
  if (name == "isalpha") return all_chars(s, utf8::is_alpha);
  if (name == "isalnum") return all_chars(s, [](char32_t c) { return utf8::is_alpha(c) || utf8::is_digit(c); });
  if (name == "isspace") return all_chars(s, utf8::is_space);
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (char32_t c : utf8::decode(s)) {
      const bool lo = utf8::to_upper(c) != c, up = utf8::to_lower(c) != c;
      if ((name == "islower" && up) || (name == "isupper" && lo)) return Value::boolean(false);
      cased = cased || lo || up;
    }
    return Value::boolean(cased);
  }
  eval_fail("'str' object has no attribute '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* const names[] = {
      "upper", "lower", "title", "capitalize", "strip", "lstrip", "rstrip", "split", "rsplit",
      "splitlines", "startswith", "endswith", "replace", "find", "rfind", "index", "count",
      "join", "format", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper"};
  for (const char* x : names)
    if (n == x) return true;
  return false;
}

}  // namespace

Value method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    if (!is_string_method(name)) return Value::undefined();
    std::string s = obj.s;
    return Value::function(name, [s, name](const CallArgs& a) { return string_method(s, name, a); });
  }
  if (obj.is_dict()) {
    auto d = obj.dict;
    if (name == "items")
      return Value::function(name, [d](const CallArgs&) {
        List out;
        for (const auto& [k, v] : d->items) out.push_back(Value::make_tuple({Value::str(k), v}));
        return Value::make_list(std::move(out));
      });
    if (name == "keys")
      return Value::function(name, [d](const CallArgs&) {
        List out;
        for (const auto& kv : d->items) out.push_back(Value::str(kv.first));
        return Value::make_list(std::move(out));
      });
    if (name == "values")
      return Value::function(name, [d](const CallArgs&) {
        List out;
        for (const auto& kv : d->items) out.push_back(kv.second);
        return Value::make_list(std::move(out));
      });
    if (name == "get")
      return Value::function(name, [d](const CallArgs& a) {
        const Value* k = a.get(0, "key");
        if (!k) eval_fail("get() takes at least 1 argument");
        if (k->is_string())
          if (const Value* v = d->find(k->s)) return *v;
        const Value* dflt = a.get(1, "default");
        return dflt ? *dflt : Value::none();
      });
  }
  return Value::undefined();
}

std::string percent_format(const std::string& fmt, const Value& args) {
  List seq;
  if (args.is_list() && args.tuple) seq = *args.list;
  else seq.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) eval_fail("incomplete format");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    const Value* v = nullptr;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos || !args.is_dict()) eval_fail("format requires a mapping");
      v = args.dict->find(fmt.substr(i + 1, close - i - 1));
      if (!v) eval_fail("format key not found: " + fmt.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    std::string spec = "%";
    while (i < fmt.size() && std::string_view("-+ #0123456789.").find(fmt[i]) != std::string_view::npos)
      spec += fmt[i++];
    if (i >= fmt.size()) eval_fail("incomplete format");
    const char conv = fmt[i];
    if (!v) {
      if (next >= seq.size()) eval_fail("not enough arguments for format string");
      v = &seq[next++];
    }
    char buf[512];
    switch (conv) {
      case 's':
      case 'r': {
        const std::string text = conv == 's' ? to_str(*v) : repr(*v);
        const bool left = spec.find('-') != std::string::npos;
        const size_t digits = spec.find_first_of("123456789");
        const size_t width = digits == std::string::npos ? 0 : std::min<size_t>(std::stoul(spec.substr(digits)), 4096);
        const size_t len = utf8::length(text);
        const std::string pad = width > len ? std::string(width - len, ' ') : std::string();
        check_string_size(out.size() + text.size() + pad.size());
        out += left ? text + pad : pad + text;
        break;
      }
      case 'd': case 'i': case 'x': case 'X': case 'o': {
        if (!v->is_numeric()) eval_fail(std::string{'%', conv} + " format: a number is required, not " + type_name(*v));
        const long long n = v->kind == Value::Float ? (long long)std::trunc(v->f) : (long long)v->as_double();
        std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(),
                      v->kind == Value::Int ? (long long)v->i : n);
        out += buf;
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
        if (!v->is_numeric()) eval_fail("must be real number, not " + type_name(*v));
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v->as_double());
        out += buf;
        break;
      default: eval_fail(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (next < seq.size() && !args.is_dict()) eval_fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace minfer::chat
