"""The package of an installed model (models.download -i): its init_net and
predict_net, parsed from the .pb files beside this file's link."""
import os

from doppio.proto import doppio_pb2


def _parseFile(filename):
    net = doppio_pb2.NetDef()
    with open(os.path.join(os.path.dirname(__file__), filename), 'rb') as f:
        net.ParseFromString(f.read())
    return net


init_net = _parseFile('init_net.pb')
predict_net = _parseFile('predict_net.pb')
