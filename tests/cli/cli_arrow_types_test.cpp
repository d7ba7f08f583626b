// `mgjoin join` of Parquet and Arrow IPC tables with columns of types the engine does not take: payloads
// of every Arrow type gathered on the host by row numbers, keys of strings, binary values and decimals
// through a shared dictionary, and the refusals of keys that cannot be compared and of .npy output that
// cannot hold them. Each join against a nested loop over Arrow's scalars (cli_arrow_test_util.hpp), not
// mgjoin. Built where the CLI has Parquet (MGJOIN_TEST_ARROW); elsewhere one test says it was skipped.
#include "cli/cli_test_util.hpp"

#ifdef MGJOIN_TEST_ARROW
#include "cli/cli_arrow_test_util.hpp"

#include <random>
#include <set>
#include <utility>

namespace mgjoin::test {
namespace {

const std::vector<std::string> kKinds = {"inner", "left", "right", "full", "semi", "anti"};

class CliArrowTypes : public CliTest {
 protected:
  /// Writes the case's tables (R as `r_file`, S as `s_file`, `rows` rows a row group or batch), joins them
  /// on the CPU path and compares the output file (columns in order, rows as a multiset) with the
  /// reference; `more` goes to the command line.
  void expect_join(const JoinCase& c, const std::string& r_file, const std::string& s_file, std::int64_t rows = 3,
                   const std::string& more = "") {
    write_table(dir() / r_file, *c.r, rows);
    write_table(dir() / s_file, *c.s, rows);
    expect_join_of_files(c, r_file, s_file, more);
  }

  void expect_join_of_files(const JoinCase& c, const std::string& r_path, const std::string& s_path,
                            const std::string& more = "") {
    const std::string out = "out_" + c.how;
    std::string on = "--r-key " + join_names(c.r_on) + " --s-key " + join_names(c.s_on) +
                     (c.nulls_equal ? " --nulls-equal" : "");
    const std::string args = "join --r " + r_path + " --s " + s_path + " " + on + " --how " + c.how +
                             " --gpus 0 -q --overwrite --out-dir " + out + " --r-columns " + join_names(c.r_cols) +
                             (c.s_cols.empty() ? "" : " --s-columns " + join_names(c.s_cols)) + " " + more;
    const CliResult res = mgjoin(args);
    ASSERT_EQ(res.exit_code, 0) << args << "\n" << res.err;
    const bool arrow = more.find("--format arrow") != std::string::npos ||
                       (r_path.ends_with(".arrow") && s_path.ends_with(".arrow"));
    const auto got = read_table(dir() / out / (arrow ? "part-0.arrow" : "part-0.parquet"));
    EXPECT_EQ(got->schema()->field_names(), c.output_names()) << c.how;
    EXPECT_EQ(rows_of(*got, c.output_names()), c.reference()) << args;
    const CliResult count = mgjoin("join --r " + r_path + " --s " + s_path + " " + on + " --how " + c.how + " --gpus 0 --count");
    EXPECT_EQ(count.out, std::to_string(c.reference().size()) + "\n") << count.err;
  }

  static std::string join_names(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
    return s;
  }

  /// Expects `args` refused with exit 2 in one line holding every one of `words`, nothing written.
  void expect_refused(const std::string& args, const std::vector<std::string>& words) {
    const CliResult r = mgjoin(args + " --gpus 0 --out-dir bad_out");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    for (const std::string& w : words) EXPECT_NE(r.err.find(w), std::string::npos) << w << " in " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir() / "bad_out")) << args;
  }
};

