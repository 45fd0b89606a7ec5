
op_ElementwiseLinear2
in0
in1
in2out0"ElementwiseLinear*
axis:in0:in1:in2