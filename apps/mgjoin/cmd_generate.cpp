// `mgjoin generate`: writes the paper's workload A or B (Table 2) as four .npy column files.
#include "cli_options.hpp"
#include "commands.hpp"
#include "interrupt.hpp"

#include "core/timing.hpp"

#include <mgjoin/generate.hpp>
#include <mgjoin/io.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

namespace mgjoin::cli {
namespace {

struct GenerateArgs {
  WorkloadOptions workload;
  std::string out_dir;
  bool overwrite = false, quiet = false;
};

using timing::seconds_since;

void run_generate(GenerateArgs& args) {
  install_interrupt_handler();
  const WorkloadSpec& spec = args.workload.finish();
  const WorkloadShape shape = workload_shape(spec);
  const std::filesystem::path dir = args.out_dir;
  // As `join`'s --out-dir: a directory that holds a table is refused unless --overwrite, which replaces
  // that table whole when the new one is committed. Checked before spending time generating.
  check_output_directory(dir, "--out-dir", args.overwrite ? ExistingTable::Replace : ExistingTable::Refuse,
                         "--overwrite");

  const auto t0 = std::chrono::steady_clock::now();
  ProgressBar bar(progress_wanted(args.quiet));
  GeneratedWorkload w = args.workload.generate(MemoryKind::Pageable, bar.callback());
  bar.clear();
  const double gen_s = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  prepare_output_directory(dir, "--out-dir");
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir / "r_key.npy", w.r.key.view()));
  files.push_back(stage_column(dir / "r_payload.npy", w.r.payload->view()));
  files.push_back(stage_column(dir / "s_key.npy", w.s.key.view()));
  files.push_back(stage_column(dir / "s_payload.npy", w.s.payload->view()));
  throw_if_interrupted();  // the staged files are removed as they go out of scope
  commit_all(files, args.overwrite ? table_files_in(dir) : std::vector<std::filesystem::path>{});
  const double write_s = seconds_since(t1);

  if (args.quiet) return;
  const double gb = static_cast<double>(shape.bytes()) / 1e9;
  std::fprintf(stderr,
               "mgjoin: workload %s scale %g: |R| = %lld, |S| = %lld (%s keys and payloads), %.3f GB: "
               "generated in %.3f s (%.2f GB/s), written to %s in %.3f s\n",
               args.workload.workload.c_str(), spec.scale, static_cast<long long>(shape.r_rows),
               static_cast<long long>(shape.s_rows), std::string(dtype_name(shape.key_type)).c_str(), gb, gen_s,
               gen_s > 0 ? gb / gen_s : 0.0, dir.c_str(), write_s);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "generate workload A or B of the paper as .npy files");
  auto args = std::make_shared<GenerateArgs>();
  args->workload.add_to(*cmd);
  cmd->add_option("--out-dir", args->out_dir,
                  "directory for r_key.npy r_payload.npy s_key.npy s_payload.npy (created if missing; refused if it "
                  "holds a table, unless --overwrite)")
      ->required();
  cmd->add_flag("--overwrite", args->overwrite,
                "replace the table (.npy files, or manifest.json and part-N folders) already in --out-dir");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress bar and no summary line on stderr");
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace mgjoin::cli