/// R: every payload type with nulls (an empty string, a null string); S: a decimal and a string.
JoinCase payload_case() {
  JoinCase c;
  const auto dict = arrow::dictionary(arrow::int32(), arrow::utf8());
  c.r = table({{"k", col(arrow::int32(), "[1, 2, 2, 3, null, 5, 2]")},
               {"s", col(arrow::utf8(), R"(["a", "", null, "dddd", "e", "ff", "g"])")},
               {"ls", col(arrow::large_utf8(), R"(["L1", null, "", "L4", "L5", "L6", "L7"])")},
               {"b", col(arrow::binary(), R"(["\u0000x", "", null, "bin", "b5", "b6", "b7"])")},
               {"d", col(arrow::decimal128(15, 2), R"(["1.25", null, "-3.50", "0.01", "9.00", "12345678901.99", "0.00"])")},
               {"e", col(arrow::decimal256(40, 5), R"(["1.00001", "2.00000", null, "-4.00000", "5.00000", "6.00000", "7.00000"])")},
               {"f", col(arrow::fixed_size_binary(3), R"(["abc", "def", "ghi", null, "jkl", "mno", "pqr"])")},
               {"c", arrow::json::DictArrayFromJSONString(dict, "[0, 1, null, 0, 1, 2, 0]", R"(["x", "y", "z"])").ValueOrDie()},
               {"n", col(arrow::int64(), "[10, 20, 30, 40, 50, 60, 70]")},
               {"l", col(arrow::list(arrow::int32()), "[[1], [2, 3], null, [], [5], [6], [7, 7]]")},
               {"st", col(arrow::struct_({arrow::field("a", arrow::int32()), arrow::field("b", arrow::utf8())}),
                          R"([{"a": 1, "b": "x"}, null, {"a": 3, "b": null}, {"a": 4, "b": "w"}, {"a": 5, "b": "v"},
                              {"a": 6, "b": "u"}, {"a": 7, "b": "t"}])")}});
  c.s = table({{"k", col(arrow::int64(), "[2, 3, 4, null, 2]")},
               {"amt", col(arrow::decimal128(10, 3), R"(["1.500", null, "-2.250", "3.000", "0.001"])")},
               {"name", col(arrow::utf8(), R"(["two", "three", "", "none", null])")}});
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"s", "ls", "b", "d", "e", "f", "c", "n", "l", "st"};
  c.s_cols = {"amt", "name"};
  return c;
}

TEST_F(CliArrowTypes, PayloadsOfEveryTypeAgreeWithANestedLoopInEveryJoinKind) {
  JoinCase c = payload_case();
  for (const std::string& how : kKinds) {
    c.how = how;
    expect_join(c, "r.parquet", "s.arrow", 3);  // row groups and record batches of 3 rows
  }
  const auto got = read_table(dir() / "out_anti/part-0.parquet");
  EXPECT_TRUE(got->schema()->GetFieldByName("r.d")->type()->Equals(arrow::decimal128(15, 2)));
  EXPECT_TRUE(got->schema()->GetFieldByName("r.e")->type()->Equals(arrow::decimal256(40, 5)));
  EXPECT_TRUE(got->schema()->GetFieldByName("r.f")->type()->Equals(arrow::fixed_size_binary(3)));
  EXPECT_TRUE(got->schema()->GetFieldByName("r.ls")->type()->Equals(arrow::large_utf8()));
  EXPECT_TRUE(got->schema()->GetFieldByName("r.c")->type()->Equals(arrow::utf8()));  // a dictionary's values
  EXPECT_EQ(got->schema()->GetFieldByName("r.l")->type()->id(), arrow::Type::LIST);
}

TEST_F(CliArrowTypes, ChosenColumnsKeepTheirOrderAcrossEngineAndHostColumns) {
  JoinCase c = payload_case();
  c.r_cols = {"n", "s", "k", "d"};  // an engine column first, the key among them
  c.s_cols = {"name", "k", "amt"};
  c.how = "full";
  expect_join(c, "r.parquet", "s.parquet", 2);
}

TEST_F(CliArrowTypes, ViewTypesStayViewsInArrowIpc) {
  JoinCase c;
  c.r = table({{"k", col(arrow::int32(), "[1, 2, 3]")},
               {"v", col(arrow::utf8_view(), R"(["a long string of more than twelve bytes", null, ""])")},
               {"w", col(arrow::binary_view(), R"(["x", "yy", null])")}});
  c.s = table({{"k", col(arrow::int32(), "[3, 1, 1]")}, {"t", col(arrow::utf8_view(), R"(["s0", "s1", null])")}});
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"v", "w"};
  c.s_cols = {"t"};
  c.how = "left";
  expect_join(c, "r.arrow", "s.arrow", 2);
  const auto got = read_table(dir() / "out_left/part-0.arrow");
  EXPECT_TRUE(got->schema()->GetFieldByName("r.v")->type()->Equals(arrow::utf8_view()));
  EXPECT_TRUE(got->schema()->GetFieldByName("r.w")->type()->Equals(arrow::binary_view()));
}

