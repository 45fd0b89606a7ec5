// TensorProtosDBInput: batches from a DB whose values are serialized
// TensorProtos (as tools/make_db writes them), read ahead on a background
// thread (see prefetch_op.h). Caffe2's op, argument and default:
//
//   reader = CreateDB([], db=PATH, db_type="lmdb" [, num_shards, shard_id])
//   data, label = TensorProtosDBInput([reader], batch_size=64)
//
// Output i is tensor i of each record. With batch_size > 0 the records'
// tensors are stacked along a new leading dimension of size batch_size
// (every record of a batch must agree in dims and type); with the default 0,
// each Run outputs one record's tensors as they are. The DBReader wraps
// around at the end of the DB, so a batch may span the end and the start,
// and a batch larger than the DB repeats records. Sharding is the reader's
// (CreateDB's num_shards and shard_id).
//
// Doppio adds `shuffle_buffer` (tf.data's shuffle buffer): the op keeps that
// many records and emits a uniformly chosen one, refilling its slot from the
// reader. Caffe2 only reads DBs in order, and training on a fixed order costs
// accuracy (the reference CNN loses about 4 points on Fashion-MNIST); a
// buffer as large as the DB mixes every pass over it.
//
// Checkpoints: the op counts the records it hands to the net on its reader
// (DBReader::AddConsumed), so a saved reader records where the net stood,
// not how far the op had read ahead; a reader loaded from a checkpoint makes
// the op drop its prefetched batches, restart its shuffle and replay that
// many records (core/db.h), after which it emits what an uninterrupted run
// would have. Load a reader before the net's first run: the op's prefetch
// thread reads the reader object it was given.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/db.h"
#include "core/tensor.h"
#include "operators/prefetch_op.h"
#include "operators/reader_position.h"
#include "operators/tensor_protos_record.h"
#include "proto/doppio.pb.h"

namespace doppio {

class TensorProtosDBInputOp final : public PrefetchOperator<CPUContext> {
 public:
  TensorProtosDBInputOp(const OperatorDef& def, Workspace* workspace);
  ~TensorProtosDBInputOp() override { Finalize(); }

 protected:
  void Prefetch(int slot) override;
  void CopyPrefetched(int slot) override;
  std::string DataSourceDescription() const override;
  bool SourceChanged() const override;

 private:
  // The reader of input 0 as a Prefetch sees it: after a new one (a restore
  // from a checkpoint) the shuffle state starts over and the records its
  // consumer had handed out are replayed (core/db.h, DBReader::TakeReplay).
  const db::DBReader& ReaderForFetch();
  // Reads the next record's value (from the reader, or through the shuffle
  // buffer) into value_; `key` receives its key.
  void ReadValue(const db::DBReader& reader, std::string* key);
  // Parses value_ into `protos` with protobuf, checking that it parses and
  // has one tensor per output.
  void ParseValue(const std::string& key, TensorProtos* protos);
  // Stacks value_ as record `item` of `batch` straight from its bytes
  // (operators/tensor_protos_record.h); false, with nothing written, when it
  // is not a plain record or differs from the batch's first record.
  bool StackIntoBatchFast(int item, std::vector<Tensor>* batch);
  // Empties the shuffle buffer and reseeds its draws; with `rewind`, also
  // moves `reader` back to its first record.
  void RestartShuffle(const db::DBReader& reader, bool rewind);
  // Reads records into the shuffle buffer until it holds shuffle_buffer.
  void FillShuffleBuffer(const db::DBReader& reader);
  // The next (key, value) in shuffled order: fills the buffer, then swaps a
  // uniformly chosen record out.
  void ReadShuffled(const db::DBReader& reader, std::string* key, std::string* value);
  // Deserializes record `item` of the batch into `batch`, the slot's tensor
  // for `output`; the first record fixes the batch's element dims and type.
  void StackIntoBatch(const TensorProto& proto, int output, int item, const std::string& key,
                      Tensor* batch);

  int batch_size_;
  int64_t shuffle_buffer_size_;
  // Touched only on the prefetch thread (one fetch runs at a time).
  std::vector<std::pair<std::string, std::string>> shuffle_buffer_;
  // The coming draws of shuffle_rng_, a ring starting at picks_head_ (see
  // ReadShuffled); drawn once the buffer is full.
  std::array<size_t, 3> next_picks_{};
  size_t picks_head_ = 0;
  bool picks_primed_ = false;
  std::mt19937_64 shuffle_rng_;
  uint64_t shuffle_seed_;
  // Per prefetch slot, one tensor per output: filled on the prefetch thread,
  // read by CopyPrefetched once the slot is filled (prefetch_op.h).
  std::vector<Tensor> prefetched_[kPrefetchDepth];
  // One record's tensor per output, reused across records.
  std::vector<Tensor> record_tensors_;
  // The fast path's view of one record's tensors, and the batch dims it
  // builds (kept so that steady-state batches allocate nothing).
  std::vector<RecordTensorView> record_views_;
  std::vector<int64_t> batch_dims_;
  // Which reader the shuffle state and prefetched batches come from.
  ReaderPosition position_;
  // The key of the batch's first record, for messages about later ones.
  std::string first_key_;
  std::string value_;
};

}  // namespace doppio
