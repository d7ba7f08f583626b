// `mgjoin join` of Parquet and Arrow IPC tables at the edges of their columns: the output gathered and
// decoded in slices of rows (lowered by MGJOIN_TEST_TAKE_SLICE_ROWS, so that several chunks come out
// without gigabytes of data), a key column as its side's payload in that side's type, a dictionary of
// integers with a null entry, and percent-encoded hive partition folders. Each join against a nested
// loop over Arrow's scalars (cli_arrow_test_util.hpp). Built where the CLI has Parquet (MGJOIN_TEST_ARROW).
#include "cli/cli_test_util.hpp"

#ifdef MGJOIN_TEST_ARROW
#include "cli/cli_arrow_test_util.hpp"

namespace mgjoin::test {
namespace {

class CliArrowEdges : public CliTest {
 protected:
  /// Joins `r_path` and `s_path` on the CPU path (`env` before the program) and expects the output
  /// (`format`) to hold the reference's rows; returns the output.
  std::shared_ptr<arrow::Table> expect_join(const JoinCase& c, const std::string& r_path, const std::string& s_path,
                                            const std::string& format = "parquet", const std::string& env = "") {
    const auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& n : v) s += (s.empty() ? "" : ",") + n;
      return s;
    };
    const std::string args = "join --r " + r_path + " --s " + s_path + " --r-key " + names(c.r_on) + " --s-key " +
                             names(c.s_on) + (c.nulls_equal ? " --nulls-equal" : "") + " --how " + c.how + " --gpus 0 -q --overwrite --out-dir out --format " +
                             format + " --r-columns " + names(c.r_cols) +
                             (c.s_cols.empty() ? "" : " --s-columns " + names(c.s_cols));
    const CliResult res = mgjoin(args, env);
    EXPECT_EQ(res.exit_code, 0) << args << "\n" << res.err;
    if (res.exit_code != 0) return nullptr;
    const auto got = read_table(dir() / ("out/part-0." + format));
    EXPECT_EQ(got->schema()->field_names(), c.output_names()) << c.how;
    EXPECT_EQ(rows_of(*got, c.output_names()), c.reference()) << args;
    return got;
  }
};

TEST_F(CliArrowEdges, OutputGatheredInSlicesOfRowsKeepsTheInputTypes) {
  JoinCase c;
  c.r = table({{"k", col(arrow::utf8(), R"(["a", "b", "c", null, "a", "bb", "c", "a"])")},
               {"p", col(arrow::utf8(), R"(["p0", null, "p2", "p3", "", "p5", "p6", "p7"])")},
               {"l", col(arrow::list(arrow::int32()), "[[1], null, [], [3, 4], [5], [6], [7], [8, 8]]")},
               {"v", col(arrow::binary(), R"(["v0", "v1", null, "v3", "v4", "v5", "v6", "v7"])")}});
  c.s = table({{"k", col(arrow::utf8(), R"(["a", "c", "a", "zz", null, "bb"])")},
               {"q", col(arrow::utf8(), R"(["q0", "q1", null, "q3", "q4", "q5"])")}});
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"p", "l", "v", "k"};
  c.s_cols = {"q", "k"};
  write_table(dir() / "r.parquet", *c.r, 3);
  write_table(dir() / "s.arrow", *c.s, 2);
  for (const char* how : {"inner", "full"}) {
    c.how = how;
    for (const char* format : {"parquet", "arrow"}) {
      SCOPED_TRACE(std::string(how) + " " + format);
      const auto got = expect_join(c, "r.parquet", "s.arrow", format, "env MGJOIN_TEST_TAKE_SLICE_ROWS=2 ");
      if (!got) continue;
      // Decoded and gathered as large types, each slice cast back to the input's type.
      for (const char* name : {"key", "r.p", "r.k", "s.q", "s.k"})
        EXPECT_TRUE(got->GetColumnByName(name)->type()->Equals(arrow::utf8())) << name;
      EXPECT_TRUE(got->GetColumnByName("r.l")->type()->Equals(arrow::list(arrow::int32())));
      EXPECT_TRUE(got->GetColumnByName("r.v")->type()->Equals(arrow::binary()));
    }
  }
}

