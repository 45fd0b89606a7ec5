"""onnx_to_doppio: an ONNX model -> Doppio (Caffe2) init and predict NetDefs.

    onnx_to_doppio MODEL.onnx --init_net init.pb --predict_net predict.pb [--text]

The init net fills the model's initializers (GivenTensor*Fill ops); the
predict net's external inputs are the graph inputs, its external outputs the
graph outputs. Run them with
    run_net --init_net init.pb --net predict.pb --input x=x.npy --output y=y.npy
Exit status: 0 success, 1 conversion failure (one line on stderr naming the
file, op or value), 2 command-line error.
"""
import argparse
import os
import sys

from google.protobuf import text_format

PROG = 'onnx_to_doppio'


def _write(net, path, text):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # A temporary file renamed into place: a failed write leaves no half net.
    temporary = path + '.tmp'
    if text:
        with open(temporary, 'w') as f:
            f.write(text_format.MessageToString(net))
    else:
        with open(temporary, 'wb') as f:
            f.write(net.SerializeToString())
    os.replace(temporary, path)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG, description='Converts an ONNX model to Doppio init and predict NetDefs.')
    parser.add_argument('model', help='the ONNX model file (.onnx)')
    parser.add_argument('--init_net', required=True,
                        help='output: the NetDef that fills the initializers')
    parser.add_argument('--predict_net', required=True,
                        help='output: the NetDef that runs the graph')
    parser.add_argument('--text', action='store_true',
                        help='write text protobuf instead of binary')
    args = parser.parse_args(argv)

    # Imported here so --help works without the package built.
    from doppio.onnx import backend
    from doppio.onnx.errors import OnnxError
    try:
        init_net, predict_net = backend.onnx_graph_to_caffe2_net(args.model)
        _write(init_net, args.init_net, args.text)
        _write(predict_net, args.predict_net, args.text)
    except (OnnxError, OSError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print('{}: {}: {}'.format(PROG, args.model, message), file=sys.stderr)
        return 1
    inputs = [name for name in predict_net.external_input
              if name not in set(init_net.external_output)]
    print('{}: wrote {} ({} ops) and {} ({} ops); inputs {}, outputs {}'.format(
        PROG, args.init_net, len(init_net.op), args.predict_net, len(predict_net.op),
        inputs, list(predict_net.external_output)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
