
op_Min
in0out0"Min:in0