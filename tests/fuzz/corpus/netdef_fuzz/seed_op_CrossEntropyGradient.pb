
op_CrossEntropyGradient+
in0
in1
in2out0"CrossEntropyGradient:in0:in1:in2