// Every bad column file gives an InputError whose one-line message names the file; failed writes
// leave neither a final-named file nor a temporary one behind.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "io_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

namespace fs = std::filesystem;

/// Runs `f`, expects an InputError whose message names `path` and contains `what`, on one line.
template <class F>
void expect_input_error(F&& f, const fs::path& path, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error for " << path;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << "message does not name the file: " << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
  }
}

const std::string kData8(8, '\0');

class BadInput : public TempDirTest {
 protected:
  /// Writes a .npy with header dict `dict` and `data`, then expects read_column to fail with `what`.
  void expect_bad_npy(const std::string& dict, const std::string& data, const std::string& what) {
    const fs::path path = dir() / "bad.npy";
    write_file_bytes(path, npy_bytes(1, dict, 64) + data);
    expect_input_error([&] { read_column(path); }, path, what);
    expect_input_error([&] { inspect_column_file(path); }, path, what);
  }
};

TEST_F(BadInput, MissingFile) {
  expect_input_error([&] { read_column(dir() / "nope.npy"); }, dir() / "nope.npy", "No such file");
}

TEST_F(BadInput, DirectoryIsNotAColumnFile) {
  fs::create_directory(dir() / "sub.npy");
  expect_input_error([&] { read_column(dir() / "sub.npy"); }, dir() / "sub.npy", "not a regular file");
}

TEST_F(BadInput, NotNpyBadMagic) {
  write_file_bytes(dir() / "text.npy", "key,payload\n1,2\n3,4\n");
  expect_input_error([&] { read_column(dir() / "text.npy"); }, dir() / "text.npy", "bad magic");
}

TEST_F(BadInput, EmptyFileIsNotNpy) {
  write_file_bytes(dir() / "empty.npy", "");
  expect_input_error([&] { read_column(dir() / "empty.npy"); }, dir() / "empty.npy", "empty file");
}

TEST_F(BadInput, UnsupportedVersion) {
  std::string bytes = npy_bytes(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", 64) + kData8;
  bytes[6] = 4;
  write_file_bytes(dir() / "v4.npy", bytes);
  expect_input_error([&] { read_column(dir() / "v4.npy"); }, dir() / "v4.npy", "version 4.0");
}

TEST_F(BadInput, TruncatedData) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (10,), }", std::string(79, 'x'), "truncated");
}

TEST_F(BadInput, RowCountBeyondAnyFileSize) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (4611686018427387905,), }", kData8, "truncated");
}

TEST_F(BadInput, TruncatedHeader) {
  const std::string full = npy_bytes(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", 64);
  write_file_bytes(dir() / "cut.npy", full.substr(0, 30));
  expect_input_error([&] { read_column(dir() / "cut.npy"); }, dir() / "cut.npy", "truncated");
}

TEST_F(BadInput, TrailingDataAfterTheColumn) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", kData8 + "junk", "unexpected data");
}

TEST_F(BadInput, Float16) {
  expect_bad_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", kData8, "unsupported dtype '<f2'");
}

TEST_F(BadInput, BigEndian) {
  expect_bad_npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", kData8, "big-endian");
}

TEST_F(BadInput, ObjectArray) {
  expect_bad_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", kData8, "unsupported dtype '|O'");
}

TEST_F(BadInput, MultiByteTypesWithoutAByteOrder) {
  // numpy writes '|' only for 1-byte types ('|u1', '|b1'): a wider type needs '<'.
  expect_bad_npy("{'descr': '|u4', 'fortran_order': False, 'shape': (2,), }", kData8, "unsupported dtype '|u4'");
}

TEST_F(BadInput, StructuredArray) {
  expect_bad_npy("{'descr': [('k', '<u4'), ('v', '<u4')], 'fortran_order': False, 'shape': (1,), }", kData8,
                 "structured");
}

TEST_F(BadInput, TwoDimensional) {
  expect_bad_npy("{'descr': '<u4', 'fortran_order': False, 'shape': (1, 2), }", kData8, "2-D");
}

TEST_F(BadInput, ZeroDimensional) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (), }", kData8, "0-D");
}

TEST_F(BadInput, FortranOrder) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': True, 'shape': (1,), }", kData8, "fortran_order");
}

// numpy.load refuses these headers; so must mgjoin (it accepted them before).
TEST_F(BadInput, HeaderKeysNumpyDoesNotWrite) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", kData8,
                 "unexpected key 'extra'");
  expect_bad_npy("{'descr': '<u8', 'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", kData8,
                 "key 'descr' given twice");
}

TEST_F(BadInput, MalformedDict) {
  expect_bad_npy("{'descr': '<u8', 'fortran_order': False}", kData8, "malformed");
  expect_bad_npy("not a dict at all", kData8, "malformed");
}

TEST_F(BadInput, RawWithoutType) {
  write_file_bytes(dir() / "k.bin", kData8);
  expect_input_error([&] { read_column(dir() / "k.bin"); }, dir() / "k.bin", "needs its element type");
}

