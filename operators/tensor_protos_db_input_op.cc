#include "operators/tensor_protos_db_input_op.h"

#include <climits>
#include <cstring>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/serialization.h"

namespace doppio {

TensorProtosDBInputOp::TensorProtosDBInputOp(const OperatorDef& def, Workspace* workspace)
    : PrefetchOperator<CPUContext>(def, workspace),
      batch_size_(GetSingleArgument<int>("batch_size", 0)),
      shuffle_buffer_size_(GetSingleArgument<int64_t>("shuffle_buffer", 0)),
      shuffle_rng_(static_cast<uint64_t>(GetSingleArgument<int64_t>("shuffle_seed", 0))),
      shuffle_seed_(static_cast<uint64_t>(GetSingleArgument<int64_t>("shuffle_seed", 0))),
      record_tensors_(OutputSize()),
      record_views_(OutputSize()) {
  for (std::vector<Tensor>& slot : prefetched_) slot.resize(OutputSize());
  DOPPIO_ENFORCE(batch_size_ >= 0,
                 "batch_size must be >= 0 (0: one record "
                 "per run, unbatched), got ",
                 batch_size_);
  DOPPIO_ENFORCE(shuffle_buffer_size_ >= 0, "shuffle_buffer must be >= 0 (0: read in order), got ",
                 shuffle_buffer_size_);
  // In the usual order (init net, then CreateNet) the reader is open now,
  // and the shuffle buffer is filled here (~55 ms for 60,000 records): the
  // op loads its data when the net is created, as a PyTorch script loads its
  // arrays before training, not inside the net's first step. A read that
  // fails here fails again in the first Run (which fills the rest), with
  // that run's context.
  const Blob& reader = InputBlob(0);
  if (shuffle_buffer_size_ > 0 && reader.IsType<db::DBReader>() &&
      reader.Get<db::DBReader>().is_open()) {
    try {
      position_.Seen(reader.Get<db::DBReader>());
      FillShuffleBuffer(reader.Get<db::DBReader>());
    } catch (const Error&) {
    }
  }
}

std::string TensorProtosDBInputOp::DataSourceDescription() const {
  const Blob& blob = InputBlob(0);
  if (!blob.IsType<db::DBReader>()) {
    return MakeString("input '", input_name(0), "' (which holds ", blob.TypeName(),
                      ", not a DBReader from CreateDB)");
  }
  const db::DBReader& reader = blob.Get<db::DBReader>();
  if (!reader.is_open()) return MakeString("input '", input_name(0), "' (an unopened DBReader)");
  return MakeString(reader.db_type(), " db '", reader.source(), "'");
}

bool TensorProtosDBInputOp::SourceChanged() const { return position_.Changed(InputBlob(0)); }

void TensorProtosDBInputOp::RestartShuffle(const db::DBReader& reader, bool rewind) {
  shuffle_buffer_.clear();
  shuffle_rng_.seed(shuffle_seed_);
  picks_primed_ = false;
  picks_head_ = 0;
  if (rewind) reader.SeekToFirst();
}

const db::DBReader& TensorProtosDBInputOp::ReaderForFetch() {
  const db::DBReader& reader = InputAs<db::DBReader>(0);
  const ReaderPosition::Start start = position_.BeforeFetch(reader);
  // Only the op replaying rewinds: another op sharing the reader finds it
  // where it should be.
  if (start.restart) RestartShuffle(reader, /*rewind=*/start.replay > 0);
  // The records an uninterrupted run had handed out before this point, read
  // and dropped in the same order, so that the shuffle's draws and the
  // reader's position are where that run's were.
  std::string key;
  for (int64_t i = 0; i < start.replay; ++i) ReadValue(reader, &key);
  return reader;
}

void TensorProtosDBInputOp::FillShuffleBuffer(const db::DBReader& reader) {
  while (static_cast<int64_t>(shuffle_buffer_.size()) < shuffle_buffer_size_) {
    shuffle_buffer_.emplace_back();
    try {
      reader.Read(&shuffle_buffer_.back().first, &shuffle_buffer_.back().second);
    } catch (...) {
      shuffle_buffer_.pop_back();
      throw;
    }
  }
}

void TensorProtosDBInputOp::ReadShuffled(const db::DBReader& reader, std::string* key,
                                         std::string* value) {
  FillShuffleBuffer(reader);
  // The chosen record leaves through a swap and the next one from the reader
  // takes its slot, in the strings the caller handed in: no record is
  // allocated or moved around once the buffer is full.
  //
  // Picks are drawn two ahead (the same draws, in the same order, so the
  // same records come out), and the coming picks' slots and bytes are
  // prefetched: a buffer of a whole epoch (~50 MB for Fashion-MNIST) does
  // not fit the caches, and each pick cost a dozen cache misses.
  std::uniform_int_distribution<size_t> pick(0, shuffle_buffer_.size() - 1);
  if (!picks_primed_) {
    for (size_t& draw : next_picks_) draw = pick(shuffle_rng_);
    picks_primed_ = true;
  }
  // next_picks_ is a ring of the coming draws, oldest at picks_head_: take
  // it, put the newest draw in its place, and move on to the next oldest.
  std::pair<std::string, std::string>& slot = shuffle_buffer_[next_picks_[picks_head_]];
  next_picks_[picks_head_] = pick(shuffle_rng_);
  __builtin_prefetch(&shuffle_buffer_[next_picks_[picks_head_]]);
  picks_head_ = (picks_head_ + 1) % next_picks_.size();
  const std::string& coming = shuffle_buffer_[next_picks_[picks_head_]].second;
  for (size_t offset = 0; offset < coming.size(); offset += 64) {
    __builtin_prefetch(coming.data() + offset);
  }
  key->swap(slot.first);
  value->swap(slot.second);
  try {
    reader.Read(&slot.first, &slot.second);
  } catch (...) {
    // The chosen record goes back: a failed read emits nothing and leaves
    // the buffer holding exactly the records not yet emitted.
    key->swap(slot.first);
    value->swap(slot.second);
    throw;
  }
}

void TensorProtosDBInputOp::ReadValue(const db::DBReader& reader, std::string* key) {
  if (shuffle_buffer_size_ > 0) {
    ReadShuffled(reader, key, &value_);
  } else {
    reader.Read(key, &value_);
  }
}

void TensorProtosDBInputOp::ParseValue(const std::string& key, TensorProtos* protos) {
  DOPPIO_ENFORCE(protos->ParseFromString(value_), "record '", key, "' (", value_.size(),
                 " bytes) is not a serialized TensorProtos");
  DOPPIO_ENFORCE(protos->protos_size() == OutputSize(), "record '", key, "' holds ",
                 protos->protos_size(), " tensors, but the op has ", OutputSize(),
                 " outputs (one per tensor of a record)");
  for (TensorProto& proto : *protos->mutable_protos()) {
    // Where the writer kept the tensor is no concern of the reader (Caffe2
    // drops it too); the batch is assembled on the host.
    proto.clear_device_detail();
  }
}

void TensorProtosDBInputOp::StackIntoBatch(const TensorProto& proto, int output, int item,
                                           const std::string& key, Tensor* batch_tensor) {
  Tensor& record = record_tensors_[output];
  try {
    DeserializeTensor(proto, &record);
  } catch (Error& error) {
    error.AppendContext(MakeString("in tensor ", output, " of record '", key, "'"));
    throw;
  }
  Tensor& batch = *batch_tensor;
  if (item == 0) {
    std::vector<int64_t> dims = record.dims();
    dims.insert(dims.begin(), batch_size_);
    batch.Resize(dims);
    batch.raw_mutable_data(record.dtype());
  } else {
    const std::vector<int64_t> item_dims(batch.dims().begin() + 1, batch.dims().end());
    DOPPIO_ENFORCE(record.dims() == item_dims && record.dtype() == batch.dtype(),
                   "tensor ", output, " of record '", key, "' is ", record.DebugString(),
                   " but in record '", first_key_, "' (the batch's first) it is ",
                   DataTypeName(batch.dtype()), item_dims,
                   ": records of one batch must agree in shape and type");
  }
  if (record.numel() == 0) return;
  if (record.dtype() == DataType::kString) {
    const auto* from = record.data<std::string>();
    auto* to = batch.mutable_data<std::string>() + item * record.numel();
    for (int64_t i = 0; i < record.numel(); ++i) to[i] = from[i];
  } else {
    auto* to = static_cast<char*>(batch.raw_mutable_data()) + item * record.nbytes();
    std::memcpy(to, record.raw_data(), record.nbytes());
  }
}

bool TensorProtosDBInputOp::StackIntoBatchFast(int item, std::vector<Tensor>* batch) {
  if (!ParseTensorProtosRecord(value_, OutputSize(), record_views_.data(),
                               static_cast<int>(record_views_.size()))) {
    return false;
  }
  if (item > 0) {
    // A record unlike the batch's first goes to StackIntoBatch for its error.
    for (int i = 0; i < OutputSize(); ++i) {
      const RecordTensorView& view = record_views_[i];
      const Tensor& stacked = (*batch)[i];
      if (view.dtype != stacked.dtype() || view.ndims + 1 != stacked.ndim()) return false;
      for (int d = 0; d < view.ndims; ++d) {
        if (view.dims[d] != stacked.dim(d + 1)) return false;
      }
    }
  }
  for (int i = 0; i < OutputSize(); ++i) {
    const RecordTensorView& view = record_views_[i];
    Tensor& stacked = (*batch)[i];
    if (item == 0) {
      batch_dims_.assign(1, batch_size_);
      batch_dims_.insert(batch_dims_.end(), view.dims, view.dims + view.ndims);
      stacked.Resize(batch_dims_);
      stacked.raw_mutable_data(view.dtype);
    }
    const size_t record_bytes = static_cast<size_t>(view.numel) * ItemSize(view.dtype);
    CopyRecordElements(view, static_cast<char*>(stacked.raw_mutable_data()) + item * record_bytes);
  }
  return true;
}

void TensorProtosDBInputOp::Prefetch(int slot) {
  const db::DBReader& reader = ReaderForFetch();
  TensorProtos protos;
  std::string key;
  if (batch_size_ == 0) {
    ReadValue(reader, &key);
    ParseValue(key, &protos);
    for (int i = 0; i < OutputSize(); ++i) {
      try {
        DeserializeTensor(protos.protos(i), &prefetched_[slot][i]);
      } catch (Error& error) {
        error.AppendContext(MakeString("in tensor ", i, " of record '", key, "'"));
        throw;
      }
    }
    return;
  }
  for (int item = 0; item < batch_size_; ++item) {
    ReadValue(reader, &key);
    if (item == 0) first_key_ = key;
    if (StackIntoBatchFast(item, &prefetched_[slot])) continue;
    // Anything but a plain record, and every error, takes protobuf's path.
    ParseValue(key, &protos);
    for (int i = 0; i < OutputSize(); ++i) {
      StackIntoBatch(protos.protos(i), i, item, key, &prefetched_[slot][i]);
    }
  }
}

void TensorProtosDBInputOp::CopyPrefetched(int slot) {
  for (int i = 0; i < OutputSize(); ++i) Output(i)->CopyFrom(prefetched_[slot][i]);
  // What a checkpoint of the reader resumes from (core/db.h).
  InputAs<db::DBReader>(0).AddConsumed(batch_size_ == 0 ? 1 : batch_size_);
}

REGISTER_CPU_OPERATOR(TensorProtosDBInput, TensorProtosDBInputOp);

OPERATOR_SCHEMA(TensorProtosDBInput)
    .NumInputs(1)
    .NumOutputs(1, INT_MAX)
    .Arg("batch_size", "(int, default 0) records per batch, stacked along a new leading "
         "dimension; 0 outputs one record's tensors per run, as they are")
    .Arg("shuffle_buffer", "(int, default 0; Doppio) keep this many records and emit a "
         "uniformly chosen one, refilling from the reader (tf.data's shuffle buffer); 0 "
         "reads in DB order, as Caffe2 does. As large as the DB: every pass is mixed")
    .Arg("shuffle_seed", "(int, default 0) seed of the shuffle, so runs are repeatable")
    .Input(0, "data", "a DBReader, as CreateDB makes it (db, db_type, and num_shards / "
           "shard_id to read one shard)")
    .Output(0, "output", "one output per tensor of a record (e.g. data and label for "
            "make_db's records): batch_size records' tensors stacked, dtype preserved "
            "(BYTE records load as uint8)")
    .Doc("Reads batches from a db whose values are serialized TensorProtos, keyed by "
         "record. A background thread reads the next batches (up to 2 ahead) while the net "
         "runs; it starts when the op is created if the reader is open by then (else at the "
         "first run, which waits for the first batch). The reader wraps around at the end "
         "of the db, so every batch is full. A record that does not parse, has the wrong number of "
         "tensors, or differs in shape or type from the rest of its batch is an error "
         "naming the record and the db, raised by the run that wanted that batch.");

NO_GRADIENT(TensorProtosDBInput, "its outputs are read from a db, not computed from its "
            "input (a DB reader)");

}  // namespace doppio
