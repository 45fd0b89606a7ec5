
op_YellowFinÅ
in0
in1
in2
in3out0out1out2out3"	YellowFin*
beta*
curv_win_width*
epsilon*
nesterov*
zero_debias:in0:in1:in2:in3