TEST_F(BadInput, RawSizeNotAMultipleOfTheType) {
  write_file_bytes(dir() / "k.bin", std::string(12, '\0'));
  expect_input_error([&] { read_column(dir() / "k.bin", DType::UInt64); }, dir() / "k.bin", "not a multiple of 8");
}

// ------------------------------------------------------------------------------------ writing

const std::vector<std::uint32_t> kValues{1, 2, 3};
const ColumnView kView{kValues.data(), 3, DType::UInt32};

TEST_F(BadInput, WriteIntoMissingDirectoryNamesTheFile) {
  const fs::path path = dir() / "missing" / "key.npy";
  expect_input_error([&] { write_column(path, kView); }, path, "cannot create");
  EXPECT_TRUE(entries().empty());
}

TEST_F(BadInput, WriteBelowARegularFileFails) {
  write_file_bytes(dir() / "file", "x");
  const fs::path path = dir() / "file" / "key.npy";
  expect_input_error([&] { write_column(path, kView); }, path, "cannot create");
}

TEST_F(BadInput, UncommittedStagedFileLeavesNothing) {
  {
    StagedColumnFile staged = stage_column(dir() / "key.npy", kView);
    EXPECT_TRUE(fs::exists(staged.temp_path()));
    EXPECT_FALSE(fs::exists(dir() / "key.npy")) << "the final name appears only on commit";
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(BadInput, CommitAllRenamesEveryFile) {
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir() / "a.npy", kView));
  files.push_back(stage_column(dir() / "b.bin", kView));
  commit_all(files);
  auto names = entries();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.npy", "b.bin"}));
  EXPECT_EQ(read_column(dir() / "b.bin", DType::UInt32).size(), 3);
}

TEST_F(BadInput, CommitAllRollsBackWhenOneRenameFails) {
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir() / "a.npy", kView));
  files.push_back(stage_column(dir() / "b.npy", kView));
  fs::create_directory(dir() / "b.npy");  // a non-empty directory cannot be replaced by rename
  write_file_bytes(dir() / "b.npy" / "x", "x");
  expect_input_error([&] { commit_all(files); }, dir() / "b.npy", "is not a file");
  EXPECT_FALSE(fs::exists(dir() / "a.npy")) << "nothing was committed";
  EXPECT_TRUE(fs::exists(dir() / "b.npy" / "x")) << "the directory in the way is left as it was";
}

// A rename that fails after an earlier one replaced a file of the user's: the user's file comes back.
TEST_F(BadInput, CommitAllPutsBackTheFilesItWasReplacingWhenALaterRenameFails) {
  write_file_bytes(dir() / "a.npy", "the user's old a.npy");
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir() / "a.npy", kView));
  files.emplace_back(dir() / "b.npy", dir() / ".b.npy.tmp-vanished");  // its temporary file is gone
  expect_input_error([&] { commit_all(files); }, dir() / "b.npy", "cannot rename");
  ASSERT_TRUE(fs::exists(dir() / "a.npy")) << "commit_all deleted a file it had replaced";
  std::ifstream in(dir() / "a.npy", std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "the user's old a.npy");
  EXPECT_FALSE(fs::exists(dir() / "b.npy"));
  auto names = entries();
  EXPECT_EQ(names, (std::vector<std::string>{"a.npy"})) << "no temporary or moved-aside file is left";
}

TEST_F(BadInput, CommitAllReplacesExistingFilesAndLeavesNoBackups) {
  write_file_bytes(dir() / "a.npy", "old");
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir() / "a.npy", kView));
  commit_all(files);
  EXPECT_EQ(read_column(dir() / "a.npy", DType::UInt32).size(), 3);
  EXPECT_EQ(entries(), (std::vector<std::string>{"a.npy"}));
}

TEST_F(BadInput, PrepareOutputDirectoryCreatesItOrNamesTheOption) {
  prepare_output_directory(dir() / "new" / "deep", "--out-dir");
  EXPECT_TRUE(fs::is_directory(dir() / "new" / "deep"));
  EXPECT_TRUE(fs::is_empty(dir() / "new" / "deep")) << "the write probe is removed";
  write_file_bytes(dir() / "file", "x");
  expect_input_error([&] { prepare_output_directory(dir() / "file", "--out-dir"); }, dir() / "file",
                     "--out-dir");
  expect_input_error([&] { prepare_output_directory(dir() / "file" / "sub", "--out-dir"); }, dir() / "file" / "sub",
                     "cannot create the output directory");
}

TEST_F(BadInput, TableFilesAreColumnFilesManifestsAndPartFolders) {
  for (const char* f : {"key.npy", "r.v.NPY", "manifest.json", "notes.txt", "r_key.bin", ".key.npy.tmp-1-0"})
    write_file_bytes(dir() / f, "x");
  for (const char* d : {"part-0", "part-12", "part-", "part-x", "sub"}) fs::create_directory(dir() / d);
  const auto names_in = [](const fs::path& d) {
    std::vector<std::string> names;
    for (const fs::path& p : table_files_in(d)) names.push_back(p.filename().string());
    return names;
  };
  EXPECT_EQ(names_in(dir()), (std::vector<std::string>{"key.npy", "manifest.json", "part-0", "part-12", "r.v.NPY"}));
  EXPECT_TRUE(table_files_in(dir() / "missing").empty());
  // Without a manifest a folder named part-N is the user's, not a part.
  fs::remove(dir() / "manifest.json");
  EXPECT_EQ(names_in(dir()), (std::vector<std::string>{"key.npy", "r.v.NPY"}));
}

