"""caffe2.python.helpers: brew's layer helpers, one module per family (fc,
conv, normalization, pooling, nonlinearity, dropout, algebra,
array_helpers, train, db_input, tools, elementwise_linear, arg_scope,
control_ops). Import them from here by family, or call them as
brew.<name>, which adds the model's and brew.arg_scope's default keywords."""
