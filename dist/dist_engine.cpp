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
}

Engine::Engine(MPI_Comm comm, ncclComm_t nccl) : comm_(comm), nccl_(NcclRows::adopt(Comm(comm), nccl)) {}

Engine::~Engine() = default;

DistributedResult Engine::join(RelationView r, RelationView s, const JoinOptions& options) const {
  return join_ranks(r, s, options, Comm(comm_), nccl_.get());
}

DistributedTableResult Engine::join_tables(const TableView& left, const TableView& right,
                                           const TableJoinOptions& options) const {
  return join_tables_ranks(left, right, options, Comm(comm_), nccl_.get());
}

}  // namespace mgjoin::dist
