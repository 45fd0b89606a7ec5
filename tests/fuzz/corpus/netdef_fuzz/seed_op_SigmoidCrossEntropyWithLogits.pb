
 op_SigmoidCrossEntropyWithLogitsV
in0
in1out0"SigmoidCrossEntropyWithLogits*
log_D_trick*
unjoined_lr_loss:in0:in1