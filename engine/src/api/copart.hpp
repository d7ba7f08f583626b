#pragma once
// The engine's internal API for joins across MPI ranks (dist/): the co-partitioned flow's plan with
// ranks as its destinations (the key sample, the splitters, the partition kernel and its arguments, key
// order), and the one-GPU flow a rank runs on the rows it received (plan_copart, run_copart on the
// rank's engine's stacks: engine_resources.hpp). dist/ includes the engine's internals only through
// this folder (tests/layering).
#include "engine/src/copart/copart_kernels.hpp"
#include "engine/src/copart/copart_plan.hpp"
#include "engine/src/copart/partition_plan.hpp"
#include "engine/src/copart/splitters.hpp"
#include "engine/src/exec/chunk_slot.hpp"
#include "engine/src/exec/key_order.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
