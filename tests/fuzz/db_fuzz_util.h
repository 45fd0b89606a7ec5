// What the minidb and lmdb targets do with a db made of fuzz bytes: read it
// through every reader the framework has.
#pragma once

#include <string>

#include "core/db.h"
#include "core/serialization.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace fuzz {

// Walks every record with a raw cursor, then with a sharded DBReader (which
// wraps around at the end), then loads everything with the Load op. Errors
// are the expected outcome for most inputs; anything else is a finding.
inline void ReadDBEveryWay(const std::string& db_type, const std::string& path) {
  try {
    std::unique_ptr<db::DB> in = db::OpenDB(db_type, path, db::READ);
    std::unique_ptr<db::Cursor> cursor = in->NewCursor();
    for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
      cursor->key();
      cursor->value();
    }
  } catch (const Error&) {
    return;
  }
  try {
    db::DBReader reader(db_type, path, /*num_shards=*/2, /*shard_id=*/1);
    std::string key, value;
    for (int i = 0; i < 4; ++i) reader.Read(&key, &value);
  } catch (const Error&) {
  }

  Workspace workspace;
  OperatorDef load;
  load.set_type("Load");
  auto add_arg = [&load](const std::string& name) {
    Argument* arg = load.add_arg();
    arg->set_name(name);
    return arg;
  };
  add_arg("db")->set_s(path);
  add_arg("db_type")->set_s(db_type);
  add_arg("load_all")->set_i(1);
  // The scratch path is outside the workspace's root folder.
  add_arg("absolute_path")->set_i(1);
  try {
    workspace.RunOperatorOnce(load);
  } catch (const Error&) {
    return;
  }
  // Every tensor that loaded must save again; an Error escaping here is a
  // finding.
  for (const std::string& name : workspace.Blobs()) {
    const Blob* blob = workspace.GetBlob(name);
    if (blob->IsTensor()) {
      SerializeBlob(*blob, name, [](const std::string&, const std::string&) {});
    }
  }
}

}  // namespace fuzz
}  // namespace doppio
