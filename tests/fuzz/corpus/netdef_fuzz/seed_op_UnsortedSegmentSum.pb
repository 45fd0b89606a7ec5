
op_UnsortedSegmentSum6
in0
in1out0"UnsortedSegmentSum*
num_segments:in0:in1