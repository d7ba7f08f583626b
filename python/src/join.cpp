// join_tables(): mgjoin::join_tables over NumPy columns. Inputs are viewed in place (nanobind ndarrays:
// the buffer protocol or DLPack, never a copy), the join runs on a worker thread with the GIL released,
// and each result column comes back as a NumPy array that owns its HostColumn (a capsule frees it).
//
// The calling thread waits in 100 ms slices; between them it takes the GIL to run Python's signal
// handlers (Ctrl-C: the join is cancelled at its next cancellation point and KeyboardInterrupt raised)
// and to hand the latest progress report to the Python callback. Python is never called from the
// worker thread.
#include "bindings.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace mgjoin::python {
namespace {

/// A caller's column as nanobind sees it: host memory, read-only allowed (pyarrow's zero-copy views are).
using InputArray = nb::ndarray<nb::ro, nb::device::cpu>;

std::optional<DType> dtype_of(nb::dlpack::dtype t) {
  using Code = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<Code>(t.code)) {
    case Code::Int:
      switch (t.bits) {
        case 8: return DType::Int8;
        case 16: return DType::Int16;
        case 32: return DType::Int32;
        case 64: return DType::Int64;
      }
      break;
    case Code::UInt:
      switch (t.bits) {
        case 8: return DType::UInt8;
        case 16: return DType::UInt16;
        case 32: return DType::UInt32;
        case 64: return DType::UInt64;
      }
      break;
    case Code::Float:
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      break;
    case Code::Bool:
      if (t.bits == 8) return DType::Bool;
      break;
    default: break;
  }
  return std::nullopt;
}

nb::dlpack::dtype dlpack_of(DType t) {
  using Code = nb::dlpack::dtype_code;
  const auto bits = static_cast<std::uint8_t>(dtype_size(t) * 8);
  const Code code = t == DType::Bool                               ? Code::Bool
                    : t == DType::Float32 || t == DType::Float64   ? Code::Float
                    : is_signed_key(t)                             ? Code::Int
                                                                   : Code::UInt;
  return {static_cast<std::uint8_t>(code), bits, 1};
}

/// A table's columns viewed in place; `arrays` keeps the callers' buffers alive for the join.
struct InputTable {
  std::vector<InputArray> arrays;
  TableView view;
};

InputTable input_table(const nb::dict& columns, const char* side) {
  InputTable t;
  for (auto [key, value] : columns) {
    const std::string name = nb::cast<std::string>(key);
    const std::string what = std::string(side) + " column '" + name + "'";
    InputArray a;
    if (!nb::try_cast(value, a, /*convert=*/false))
      throw InputError(what + ": not a NumPy array in host memory (or of an unsupported type)");
    MGJOIN_INPUT_EXPECTS(a.ndim() == 1, what + ": has " + std::to_string(a.ndim()) + " dimensions, expected 1");
    MGJOIN_INPUT_EXPECTS(a.shape(0) <= 1 || a.stride(0) == 1,
                         what + ": not contiguous (a strided view); pass numpy.ascontiguousarray(...)");
    const auto type = dtype_of(a.dtype());
    MGJOIN_INPUT_EXPECTS(type.has_value(), what + ": unsupported element type (expected int8 ... int64, uint8 ... "
                                                  "uint64, float32, float64 or bool)");
    t.view.columns.push_back({name, ColumnView{a.data(), static_cast<std::int64_t>(a.shape(0)), *type}});
    t.arrays.push_back(std::move(a));
  }
  return t;
}

TableOutput output_of(const std::string& output) {
  if (output == "columns") return TableOutput::Columns;
  if (output == "maps") return TableOutput::GatherMaps;
  MGJOIN_INPUT_EXPECTS(output == "count", "output '" + output + "': expected columns, maps or count");
  return TableOutput::Count;
}

JoinStrategy strategy_of(const std::string& strategy) { return parse_join_strategy(strategy, "strategy '" + strategy + "'"); }

/// An owning NumPy array over a result column: the capsule frees the HostColumn with the array.
nb::object numpy_of(HostColumn&& column) {
  static std::max_align_t empty;  // an empty column may have no buffer; numpy wants an address anyway
  auto* owned = new HostColumn(std::move(column));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<HostColumn*>(p); });
  const std::size_t shape[1] = {static_cast<std::size_t>(owned->size())};
  void* data = owned->data() ? owned->data() : &empty;
  return nb::cast(nb::ndarray<nb::numpy>(data, 1, shape, owner, nullptr, dlpack_of(owned->type())));
}

/// The latest progress report of the join thread, for the waiting thread to show.
struct ProgressSlot {
  std::mutex mutex;
  std::string phase;
  double fraction = 0;
  bool fresh = false;
};

