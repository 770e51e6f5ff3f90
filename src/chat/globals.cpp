// Global functions: Jinja2's range/dict/namespace/cycler/joiner plus transformers'
// raise_exception and strftime_now.
#include "chat/builtins.h"
#include "chat/eval_error.h"

namespace minfer::chat {
namespace {

int64_t int_arg(const Value& v, const char* fn) {
  if (v.kind == Value::Int) return v.i;
  if (v.kind == Value::Bool) return v.b;
  eval_fail(std::string(fn) + "(): '" + type_name(v) + "' object cannot be interpreted as an integer");
}

Value g_range(const CallArgs& a) {
  if (a.pos.empty() || a.pos.size() > 3) eval_fail("range expected 1 to 3 arguments");
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = int_arg(a.pos[0], "range");
  } else {
    start = int_arg(a.pos[0], "range");
    stop = int_arg(a.pos[1], "range");
    if (a.pos.size() == 3) step = int_arg(a.pos[2], "range");
  }
  if (step == 0) eval_fail("range() arg 3 must not be zero");
  List out;
  // Same cap as Jinja2's sandbox (MAX_RANGE).
  constexpr int64_t kMax = 100000;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (int64_t(out.size()) >= kMax) eval_fail("range too big, maximum size for range is 100000");
    out.push_back(Value::integer(i));
  }
  return Value::make_list(std::move(out));
}

// A namespace's names are strings; a dict's keys may be any key dict_key takes.
void fill_from(Dict& d, const CallArgs& a, const char* fn, bool names_only) {
  if (a.pos.size() > 1) eval_fail(std::string(fn) + "() expected at most 1 positional argument");
  const auto key = [&](const Value& k) {
    if (names_only && !k.is_string()) eval_fail(std::string(fn) + "(): expected (str, value) pairs");
    return names_only ? k.s : dict_key(k);
  };
  if (!a.pos.empty()) {
    const Value& src = a.pos[0];
    if (src.is_dict() || src.kind == Value::Namespace) {
      // A namespace's names are stored as they are, a dict's keys as dict_key made them.
      for (const auto& [k, v] : src.dict->items) d.set(key(src.is_dict() ? key_value(k) : Value::str(k)), v);
    } else {
      for (const auto& pair : iterate(src)) {
        if (!pair.is_list() || pair.list->size() != 2) eval_fail(std::string(fn) + "(): expected (key, value) pairs");
        d.set(key((*pair.list)[0]), (*pair.list)[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kw) d.set(names_only ? k : dict_key(Value::str(k)), v);
}

Value g_dict(const CallArgs& a) {
  Value d = Value::make_dict();
  fill_from(*d.dict, a, "dict", false);
  return d;
}

Value g_namespace(const CallArgs& a) {
  Value ns = Value::make_namespace();
  fill_from(*ns.dict, a, "namespace", true);
  return ns;
}

// Jinja2's cycler(*items): next() gives the items in turn, reset() starts over, current is the
// item next() gives next.
Value g_cycler(const CallArgs& a) {
  if (a.pos.empty()) eval_fail("cycler() needs at least one item");
  struct State {
    List items;
    size_t pos = 0;
  };
  auto st = std::make_shared<State>(State{a.pos, 0});
  Value c = Value::make_namespace();
  c.dict->set("current", st->items[0]);
  // The functions reach the namespace weakly: it holds them.
  std::weak_ptr<Dict> self = c.dict;
  c.dict->set("next", Value::function("next", [st, self](const CallArgs&) {
    Value v = st->items[st->pos];
    st->pos = (st->pos + 1) % st->items.size();
    if (auto d = self.lock()) d->set("current", st->items[st->pos]);
    return v;
  }));
  c.dict->set("reset", Value::function("reset", [st, self](const CallArgs&) {
    st->pos = 0;
    if (auto d = self.lock()) d->set("current", st->items[0]);
    return Value::none();
  }));
  return c;
}

// Jinja2's joiner(sep=", "): "" on the first call, sep on every later one.
Value g_joiner(const CallArgs& a) {
  const Value* sep = a.get(0, "sep");
  const std::string text = sep ? to_str(*sep) : ", ";
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [text, used](const CallArgs&) {
    const bool first = !*used;
    *used = true;
    return Value::str(first ? "" : text);
  });
}

Value g_raise_exception(const CallArgs& a) {
  const Value* msg = a.get(0, "message");
  throw EvalError(msg ? to_str(*msg) : std::string("raise_exception() called"), true);
}

Value g_strftime_now(const CallArgs& a) {
  const Value* fmt = a.get(0, "format");
  if (!fmt || !fmt->is_string()) eval_fail("strftime_now() needs a format string");
  return Value::str(strftime_now(fmt->s));
}

}  // namespace

const Dict& global_functions() {
  static const Dict globals = [] {
    Dict d;
    d.set("range", Value::function("range", g_range));
    d.set("dict", Value::function("dict", g_dict));
    d.set("namespace", Value::function("namespace", g_namespace));
    d.set("cycler", Value::function("cycler", g_cycler));
    d.set("joiner", Value::function("joiner", g_joiner));
    d.set("raise_exception", Value::function("raise_exception", g_raise_exception));
    d.set("strftime_now", Value::function("strftime_now", g_strftime_now));
    return d;
  }();
  return globals;
}

}  // namespace minfer::chat
