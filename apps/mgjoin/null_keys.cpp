#include "null_keys.hpp"

#include <mgjoin/error.hpp>

#include <cstring>
#include <map>
#include <numeric>

namespace mgjoin::cli {
namespace {

constexpr std::string_view kValidityPrefix = "\x1fvalid:";

bool is_key(const LoadedTable& t, const std::string& name) {
  return std::find(t.key.begin(), t.key.end(), name) != t.key.end();
}

HostColumn take(const HostColumn& c, const std::vector<std::int64_t>& rows) {
  HostColumn out = HostColumn::allocate(c.type(), static_cast<std::int64_t>(rows.size()));
  const std::size_t w = dtype_size(c.type());
  const auto* src = static_cast<const std::byte*>(c.data());
  auto* dst = static_cast<std::byte*>(out.data());
  for (std::size_t i = 0; i < rows.size(); ++i) std::memcpy(dst + i * w, src + static_cast<std::size_t>(rows[i]) * w, w);
  return out;
}

std::vector<std::int64_t> all_rows(std::int64_t n) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  return rows;
}

/// The rows `rows` of `t` (every column and validity), in that order.
LoadedTable take(const LoadedTable& t, const std::vector<std::int64_t>& rows) {
  LoadedTable out;
  out.names = t.names;
  out.key = t.key;
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    out.columns.push_back(take(t.columns[i], rows));
    out.valid.push_back(t.valid[i] ? std::optional<HostColumn>(take(*t.valid[i], rows)) : std::nullopt);
  }
  return out;
}

HostColumn concat(const std::vector<const HostColumn*>& parts) {
  std::int64_t rows = 0;
  for (const HostColumn* p : parts) rows += p->size();
  HostColumn out = HostColumn::allocate(parts.front()->type(), rows);
  std::size_t at = 0;
  for (const HostColumn* p : parts) {
    if (p->bytes()) std::memcpy(static_cast<std::byte*>(out.data()) + at, p->data(), p->bytes());
    at += p->bytes();
  }
  return out;
}

/// Row indices of a part's gather map back into the table as read (-1 stays -1; no map: nothing).
void remap(HostColumn& map, const std::vector<std::int64_t>& rows) {
  if (!map.size()) return;
  auto* m = map.as<std::int64_t>();
  for (std::int64_t i = 0; i < map.size(); ++i)
    if (m[i] >= 0) m[i] = rows[static_cast<std::size_t>(m[i])];
}

std::int64_t rows_of(const LoadedTable& t) { return t.columns.empty() ? 0 : t.columns.front().size(); }

std::size_t index_of(const LoadedTable& t, const std::string& name) {
  const auto at = std::find(t.names.begin(), t.names.end(), name);
  MGJOIN_EXPECTS(at != t.names.end(), "null keys: no column " + name);
  return static_cast<std::size_t>(at - t.names.begin());
}

bool has_null_key(const LoadedTable& t) {
  for (const std::string& k : t.key)
    if (t.valid[index_of(t, k)]) return true;
  return false;
}

/// Each row's null pattern: bit k set where key component k (t.key[k]) is null, 0 for a key without nulls.
std::vector<std::uint64_t> null_patterns(const LoadedTable& t) {
  std::vector<std::uint64_t> pattern(static_cast<std::size_t>(rows_of(t)), 0);
  for (std::size_t k = 0; k < t.key.size(); ++k) {
    const std::optional<HostColumn>& valid = t.valid[index_of(t, t.key[k])];
    if (!valid) continue;
    MGJOIN_INPUT_EXPECTS(k < 64, "key column " + t.key[k] + ": a key's nulls are followed in its first 64 columns "
                                 "only: put the columns that hold nulls first");
    const bool* v = valid->as<bool>();
    for (std::size_t row = 0; row < pattern.size(); ++row)
      if (!v[row]) pattern[row] |= std::uint64_t{1} << k;
  }
  return pattern;
}

/// The rows of each side whose key components are null in one pattern (bit k: component k).
struct RowGroup {
  std::uint64_t pattern = 0;
  std::vector<std::int64_t> r_rows, s_rows;
};

