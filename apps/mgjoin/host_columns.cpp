#include "host_columns.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <numeric>

namespace mgjoin::cli {
namespace {

std::size_t index_of(const LoadedTable& t, const std::string& name) {
  const auto at = std::find(t.names.begin(), t.names.end(), name);
  MGJOIN_EXPECTS(at != t.names.end(), "host columns: no column " + name);
  return static_cast<std::size_t>(at - t.names.begin());
}

const ArrowColumn* find_arrow(const ArrowColumns& columns, const std::string& name) {
  for (const auto& [n, c] : columns)
    if (n == name) return c.get();
  return nullptr;
}

/// Each key column pair read in Arrow's form: its codes into the tables, its dictionary for the output's
/// key column (and for the key column as a payload of its side).
void encode_keys(LoadedTable& r, LoadedTable& s, const ArrowColumns& r_arrow, const ArrowColumns& s_arrow,
                 MemoryKind memory, HostColumns& host) {
  for (std::size_t k = 0; k < r.key.size(); ++k) {
    const ArrowColumn* a = find_arrow(r_arrow, r.key[k]);
    const ArrowColumn* b = find_arrow(s_arrow, s.key[k]);
    if (!a && !b) continue;
    MGJOIN_EXPECTS(a && b, "host columns: a dictionary key on one side only (check_key_pairs)");
    const std::string key = r.key.size() == 1 ? std::string("key") : "key." + r.key[k];
    DictionaryKeys codes = encode_dictionary_keys(*a, *b, memory, key);
    for (auto [t, c] : {std::pair{&r, &codes.left}, std::pair{&s, &codes.right}}) {
      const std::size_t i = index_of(*t, t->key[k]);
      t->columns[i] = std::move(c->values);
      t->valid[i] = std::move(c->valid);
    }
    host.dictionaries.push_back({key, codes.dictionary, codes.key_type});
    host.dictionaries.push_back({"r." + r.key[k], codes.dictionary, codes.left_type});
    host.dictionaries.push_back({"s." + s.key[k], codes.dictionary, codes.right_type});
  }
}

/// One side's payload columns in Arrow's form out of the table, to be gathered by the row numbers that
/// take their place; the side's output columns in order into `host.order`.
void carry_row_numbers(LoadedTable& t, const ArrowColumns& arrow, std::optional<std::vector<std::string>>& chosen,
                       const std::string& prefix, MemoryKind memory, HostColumns& host) {
  const auto is_key = [&](const std::string& n) { return std::find(t.key.begin(), t.key.end(), n) != t.key.end(); };
  for (const std::string& n : chosen ? *chosen : t.names)
    if (chosen || !is_key(n)) host.order.push_back(prefix + n);
  bool any = false;
  for (const auto& [name, column] : arrow) {
    if (is_key(name)) continue;
    const std::size_t i = index_of(t, name);
    t.names.erase(t.names.begin() + static_cast<std::ptrdiff_t>(i));
    t.columns.erase(t.columns.begin() + static_cast<std::ptrdiff_t>(i));
    t.valid.erase(t.valid.begin() + static_cast<std::ptrdiff_t>(i));
    if (chosen) chosen->erase(std::find(chosen->begin(), chosen->end(), name));
    host.gathered.emplace_back(prefix + name, column);
    any = true;
  }
  if (!any) return;
  const std::int64_t rows = t.columns.empty() ? 0 : t.columns.front().size();
  HostColumn numbers = HostColumn::allocate(DType::Int64, rows, memory);
  std::iota(numbers.as<std::int64_t>(), numbers.as<std::int64_t>() + rows, std::int64_t{0});
  t.names.emplace_back(kRowNumbers);
  t.columns.push_back(std::move(numbers));
  t.valid.emplace_back();
  if (chosen) chosen->emplace_back(kRowNumbers);
}

}  // namespace

HostColumns prepare_host_columns(LoadedTable& r, LoadedTable& s, const ArrowColumns& r_arrow,
                                 const ArrowColumns& s_arrow, TableJoinOptions& options, MemoryKind memory) {
  HostColumns host;
  encode_keys(r, s, r_arrow, s_arrow, memory, host);
  carry_row_numbers(r, r_arrow, options.left_columns, "r.", memory, host);
  carry_row_numbers(s, s_arrow, options.right_columns, "s.", memory, host);
  return host;
}

void check_key_pairs(const std::vector<KeyColumnType>& left, const std::vector<KeyColumnType>& right) {
  for (std::size_t k = 0; k < left.size() && k < right.size(); ++k) {
    const KeyColumnType& a = left[k];
    const KeyColumnType& b = right[k];
    if (a.dictionary_key == b.dictionary_key && a.temporal == b.temporal) continue;
    const bool scales = is_decimal_family(a.dictionary_key) && is_decimal_family(b.dictionary_key);
    const bool temporal = !a.temporal.empty() || !b.temporal.empty();
    throw InputError(a.where + " is " + a.type_name + ", but " + b.where + " is " + b.type_name +
                     ": keys of these types cannot be compared" +
                     (scales     ? " (decimals of different scales: cast one side to the other's scale)"
                      : temporal ? " (dates, times, timestamps and durations join their own type only: cast one side "
                                   "to the other's unit and zone)"
                                 : ""));
  }
}

void expect_npy_holds(const std::vector<NpyOutputCheck>& columns, const std::vector<std::string>& key,
                      const std::string& prefix) {
  for (const auto& [column, where] : columns) {
    const ArrowColumnInfo& a = *column;
    const std::string& n = a.name;
    const bool is_key = std::find(key.begin(), key.end(), n) != key.end();
    if (a.storage || npy_holds_as_strings(a) || (is_key && prefix == "s.")) continue;
    const std::string out = !is_key ? prefix + n : key.size() == 1 ? std::string("key") : "key." + n;
    throw InputError(out + ": column " + n + " of " + where + " is " + a.type_name +
                     ", which .npy files cannot hold: use --format parquet (or arrow)");
  }
}

}  // namespace mgjoin::cli
