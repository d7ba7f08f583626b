#pragma once
// Parquet and Arrow IPC tables for the CLI tests, through Arrow C++ (where CMake's MGJOIN_PARQUET found
// it: MGJOIN_TEST_ARROW): columns from JSON, files written and read back, and the reference of a join as
// a nested loop over Arrow's scalars (not mgjoin), its rows as text for comparing multisets.
#include "cli/cli_test_util.hpp"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/json/from_string.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::test {

/// A column of `type` from JSON ("[1, null, 3]", strings for binary and decimals).
inline std::shared_ptr<arrow::Array> col(const std::shared_ptr<arrow::DataType>& type, const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

/// A table of named columns.
inline std::shared_ptr<arrow::Table> table(
    const std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>>& columns) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& [name, array] : columns) {
    fields.push_back(arrow::field(name, array->type()));
    arrays.push_back(array);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays);
}

/// Writes `t` as Parquet (row groups of `rows` rows) or, for a name ending in .arrow, as Arrow IPC
/// (record batches of `rows` rows).
inline void write_table(const std::filesystem::path& path, const arrow::Table& t, std::int64_t rows = 1 << 20) {
  std::filesystem::create_directories(path.parent_path());
  auto out = arrow::io::FileOutputStream::Open(path.string()).ValueOrDie();
  if (path.extension() == ".arrow") {
    auto writer = arrow::ipc::MakeFileWriter(out, t.schema()).ValueOrDie();
    ASSERT_TRUE(writer->WriteTable(t, rows).ok());
    ASSERT_TRUE(writer->Close().ok());
  } else {
    const auto props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    ASSERT_TRUE(parquet::arrow::WriteTable(t, arrow::default_memory_pool(), out, rows,
                                           parquet::default_writer_properties(), props)
                    .ok());
  }
  ASSERT_TRUE(out->Close().ok());
}

/// The table of a Parquet or Arrow IPC file.
inline std::shared_ptr<arrow::Table> read_table(const std::filesystem::path& path) {
  auto in = arrow::io::ReadableFile::Open(path.string()).ValueOrDie();
  if (path.extension() == ".arrow") {
    auto reader = arrow::ipc::RecordBatchFileReader::Open(in).ValueOrDie();
    std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
    for (int b = 0; b < reader->num_record_batches(); ++b) batches.push_back(reader->ReadRecordBatch(b).ValueOrDie());
    return arrow::Table::FromRecordBatches(reader->schema(), batches).ValueOrDie();
  }
  auto reader = parquet::arrow::OpenFile(in, arrow::default_memory_pool()).ValueOrDie();
  return reader->ReadTable().ValueOrDie();
}

/// A cell as text ("null" for a null).
inline std::string cell(const arrow::Table& t, const std::string& column, std::int64_t row) {
  const auto c = t.GetColumnByName(column);
  if (!c) return "<no column " + column + ">";
  auto s = c->GetScalar(row).ValueOrDie();
  if (!s->is_valid) return "null";
  if (s->type->id() == arrow::Type::DICTIONARY)  // its value (the output is not dictionary-encoded)
    s = static_cast<const arrow::DictionaryScalar&>(*s).GetEncodedValue().ValueOrDie();
  if (const auto* list = dynamic_cast<const arrow::BaseListScalar*>(s.get()))  // without the item's name
    return "'" + list->value->ToString() + "'";
  return "'" + s->ToString() + "'";
}

/// Every row of `t` as text, its columns `names` in that order.
inline std::multiset<std::string> rows_of(const arrow::Table& t, const std::vector<std::string>& names) {
  std::multiset<std::string> rows;
  for (std::int64_t i = 0; i < t.num_rows(); ++i) {
    std::string row;
    for (const std::string& n : names) row += cell(t, n, i) + "|";
    rows.insert(row);
  }
  return rows;
}

/// A join to check: the tables, key columns, kind and output columns.
struct JoinCase {
  std::shared_ptr<arrow::Table> r, s;
  std::vector<std::string> r_on, s_on;
  std::string how = "inner";
  std::vector<std::string> r_cols, s_cols;
  bool nulls_equal = false;  ///< --nulls-equal

  /// The output's column names: "key" or "key.<R name>" per key column, then r.<name>, s.<name>.
  std::vector<std::string> output_names() const {
    std::vector<std::string> names;
    for (const std::string& k : r_on) names.push_back(r_on.size() == 1 ? "key" : "key." + k);
    for (const std::string& c : r_cols) names.push_back("r." + c);
    if (how != "semi" && how != "anti")
      for (const std::string& c : s_cols) names.push_back("s." + c);
    return names;
  }

  /// SQL's join of r and s as pairs of row numbers (-1: the side has no row), by a nested loop over the
  /// keys as text: a null key matches nothing, or with nulls_equal a key whose every component is equal or
  /// null on both sides (IS NOT DISTINCT FROM).
  std::vector<std::pair<std::int64_t, std::int64_t>> matches() const {
    const auto has_null = [this](const std::vector<std::string>& k) {
      return !nulls_equal && std::find(k.begin(), k.end(), "null") != k.end();
    };
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    std::vector<bool> s_matched(static_cast<std::size_t>(s->num_rows()), false);
    for (std::int64_t i = 0; i < r->num_rows(); ++i) {
      const auto rk = key_of(*r, r_on, i);
      bool matched = false;
      for (std::int64_t j = 0; j < s->num_rows() && !has_null(rk); ++j) {
        if (key_of(*s, s_on, j) != rk) continue;
        matched = true;
        s_matched[static_cast<std::size_t>(j)] = true;
        if (how != "semi" && how != "anti") out.emplace_back(i, j);
      }
      if ((how == "semi" && matched) || (!matched && (how == "left" || how == "full" || how == "anti")))
        out.emplace_back(i, -1);
    }
    for (std::int64_t j = 0; j < s->num_rows(); ++j)
      if (!s_matched[static_cast<std::size_t>(j)] && (how == "right" || how == "full")) out.emplace_back(-1, j);
    return out;
  }

  /// The join's output (matches()) as rows of text; the key of an output row is R's, or S's where R has
  /// no row.
  std::multiset<std::string> reference() const {
    std::multiset<std::string> rows;
    for (const auto& [i, j] : matches()) {
      std::string row;
      for (const std::string& p : i < 0 ? key_of(*s, s_on, j) : key_of(*r, r_on, i)) row += p + "|";
      for (const std::string& c : r_cols) row += (i < 0 ? "null" : cell(*r, c, i)) + "|";
      if (how != "semi" && how != "anti")
        for (const std::string& c : s_cols) row += (j < 0 ? "null" : cell(*s, c, j)) + "|";
      rows.insert(row);
    }
    return rows;
  }

 private:
  static std::vector<std::string> key_of(const arrow::Table& t, const std::vector<std::string>& on, std::int64_t row) {
    std::vector<std::string> parts;
    for (const std::string& k : on) parts.push_back(cell(t, k, row));
    return parts;
  }
};

}  // namespace mgjoin::test