TEST_F(CliArrowEdges, AKeyColumnAsAPayloadKeepsItsSidesType) {
  JoinCase c;
  c.r = table({{"k", col(arrow::utf8(), R"(["a", "b", null])")}, {"p", col(arrow::int32(), "[0, 1, 2]")}});
  c.s = table({{"k", col(arrow::large_utf8(), R"(["b", "c", "a"])")}});
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"p", "k"};
  c.s_cols = {"k"};
  c.how = "full";
  write_table(dir() / "r.parquet", *c.r);
  write_table(dir() / "s.parquet", *c.s);
  const auto got = expect_join(c, "r.parquet", "s.parquet");
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->GetColumnByName("key")->type()->Equals(arrow::large_utf8()));  // the sides differ
  EXPECT_TRUE(got->GetColumnByName("r.k")->type()->Equals(arrow::utf8()));
  EXPECT_TRUE(got->GetColumnByName("s.k")->type()->Equals(arrow::large_utf8()));
}

TEST_F(CliArrowEdges, ANullDictionaryEntryOfAnIntegerKeyIsANullKey) {
  // Row 1's index is valid, but the entry it points at is null: a null key, which matches nothing.
  const auto dict = arrow::dictionary(arrow::int32(), arrow::int64());
  const auto key = arrow::json::DictArrayFromJSONString(dict, "[0, 1, null]", "[5, null]").ValueOrDie();
  write_table(dir() / "r.arrow", *table({{"k", key}, {"p", col(arrow::int64(), "[1, 2, 3]")}}));
  JoinCase c;
  c.r = table({{"k", col(arrow::int64(), "[5, null, null]")}, {"p", col(arrow::int64(), "[1, 2, 3]")}});
  c.s = table({{"k", col(arrow::int64(), "[5, 0]")}, {"q", col(arrow::int64(), "[10, 20]")}});
  write_table(dir() / "s.arrow", *c.s);
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"p"};
  c.s_cols = {"q"};
  for (const char* how : {"inner", "left", "full", "anti"}) {
    c.how = how;
    SCOPED_TRACE(how);
    expect_join(c, "r.arrow", "s.arrow");
  }
}

TEST_F(CliArrowEdges, PartitionFolderValuesArePercentDecoded) {
  const auto part = [](const std::string& ids) { return table({{"id", col(arrow::int64(), ids)}}); };
  write_table(dir() / "R/k=x%2Fy/n=%31/a.parquet", *part("[1, 2]"));
  write_table(dir() / "R/k=a%G1/n=2/b.parquet", *part("[3]"));     // malformed: kept as written
  write_table(dir() / "R/k=%25%3D%/n=3/c.parquet", *part("[4]"));  // "%=" then a trailing "%"
  write_table(dir() / "R/k=__HIVE_DEFAULT_PARTITION__/n=4/d.parquet", *part("[5]"));
  JoinCase c;
  // The reference: the dataset as one table (files in path order), its folders' decoded values on each row.
  c.r = table({{"id", col(arrow::int64(), "[4, 3, 5, 1, 2]")},
               {"k", col(arrow::utf8(), R"(["%=%", "a%G1", null, "x/y", "x/y"])")},
               {"n", col(arrow::int64(), "[3, 2, 4, 1, 1]")}});
  c.s = table({{"k", col(arrow::utf8(), R"(["x/y", "x%2Fy", "a%G1", "%=%", null])")},
               {"n", col(arrow::int64(), "[1, 1, 2, 3, 4]")}});
  write_table(dir() / "s.parquet", *c.s);
  c.r_on = c.s_on = {"k"};
  c.r_cols = {"id", "n"};
  c.s_cols = {"n"};
  c.how = "full";
  expect_join(c, "R", "s.parquet");
  c.r_on = c.s_on = {"n"};  // "n=%31" is the integer 1
  c.r_cols = {"id", "k"};
  c.s_cols = {"k"};
  const auto got = expect_join(c, "R", "s.parquet");
  if (got) {
    EXPECT_TRUE(got->GetColumnByName("key")->type()->Equals(arrow::int64()));
  }
}

}  // namespace
}  // namespace mgjoin::test

#else

TEST(CliArrowEdges, NeedsTheCliWithParquet) { GTEST_SKIP() << "this CLI was built without Parquet (MGJOIN_PARQUET)"; }

#endif