TEST_F(CliArrowTypes, ADatasetOfSeveralFilesAndAStringPartitionColumn) {
  JoinCase c;
  const auto part = [](const std::string& keys, const std::string& names) {
    return table({{"k", col(arrow::int64(), keys)}, {"name", col(arrow::utf8(), names)}});
  };
  write_table(dir() / "R/region=eu/a.parquet", *part("[1, 2, 3]", R"(["a", null, "c"])"), 2);
  write_table(dir() / "R/region=eu/b.parquet", *part("[]", "[]"));
  write_table(dir() / "R/region=us/c.parquet", *part("[2, 4]", R"(["", "e"])"), 1);
  write_table(dir() / "R/region=__HIVE_DEFAULT_PARTITION__/d.parquet", *part("[3]", R"(["f"])"));
  // The reference: the dataset as one table (files in path order), its folder's region on each row.
  c.r = table({{"k", col(arrow::int64(), "[1, 2, 3, 3, 2, 4]")},
               {"name", col(arrow::utf8(), R"(["a", null, "c", "f", "", "e"])")},
               {"region", col(arrow::utf8(), R"(["eu", "eu", "eu", null, "us", "us"])")}});
  c.s = table({{"k", col(arrow::int64(), "[2, 3, 5]")}, {"region", col(arrow::utf8(), R"(["us", "eu", "eu"])")}});
  write_table(dir() / "s.parquet", *c.s);
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"name", "region"};
  c.s_cols = {"region"};
  for (const char* how : {"inner", "full"}) {
    c.how = how;
    expect_join_of_files(c, "R", "s.parquet");
  }
  c.r_on = c.s_on = {"region"};  // the partition column as a string key
  c.r_cols = {"k", "name"};
  c.s_cols = {"k"};
  c.how = "full";
  expect_join_of_files(c, "R", "s.parquet");
}

/// `n` random strings of `alphabet` up to `max_len` long, after `prefix`, a share of nulls; JSON.
std::string random_strings(std::mt19937& rng, int n, const std::string& alphabet, int max_len, const std::string& prefix,
                           double null_share) {
  std::string json = "[";
  for (int i = 0; i < n; ++i) {
    if (i) json += ", ";
    if (std::uniform_real_distribution<>(0, 1)(rng) < null_share) {
      json += "null";
      continue;
    }
    std::string s = prefix;
    const int len = std::uniform_int_distribution<>(0, max_len)(rng);
    for (int j = 0; j < len; ++j) s += alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
    json += "\"" + s + "\"";
  }
  return json + "]";
}

TEST_F(CliArrowTypes, StringKeysAgreeWithANestedLoopInEveryJoinKind) {
  std::mt19937 rng(7);
  const std::string long_prefix(300, 'p');
  struct Keys {
    std::string name, alphabet, prefix;
    int max_len;
    double nulls;
  };
  const Keys sets[] = {{"random", "abc", "", 3, 0.1},         {"all equal", "a", "", 0, 0.0},
                       {"empty strings", "x", "", 1, 0.2},     {"long prefixes", "01", long_prefix, 2, 0.0},
                       {"mostly null", "ab", "", 1, 0.7}};
  for (const Keys& k : sets) {
    JoinCase c;
    std::string ids = "[";
    for (int i = 0; i < 40; ++i) ids += (i ? ", " : "") + std::to_string(i);
    c.r = table({{"k", col(arrow::utf8(), random_strings(rng, 40, k.alphabet, k.max_len, k.prefix, k.nulls))},
                 {"i", col(arrow::int32(), ids + "]")}});
    c.s = table({{"k", col(arrow::large_utf8(), random_strings(rng, 25, k.alphabet, k.max_len, k.prefix, k.nulls))},
                 {"v", col(arrow::utf8(), random_strings(rng, 25, "vw", 4, "", 0.1))}});
    c.r_on = c.s_on = {"k"};
    c.r_cols = {"i"};
    c.s_cols = {"v"};
    for (const std::string& how : kKinds) {
      c.how = how;
      SCOPED_TRACE(k.name + " " + how);
      expect_join(c, "r.parquet", "s.parquet", 7);
    }
  }
  const auto got = read_table(dir() / "out_full/part-0.parquet");
  EXPECT_TRUE(got->schema()->GetFieldByName("key")->type()->Equals(arrow::large_utf8()));  // string and large_string
}