/// MGJOIN_TEST_SIGINT_AT=PHASE: the process sends itself SIGINT (as a terminal's Ctrl-C does) when the
/// join first reports PHASE and waits (at most 10 s) until the waiting thread has turned it into the
/// join's cancellation, so that tests interrupt a join at a reproducible moment however fast the machine
/// (the CLI's hook does the same).
ProgressCallback progress_into(ProgressSlot& slot, const std::atomic<bool>& cancel) {
  const char* at = std::getenv("MGJOIN_TEST_SIGINT_AT");
  auto sigint_at = std::make_shared<std::string>(at ? at : "");
  return [&slot, &cancel, sigint_at](const std::string& phase, double fraction) {
    {
      const std::lock_guard lock(slot.mutex);
      slot.phase = phase;
      slot.fraction = fraction;
      slot.fresh = true;
    }
    if (!sigint_at->empty() && phase == *sigint_at) {
      sigint_at->clear();
      ::kill(::getpid(), SIGINT);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!cancel.load() && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
}

/// Hands a fresh report to `callback` (GIL held).
void show_progress(ProgressSlot& slot, const nb::object& callback) {
  std::string phase;
  double fraction = 0;
  {
    const std::lock_guard lock(slot.mutex);
    if (!slot.fresh) return;
    slot.fresh = false;
    phase = slot.phase;
    fraction = slot.fraction;
  }
  if (!callback.is_none()) callback(phase, fraction);
}

/// An Engine for repeated joins (mgjoin.Engine): its device memory, peers and pinned buffers are taken
/// once. One join at a time (its stacks serve one join); close() gives the GPUs' memory back.
class EngineHandle {
 public:
  EngineHandle(int gpus, const std::vector<int>& gpu_ids, std::uint64_t gpu_memory_limit, const std::string& tuning_file) {
    options_.gpus = gpus;
    options_.gpu_ids = gpu_ids;
    options_.gpu_memory_limit = gpu_memory_limit;
    options_.tuning_file = tuning_file;
    nb::gil_scoped_release no_gil;  // taking the GPUs' memory takes a second or so
    engine_ = std::make_unique<Engine>(options_);
  }

  Engine& engine() {
    MGJOIN_INPUT_EXPECTS(engine_ != nullptr, "engine: it was closed");
    return *engine_;
  }
  std::mutex& mutex() { return mutex_; }
  const EngineOptions& options() const { return options_; }
  std::vector<int> devices() { return engine().devices(); }
  std::uint64_t device_bytes() { return engine().device_bytes(); }
  void close() {
    const std::lock_guard lock(mutex_);
    nb::gil_scoped_release no_gil;
    engine_.reset();
  }

 private:
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  std::mutex mutex_;
};

/// Runs join_tables on a worker thread while this one serves signals and progress (see the top).
/// Returns nullopt when a Python exception is pending (KeyboardInterrupt, or the progress callback's).
std::optional<TableJoinResult> run_interruptibly(const TableView& left, const TableView& right,
                                                 TableJoinOptions options, const nb::object& progress,
                                                 EngineHandle* engine) {
  std::atomic<bool> cancel{false};
  ProgressSlot slot;
  options.join.cancel = &cancel;
  options.join.progress = progress_into(slot, cancel);

  std::optional<TableJoinResult> result;
  std::exception_ptr error;
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
  bool python_error = false;
  {
    nb::gil_scoped_release no_gil;
    std::thread worker([&] {
      try {
        if (engine) {
          const std::lock_guard lock(engine->mutex());
          result.emplace(join_tables(engine->engine(), left, right, options));
        } else {
          result.emplace(join_tables(left, right, options));
        }
      } catch (...) {
        error = std::current_exception();
      }
      const std::lock_guard lock(done_mutex);
      done = true;
      done_cv.notify_all();
    });
    for (bool finished = false; !finished && !python_error;) {
      {
        std::unique_lock lock(done_mutex);
        finished = done_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; });
      }
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        python_error = true;
        break;
      }
      try {
        show_progress(slot, progress);
      } catch (nb::python_error& e) {
        e.restore();
        python_error = true;
      }
    }
    if (python_error) cancel.store(true);
    worker.join();
  }
  if (python_error) return std::nullopt;  // the join's Cancelled (or result) is dropped for it
  if (error) std::rethrow_exception(error);
  show_progress(slot, progress);  // the last report ("materialize" 1.0)
  return result;
}

nb::dict result_dict(TableJoinResult&& res, TableOutput output, JoinKind how) {
  nb::dict d;
  d["count"] = res.count;
  nb::list columns;
  for (NamedColumn& c : res.columns) columns.append(nb::make_tuple(c.name, numpy_of(std::move(c.column))));
  d["columns"] = columns;
  const bool maps = output == TableOutput::GatherMaps;
  d["left_rows"] = maps ? numpy_of(std::move(res.left_rows)) : nb::none();
  d["right_rows"] = maps && outputs_right_columns(how) ? numpy_of(std::move(res.right_rows)) : nb::none();
  d["materialization"] = res.materialization;
  d["gathers"] = res.gathers;
  d["seconds"] = res.seconds;
  d["join_seconds"] = res.join.seconds;
  d["executor"] = res.join.executor;
  d["strategy"] = strategy_name(res.join.strategy);
  d["strategy_reason"] = res.join.strategy_reason;
  d["peak_host_bytes"] = res.join.peak_host_bytes;
  nb::list phases;
  for (const PhaseStat& p : res.join.phases) {
    nb::dict phase;
    phase["name"] = p.name;
    phase["seconds"] = p.seconds;
    phase["bytes_pcie"] = p.bytes_pcie;
    phase["bytes_nvlink"] = p.bytes_nvlink;
    phases.append(phase);
  }
  d["phases"] = phases;
  return d;
}

