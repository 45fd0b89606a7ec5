"""caffe2.python.models: reference model builders written with brew
(resnet, seq2seq's model helper) and `download`, which fetches pretrained
nets (python -m caffe2.python.models.download NAME)."""