TEST_F(CliArrowTypes, CompositeKeysOfAStringAndAnIntegerColumn) {
  JoinCase c;
  c.r = table({{"name", col(arrow::utf8(), R"(["a", "a", "b", null, "", "b"])")},
               {"id", col(arrow::int32(), "[1, 2, 1, 1, 3, null]")},
               {"p", col(arrow::utf8(), R"(["p0", "p1", "p2", "p3", "p4", "p5"])")}});
  c.s = table({{"nm", col(arrow::utf8(), R"(["a", "b", "a", "", null, "b"])")},
               {"ident", col(arrow::int64(), "[1, 1, 2, 3, 1, 2]")},
               {"q", col(arrow::decimal128(9, 1), R"(["0.5", "1.5", "2.5", "3.5", "4.5", null])")}});
  c.r_on = {"name", "id"};
  c.s_on = {"nm", "ident"};
  c.r_cols = {"p"};
  c.s_cols = {"q"};
  for (const std::string& how : kKinds) {
    c.how = how;
    expect_join(c, "r.parquet", "s.arrow");
  }
}

TEST_F(CliArrowTypes, KeysOfBinaryDecimalAndFixedSizeBinaryAndADictionary) {
  const auto dict = arrow::dictionary(arrow::int8(), arrow::utf8());
  const std::pair<std::shared_ptr<arrow::Array>, std::shared_ptr<arrow::Array>> keys[] = {
      {col(arrow::binary(), R"(["\u0000", "", "ab", null, "ab\u0000"])"), col(arrow::large_binary(), R"(["ab", "\u0000", "ab\u0000", ""])")},
      {col(arrow::decimal128(15, 2), R"(["1.10", "-0.01", null, "99999.99", "1.10"])"),
       col(arrow::decimal128(15, 2), R"(["1.10", "0.01", "99999.99", "-0.01"])")},
      {col(arrow::fixed_size_binary(4), R"(["abcd", "abce", null, "zzzz", "abcd"])"),
       col(arrow::fixed_size_binary(4), R"(["abcd", "zzzz", "yyyy", "abcd"])")},
      {arrow::json::DictArrayFromJSONString(dict, "[0, 1, null, 2, 0]", R"(["x", "", "y"])").ValueOrDie(),
       col(arrow::utf8(), R"(["", "x", "x", "w"])")},
  };
  for (const auto& [r_key, s_key] : keys) {
    JoinCase c;
    c.r = table({{"k", r_key}, {"i", col(arrow::int32(), "[0, 1, 2, 3, 4]")}});
    c.s = table({{"k", s_key}, {"j", col(arrow::int32(), "[10, 11, 12, 13]")}});
    c.r_on = c.s_on = {"k"};
    c.r_cols = {"i"};
    c.s_cols = {"j"};
    for (const char* how : {"inner", "full", "anti"}) {
      c.how = how;
      SCOPED_TRACE(r_key->type()->ToString() + " " + how);
      if (r_key->type_id() == arrow::Type::DICTIONARY) {  // the reference compares the dictionary's values
        write_table(dir() / "r.parquet", *c.r);
        write_table(dir() / "s.parquet", *c.s);
        JoinCase decoded = c;
        decoded.r = table({{"k", col(arrow::utf8(), R"(["x", "", null, "y", "x"])")}, {"i", c.r->column(1)->chunk(0)}});
        expect_join_of_files(decoded, "r.parquet", "s.parquet");
      } else {
        expect_join(c, "r.parquet", "s.parquet", 2);
      }
    }
  }
}

