// Caffe2's Python DB handles (workspace.C.create_db, C.Mode): a DB opened
// by type and path, its transactions (put, commit; committed when dropped,
// as in Caffe2) and cursors (key, value, next, valid, seek_to_first, seek).
//
// Ownership: a Transaction or Cursor handle keeps its DB handle alive
// (py::keep_alive), and closing a DB is refused while any of them lives,
// so no handle ever points into a closed DB. Errors name the DB's path.
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "core/db.h"
#include "core/enforce.h"

namespace py = pybind11;

namespace doppio {
namespace python {

namespace {

class PyDB {
 public:
  PyDB(const std::string& type, const std::string& path, db::Mode mode)
      : db_(db::OpenDB(type, path, mode)), path_(path) {}

  db::DB* Get() {
    DOPPIO_ENFORCE(db_ != nullptr, "DB '", path_, "' is closed");
    return db_.get();
  }
  void Close() {
    if (db_ == nullptr) return;
    DOPPIO_ENFORCE(open_handles_ == 0, "cannot close DB '", path_, "': ", open_handles_,
                   " cursor(s) or transaction(s) still use it; delete them first");
    db_->Close();
    db_.reset();
  }
  void Acquire() { ++open_handles_; }
  void Release() { --open_handles_; }

 private:
  std::unique_ptr<db::DB> db_;
  std::string path_;
  int open_handles_ = 0;
};

class PyTransaction {
 public:
  explicit PyTransaction(PyDB* db) : db_(db), transaction_(db->Get()->NewTransaction()) {
    db_->Acquire();
  }
  ~PyTransaction() {
    // Caffe2 commits what was put when the transaction goes away; a failure
    // here cannot be raised, so commit() is the way to see errors.
    try {
      transaction_->Commit();
    } catch (...) {
    }
    transaction_.reset();
    db_->Release();
  }
  void Put(const py::bytes& key, const py::bytes& value) {
    transaction_->Put(std::string(key), std::string(value));
  }
  void Commit() { transaction_->Commit(); }

 private:
  PyDB* db_;
  std::unique_ptr<db::Transaction> transaction_;
};

class PyCursor {
 public:
  explicit PyCursor(PyDB* db) : db_(db), cursor_(db->Get()->NewCursor()) { db_->Acquire(); }
  ~PyCursor() {
    cursor_.reset();
    db_->Release();
  }
  db::Cursor* Get() { return cursor_.get(); }
  void EnforceValid() { DOPPIO_ENFORCE(cursor_->Valid(), "the cursor is past the last record"); }

 private:
  PyDB* db_;
  std::unique_ptr<db::Cursor> cursor_;
};

}  // namespace

void DefineDB(py::module_& m) {
  py::enum_<db::Mode>(m, "Mode")
      .value("read", db::READ)
      .value("write", db::WRITE)
      .value("new", db::NEW)
      .export_values();
  py::class_<PyTransaction>(m, "Transaction")
      .def("put", &PyTransaction::Put, py::arg("key"), py::arg("value"))
      .def("commit", &PyTransaction::Commit);
  py::class_<PyCursor>(m, "Cursor")
      .def("supports_seek", [](PyCursor& c) { return c.Get()->SupportsSeek(); })
      .def("seek_to_first", [](PyCursor& c) { c.Get()->SeekToFirst(); })
      .def("seek", [](PyCursor& c, const py::bytes& key) { c.Get()->Seek(std::string(key)); })
      .def("next",
           [](PyCursor& c) {
             c.EnforceValid();
             c.Get()->Next();
           })
      .def("key",
           [](PyCursor& c) {
             c.EnforceValid();
             return py::bytes(c.Get()->key());
           })
      .def("value",
           [](PyCursor& c) {
             c.EnforceValid();
             return py::bytes(c.Get()->value());
           })
      .def("valid", [](PyCursor& c) { return c.Get()->Valid(); });
  py::class_<PyDB>(m, "DB")
      .def(
          "new_transaction", [](PyDB& d) { return std::make_unique<PyTransaction>(&d); },
          py::keep_alive<0, 1>())
      .def(
          "new_cursor", [](PyDB& d) { return std::make_unique<PyCursor>(&d); },
          py::keep_alive<0, 1>())
      .def("close", &PyDB::Close);
  m.def(
      "create_db",
      [](const std::string& type, const std::string& path, db::Mode mode) {
        return std::make_unique<PyDB>(type, path, mode);
      },
      py::arg("db_type"), py::arg("db_name"), py::arg("mode"));
}

}  // namespace python
}  // namespace doppio
