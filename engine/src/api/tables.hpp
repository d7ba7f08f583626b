#pragma once
// The engine's internal API for joins of tables across MPI ranks (dist/): the tables' checks and their
// packed sort key (table/table_keys.hpp), as join_tables() makes them.
#include "engine/src/table/table_keys.hpp"
