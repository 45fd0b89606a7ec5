// Store handlers: the key-value stores Gloo's rendezvous exchanges addresses
// through. FileStoreHandlerCreate uses a directory every rank can see (one
// host, or a shared file system); RedisStoreHandlerCreate a Redis server.
// Each writes a GlooStoreHandler blob that CreateCommonWorld reads.
#pragma once

#include <string>

#include "core/operator.h"

namespace doppio {

class FileStoreHandlerCreateOp final : public Operator<CPUContext> {
 public:
  FileStoreHandlerCreateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::string path_;
  std::string prefix_;
};

class RedisStoreHandlerCreateOp final : public Operator<CPUContext> {
 public:
  RedisStoreHandlerCreateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::string host_;
  int port_;
  std::string prefix_;
};

}  // namespace doppio
