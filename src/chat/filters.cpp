// Jinja2's built-in filters, as chat templates use them.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/json_io.h"
#include "chat/number_text.h"
#include "chat/render_budget.h"
#include "chat/utf8.h"

namespace minfer::chat {
namespace {

const Value* arg(const CallArgs& a, size_t i, const char* name) { return a.get(i, name); }

bool bool_arg(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = arg(a, i, name);
  return v ? truthy(*v) : dflt;
}

// "a.b.0": Jinja2's attribute paths for map/sort/selectattr/...
Value attribute_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      int64_t i = 0;
      const auto r = std::from_chars(part.data(), part.data() + part.size(), i);
      // An index past int64 is past every list's end, as Python's IndexError.
      cur = r.ec == std::errc() ? get_item(cur, Value::integer(i)) : Value::undefined(part);
    } else
      cur = get_item(cur, Value::str(part));
    if (dot == std::string::npos) return cur;
    if (cur.is_undefined()) return cur;
    start = dot + 1;
  }
}

std::string str_of(const Value& a, const char* filter) {
  (void)filter;
  return to_str(a);
}

Value f_abs(const Value& v, const CallArgs&) {
  if (v.kind == Value::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
  if (v.kind == Value::Bool) return Value::integer(v.b);
  if (v.kind == Value::Float) return Value::number(std::fabs(v.f));
  eval_fail("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(const Value& v, const CallArgs& a) {
  const Value* n = arg(a, 0, "name");
  if (!n || !n->is_string()) eval_fail("attr filter needs a name");
  return get_attr(v, n->s);
}

Value f_batch(const Value& v, const CallArgs& a) {
  const Value* n = arg(a, 0, "linecount");
  if (!n || n->kind != Value::Int || n->i <= 0) eval_fail("batch filter needs a positive count");
  const Value* fill = arg(a, 1, "fill_with");
  List out, cur;
  for (auto& x : iterate(v)) {
    cur.push_back(x);
    if (int64_t(cur.size()) == n->i) out.push_back(Value::make_list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none())
      while (int64_t(cur.size()) < n->i) cur.push_back(*fill);
    out.push_back(Value::make_list(std::move(cur)));
  }
  return Value::make_list(std::move(out));
}

// Jinja2's slice: `slices` lists of consecutive items, the first len % slices one longer; with
// fill_with, the shorter ones padded by one.
Value f_slice(const Value& v, const CallArgs& a) {
  const Value* n = arg(a, 0, "slices");
  if (!n || n->kind != Value::Int || n->i <= 0) eval_fail("slice filter needs a positive count");
  const Value* fill = arg(a, 1, "fill_with");
  const List seq = iterate(v);
  const int64_t len = int64_t(seq.size()), slices = n->i;
  check_items(size_t(std::min<int64_t>(slices, int64_t(1) << 30)));
  const int64_t per = len / slices, extra = len % slices;
  List out;
  int64_t offset = 0;
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    List part(seq.begin() + start, seq.begin() + end);
    if (fill && !fill->is_none() && k >= extra) part.push_back(*fill);
    out.push_back(Value::make_list(std::move(part)));
  }
  return Value::make_list(std::move(out));
}

// Jinja2's truncate(length=255, killwords=False, end='...', leeway=5), in code points: a string
// within length + leeway stays; else cut to length - len(end), at the last space unless
// killwords, and end appended.
Value f_truncate(const Value& v, const CallArgs& a) {
  const std::string s = to_str(v);
  const Value* lv = arg(a, 0, "length");
  const int64_t length = lv && lv->kind == Value::Int ? lv->i : 255;
  const bool killwords = bool_arg(a, 1, "killwords", false);
  const Value* ev = arg(a, 2, "end");
  const std::string end = ev ? to_str(*ev) : "...";
  const Value* lw = arg(a, 3, "leeway");
  const int64_t leeway = lw && lw->kind == Value::Int ? lw->i : 5;
  const auto cps = utf8::decode(s);
  const int64_t end_len = int64_t(utf8::length(end));
  if (length < end_len) eval_fail("truncate: expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) eval_fail("truncate: expected leeway >= 0, got " + std::to_string(leeway));
  if (int64_t(cps.size()) - length <= leeway) return Value::str(s);  // no overflow: 0 <= length
  std::vector<char32_t> head(cps.begin(), cps.begin() + (length - end_len));
  if (!killwords) {
    const auto sp = std::find(head.rbegin(), head.rend(), U' ');
    if (sp != head.rend()) head.erase(sp.base() - 1, head.end());
  }
  return Value::str(utf8::encode(head) + end);
}

Value f_capitalize(const Value& v, const CallArgs&) { return Value::str(utf8::capitalize(str_of(v, "capitalize"))); }
Value f_upper(const Value& v, const CallArgs&) { return Value::str(utf8::upper(str_of(v, "upper"))); }
Value f_lower(const Value& v, const CallArgs&) { return Value::str(utf8::lower(str_of(v, "lower"))); }

// Jinja2's title: words start after whitespace or one of -({[< ; the rest is lowered.
Value f_title(const Value& v, const CallArgs&) {
  auto cps = utf8::decode(str_of(v, "title"));
  bool start = true;
  for (auto& c : cps) {
    const bool sep = utf8::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      start = true;
      continue;
    }
    c = start ? utf8::to_upper(c) : utf8::to_lower(c);
    start = false;
  }
  return Value::str(utf8::encode(cps));
}

// Jinja2's center: str.center(width), width 80 by default.
Value f_center(const Value& v, const CallArgs& a) {
  const Value* w = arg(a, 0, "width");
  return Value::str(pad_to(str_of(v, "center"), w && w->kind == Value::Int ? w->i : 80, '^'));
}

Value f_length(const Value& v, const CallArgs&) { return Value::integer(length(v)); }

Value f_default(const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "default_value");
  const bool boolean = bool_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !truthy(v))) return d ? *d : Value::str("");
  return v;
}