nb::object join_tables_py(const nb::dict& left, const nb::dict& right, const std::vector<std::string>& left_on,
                          const std::vector<std::string>& right_on, const std::string& how, const std::string& output,
                          const std::optional<std::vector<std::string>>& left_columns,
                          const std::optional<std::vector<std::string>>& right_columns, int gpus,
                          const std::vector<int>& gpu_ids, std::uint64_t gpu_memory_limit, const std::string& strategy,
                          const std::string& gather_on, const std::string& tuning_file, const nb::object& progress,
                          EngineHandle* engine) {
  const InputTable l = input_table(left, "left"), r = input_table(right, "right");
  TableJoinOptions o;
  o.left_on = left_on;
  o.right_on = right_on;
  o.how = require_join_kind(how, "how '" + how + "'");
  o.output = output_of(output);
  o.left_columns = left_columns;
  o.right_columns = right_columns;
  o.may_reorder_inputs = false;  // the caller's arrays are never modified
  o.gather_on = require_gather_on(gather_on, "gather_on '" + gather_on + "'");
  MGJOIN_INPUT_EXPECTS(gpus >= -1, "gpus " + std::to_string(gpus) + ": expected None (all), 0 (CPU) or a GPU count");
  for (const int id : gpu_ids) MGJOIN_INPUT_EXPECTS(id >= 0, "gpus: GPU id " + std::to_string(id) + " is negative");
  if (engine) {
    // The engine's GPUs and memory: a join cannot ask for others (Engine::join refuses them).
    static_cast<EngineOptions&>(o.join) = engine->options();
  } else {
    o.join.gpus = gpus;
    o.join.gpu_ids = gpu_ids;
    o.join.gpu_memory_limit = gpu_memory_limit;
    o.join.tuning_file = tuning_file;
  }
  o.join.strategy = strategy_of(strategy);
  o.join.sort = SortStrategy::FromTuning;

  const JoinKind how_kind = o.how;
  std::optional<TableJoinResult> res = run_interruptibly(l.view, r.view, std::move(o), progress, engine);
  if (!res) throw nb::python_error();
  // A signal that came as the join finished still stops the caller, before the result is built.
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
  return result_dict(std::move(*res), output_of(output), how_kind);
}

}  // namespace

void bind_join(nb::module_& m) {
  m.def("join_tables", &join_tables_py, nb::arg("left"), nb::arg("right"), nb::kw_only(), nb::arg("left_on"),
        nb::arg("right_on"), nb::arg("how") = "inner", nb::arg("output") = "columns",
        nb::arg("left_columns") = nb::none(), nb::arg("right_columns") = nb::none(), nb::arg("gpus") = -1,
        nb::arg("gpu_ids") = std::vector<int>{}, nb::arg("gpu_memory_limit") = 0, nb::arg("strategy") = "auto",
        nb::arg("gather_on") = "auto", nb::arg("tuning_file") = "", nb::arg("progress") = nb::none(), nb::arg("engine").none() = nb::none(),
        "Joins two tables given as dicts of 1-D C-contiguous NumPy arrays (mgjoin::join_tables). Returns a dict:\n"
        "count, columns ([(name, array)], output='columns'), left_rows/right_rows (int64 arrays,\n"
        "output='maps'), executor, strategy, strategy_reason, materialization, gathers, seconds, join_seconds,\n"
        "peak_host_bytes, phases. `progress(phase, fraction)` is called from this thread. With `engine`, the\n"
        "join runs on that Engine (its GPUs and memory; gpus, gpu_ids, gpu_memory_limit, tuning_file unused).");
  nb::class_<EngineHandle>(m, "Engine",
                           "GPUs and their memory taken once for repeated joins (mgjoin::Engine); one join at a time.")
      .def(nb::init<int, const std::vector<int>&, std::uint64_t, const std::string&>(), nb::arg("gpus") = -1,
           nb::arg("gpu_ids") = std::vector<int>{}, nb::arg("gpu_memory_limit") = 0, nb::arg("tuning_file") = "")
      .def_prop_ro("devices", &EngineHandle::devices, "CUDA device ids of the engine's GPU set")
      .def_prop_ro("device_bytes", &EngineHandle::device_bytes, "device memory per GPU the engine holds")
      .def("close", &EngineHandle::close, "gives the GPUs' memory back; the engine cannot join after");
}

}  // namespace mgjoin::python
