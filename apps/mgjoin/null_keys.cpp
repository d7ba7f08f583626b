#include "null_keys.hpp"

#include <mgjoin/error.hpp>

#include <cstring>
#include <numeric>

namespace mgjoin::cli {
namespace {

constexpr std::string_view kValidityPrefix = "\x1fvalid:";

bool is_key(const LoadedTable& t, const std::string& name) {
  return std::find(t.key.begin(), t.key.end(), name) != t.key.end();
}

/// Rows whose key is null: any key column without a value there.
std::vector<bool> null_key_rows(const LoadedTable& t) {
  std::vector<bool> null;
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    if (!t.valid[i] || !is_key(t, t.names[i])) continue;
    const bool* v = t.valid[i]->as<bool>();
    null.resize(static_cast<std::size_t>(t.valid[i]->size()), false);
    for (std::size_t row = 0; row < null.size(); ++row) null[row] = null[row] || !v[row];
  }
  return null;
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

/// Row indices of a part's gather map back into the table as read (-1 stays -1).
void remap(HostColumn& map, const std::vector<std::int64_t>& rows) {
  auto* m = map.as<std::int64_t>();
  for (std::int64_t i = 0; i < map.size(); ++i)
    if (m[i] >= 0) m[i] = rows[static_cast<std::size_t>(m[i])];
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

NullKeyJoin join_with_null_keys(const LoadedTable& r, const LoadedTable& s, const TableJoinOptions& o,
                                const std::function<TableJoinResult(const TableView&, const TableView&,
                                                                    const TableJoinOptions&)>& run) {
  NullKeyJoin out;
  out.key_valid.resize(r.key.size());
  const std::vector<bool> r_null = null_key_rows(r), s_null = null_key_rows(s);
  const auto none = [](const std::vector<bool>& v) { return std::find(v.begin(), v.end(), true) == v.end(); };
  if (none(r_null) && none(s_null)) {
    out.result = run(r.view(), s.view(), o);
    return out;
  }
  // Split each side into the rows with a key and those without.
  const auto split = [](const LoadedTable& t, const std::vector<bool>& null) {
    std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> rows;  // with a key, without
    const auto n = t.columns.empty() ? 0 : t.columns.front().size();
    for (std::int64_t i = 0; i < n; ++i)
      (!null.empty() && null[static_cast<std::size_t>(i)] ? rows.second : rows.first).push_back(i);
    return rows;
  };
  const auto [r_keyed, r_nulls] = split(r, r_null);
  const auto [s_keyed, s_nulls] = split(s, s_null);
  const LoadedTable rk = take(r, r_keyed), sk = take(s, s_keyed);
  std::vector<TableJoinResult> parts;
  std::vector<std::pair<const std::vector<std::int64_t>*, const std::vector<std::int64_t>*>> maps;  // per part
  std::vector<const LoadedTable*> key_source;                                                     // per part
  parts.push_back(run(rk.view(), sk.view(), o));
  maps.push_back({&r_keyed, &s_keyed});
  key_source.push_back(nullptr);
  // A null key matches nothing: its rows join an empty other side, which makes them the kind's unmatched
  // rows with the kind's columns and types.
  const bool keep_r = o.how == JoinKind::LeftOuter || o.how == JoinKind::FullOuter || o.how == JoinKind::LeftAnti;
  const bool keep_s = o.how == JoinKind::RightOuter || o.how == JoinKind::FullOuter;
  const std::vector<std::int64_t> no_rows;
  const LoadedTable r_empty = take(r, no_rows), s_empty = take(s, no_rows);
  LoadedTable rn, sn;
  if (keep_r && !r_nulls.empty()) {
    rn = take(r, r_nulls);
    parts.push_back(run(rn.view(), s_empty.view(), o));
    maps.push_back({&r_nulls, &no_rows});
    key_source.push_back(&rn);
  }
  if (keep_s && !s_nulls.empty()) {
    sn = take(s, s_nulls);
    parts.push_back(run(r_empty.view(), sn.view(), o));
    maps.push_back({&no_rows, &s_nulls});
    key_source.push_back(&sn);
  }
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].left_rows.size()) remap(parts[p].left_rows, *maps[p].first);
    if (parts[p].right_rows.size()) remap(parts[p].right_rows, *maps[p].second);
  }
  if (parts.size() == 1) {
    out.result = std::move(parts.front());
    return out;
  }
  TableJoinResult& res = parts.front();  // the join's, with the other parts' rows appended
  const std::uint64_t joined_rows = res.count;
  const auto gather = [&](HostColumn TableJoinResult::*member) {
    std::vector<const HostColumn*> all;
    for (const auto& p : parts) all.push_back(&(p.*member));
    return concat(all);
  };
  if (o.output == TableOutput::GatherMaps) {
    HostColumn left = gather(&TableJoinResult::left_rows);
    if (outputs_right_columns(o.how)) res.right_rows = gather(&TableJoinResult::right_rows);
    res.left_rows = std::move(left);
  }
  for (std::size_t c = 0; c < res.columns.size(); ++c) {
    std::vector<const HostColumn*> all{&res.columns[c].column};
    for (std::size_t p = 1; p < parts.size(); ++p) {
      MGJOIN_EXPECTS(parts[p].columns[c].name == res.columns[c].name, "null-key rows: columns out of step");
      all.push_back(&parts[p].columns[c].column);
    }
    res.columns[c].column = concat(all);
  }
  for (std::size_t p = 1; p < parts.size(); ++p) {
    res.count += parts[p].count;
    res.seconds += parts[p].seconds;
  }
  out.result = std::move(res);
  if (o.output != TableOutput::Columns) return out;
  // Each key column's validity: the join's rows have keys; the appended rows have their side's.
  for (std::size_t k = 0; k < r.key.size(); ++k) {
    std::vector<bool> valid(static_cast<std::size_t>(out.result.count), true);
    std::size_t at = static_cast<std::size_t>(joined_rows);
    for (std::size_t p = 1; p < parts.size(); ++p) {
      const LoadedTable& t = *key_source[p];
      const auto i = static_cast<std::size_t>(std::find(t.names.begin(), t.names.end(), t.key[k]) - t.names.begin());
      for (std::uint64_t row = 0; row < parts[p].count; ++row, ++at) valid[at] = !t.valid[i] || t.valid[i]->as<bool>()[row];
    }
    out.key_valid[k] = std::move(valid);
  }
  return out;
}

}  // namespace mgjoin::cli
