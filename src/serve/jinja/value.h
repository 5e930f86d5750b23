// The values a Jinja template computes with: undefined, none, booleans, integers (Python's:
// 64-bit ones inline, larger ones a BigInt), floats, strings, lists (and tuples), ordered dicts
// (and namespaces) and callables, with Python's truthiness, equality, ordering and str()/repr().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/jinja/big_int.h"

namespace plexus::jinja {

class Value;
class Evaluator;
class Work;

using List = std::vector<Value>;

class Dict;
struct CallArgs;
using Function = std::function<Value(Evaluator&, CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // undefined
  static Value undefined(std::string name = {});
  static Value none();
  Value(bool b);
  Value(std::int64_t i);
  Value(int i) : Value(static_cast<std::int64_t>(i)) {}
  explicit Value(const BigInt& i);  // an int (inline when it fits 64 bits)
  Value(double f);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(List items, bool tuple = false);
  static Value dict();  // empty
  static Value dict(Dict d, bool is_namespace = false);
  static Value function(std::string name, Function fn);
  static Value from_json(const nlohmann::ordered_json& j, int depth = 0);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && flag_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && flag_; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  // An int past 64 bits: its value (as_int() is then meaningless); nullptr otherwise.
  const BigInt* big() const { return big_.get(); }
  // An int within 64 bits (!big()).
  std::int64_t as_int() const { return i_; }
  // A number's nearest double (+-infinity for an int past the double range; float_of in
  // integers.h raises there, as Python does).
  double as_number() const;
  const std::string& as_string() const { return *s_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  // A namespace's attributes, or the `loop` dict its for loop updates while nothing else holds it.
  Dict& mutable_dict() { return *dict_; }
  // Whether another value holds this dict too (then it must not change: copy it first).
  bool dict_shared() const { return dict_.use_count() > 1; }
  const Function& as_function() const { return *fn_; }
  // Undefined: why it is ("'x' is undefined"); function: its name.
  const std::string& name() const;

  bool truthy() const;
  // Python str() and repr() (ascii(): non-ASCII characters escaped), their bytes charged to
  // `work`; TemplateError past its max_output.
  std::string str(Work& work) const;
  std::string repr(Work& work, bool ascii = false) const;
  // repr() cut to about 60 bytes, for error messages (cheap whatever the value's size).
  std::string brief() const;
  std::string type_name() const;  // Python's name of the type ("str", "NoneType", ...)

 private:
  Kind kind_ = Kind::kUndefined;
  bool flag_ = false;  // list: a tuple; dict: a namespace
  bool b_ = false;
  union {
    std::int64_t i_ = 0;  // an int within 64 bits
    double f_;            // a float
  };
  std::shared_ptr<const BigInt> big_;  // an int past 64 bits
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

// A dict with string keys kept in insertion order (as Python's dict).
class Dict {
 public:
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
  std::size_t size() const { return items_.size(); }
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  // The value of the i-th key set (i < size()), to change it without a lookup.
  Value& value_at(std::size_t i) { return items_[i].second; }

 private:
  std::vector<std::pair<std::string, Value>> items_;
  std::unordered_map<std::string, std::size_t> index_;
};

// The arguments of a call: positional, then keyword.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Python == (a step per item compared, the bytes of strings compared up to their first
// difference; the same string object is equal at once, as Python's identity check).
bool equal(const Value& a, const Value& b, Work& work);
// Three-way comparison of strings' bytes (UTF-8 byte order is code point order), charging the
// bytes compared in chunks that double: about the common prefix's length, not the strings'.
int compare_text(std::string_view a, std::string_view b, Work& work);
// Python <, for numbers, strings and lists (charged as equal); TemplateError otherwise.
bool less(const Value& a, const Value& b, Work& work);
// Python's hash() of a set's key, consistent with equal (1, 1.0 and True hash alike); the bytes
// of strings charged; TemplateError "unhashable type" for lists and dicts, as Python's.
std::size_t hash_key(const Value& v, Work& work);

// TemplateError unless `v` may be stored in the namespace `ns`: not holding `ns` (no cycles) and
// nesting at most `max_depth` lists and dicts. Values change in two places only: namespace
// attributes, checked here, and a for loop's `loop`, copied when anything else holds it (so a
// stored loop never changes after this check). Every value so stays acyclic and shallow enough
// to walk recursively.
// A step per list item and dict entry walked.
void check_storable(const Value& v, const Value& ns, int max_depth, Work& work);

// Python repr() of a float ("1.0", "0.1", "1e+16").
std::string python_float(double f);

}  // namespace plexus::jinja
