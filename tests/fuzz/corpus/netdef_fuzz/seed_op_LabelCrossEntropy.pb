
op_LabelCrossEntropy#
in0
in1out0"LabelCrossEntropy:in0:in1