std::string sort_key_str(const Value& v, bool case_sensitive) {
  return case_sensitive ? v.s : utf8::lower(v.s);
}

int sort_compare(const Value& x, const Value& y, bool case_sensitive) {
  if (!case_sensitive && x.is_string() && y.is_string()) {
    const int c = sort_key_str(x, false).compare(sort_key_str(y, false));
    return c < 0 ? -1 : c > 0;
  }
  return compare(x, y);
}

// Jinja2's groupby(attribute, default=None, case_sensitive=False): sorted by the attribute
// (strings compared in lower case unless case_sensitive), then runs of equal keys as
// (grouper, list) tuples; without case_sensitive the grouper is the first item's own value.
Value f_groupby(const Value& v, const CallArgs& a) {
  const Value* attr = arg(a, 0, "attribute");
  if (!attr) eval_fail("groupby filter needs an attribute");
  const Value* dflt = arg(a, 1, "default");
  const bool cs = bool_arg(a, 2, "case_sensitive", false);
  const std::string path = to_str(*attr);
  const auto key = [&](const Value& x) {
    Value k = attribute_path(x, path);
    return k.is_undefined() && dflt ? *dflt : k;
  };
  List items = iterate(v);
  charge_sort(items.size());
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& p, const Value& q) { return sort_compare(key(p), key(q), cs) < 0; });
  List out;
  for (size_t i = 0; i < items.size();) {
    const Value k = key(items[i]);
    List members;
    size_t j = i;
    for (; j < items.size() && sort_compare(key(items[j]), k, cs) == 0; ++j) members.push_back(items[j]);
    Value g = Value::make_tuple({k, Value::make_list(std::move(members))});
    g.group = true;
    out.push_back(std::move(g));
    i = j;
  }
  return Value::make_list(std::move(out));
}

Value f_dictsort(const Value& v, const CallArgs& a) {
  if (!v.is_dict()) eval_fail("dictsort filter needs a dict, got " + type_name(v));
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* by = arg(a, 1, "by");
  const bool by_value = by && by->is_string() && by->s == "value";
  const bool rev = bool_arg(a, 2, "reverse", false);
  List items;
  for (const auto& [k, x] : v.dict->items) items.push_back(Value::make_tuple({key_value(k), x}));
  charge_sort(items.size());
  std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
    const int c = sort_compare((*p.list)[by_value], (*q.list)[by_value], cs);
    return rev ? c > 0 : c < 0;
  });
  return Value::make_list(std::move(items));
}

Value f_escape(const Value& v, const CallArgs&) {
  std::string out;
  for (char c : str_of(v, "escape")) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::str(std::move(out));
}

