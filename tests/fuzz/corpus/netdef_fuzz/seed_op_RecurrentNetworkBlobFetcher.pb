
op_RecurrentNetworkBlobFetcher4
in0out0"RecurrentNetworkBlobFetcher*

prefix:in0