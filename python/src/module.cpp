// mgjoin._mgjoin: the extension module of the Python package. Engine errors become Python exceptions
// carrying the engine's message: InputError -> ValueError, CudaError -> mgjoin.GpuError (a
// RuntimeError), OutOfMemory -> MemoryError, Cancelled -> KeyboardInterrupt, any other mgjoin::Error
// -> RuntimeError.
#include "bindings.hpp"

#include <mgjoin/error.hpp>

#include <exception>

namespace nb = nanobind;

NB_MODULE(_mgjoin, m) {
  m.doc() = "mgjoin's extension module: joins of NumPy columns; use the mgjoin package instead.";

  // GpuError lives here so that the translator below can raise it; mgjoin/__init__.py re-exports it.
  // Never freed: the translator may run until the interpreter is gone.
  static PyObject* const gpu_error = PyErr_NewExceptionWithDoc(
      "mgjoin.GpuError", "A CUDA (or NCCL) call failed; the message names the call, `code` is its cudaError_t.",
      PyExc_RuntimeError, nullptr);
  if (!gpu_error) throw nb::python_error();
  m.attr("GpuError") = nb::handle(gpu_error);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const mgjoin::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const mgjoin::CudaError& e) {
      nb::object error = nb::handle(gpu_error)(e.what());
      error.attr("code") = static_cast<int>(e.code());
      PyErr_SetObject(gpu_error, error.ptr());
    } catch (const mgjoin::OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const mgjoin::Cancelled& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const mgjoin::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }  // anything else goes on to nanobind's own translators
  });

  mgjoin::python::bind_join(m);
  mgjoin::python::bind_machine(m);
}