TEST_F(CliArrowTypes, DecimalKeysOfOneScaleJoinWhateverTheirPrecisionAndWidth) {
  // Values at the narrower side's full precision, which the cast to the wider one keeps exactly.
  const struct {
    std::shared_ptr<arrow::DataType> r, s, key;
    const char* r_file;
  } pairs[] = {
      {arrow::decimal128(12, 2), arrow::decimal128(30, 2), arrow::decimal128(30, 2), "r.parquet"},
      {arrow::decimal128(38, 2), arrow::decimal256(40, 2), arrow::decimal256(40, 2), "r.parquet"},
      {arrow::decimal32(9, 2), arrow::decimal128(20, 2), arrow::decimal128(20, 2), "r.arrow"},
      {arrow::decimal64(18, 2), arrow::decimal64(18, 2), arrow::decimal64(18, 2), "r.arrow"},
  };
  for (const auto& p : pairs) {
    const int digits = static_cast<const arrow::DecimalType&>(*p.r).precision() - 2;
    const std::string big = std::string(static_cast<std::size_t>(digits), '9') + ".99";
    JoinCase c;
    c.r = table({{"k", col(p.r, R"(["1.10", "-0.01", null, ")" + big + R"(", "1.10", "-)" + big + R"("])")},
                 {"i", col(arrow::int32(), "[0, 1, 2, 3, 4, 5]")}});
    c.s = table({{"k", col(p.s, R"(["1.10", "0.01", ")" + big + R"(", "-0.01", null, "-)" + big + R"("])")},
                 {"j", col(arrow::int32(), "[10, 11, 12, 13, 14, 15]")}});
    c.r_on = c.s_on = {"k"};
    c.r_cols = {"i", "k"};
    c.s_cols = {"j", "k"};
    const std::string s_file = std::string("s") + (std::string(p.r_file).ends_with(".arrow") ? ".arrow" : ".parquet");
    for (const std::string& how : kKinds) {
      c.how = how;
      SCOPED_TRACE(p.r->ToString() + " " + p.s->ToString() + " " + how);
      expect_join(c, p.r_file, s_file, 4);
      if (how != "full") continue;
      const auto got = read_table(dir() / "out_full" / (s_file == "s.arrow" ? "part-0.arrow" : "part-0.parquet"));
      EXPECT_EQ(got->schema()->GetFieldByName("key")->type()->ToString(), p.key->ToString());
      EXPECT_EQ(got->schema()->GetFieldByName("r.k")->type()->ToString(), p.r->ToString());  // each side's own
      EXPECT_EQ(got->schema()->GetFieldByName("s.k")->type()->ToString(), p.s->ToString());
    }
  }
}

/// Keys with nulls: an integer, a string (through a dictionary) and a composite key of both, each null
/// pattern on both sides or on one, every kind with and without --nulls-equal.
TEST_F(CliArrowTypes, NullsEqualMatchesNullKeysInEveryJoinKind) {
  JoinCase c;
  c.r = table({{"name", col(arrow::utf8(), R"(["a", null, "a", null, "b", null, "c", "a"])")},
               {"id", col(arrow::int64(), "[1, 1, null, null, 2, 1, null, 1]")},
               {"p", col(arrow::int32(), "[0, 1, 2, 3, 4, 5, 6, 7]")}});
  c.s = table({{"nm", col(arrow::utf8(), R"(["a", null, null, "a", "b", null, "d"])")},
               {"ident", col(arrow::int32(), "[1, 1, null, null, null, 2, 4]")},
               {"q", col(arrow::utf8(), R"(["q0", "q1", "q2", "q3", "q4", null, "q6"])")}});
  c.r_cols = {"p"};
  c.s_cols = {"q"};
  const std::pair<std::vector<std::string>, std::vector<std::string>> keys[] = {
      {{"id"}, {"ident"}}, {{"name"}, {"nm"}}, {{"name", "id"}, {"nm", "ident"}}};
  for (const auto& [r_on, s_on] : keys) {
    c.r_on = r_on;
    c.s_on = s_on;
    for (const bool equal : {false, true}) {
      c.nulls_equal = equal;
      for (const std::string& how : kKinds) {
        c.how = how;
        SCOPED_TRACE(join_names(r_on) + (equal ? " --nulls-equal " : " ") + how);
        expect_join(c, "r.parquet", "s.arrow", 3, "--format parquet");
      }
    }
  }
}

