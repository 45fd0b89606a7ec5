
op_Lars"
in0
in1out0"Lars*

offset:in0:in1