/// The groups of rows by null pattern, the rows without a null key (pattern 0) first, always there.
std::vector<RowGroup> null_pattern_groups(const LoadedTable& r, const LoadedTable& s) {
  std::map<std::uint64_t, RowGroup> groups{{0, RowGroup{}}};
  for (const LoadedTable* t : {&r, &s}) {
    const std::vector<std::uint64_t> patterns = null_patterns(*t);
    for (std::size_t row = 0; row < patterns.size(); ++row) {
      RowGroup& g = groups[patterns[row]];
      g.pattern = patterns[row];
      (t == &r ? g.r_rows : g.s_rows).push_back(static_cast<std::int64_t>(row));
    }
  }
  std::vector<RowGroup> out;
  for (auto& [pattern, g] : groups) out.push_back(std::move(g));
  return out;
}

/// The rows `rows` of `t`, each null key component's value zero: rows of one null pattern are then equal
/// where their components are null.
LoadedTable take_keyed(const LoadedTable& t, const std::vector<std::int64_t>& rows) {
  LoadedTable out = take(t, rows);
  for (const std::string& k : out.key) {
    const std::size_t i = index_of(out, k);
    if (!out.valid[i]) continue;
    const bool* v = out.valid[i]->as<bool>();
    const std::size_t w = dtype_size(out.columns[i].type());
    auto* values = static_cast<std::byte*>(out.columns[i].data());
    for (std::size_t row = 0; row < rows.size(); ++row)
      if (!v[row]) std::memset(values + row * w, 0, w);
  }
  return out;
}

/// One engine join of a group's rows (or of one side's, against nothing), gather maps into the tables
/// as read, and the null pattern of every key in its output.
struct JoinPart {
  TableJoinResult result;
  std::uint64_t pattern = 0;
};

/// The parts' results as one: the first's, with the other parts' rows appended.
TableJoinResult concat_parts(std::vector<JoinPart>& parts, const TableJoinOptions& o) {
  TableJoinResult res = std::move(parts.front().result);
  if (parts.size() == 1) return res;
  const auto gather = [&](const HostColumn& first, HostColumn TableJoinResult::*member) {
    std::vector<const HostColumn*> all{&first};
    for (std::size_t p = 1; p < parts.size(); ++p) all.push_back(&(parts[p].result.*member));
    return concat(all);
  };
  if (o.output == TableOutput::GatherMaps) {
    res.left_rows = gather(res.left_rows, &TableJoinResult::left_rows);
    if (outputs_right_columns(o.how)) res.right_rows = gather(res.right_rows, &TableJoinResult::right_rows);
  }
  for (std::size_t c = 0; c < res.columns.size(); ++c) {
    std::vector<const HostColumn*> all{&res.columns[c].column};
    for (std::size_t p = 1; p < parts.size(); ++p) {
      MGJOIN_EXPECTS(parts[p].result.columns[c].name == res.columns[c].name, "null-key rows: columns out of step");
      all.push_back(&parts[p].result.columns[c].column);
    }
    res.columns[c].column = concat(all);
  }
  for (std::size_t p = 1; p < parts.size(); ++p) {
    res.count += parts[p].result.count;
    res.seconds += parts[p].result.seconds;
  }
  return res;
}

/// Each output key column's validity (absent where it holds no null): a part's rows have its pattern.
std::vector<std::optional<std::vector<bool>>> key_validity(const std::vector<JoinPart>& parts, std::size_t keys) {
  std::vector<std::optional<std::vector<bool>>> out(keys);
  for (std::size_t k = 0; k < keys && k < 64; ++k) {
    const auto null_at = [k](const JoinPart& p) { return ((p.pattern >> k) & 1) != 0; };
    if (std::none_of(parts.begin(), parts.end(), null_at)) continue;
    std::vector<bool>& valid = out[k].emplace();
    for (const JoinPart& p : parts) valid.insert(valid.end(), static_cast<std::size_t>(p.result.count), !null_at(p));
  }
  return out;
}

}  // namespace

TableView LoadedTable::view() const {
  TableView v;
  for (std::size_t i = 0; i < names.size(); ++i) v.columns.push_back({names[i], columns[i].view()});
  return v;
}