TEST_F(CliArrowTypes, NullsEqualGatherMapsPairTheRowsANestedLoopPairs) {
  JoinCase c;
  c.r = table({{"a", col(arrow::utf8(), R"(["x", null, "x", null, "y", null])")},
               {"b", col(arrow::int16(), "[1, 1, null, null, 2, 1]")}});
  c.s = table({{"a", col(arrow::utf8(), R"([null, "x", null, "x", null, "z"])")},
               {"b", col(arrow::int16(), "[1, null, null, 1, 1, null]")}});
  c.r_on = c.s_on = {"a", "b"};
  c.nulls_equal = true;
  write_table(dir() / "r.parquet", *c.r, 4);
  write_table(dir() / "s.parquet", *c.s, 4);
  for (const std::string& how : kKinds) {
    c.how = how;
    SCOPED_TRACE(how);
    const CliResult res = mgjoin("join --r r.parquet --s s.parquet --on a,b --nulls-equal --output maps --how " + how +
                                 " --gpus 0 -q --overwrite --out-dir maps");
    ASSERT_EQ(res.exit_code, 0) << res.err;
    const auto got = read_table(dir() / "maps/part-0.parquet");
    std::multiset<std::pair<std::int64_t, std::int64_t>> pairs, want;
    for (std::int64_t i = 0; i < got->num_rows(); ++i) {
      const auto row = [&](const char* name) {
        const std::string text = cell(*got, name, i);
        return text == "null" || text.starts_with("<no column") ? std::int64_t{-1} : std::stoll(text.substr(1));
      };
      pairs.emplace(row("r.row"), row("s.row"));
    }
    for (const auto& m : c.matches()) want.insert(m);
    EXPECT_EQ(pairs, want);
  }
}

TEST_F(CliArrowTypes, KeysThatCannotBeComparedAreRefusedInOneLineNamingBothColumns) {
  write_table(dir() / "str.parquet", *table({{"a", col(arrow::utf8(), R"(["x"])")}}));
  write_table(dir() / "bin.parquet", *table({{"b", col(arrow::binary(), R"(["x"])")}}));
  write_table(dir() / "int.parquet", *table({{"b", col(arrow::int64(), "[1]")}}));
  write_table(dir() / "d152.parquet", *table({{"a", col(arrow::decimal128(15, 2), R"(["1.00"])")}}));
  write_table(dir() / "d153.parquet", *table({{"b", col(arrow::decimal128(15, 3), R"(["1.000"])")}}));
  write_table(dir() / "d122.parquet", *table({{"b", col(arrow::decimal128(12, 2), R"(["1.00"])")}}));
  write_table(dir() / "f3.parquet", *table({{"a", col(arrow::fixed_size_binary(3), R"(["abc"])")}}));
  write_table(dir() / "f4.parquet", *table({{"b", col(arrow::fixed_size_binary(4), R"(["abcd"])")}}));
  write_table(dir() / "list.parquet", *table({{"a", col(arrow::list(arrow::int32()), "[[1]]")}}));
  const std::string both[] = {"key column a of --r ", "key column b of --s ", "cannot be compared"};
  const std::pair<std::string, std::string> pairs[] = {{"str", "bin"}, {"str", "int"}, {"d152", "d153"}, {"f3", "f4"}};
  for (const auto& [r, s] : pairs) {
    SCOPED_TRACE(r + " " + s);
    expect_refused("join --r " + r + ".parquet --s " + s + ".parquet --r-key a --s-key b",
                   {both[0] + r + ".parquet", both[1] + s + ".parquet", both[2]});
  }
  expect_refused("join --r d152.parquet --s d153.parquet --r-key a --s-key b",
                 {"key column a of --r d152.parquet is decimal128(15, 2)", "key column b of --s d153.parquet is "
                  "decimal128(15, 3)", "decimals of different scales"});
  expect_refused("join --r d122.parquet --s d153.parquet --on b", {"decimal128(12, 2)", "decimal128(15, 3)", "scales"});
  expect_refused("join --r int.parquet --s str.parquet --r-key b --s-key a",
                 {"key column b of --r int.parquet is int64", "key column a of --s str.parquet is string"});
  expect_refused("join --r list.parquet --s str.parquet --on a", {"list.parquet", "key column a", "cannot join on"});
}

