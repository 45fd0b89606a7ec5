#include "parallel/gloo/store_handler_ops.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>

#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/redis_store.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

FileStoreHandlerCreateOp::FileStoreHandlerCreateOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      path_(GetSingleArgument<std::string>("path", "")),
      prefix_(GetSingleArgument<std::string>("prefix", "")) {
  DOPPIO_ENFORCE(!path_.empty(), "argument 'path' (the rendezvous directory) is required");
}

void FileStoreHandlerCreateOp::RunOnDevice() {
  // Gloo's FileStore writes into the directory but does not create it; a
  // missing one would surface later as a rendezvous timeout, far from the
  // cause.
  if (::mkdir(path_.c_str(), 0777) != 0 && errno != EEXIST) {
    DOPPIO_THROW("cannot create rendezvous directory '", path_, "': ", std::strerror(errno));
  }
  struct stat info;
  DOPPIO_ENFORCE(::stat(path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode), "rendezvous path '",
                 path_, "' is not a directory");
  std::unique_ptr<gloo::rendezvous::Store> store;
  try {
    store = std::make_unique<gloo::rendezvous::FileStore>(path_);
  } catch (const std::exception& error) {
    DOPPIO_THROW("cannot open file store '", path_, "': ", error.what());
  }
  OutputBlob(0)->Reset(std::make_unique<GlooStoreHandler>(std::move(store), prefix_,
                                                          "file store '" + path_ + "'"));
}

RedisStoreHandlerCreateOp::RedisStoreHandlerCreateOp(const OperatorDef& def,
                                                     Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      host_(GetSingleArgument<std::string>("host", "")),
      port_(GetSingleArgument<int>("port", 0)),
      prefix_(GetSingleArgument<std::string>("prefix", "")) {
  DOPPIO_ENFORCE(!host_.empty(), "argument 'host' is required");
  DOPPIO_ENFORCE(port_ > 0 && port_ < 65536, "argument 'port' must be a TCP port (1..65535), got ",
                 port_);
}

void RedisStoreHandlerCreateOp::RunOnDevice() {
  const std::string where = host_ + ":" + std::to_string(port_);
  std::unique_ptr<gloo::rendezvous::Store> store;
  try {
    // Connects at once (Gloo gives it a 2 s connect timeout), so an
    // unreachable server is reported here rather than at rendezvous.
    store = std::make_unique<gloo::rendezvous::RedisStore>(host_, port_);
  } catch (const std::exception& error) {
    DOPPIO_THROW("cannot connect to Redis at ", where, ": ", error.what());
  }
  OutputBlob(0)->Reset(std::make_unique<GlooStoreHandler>(std::move(store), prefix_,
                                                          "Redis store at " + where));
}

REGISTER_CPU_OPERATOR(FileStoreHandlerCreate, FileStoreHandlerCreateOp);
REGISTER_CPU_OPERATOR(RedisStoreHandlerCreate, RedisStoreHandlerCreateOp);

OPERATOR_SCHEMA(FileStoreHandlerCreate)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("path", "(string, required) directory the ranks rendezvous in; created if missing")
    .Arg("prefix", "(string, default \"\") prefix of every key, to share one directory "
                   "between independent runs")
    .Output(0, "handler", "a store handler for CreateCommonWorld")
    .Doc("Creates a file-based store handler: keys are files under `path`, so every rank "
         "must see the same directory (one host, or a shared file system).");

OPERATOR_SCHEMA(RedisStoreHandlerCreate)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("host", "(string, required) Redis server host name or address")
    .Arg("port", "(int, required) Redis server port")
    .Arg("prefix", "(string, default \"\") prefix of every key, to share one server "
                   "between independent runs")
    .Output(0, "handler", "a store handler for CreateCommonWorld")
    .Doc("Creates a store handler backed by a Redis server, connecting at once; an "
         "unreachable server is an error naming host:port.");

SHOULD_NOT_DO_GRADIENT(FileStoreHandlerCreate, "it creates a rendezvous store, not a tensor");
SHOULD_NOT_DO_GRADIENT(RedisStoreHandlerCreate, "it creates a rendezvous store, not a tensor");

}  // namespace doppio