Value f_first(const Value& v, const CallArgs&) {
  if (v.is_undefined()) undefined_error(v);
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(const Value& v, const CallArgs&) {
  if (v.is_undefined()) undefined_error(v);
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Jinja2's int filter: int(text, base) for a string, else int(x); failing that int(float(x));
// failing that the default.
Value f_int(const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  const Value dflt = d ? *d : Value::integer(0);
  const Value* b = arg(a, 1, "base");
  const int64_t base = b && b->kind == Value::Int ? b->i : 10;
  if (base != 0 && (base < 2 || base > 36)) eval_fail("int() base must be >= 2 and <= 36, or 0");
  const auto from_float = [&](double f) {
    if (!std::isfinite(f)) return dflt;
    if (std::fabs(f) >= 9.2e18) eval_fail("int filter: " + float_repr(f) + " does not fit 64 bits");
    return Value::integer(int64_t(f));
  };
  switch (v.kind) {
    case Value::Int: return v;
    case Value::Bool: return Value::integer(v.b);
    case Value::Float: return from_float(v.f);
    case Value::String: {
      const std::string s = utf8::strip(v.s, true, true, nullptr);
      if (const auto n = parse_int(s, int(base))) return Value::integer(*n);
      if (const auto f = parse_float(s)) return from_float(*f);
      return dflt;
    }
    default: return dflt;
  }
}

Value f_float(const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  const Value dflt = d ? *d : Value::number(0.0);
  if (v.is_numeric()) return Value::number(v.as_double());
  if (v.is_string()) {
    if (const auto f = parse_float(utf8::strip(v.s, true, true, nullptr))) return Value::number(*f);
  }
  return dflt;
}

Value f_format(const Value& v, const CallArgs& a) {
  if (!a.kw.empty()) {
    Value d = Value::make_dict();
    for (const auto& [k, x] : a.kw) d.dict->set(k, x);
    return Value::str(percent_format(str_of(v, "format"), d));
  }
  return Value::str(percent_format(str_of(v, "format"), Value::make_tuple(a.pos)));
}

Value f_indent(const Value& v, const CallArgs& a) {
  const Value* w = arg(a, 0, "width");
  std::string pad = "    ";
  if (w && w->is_string()) pad = w->s;
  else if (w && w->kind == Value::Int) pad = std::string(size_t(std::max<int64_t>(0, std::min<int64_t>(w->i, 1 << 16))), ' ');
  const bool first = bool_arg(a, 1, "first", false);
  const bool blank = bool_arg(a, 2, "blank", false);
  const std::string s = str_of(v, "indent") + "\n";
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    check_string_size(out.size() + 1 + pad.size() + lines[i].size());
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value::str(std::move(out));
}

Value f_items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::make_list();
  if (!v.is_dict()) eval_fail("items filter needs a mapping, got " + type_name(v));
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_tuple({key_value(k), x}));
  return Value::make_list(std::move(out));
}

Value f_join(const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "d");
  const Value* attr = arg(a, 1, "attribute");
  const std::string sep = d ? to_str(*d) : "";
  std::string out;
  bool first = true;
  for (const auto& x : iterate(v)) {
    const std::string text = to_str(attr && !attr->is_none() ? attribute_path(x, to_str(*attr)) : x);
    check_string_size(out.size() + sep.size() + text.size());
    if (!first) out += sep;
    first = false;
    out += text;
  }
  return Value::str(std::move(out));
}

Value f_list(const Value& v, const CallArgs&) { return Value::make_list(iterate(v)); }

Value f_map(const Value& v, const CallArgs& a) {
  List out;
  if (const Value* attr = a.kwarg("attribute")) {
    const Value* dflt = a.kwarg("default");
    for (const auto& x : iterate(v)) {
      Value r = attribute_path(x, to_str(*attr));
      if (r.is_undefined() && dflt) r = *dflt;
      out.push_back(std::move(r));
    }
    return Value::make_list(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) eval_fail("map filter needs a filter name or attribute=");
  const FilterFn f = find_filter(a.pos[0].s);
  if (!f) eval_fail("no filter named '" + a.pos[0].s + "'");
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const auto& x : iterate(v)) out.push_back(f(x, rest));
  return Value::make_list(std::move(out));
}

Value min_max(const Value& v, const CallArgs& a, bool want_max) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = arg(a, 1, "attribute");
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) { return attr && !attr->is_none() ? attribute_path(x, to_str(*attr)) : x; };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const int c = sort_compare(key(items[i]), key(items[best]), cs);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}
Value f_max(const Value& v, const CallArgs& a) { return min_max(v, a, true); }
Value f_min(const Value& v, const CallArgs& a) { return min_max(v, a, false); }

