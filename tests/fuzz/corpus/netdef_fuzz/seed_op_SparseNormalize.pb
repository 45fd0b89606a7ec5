
op_SparseNormalizeB
in0
in1
in2out0"SparseNormalize*
use_max_norm*
norm:in0:in1:in2