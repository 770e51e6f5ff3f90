// Python str and dict methods reachable from templates (`s.strip()`, `d.items()`, ...).
#include <cmath>
#include <algorithm>
#include <cstdio>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/format_spec.h"
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

// s[start:end] for a method's optional start and end arguments (positions i and i + 1), as
// Python slices it: in code points, negative from the end. `valid` is false where Python finds
// nothing even for an empty substring (start past the end, or end before start).
struct Span {
  size_t begin = 0, end = 0;  // bytes
  int64_t cp_begin = 0;
  bool valid = true;
};

Span span_arg(const std::string& s, const CallArgs& a, size_t i) {
  const int64_t n = int64_t(utf8::length(s));
  const auto pos = [&](const char* name, int64_t dflt) {
    const Value* v = arg(a, i + (name[0] == 'e'), name);
    if (!v || v->is_none()) return dflt;
    if (v->kind != Value::Int && v->kind != Value::Bool)
      eval_fail("slice indices must be integers or None, not " + type_name(*v));
    const int64_t x = v->kind == Value::Int ? v->i : int64_t(v->b);
    return x < 0 ? std::max<int64_t>(x + n, 0) : x;
  };
  const int64_t b = pos("start", 0), e = std::min(pos("end", n), n);
  Span sp;
  sp.valid = b <= n && b <= e;
  if (!sp.valid) return sp;
  sp.cp_begin = b;
  int64_t cp = 0;
  for (size_t k = 0; k <= s.size(); ++k) {
    if (k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) continue;
    if (cp == b) sp.begin = k;
    if (cp == e) {
      sp.end = k;
      break;
    }
    ++cp;
  }
  return sp;
}

std::string pad_arg(const CallArgs& a, size_t i, const char* method) {
  const Value* f = arg(a, i, "fillchar");
  if (!f) return " ";
  if (!f->is_string() || utf8::length(f->s) != 1)
    eval_fail(std::string(method) + "() argument 2 must be a str of length 1");
  return f->s;
}

