"""Reading TensorProtos records from a DB: caffe2.python.helpers.db_input, whose helpers
brew registers."""



def db_input(model, blobs_out, batch_size, db, db_type, **kwargs):
    """Reads `batch_size` records per run of model.net from a DB of
    TensorProtos (one output per tensor of a record). The reader is made once
    by model.param_init_net; `dbreader_<db>` is its blob, as in Caffe2. Other
    keywords (Doppio's shuffle_buffer, shuffle_seed) go to the reader op."""
    kwargs.pop('order', None)
    reader = model.param_init_net.CreateDB(
        [], 'dbreader_' + str(db), db=db, db_type=db_type)
    return model.net.TensorProtosDBInput(reader, blobs_out, batch_size=batch_size,
                                         **kwargs)
