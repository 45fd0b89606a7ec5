"""caffe2.python.helpers: brew's layer helpers, one module per family (fc,
conv, normalization, pooling, nonlinearity, dropout, algebra,
array_helpers, train, db_input, tools, elementwise_linear, arg_scope).
Import them from here by family, or call them as brew.<name>, which adds
the model's and brew.arg_scope's default keywords. (Caffe2's control_ops,
cond and loop, need the If / While operators Doppio does not have yet.)"""