std::string validity_column_name(std::string_view name) { return std::string(kValidityPrefix) + std::string(name); }

std::optional<std::string> column_of_validity(std::string_view hidden) {
  if (!hidden.starts_with(kValidityPrefix)) return std::nullopt;
  return std::string(hidden.substr(kValidityPrefix.size()));
}

void carry_payload_validity(LoadedTable& t, std::optional<std::vector<std::string>>& chosen) {
  const std::size_t n = t.names.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!t.valid[i]) continue;
    const bool key = is_key(t, t.names[i]);
    // A key column is a payload only where chosen; its validity stays with it too (null_key_rows).
    if (key && (!chosen || std::find(chosen->begin(), chosen->end(), t.names[i]) == chosen->end())) continue;
    const std::string hidden = validity_column_name(t.names[i]);
    if (key) {
      t.columns.push_back(take(*t.valid[i], all_rows(t.valid[i]->size())));
    } else {
      t.columns.push_back(std::move(*t.valid[i]));
      t.valid[i].reset();
    }
    t.valid.emplace_back();
    t.names.push_back(hidden);
    if (chosen) {
      const auto at = std::find(chosen->begin(), chosen->end(), t.names[i]);
      if (at != chosen->end()) chosen->insert(at + 1, hidden);
    }
  }
}

NullKeyJoin join_with_null_keys(const LoadedTable& r, const LoadedTable& s, const TableJoinOptions& options, bool nulls_equal,
                                const std::function<TableJoinResult(const TableView&, const TableView&,
                                                                    const TableJoinOptions&)>& run) {
  NullKeyJoin out;
  out.key_valid.resize(r.key.size());
  if (!has_null_key(r) && !has_null_key(s)) {  // the tables as they are
    out.result = run(r.view(), s.view(), options);
    return out;
  }
  std::vector<JoinPart> parts;
  const std::vector<std::int64_t> none;
  TableJoinOptions o = options;
  o.join.sink = nullptr;  // each part's output is a piece of the whole, concatenated below
  const std::vector<RowGroup> groups = null_pattern_groups(r, s);
  const auto add = [&](std::uint64_t pattern, const std::vector<std::int64_t>& r_rows, const std::vector<std::int64_t>& s_rows) {
    LoadedTable r_copy, s_copy;
    const LoadedTable& rt = pattern == 0 && r_rows.size() == static_cast<std::size_t>(rows_of(r)) ? r : (r_copy = take_keyed(r, r_rows));
    const LoadedTable& st = pattern == 0 && s_rows.size() == static_cast<std::size_t>(rows_of(s)) ? s : (s_copy = take_keyed(s, s_rows));
    parts.push_back({run(rt.view(), st.view(), o), pattern});
    remap(parts.back().result.left_rows, r_rows);
    remap(parts.back().result.right_rows, s_rows);
  };
  const bool keep_r = o.how == JoinKind::LeftOuter || o.how == JoinKind::FullOuter || o.how == JoinKind::LeftAnti;
  const bool keep_s = o.how == JoinKind::RightOuter || o.how == JoinKind::FullOuter;
  for (const RowGroup& g : groups) {
    // The rows without a null key join each other; so do those of one null pattern with nulls_equal.
    // Otherwise a null key matches nothing: its rows join an empty other side, which makes them the
    // kind's unmatched rows with the kind's columns and types.
    const bool r_out = !g.r_rows.empty() && (keep_r || !g.s_rows.empty());
    const bool s_out = !g.s_rows.empty() && (keep_s || !g.r_rows.empty());
    if (g.pattern == 0 || (nulls_equal && (r_out || s_out))) {
      add(g.pattern, g.r_rows, g.s_rows);
      continue;
    }
    if (keep_r && !g.r_rows.empty()) add(g.pattern, g.r_rows, none);
    if (keep_s && !g.s_rows.empty()) add(g.pattern, none, g.s_rows);
  }
  if (o.output == TableOutput::Columns) out.key_valid = key_validity(parts, r.key.size());
  out.result = concat_parts(parts, o);
  return out;
}

}  // namespace mgjoin::cli