// Dates, times, timestamps and durations are integers underneath, of different meanings by unit and zone:
// a key of one joins its own type only (Python's rule), never silently as the integers (before s23 the CLI
// joined timestamp[ms] 1 with timestamp[us] 1, and a date32 with an int32). A dictionary of the same type
// joins.
TEST_F(CliArrowTypes, TemporalKeysJoinTheirOwnTypeOnly) {
  // Arrow IPC files keep every type as it is (Parquet would store a date64 as a date32).
  const auto ts = [](arrow::TimeUnit::type unit, const std::string& zone = "") { return arrow::timestamp(unit, zone); };
  write_table(dir() / "ms.arrow", *table({{"a", col(ts(arrow::TimeUnit::MILLI), "[1, 2, 3]")}}));
  write_table(dir() / "us.arrow", *table({{"b", col(ts(arrow::TimeUnit::MICRO), "[1, 2, 3]")}}));
  write_table(dir() / "msutc.arrow", *table({{"b", col(ts(arrow::TimeUnit::MILLI, "UTC"), "[1, 2, 3]")}}));
  write_table(dir() / "i64.arrow", *table({{"b", col(arrow::int64(), "[1, 2, 3]")}}));
  write_table(dir() / "d32.arrow", *table({{"a", col(arrow::date32(), "[1, 2, 3]")}}));
  write_table(dir() / "d64.arrow", *table({{"b", col(arrow::date64(), "[86400000, 172800000]")}}));
  write_table(dir() / "i32.arrow", *table({{"b", col(arrow::int32(), "[1, 2, 3]")}}));
  write_table(dir() / "dur.arrow", *table({{"b", col(arrow::duration(arrow::TimeUnit::MILLI), "[1, 2, 3]")}}));
  const std::pair<std::string, std::string> refused[] = {{"ms", "us"}, {"ms", "msutc"}, {"ms", "i64"},
                                                         {"ms", "dur"}, {"d32", "d64"}, {"d32", "i32"}};
  for (const auto& [r, s] : refused) {
    SCOPED_TRACE(r + " " + s);
    expect_refused("join --r " + r + ".arrow --s " + s + ".arrow --r-key a --s-key b",
                   {"key column a of --r " + r + ".arrow", "key column b of --s " + s + ".arrow",
                    "cannot be compared", "their own type only"});
  }
  // The same type joins, a dictionary of it too: 3 equal values a side.
  auto dict = arrow::DictionaryArray::FromArrays(arrow::dictionary(arrow::int32(), ts(arrow::TimeUnit::MILLI)),
                                                 col(arrow::int32(), "[0, 1, 2]"), col(ts(arrow::TimeUnit::MILLI), "[1, 2, 3]"));
  ASSERT_TRUE(dict.ok()) << dict.status().ToString();
  write_table(dir() / "msdict.arrow", *table({{"b", *dict}}));
  write_table(dir() / "ms2.arrow", *table({{"b", col(ts(arrow::TimeUnit::MILLI), "[3, 4, 1]")}}));
  for (const char* s : {"msdict", "ms2"}) {
    const CliResult c = mgjoin(std::string("join --r ms.arrow --s ") + s + ".arrow --r-key a --s-key b --count --gpus 0 -q");
    ASSERT_EQ(c.exit_code, 0) << s << ": " << c.err;
    EXPECT_EQ(c.out, std::string(s) == std::string("msdict") ? "3\n" : "2\n") << s;
  }
}

