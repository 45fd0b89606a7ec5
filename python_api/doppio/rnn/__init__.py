"""caffe2.python.rnn: helpers for recurrent-network tests."""
