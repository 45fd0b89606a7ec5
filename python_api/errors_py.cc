// doppio._C's exceptions: each kind of doppio::Error (core/enforce.h) raises
// its Python type. Every type is also a RuntimeError, the one type Caffe2
// raised for all of them, so code written for Caffe2 keeps catching them:
//
//   InvalidArgumentError  doppio._C.InvalidArgumentError(ValueError, RuntimeError)
//   IndexError            doppio._C.OutOfRangeError(IndexError, RuntimeError)
//   NotFoundError         doppio._C.NotFoundError(LookupError, RuntimeError)
//   NotImplementedError   NotImplementedError (a RuntimeError already)
//   any other Error       RuntimeError
#include <Python.h>

#include "core/enforce.h"
#include "python_api/bindings.h"

namespace doppio {
namespace python {
namespace {

// A new exception class `module.name` deriving from both bases; the module
// keeps the reference.
PyObject* NewDualException(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("doppio._C.") + name;
  py::tuple bases = py::make_tuple(py::handle(base), py::handle(PyExc_RuntimeError));
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void DefineErrors(py::module_& m) {
  // Module-lifetime references: the translator below may run at any time.
  static PyObject* invalid_argument = NewDualException(
      m, "InvalidArgumentError", PyExc_ValueError,
      "A value passed to Doppio (an option, an op argument, a shape) is invalid.");
  static PyObject* out_of_range = NewDualException(
      m, "OutOfRangeError", PyExc_IndexError, "An index is out of its range.");
  static PyObject* not_found = NewDualException(
      m, "NotFoundError", PyExc_LookupError,
      "A name that must exist (a blob, an op type, a net) does not.");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const InvalidArgumentError& error) {
      PyErr_SetString(invalid_argument, error.what());
    } catch (const IndexError& error) {
      PyErr_SetString(out_of_range, error.what());
    } catch (const NotFoundError& error) {
      PyErr_SetString(not_found, error.what());
    } catch (const NotImplementedError& error) {
      PyErr_SetString(PyExc_NotImplementedError, error.what());
    } catch (const Error& error) {
      PyErr_SetString(PyExc_RuntimeError, error.what());
    }
  });
}

}  // namespace python
}  // namespace doppio
