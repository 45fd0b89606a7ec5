
op_AllreduceCoalescedD
in0
in1out0"AllreduceCoalesced*
	algorithm*
status_blob:in0:in1