// dist::Engine (<mgjoin/distributed.hpp>): the free functions' joins over the exchange it was made with.
#include <mgjoin/distributed.hpp>

#include "dist/collectives.hpp"
#include "dist/nccl_rows.hpp"

namespace mgjoin::dist {

using namespace detail;

Engine::Engine(MPI_Comm comm, RankExchange exchange) : comm_(comm) {
  if (exchange == RankExchange::Mpi) return;
  const Comm c(comm);
  const NodePlace place = node_place(c);
  if (exchange == RankExchange::Auto) {
    int mine = 1;
    try {
      default_rank_gpu(place);
    } catch (const InputError&) {
      mine = 0;
    }
    int every = 0;
    MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, c.comm);
    if (!every) return;
  }
  const int device = agreed(c, [&] { return default_rank_gpu(place); });
  nccl_ = NcclRows::create(c, device);
  nccl_->connect(c);
  local_for(JoinOptions{});  // NCCL's own buffers first, then the engine takes its share of the GPU
}

Engine::Engine(MPI_Comm comm, ncclComm_t nccl) : comm_(comm), nccl_(NcclRows::adopt(Comm(comm), nccl)) {
  nccl_->connect(Comm(comm));
  local_for(JoinOptions{});
}

mgjoin::Engine* Engine::local_for(const JoinOptions& options) const {
  if (!nccl_) return nullptr;
  const Comm c(comm_);
  const NodePlace place = node_place(c);
  return agreed(c, [&]() -> mgjoin::Engine* {
    const JoinOptions rank = options_for_rank(options, place);
    if (rank.gpu_ids.empty()) return nullptr;  // the CPU path
    // What the engine is made from: the GPUs by id (`gpus` then says nothing more), memory, tuning file.
    EngineOptions wanted = rank;
    wanted.gpus = EngineOptions{}.gpus;
    if (!local_ || !(local_options_ == wanted)) {
      local_.reset();  // its memory back before the next one takes its share
      local_ = std::make_unique<mgjoin::Engine>(wanted);
      local_options_ = wanted;
    }
    return local_.get();
  });
}

Engine::~Engine() = default;

DistributedResult Engine::join(RelationView r, RelationView s, const JoinOptions& options) const {
  mgjoin::Engine* local = local_for(options);
  return join_ranks(r, s, options, Comm(comm_), nccl_.get(), local);
}

DistributedTableResult Engine::join_tables(const TableView& left, const TableView& right,
                                           const TableJoinOptions& options) const {
  mgjoin::Engine* local = local_for(options.join);
  return join_tables_ranks(left, right, options, Comm(comm_), nccl_.get(), local);
}

}  // namespace mgjoin::dist
