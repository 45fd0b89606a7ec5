
(op_SigmoidCrossEntropyWithLogitsGradientc
in0
in1
in2out0"%SigmoidCrossEntropyWithLogitsGradient*
log_D_trick*
unjoined_lr_loss:in0:in1:in2