// select/reject(test, args...) and selectattr/rejectattr(attr, test, args...).
Value select_impl(const Value& v, const CallArgs& a, bool by_attr, bool keep) {
  size_t k = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) eval_fail("selectattr/rejectattr need an attribute name");
    attr = to_str(a.pos[k++]);
  }
  TestFn test = nullptr;
  CallArgs rest;
  if (k < a.pos.size()) {
    if (!a.pos[k].is_string()) eval_fail("select filters need a test name");
    test = find_test(a.pos[k].s);
    if (!test) eval_fail("no test named '" + a.pos[k].s + "'");
    rest.pos.assign(a.pos.begin() + long(k) + 1, a.pos.end());
  }
  rest.kw = a.kw;
  List out;
  for (const auto& x : iterate(v)) {
    const Value subject = by_attr ? attribute_path(x, attr) : x;
    const bool ok = test ? test(subject, rest) : truthy(subject);
    if (ok == keep) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}
Value f_select(const Value& v, const CallArgs& a) { return select_impl(v, a, false, true); }
Value f_reject(const Value& v, const CallArgs& a) { return select_impl(v, a, false, false); }
Value f_selectattr(const Value& v, const CallArgs& a) { return select_impl(v, a, true, true); }
Value f_rejectattr(const Value& v, const CallArgs& a) { return select_impl(v, a, true, false); }

Value f_replace(const Value& v, const CallArgs& a) {
  const Value m = method(Value::str(str_of(v, "replace")), "replace");
  return m.fn->fn(a);
}

Value f_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) {
    auto cps = utf8::decode(v.s);
    std::reverse(cps.begin(), cps.end());
    return Value::str(utf8::encode(cps));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}

// Jinja2's round: round(x, precision) for 'common' (an int stays an int, to the nearest multiple
// of 10^-precision, ties to even, as Python's), else math.ceil / math.floor of x * 10^precision,
// divided back.
Value f_round(const Value& v, const CallArgs& a) {
  const Value* p = arg(a, 0, "precision");
  const int64_t prec = p && p->kind == Value::Int ? p->i : 0;
  const Value* m = arg(a, 1, "method");
  const std::string method = m && m->is_string() ? m->s : "common";
  if (!v.is_numeric()) eval_fail("round filter needs a number, got " + type_name(v));
  if (method != "common" && method != "ceil" && method != "floor")
    eval_fail("round method must be 'common', 'ceil' or 'floor'");
  if (method == "common" && v.kind != Value::Float) {
    const int64_t x = v.kind == Value::Int ? v.i : int64_t(v.b);
    if (prec >= 0) return Value::integer(x);
    if (prec < -18) return Value::integer(0);
    int64_t unit = 1;
    for (int64_t k = 0; k < -prec; ++k) unit *= 10;
    int64_t q = x / unit, r = x % unit;
    if (r < 0) {
      r += unit;
      --q;
    }
    if (r > unit - r || (r == unit - r && (q & 1))) ++q;  // ties to even
    int64_t out = 0;
    if (__builtin_mul_overflow(q, unit, &out)) eval_fail("round filter: the result does not fit 64 bits");
    return Value::integer(out);
  }
  const double x = v.as_double();
  if (method == "common" && prec >= 0 && prec <= 300 && std::isfinite(x)) {
    // Python's round() rounds the exact binary value, ties to even: so does printf.
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", int(prec), x);
    return Value::number(std::strtod(buf, nullptr));
  }
  const double scale = std::pow(10.0, double(prec));
  const double y = x * scale;
  const double r = method == "ceil" ? std::ceil(y) : method == "floor" ? std::floor(y) : std::nearbyint(y);
  return Value::number(r / scale);
}

Value f_identity(const Value& v, const CallArgs&) { return v; }
Value f_string(const Value& v, const CallArgs&) { return Value::str(to_str(v)); }