TEST_F(BadInput, AStalePartFolderLosesItsColumnsButKeepsOtherFiles) {
  write_file_bytes(dir() / "manifest.json", "{}");
  fs::create_directory(dir() / "part-0");
  write_file_bytes(dir() / "part-0" / "key.npy", "old part");
  write_file_bytes(dir() / "part-0" / "notes.txt", "the user's");
  fs::create_directory(dir() / "elsewhere");
  write_file_bytes(dir() / "elsewhere" / "precious.npy", "the user's column");
  fs::create_directory_symlink(dir() / "elsewhere", dir() / "part-1");
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir() / "key.npy", kView));
  commit_all(files, table_files_in(dir()));
  auto names = entries();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"elsewhere", "key.npy", "part-0"}));
  EXPECT_FALSE(fs::exists(dir() / "part-0" / "key.npy"));
  EXPECT_TRUE(fs::exists(dir() / "part-0" / "notes.txt")) << "a part folder's other files are the user's";
  EXPECT_TRUE(fs::exists(dir() / "elsewhere" / "precious.npy")) << "a linked part: the link goes, not its target";
  fs::create_directory_symlink(dir() / "elsewhere", dir() / "part-2");
  remove_table_files(std::vector<fs::path>{dir() / "part-2", dir() / "part-0", dir() / "nothing-there.npy"});
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir() / "part-2")));
  EXPECT_TRUE(fs::exists(dir() / "elsewhere" / "precious.npy"));
  EXPECT_TRUE(fs::exists(dir() / "part-0" / "notes.txt"));
}

TEST_F(BadInput, AnOutputDirectoryIsCheckedWithoutBeingCreated) {
  check_output_directory(dir() / "new" / "deep", "--out-dir", ExistingTable::Refuse, "--overwrite");
  EXPECT_FALSE(fs::exists(dir() / "new")) << "created only when there is an output to write";
  EXPECT_TRUE(entries().empty()) << "the write probe is removed";
  write_file_bytes(dir() / "file", "x");
  expect_input_error([&] { check_output_directory(dir() / "file", "--out-dir", ExistingTable::Replace, "--overwrite"); },
                     dir() / "file", "not a directory");
  expect_input_error(
      [&] { check_output_directory(dir() / "file" / "sub", "--out-dir", ExistingTable::Replace, "--overwrite"); },
      dir() / "file" / "sub", "cannot create the output directory");
}

TEST_F(BadInput, AnOutputDirectoryHoldingATableIsRefusedUnlessReplaced) {
  fs::create_directory(dir() / "out");
  write_file_bytes(dir() / "out" / "notes.txt", "not a table");
  check_output_directory(dir() / "out", "--out-dir", ExistingTable::Refuse, "--overwrite");  // other files are fine
  for (const char* f : {"a.npy", "b.npy", "c.npy", "d.npy"}) write_file_bytes(dir() / "out" / f, "x");
  expect_input_error([&] { check_output_directory(dir() / "out", "--out-dir", ExistingTable::Refuse, "--overwrite"); },
                     dir() / "out", "already holds a table (a.npy, b.npy, c.npy, ...): pass --overwrite to replace it");
  check_output_directory(dir() / "out", "--out-dir", ExistingTable::Replace, "--overwrite");
}

TEST_F(BadInput, CommitAllRemovesWhatItWasToldIsStaleOnlyWhenEveryFileIsInPlace) {
  write_file_bytes(dir() / "a.npy", "old a");
  write_file_bytes(dir() / "old.npy", "old column");
  write_file_bytes(dir() / "manifest.json", "{}");  // part-3 is a part beside it
  fs::create_directory(dir() / "part-3");
  write_file_bytes(dir() / "part-3" / "a.npy", "old part");
  {  // a failed commit: the stale files stay, and so does the replaced one
    std::vector<StagedColumnFile> files;
    files.push_back(stage_column(dir() / "a.npy", kView));
    files.emplace_back(dir() / "b.npy", dir() / ".b.npy.tmp-vanished");
    const std::vector<fs::path> stale = table_files_in(dir());
    expect_input_error([&] { commit_all(files, stale); }, dir() / "b.npy", "cannot rename");
  }
  auto names = entries();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.npy", "manifest.json", "old.npy", "part-3"}));
  EXPECT_TRUE(fs::exists(dir() / "part-3" / "a.npy"));
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir() / "a.npy", kView));
  files.push_back(stage_column(dir() / "b.npy", kView));
  commit_all(files, table_files_in(dir()));
  names = entries();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.npy", "b.npy"})) << "the old table is gone whole, backups too";
  EXPECT_EQ(read_column(dir() / "a.npy").size(), 3);
}

}  // namespace
}  // namespace mgjoin::test
