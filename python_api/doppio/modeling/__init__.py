"""caffe2.python.modeling: how parameters are described (parameter_info),
created (initializers) and shared between parts of a model
(parameter_sharing)."""