Value f_sort(const Value& v, const CallArgs& a) {
  const bool rev = bool_arg(a, 0, "reverse", false);
  const bool cs = bool_arg(a, 1, "case_sensitive", false);
  const Value* attr = arg(a, 2, "attribute");
  List items = iterate(v);
  charge_sort(items.size());
  // attribute="a,b": by a, then b (Jinja2's multi-attribute sort).
  std::vector<std::string> paths;
  if (attr && !attr->is_none()) {
    const std::string all = to_str(*attr);
    for (size_t b = 0;;) {
      const size_t e = all.find(',', b);
      paths.push_back(utf8::strip(all.substr(b, e == std::string::npos ? e : e - b), true, true, nullptr));
      if (e == std::string::npos) break;
      b = e + 1;
    }
  }
  std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
    int c = 0;
    if (paths.empty()) c = sort_compare(p, q, cs);
    for (size_t k = 0; k < paths.size() && c == 0; ++k)
      c = sort_compare(attribute_path(p, paths[k]), attribute_path(q, paths[k]), cs);
    return rev ? c > 0 : c < 0;
  });
  return Value::make_list(std::move(items));
}

Value f_sum(const Value& v, const CallArgs& a) {
  const Value* attr = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start ? *start : Value::integer(0);
  for (const auto& x : iterate(v))
    total = binary_op("+", total, attr && !attr->is_none() ? attribute_path(x, to_str(*attr)) : x);
  return total;
}

// Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False), each argument by position or name as json.dumps takes it.
Value f_tojson(const Value& v, const CallArgs& a) {
  JsonStyle st;
  st.ensure_ascii = bool_arg(a, 0, "ensure_ascii", false);
  if (const Value* ind = arg(a, 1, "indent"); ind && !ind->is_none()) {
    st.pretty = true;
    st.item_sep = ",";
    if (ind->is_string()) st.indent = ind->s;
    else if (ind->kind == Value::Int) st.indent.assign(size_t(std::clamp<int64_t>(ind->i, 0, 64)), ' ');
    else eval_fail("tojson indent must be an integer or a string, not " + type_name(*ind));
  }
  if (const Value* sep = arg(a, 2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->list->size() != 2 || !(*sep->list)[0].is_string() || !(*sep->list)[1].is_string())
      eval_fail("tojson separators must be a pair of strings");
    st.item_sep = (*sep->list)[0].s;
    st.key_sep = (*sep->list)[1].s;
  }
  st.sort_keys = bool_arg(a, 3, "sort_keys", false);
  return Value::str(to_json(v, st));
}

Value f_trim(const Value& v, const CallArgs& a) {
  const Value* chars = arg(a, 0, "chars");
  if (!chars || chars->is_none()) return Value::str(utf8::strip(str_of(v, "trim"), true, true, nullptr));
  const auto cps = utf8::decode(to_str(*chars));
  const std::u32string set(cps.begin(), cps.end());
  return Value::str(utf8::strip(str_of(v, "trim"), true, true, &set));
}

Value f_unique(const Value& v, const CallArgs& a) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = arg(a, 1, "attribute");
  List out, seen;
  for (const auto& x : iterate(v)) {
    Value key = attr && !attr->is_none() ? attribute_path(x, to_str(*attr)) : x;
    if (!cs && key.is_string()) key = Value::str(utf8::lower(key.s));
    charge_steps(1 + seen.size() / 16);  // a linear search: n items cost n^2 / 32
    bool dup = false;
    for (const auto& s : seen) dup = dup || equals(s, key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(x);
  }
  return Value::make_list(std::move(out));
}

Value f_wordcount(const Value& v, const CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8::decode(str_of(v, "wordcount"))) {
    const bool w = utf8::is_alpha(c) || utf8::is_digit(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> filters = {
      {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize},
      {"center", f_center}, {"count", f_length}, {"length", f_length}, {"d", f_default},
      {"default", f_default}, {"dictsort", f_dictsort}, {"groupby", f_groupby}, {"e", f_escape}, {"escape", f_escape},
      {"forceescape", f_escape}, {"first", f_first}, {"last", f_last}, {"float", f_float},
      {"int", f_int}, {"format", f_format}, {"indent", f_indent}, {"items", f_items},
      {"join", f_join}, {"list", f_list}, {"lower", f_lower}, {"upper", f_upper},
      {"map", f_map}, {"max", f_max}, {"min", f_min}, {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"select", f_select}, {"selectattr", f_selectattr},
      {"replace", f_replace}, {"reverse", f_reverse}, {"round", f_round}, {"safe", f_identity},
      {"string", f_string}, {"sort", f_sort}, {"sum", f_sum}, {"title", f_title},
      {"tojson", f_tojson}, {"trim", f_trim}, {"truncate", f_truncate}, {"slice", f_slice}, {"unique", f_unique}, {"wordcount", f_wordcount},
  };
  auto it = filters.find(name);
  return it == filters.end() ? nullptr : it->second;
}

}  // namespace minfer::chat
