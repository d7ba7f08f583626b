#pragma once
// The parts of the extension module mgjoin._mgjoin (module.cpp registers them). The module is thin:
// it takes and returns NumPy arrays (zero-copy both ways) and plain values; python/mgjoin/ converts
// Arrow tables and pandas DataFrames and builds the results users see.
#include <nanobind/nanobind.h>

namespace mgjoin::python {

/// join_tables(left, right, ...): see join.cpp and python/mgjoin/_mgjoin.pyi.
void bind_join(nanobind::module_& m);
/// topology_json(), parse_byte_size(): see machine.cpp.
void bind_machine(nanobind::module_& m);

}  // namespace mgjoin::python
