
op_CrossEntropy
in0
in1out0"CrossEntropy:in0:in1