
op_TensorProtosDBInputV
in0out0"TensorProtosDBInput*

batch_size*
shuffle_buffer*
shuffle_seed:in0