std::string repeat_str(const std::string& x, int64_t n) {
  std::string out;
  if (n <= 0) return out;
  // The size checked before the multiplication could wrap.
  if (uint64_t(n) > kMaxStringBytes / std::max<size_t>(x.size(), 1)) check_string_size(kMaxStringBytes + 1);
  check_string_size(x.size() * size_t(n));
  for (int64_t k = 0; k < n; ++k) out += x;
  return out;
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

// str.format: fields {}, {0}, {name}, each optionally followed by .attr / [index] steps, a
// conversion (!s, !r, !a) and a format spec (format_spec.h) that may itself hold {} fields.
std::string str_format(const std::string& fmt, const CallArgs& a, size_t& auto_index, int depth = 0) {
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      // The field ends at the '}' that balances it (a spec may nest one level of fields).
      size_t close = i + 1;
      for (int open = 1; close < fmt.size(); ++close) {
        if (fmt[close] == '{') ++open;
        if (fmt[close] == '}' && --open == 0) break;
      }
      if (close >= fmt.size()) eval_fail("Single '{' encountered in format string");
      const std::string field = fmt.substr(i + 1, close - i - 1);
      size_t name_end = field.find_first_of("!:");
      const std::string ref = field.substr(0, name_end);
      char conv = 0;
      std::string spec;
      if (name_end != std::string::npos && field[name_end] == '!') {
        if (name_end + 1 >= field.size()) eval_fail("end of string while looking for conversion specifier");
        conv = field[name_end + 1];
        if (conv != 's' && conv != 'r' && conv != 'a') eval_fail(std::string("Unknown conversion specifier ") + conv);
        name_end += 2;
        if (name_end < field.size() && field[name_end] != ':') eval_fail("expected ':' after conversion specifier");
      }
      if (name_end != std::string::npos && name_end < field.size()) spec = field.substr(name_end + 1);
      // The argument: positional by number or order, else keyword; then .attr and [key] steps
      // (Jinja2's sandbox takes them as template lookups: a missing one is undefined).
      const size_t steps = ref.find_first_of(".[");
      const std::string head = ref.substr(0, steps);
      const Value* v = nullptr;
      // auto_index counts the {} fields; SIZE_MAX once a field has named its number.
      const bool numbered = !head.empty() && head.find_first_not_of("0123456789") == std::string::npos;
      if ((head.empty() && auto_index == SIZE_MAX) || (numbered && auto_index != 0 && auto_index != SIZE_MAX))
        eval_fail("cannot switch between manual field numbering and automatic field numbering");
      if (head.empty()) {
        v = auto_index < a.pos.size() ? &a.pos[auto_index] : nullptr;
        ++auto_index;
      } else if (numbered) {
        auto_index = SIZE_MAX;
        const size_t k = head.size() > 9 ? SIZE_MAX : std::stoul(head);
        v = k < a.pos.size() ? &a.pos[k] : nullptr;
      } else {
        v = a.kwarg(head);
      }
      if (!v) eval_fail("format(): no argument for field {" + ref + "}");
      Value x = *v;
      for (size_t k = steps; k != std::string::npos && k < ref.size();) {
        if (ref[k] == '.') {
          const size_t e = ref.find_first_of(".[", k + 1);
          x = get_attr(x, ref.substr(k + 1, e == std::string::npos ? std::string::npos : e - k - 1));
          k = e;
        } else {
          const size_t e = ref.find(']', k);
          if (e == std::string::npos) eval_fail("Missing ']' in format string");
          const std::string key = ref.substr(k + 1, e - k - 1);
          const bool num = !key.empty() && key.size() < 19 && key.find_first_not_of("0123456789") == std::string::npos;
          x = get_item(x, num ? Value::integer(std::stoll(key)) : Value::str(key));
          k = e + 1;
        }
      }
      // Fields inside the spec come after the field's own argument, as Python numbers them.
      if (spec.find('{') != std::string::npos) {
        if (depth >= 1) eval_fail("Max string recursion exceeded");
        spec = str_format(spec, a, auto_index, depth + 1);
      }
      if (conv == 'r' || conv == 'a') x = Value::str(repr(x));
      else if (conv == 's') x = Value::str(to_str(x));
      const std::string text = format_value(x, spec);
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
    // Python's line boundaries: \n, \r, \r\n, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029.
    const Value* ke = arg(a, 0, "keepends");
    const bool keep = ke && truthy(*ke);
    const auto cps = utf8::decode(s);
    List lines;
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
      const char32_t c = cps[i];
      if (!(c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
            c == 0x2028 || c == 0x2029))
        continue;
      size_t end = i;
      if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      check_items(lines.size() + 1);
      lines.push_back(Value::str(utf8::encode({cps.begin() + long(start), cps.begin() + long(keep ? i + 1 : end)})));
      start = i + 1;
    }
    if (start < cps.size()) lines.push_back(Value::str(utf8::encode({cps.begin() + long(start), cps.end()})));
    return Value::make_list(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* affix = arg(a, 0, "prefix");
    if (!affix) eval_fail(name + "() takes at least 1 argument");
    const Span sp = span_arg(s, a, 1);
    return Value::boolean(sp.valid && affix_match(s.substr(sp.begin, sp.end - sp.begin), *affix, name == "startswith"));
  }
  if (name == "replace")
    return Value::str(replace(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                              int_arg(a, 2, "count", -1)));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const std::string sub = str_arg(a, 0, "sub", name.c_str());
    const Span sp = span_arg(s, a, 1);
    const std::string_view in = sp.valid ? std::string_view(s).substr(sp.begin, sp.end - sp.begin) : std::string_view();
    if (name == "count") {
      if (!sp.valid) return Value::integer(0);
      if (sub.empty()) return Value::integer(int64_t(utf8::length(in)) + 1);
      int64_t n = 0;
      for (size_t p = in.find(sub); p != std::string::npos; p = in.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    const size_t at = !sp.valid ? std::string::npos : name[0] == 'r' ? in.rfind(sub) : in.find(sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") eval_fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(sp.cp_begin + int64_t(utf8::length(in.substr(0, at))));
  }
  if (name == "ljust" || name == "rjust" || name == "center") {
    return Value::str(pad_to(s, int_arg(a, 0, "width", 0), name == "ljust" ? '<' : name == "rjust" ? '>' : '^',
                             pad_arg(a, 1, name.c_str())));
  }
  if (name == "zfill") {
    const int64_t width = int_arg(a, 0, "width", 0);
    const int64_t n = int64_t(utf8::length(s));
    if (width <= n) return Value::str(s);
    const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-');
    return Value::str(s.substr(0, sign) + repeat_str("0", width - n) + s.substr(sign));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string x = str_arg(a, 0, "prefix", name.c_str());
    const bool pre = name == "removeprefix";
    if (x.size() <= s.size() && (pre ? s.compare(0, x.size(), x) : s.compare(s.size() - x.size(), x.size(), x)) == 0)
      return Value::str(pre ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
    return Value::str(s);
  }
  if (name == "partition" || name == "rpartition") {
    const std::string sep = str_arg(a, 0, "sep", name.c_str());
    if (sep.empty()) eval_fail("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos)
      return name == "partition" ? Value::make_tuple({Value::str(s), Value::str(""), Value::str("")})
                                 : Value::make_tuple({Value::str(""), Value::str(""), Value::str(s)});
    return Value::make_tuple({Value::str(s.substr(0, at)), Value::str(sep), Value::str(s.substr(at + sep.size()))});
  }
  if (name == "swapcase") {
    std::vector<char32_t> cps = utf8::decode(s);
    for (char32_t& c : cps) {
      const char32_t up = utf8::to_upper(c);
      c = up != c ? up : utf8::to_lower(c);
    }
    return Value::str(utf8::encode(cps));
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
  if (name == "format") {
    size_t auto_index = 0;
    return Value::str(str_format(s, a, auto_index));
  }
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return all_chars(s, utf8::is_digit);
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
      "join", "format", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
      "rindex", "ljust", "rjust", "center", "zfill", "removeprefix", "removesuffix", "partition",
      "rpartition", "swapcase", "isdecimal", "isnumeric"};
  for (const char* x : names)
    if (n == x) return true;
  return false;
}

}  // namespace

std::string pad_to(const std::string& s, int64_t width, char align, const std::string& fill) {
  const int64_t n = int64_t(utf8::length(s));
  if (width <= n) return s;
  const int64_t pad = width - n;
  // Python's center puts the odd column on the left when the string's length is odd.
  const int64_t left = align == '<' ? 0 : align == '>' ? pad : pad / 2 + (pad & width & 1);
  return repeat_str(fill, left) + s + repeat_str(fill, pad - left);
}

Value method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    if (!is_string_method(name)) return Value::undefined();
    std::string s = obj.s;
    return Value::function(name, [s, name](const CallArgs& a) { return string_method(s, name, a); });
  }
  if (obj.is_list()) {
    // The list methods that do not change the list (transformers' sandbox refuses the others).
    auto l = obj.list;
    const bool tuple = obj.tuple;
    if (name == "count")
      return Value::function(name, [l](const CallArgs& a) {
        if (a.pos.size() != 1) eval_fail("count() takes exactly one argument");
        return Value::integer(std::count_if(l->begin(), l->end(), [&](const Value& x) { return equals(x, a.pos[0]); }));
      });
    if (name == "index")
      return Value::function(name, [l, tuple](const CallArgs& a) {
        if (a.pos.empty() || a.pos.size() > 3) eval_fail("index() takes 1 to 3 arguments");
        const int64_t n = int64_t(l->size());
        const auto bound = [&](size_t k, int64_t dflt) {
          if (k >= a.pos.size()) return dflt;
          if (a.pos[k].kind != Value::Int) eval_fail("slice indices must be integers");
          const int64_t x = a.pos[k].i;
          return std::clamp<int64_t>(x < 0 ? x + n : x, 0, n);
        };
        for (int64_t k = bound(1, 0), e = bound(2, n); k < e; ++k)
          if (equals((*l)[size_t(k)], a.pos[0])) return Value::integer(k);
        eval_fail(tuple ? "tuple.index(x): x not in tuple" : repr(a.pos[0]) + " is not in list");
      });
    if (name == "copy" && !tuple)
      return Value::function(name, [l](const CallArgs&) { return Value::make_list(*l); });
  }
  if (obj.is_dict()) {
    auto d = obj.dict;
    if (name == "copy")
      return Value::function(name, [d](const CallArgs&) {
        Value c = Value::make_dict();
        *c.dict = *d;
        return c;
      });
    if (name == "items")
      return Value::function(name, [d](const CallArgs&) {
        List out;
        for (const auto& [k, v] : d->items) out.push_back(Value::make_tuple({key_value(k), v}));
        return Value::make_list(std::move(out));
      });
    if (name == "keys")
      return Value::function(name, [d](const CallArgs&) {
        List out;
        for (const auto& kv : d->items) out.push_back(key_value(kv.first));
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
        if (const Value* v = d->find(dict_key(*k))) return *v;
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
    // Flags, width and precision; the numbers bounded, as they go to snprintf.
    std::string spec = "%";
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) spec += fmt[i++];
    const std::string flags = spec.substr(1);
    size_t width = 0, prec = SIZE_MAX;
    for (bool precision = false;; precision = true) {
      size_t n = 0;
      const size_t from = i;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        n = n * 10 + size_t(fmt[i++] - '0');
        if (n > 4096) eval_fail("format width or precision too big (more than 4096)");
      }
      if (i > from) spec += std::to_string(n);
      if (!precision) width = n;
      else prec = n;
      if (precision || i >= fmt.size() || fmt[i] != '.') break;
      spec += fmt[i++];
    }
    if (i >= fmt.size()) eval_fail("incomplete format");
    const char conv = fmt[i];
    if (!v) {
      if (next >= seq.size()) eval_fail("not enough arguments for format string");
      v = &seq[next++];
    }
    char buf[4096 + 512];
    switch (conv) {
      case 's':
      case 'r': {
        std::string text = conv == 's' ? to_str(*v) : repr(*v);
        if (prec != SIZE_MAX) {
          const auto cps = utf8::decode(text);
          if (cps.size() > prec) text = utf8::encode({cps.begin(), cps.begin() + long(prec)});
        }
        text = pad_field(text, width, flags.find('-') != std::string::npos ? '<' : '>');
        check_string_size(out.size() + text.size());
        out += text;
        break;
      }
      case 'd': case 'i': case 'x': case 'X': case 'o': {
        // Python's, not C's: a sign and magnitude in every base, '#' giving 0x / 0X / 0o.
        if (!v->is_numeric()) eval_fail(std::string{'%', conv} + " format: a number is required, not " + type_name(*v));
        if (v->kind == Value::Float && (conv == 'x' || conv == 'X' || conv == 'o'))
          eval_fail(std::string{'%', conv} + " format: an integer is required, not float");
        if (v->kind == Value::Float && !(std::fabs(v->f) < 9.2e18)) eval_fail("format: " + float_repr(v->f) + " does not fit 64 bits");
        const int64_t n = v->kind == Value::Int ? v->i : v->kind == Value::Bool ? int64_t(v->b) : int64_t(std::trunc(v->f));
        const uint64_t mag = n < 0 ? 0 - uint64_t(n) : uint64_t(n);
        std::snprintf(buf, sizeof buf, conv == 'x' ? "%llx" : conv == 'X' ? "%llX" : conv == 'o' ? "%llo" : "%llu",
                      (unsigned long long)mag);
        std::string digits = buf;
        if (prec != SIZE_MAX && digits.size() < prec) digits.insert(0, prec - digits.size(), '0');
        const auto has = [&](char f) { return flags.find(f) != std::string::npos; };
        std::string head = n < 0 ? "-" : has('+') ? "+" : has(' ') ? " " : "";
        if (has('#') && conv != 'd' && conv != 'i') head += conv == 'o' ? "0o" : conv == 'x' ? "0x" : "0X";
        // '-' left-justifies with spaces, else '0' pads with zeros after the sign.
        const bool zeros = has('0') && !has('-');
        out += pad_field(digits, width, has('-') ? '<' : zeros ? '=' : '>', zeros ? "0" : " ", head);
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
        if (!v->is_numeric()) eval_fail("must be real number, not " + type_name(*v));
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v->as_double());
        out += buf;
        break;
      case 'c': {
        // One character: a str of length 1, or an int code point.
        std::string ch;
        if (v->is_string() && utf8::length(v->s) == 1) ch = v->s;
        else if (v->kind == Value::Int && v->i >= 0 && v->i <= 0x10FFFF) utf8::append(ch, char32_t(v->i));
        else eval_fail("%c requires an int in range(0x110000) or a single character");
        out += pad_field(ch, width, flags.find('-') != std::string::npos ? '<' : '>');
        break;
      }
      default: eval_fail(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (next < seq.size() && !args.is_dict()) eval_fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace minfer::chat