/// A .npy column of fixed-width strings as the CLI wrote it: its kind, width and elements (padding kept).
struct NpyStrings {
  bool unicode;
  std::int64_t width;
  std::string bytes;
};
NpyStrings read_npy_strings_file(const std::filesystem::path& path) {
  const auto info = inspect_string_column_file(path);
  if (!info) return {false, 0, "not a .npy file of strings"};
  return {info->unicode, info->width, read_string_column_file(path, *info)};
}

// .npy output holds strings and binary values as NumPy's U and S columns (the width of the longest
// value); a null among them, and decimals and other types without a dtype, are refused in one line.
TEST_F(CliArrowTypes, NpyOutputOfStringsIsFixedWidthAndOfOtherTypesRefused) {
  JoinCase c = payload_case();
  write_table(dir() / "r.parquet", *c.r);
  write_table(dir() / "s.parquet", *c.s);
  // R's row 2 (k = 2, matched twice) has a null s.
  expect_refused("join --r r.parquet --s s.parquet --on k --format npy --r-columns n,s --s-columns k -q",
                 {"r.s: the output holds nulls", "--format parquet"});
  expect_refused("join --r r.parquet --s s.parquet --on k --format npy --r-columns n --s-columns amt",
                 {"s.amt: column amt of --s s.parquet is decimal128(10, 3)", "--format parquet"});
  write_table(dir() / "rs.parquet", *table({{"k", col(arrow::utf8(), R"(["a", "b", "é"])")},
                                            {"v", col(arrow::binary(), R"(["x", "yy\u0000", "z"])")}}));
  write_table(dir() / "ss.parquet", *table({{"k", col(arrow::large_utf8(), R"(["b", "b", "c", "é"])")}}));
  const CliResult strings = mgjoin("join --r rs.parquet --s ss.parquet --on k --format npy --gpus 0 -q --out-dir strings");
  ASSERT_EQ(strings.exit_code, 0) << strings.err;
  // Row order is the join's: the rows as a multiset of (key, v).
  const NpyStrings key = read_npy_strings_file(dir() / "strings/key.npy");
  const NpyStrings v = read_npy_strings_file(dir() / "strings/r.v.npy");
  EXPECT_TRUE(key.unicode);
  EXPECT_EQ(key.width, 1);
  EXPECT_FALSE(v.unicode);
  EXPECT_EQ(v.width, 3);  // "yy\0" holds its NUL; NumPy drops trailing ones, as from any S column
  ASSERT_EQ(key.bytes.size(), 3u * 4);
  ASSERT_EQ(v.bytes.size(), 3u * 3);
  std::multiset<std::pair<std::string, std::string>> rows;
  for (int i = 0; i < 3; ++i) rows.emplace(key.bytes.substr(4 * i, 4), v.bytes.substr(3 * i, 3));
  const std::string b("b\0\0\0", 4), e("\xE9\0\0\0", 4);
  EXPECT_EQ(rows, (std::multiset<std::pair<std::string, std::string>>{
                      {b, std::string("yy\0", 3)}, {b, std::string("yy\0", 3)}, {e, std::string("z\0\0", 3)}}));
  // Gather maps of string keys hold no string: .npy takes them.
  const CliResult maps = mgjoin("join --r rs.parquet --s ss.parquet --on k --format npy --output maps --gpus 0 -q --out-dir maps");
  ASSERT_EQ(maps.exit_code, 0) << maps.err;
  EXPECT_EQ(read_values<std::int64_t>(dir() / "maps/r.row.npy").size(), 3u);
  // A string column left out of the output is never read: .npy output of the rest.
  const CliResult npy = mgjoin("join --r r.parquet --s s.parquet --on k --format npy --r-columns n --s-columns k --gpus 0 -q --out-dir npy");
  ASSERT_EQ(npy.exit_code, 0) << npy.err;
  EXPECT_EQ(read_values<std::int64_t>(dir() / "npy/r.n.npy").size(), 7u);
}

}  // namespace
}  // namespace mgjoin::test

#else

TEST(CliArrowTypes, NeedsTheCliWithParquet) { GTEST_SKIP() << "this CLI was built without Parquet (MGJOIN_PARQUET)"; }

#endif
