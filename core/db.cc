#include "core/db.h"

#include <map>

#include "core/enforce.h"
#include "core/serialization.h"

namespace doppio {
namespace db {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, DBCreator>& Registry() {
  static auto* registry = new std::map<std::string, DBCreator>();
  return *registry;
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case READ: return "reading";
    case WRITE: return "writing";
    case NEW: return "creation";
  }
  return "an unknown mode";
}

}  // namespace

void RegisterDBType(const std::string& type, DBCreator creator) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[type] = std::move(creator);
}

std::vector<std::string> RegisteredDBTypes() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> types;
  for (const auto& entry : Registry()) types.push_back(entry.first);
  return types;
}

std::unique_ptr<DB> OpenDB(const std::string& type, const std::string& path, Mode mode) {
  DBCreator creator;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto it = Registry().find(type);
    if (it != Registry().end()) creator = it->second;
  }
  DOPPIO_ENFORCE(static_cast<bool>(creator), "unknown db type '", type,
                 "' (while opening '", path, "'); known types: ", RegisteredDBTypes());
  DOPPIO_ENFORCE(!path.empty(), "cannot open a ", type, " db: the path is empty");
  try {
    std::unique_ptr<DB> db = creator(path, mode);
    DOPPIO_ENFORCE(db != nullptr, "db type '", type, "' returned no db for '", path, "'");
    return db;
  } catch (Error& error) {
    error.AppendContext(MakeString("while opening ", type, " db '", path, "' for ",
                                   ModeName(mode)));
    throw;
  }
}

bool DBExists(const std::string& type, const std::string& path) {
  try {
    OpenDB(type, path, READ);
    return true;
  } catch (const Error&) {
    return false;
  }
}

DBReader::DBReader(const std::string& db_type, const std::string& source,
                   int32_t num_shards, int32_t shard_id) {
  Open(db_type, source, num_shards, shard_id);
}

void DBReader::Open(const std::string& db_type, const std::string& source,
                    int32_t num_shards, int32_t shard_id) {
  DOPPIO_ENFORCE(num_shards >= 1, "DBReader for '", source, "': num_shards must be >= 1, got ",
                 num_shards);
  DOPPIO_ENFORCE(shard_id >= 0 && shard_id < num_shards, "DBReader for '", source,
                 "': shard_id ", shard_id, " is outside [0, ", num_shards, ")");
  std::lock_guard<std::mutex> lock(mutex_);
  // Some backends allow one open handle per path: close the old one first.
  cursor_.reset();
  db_.reset();
  db_type_ = db_type;
  source_ = source;
  db_ = OpenDB(db_type, source, READ);
  cursor_ = db_->NewCursor();
  num_shards_ = static_cast<uint32_t>(num_shards);
  shard_id_ = static_cast<uint32_t>(shard_id);
  static std::atomic<uint64_t> opened{0};
  generation_ = ++opened;
  consumed_ = 0;
  replay_ = 0;
  MoveToBeginning();
}

void DBReader::EnforceOpen() const {
  DOPPIO_ENFORCE(cursor_ != nullptr, "DBReader is not open (run CreateDB first)");
}

void DBReader::MoveToBeginning() const {
  cursor_->SeekToFirst();
  for (uint32_t s = 0; s < shard_id_; ++s) {
    cursor_->Next();
    DOPPIO_ENFORCE(cursor_->Valid(), "db '", source_, "' has fewer records than shard id ",
                   shard_id_);
  }
}

void DBReader::Read(std::string* key, std::string* value) const {
  EnforceOpen();
  std::lock_guard<std::mutex> lock(mutex_);
  DOPPIO_ENFORCE(cursor_->Valid(), "db '", source_, "' has no records to read");
  cursor_->CopyKeyTo(key);
  cursor_->CopyValueTo(value);
  for (uint32_t s = 0; s < num_shards_; ++s) {
    cursor_->Next();
    if (!cursor_->Valid()) {
      MoveToBeginning();
      break;
    }
  }
}

void DBReader::SeekToFirst() const {
  EnforceOpen();
  std::lock_guard<std::mutex> lock(mutex_);
  MoveToBeginning();
}

namespace {

// Caffe2's "DBReader" blob: which db, and where its cursor stands when the
// backend can seek back there.
class DBReaderSerializer final : public BlobSerializerBase {
 public:
  void Serialize(const Blob& blob, const std::string& name,
                 const SerializationAcceptor& acceptor, int64_t /*chunk_size*/) override {
    const DBReader& reader = blob.Get<DBReader>();
    DBReaderProto proto;
    proto.set_name(name);
    proto.set_source(reader.source());
    proto.set_db_type(reader.db_type());
    if (reader.num_shards() > 1) {
      proto.set_num_shards(reader.num_shards());
      proto.set_shard_id(reader.shard_id());
    }
    Cursor* cursor = reader.cursor();
    if (reader.consumed() > 0) {
      // A consumer counts what it handed on (it may have read further).
      proto.set_records_consumed(reader.consumed());
    } else if (cursor != nullptr && cursor->SupportsSeek() && cursor->Valid()) {
      proto.set_key(cursor->key());
    }
    BlobProto blob_proto;
    blob_proto.set_name(name);
    blob_proto.set_type("DBReader");
    blob_proto.set_content(proto.SerializeAsString());
    acceptor(name, blob_proto.SerializeAsString());
  }
};

class DBReaderDeserializer final : public BlobDeserializerBase {
 public:
  void Deserialize(const BlobProto& proto, Blob* blob) override {
    DBReaderProto reader_proto;
    DOPPIO_ENFORCE(reader_proto.ParseFromString(proto.content()), "blob '", proto.name(),
                   "' of type DBReader carries no valid DBReaderProto");
    auto reader = std::make_unique<DBReader>(
        reader_proto.db_type(), reader_proto.source(),
        reader_proto.has_num_shards() ? reader_proto.num_shards() : 1, reader_proto.shard_id());
    DOPPIO_ENFORCE(reader_proto.records_consumed() >= 0, "DBReader blob '", proto.name(),
                   "' records ", reader_proto.records_consumed(), " records consumed");
    if (reader_proto.records_consumed() > 0) {
      reader->SetReplay(reader_proto.records_consumed());
    } else if (reader_proto.has_key()) {
      DOPPIO_ENFORCE(reader->cursor()->SupportsSeek(), "DBReader blob '", proto.name(),
                     "' records a cursor position, but db type '", reader_proto.db_type(),
                     "' cannot seek");
      reader->cursor()->Seek(reader_proto.key());
    }
    blob->Reset(std::move(reader));
  }
};

BlobSerializerRegisterer g_reader_serializer(
    std::type_index(typeid(DBReader)), [] { return std::make_unique<DBReaderSerializer>(); });
BlobDeserializerRegisterer g_reader_deserializer(
    "DBReader", [] { return std::make_unique<DBReaderDeserializer>(); });

}  // namespace
}  // namespace db
}  // namespace doppio
