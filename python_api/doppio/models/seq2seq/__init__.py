"""Caffe2's models.seq2seq (so far its model helper; seq2seq_util, beam
search, train and translate are not written)."""
