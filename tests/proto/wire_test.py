"""The Caffe2 wire vectors round-trip through doppio.proto unchanged.

The vectors in tests/testdata/caffe2_wire were made by Caffe2's own
schema and Google's encoder, so they are an independent reference: each .pb
must parse with our schema, print exactly its .pbtxt, and serialize back to
the same bytes.
"""
import os
import unittest

from google.protobuf import text_format

from proto import doppio_pb2

VECTORS = {
    "netdef": doppio_pb2.NetDef,
    "tensorprotos": doppio_pb2.TensorProtos,
    "blobproto_tensor": doppio_pb2.BlobProto,
    "blobproto_dbreader": doppio_pb2.BlobProto,
    "plandef": doppio_pb2.PlanDef,
    "tensorshapes": doppio_pb2.TensorShapes,
    "qtensorproto": doppio_pb2.QTensorProto,
}


def vector_dir():
    runfiles = os.environ.get("TEST_SRCDIR")
    if runfiles:
        return os.path.join(runfiles, "doppio", "tests", "testdata", "caffe2_wire")
    return os.path.join(os.path.dirname(__file__), "..", "testdata", "caffe2_wire")


def read(name, mode="rb"):
    with open(os.path.join(vector_dir(), name), mode) as f:
        return f.read()


class WireCompatibilityTest(unittest.TestCase):

    def test_every_vector_is_covered(self):
        names = {f[:-3] for f in os.listdir(vector_dir()) if f.endswith(".pb")}
        self.assertEqual(names, set(VECTORS))

    def test_binary_parses_prints_text_and_reserializes(self):
        for name, message_type in VECTORS.items():
            with self.subTest(vector=name):
                data = read(name + ".pb")
                message = message_type()
                message.ParseFromString(data)
                # Unknown fields would mean a field number we do not know.
                self.assertEqual(len(message.UnknownFields()), 0)
                self.assertEqual(text_format.MessageToString(message),
                                 read(name + ".pbtxt", "r"))
                self.assertEqual(message.SerializeToString(), data)

    def test_text_parses_to_the_same_message(self):
        for name, message_type in VECTORS.items():
            with self.subTest(vector=name):
                from_text = text_format.Parse(read(name + ".pbtxt", "r"),
                                              message_type())
                self.assertEqual(from_text.SerializeToString(),
                                 read(name + ".pb"))

    def test_dbreader_content_is_a_dbreaderproto(self):
        blob = doppio_pb2.BlobProto()
        blob.ParseFromString(read("blobproto_dbreader.pb"))
        reader = doppio_pb2.DBReaderProto()
        reader.ParseFromString(blob.content)
        self.assertEqual(reader.name, "reader")
        self.assertEqual(reader.db_type, "lmdb")
        self.assertEqual(reader.SerializeToString(), blob.content)

    def test_enum_values_match_caffe2(self):
        # Values from Caffe2's caffe2.proto, restated here as the contract.
        dtype = doppio_pb2.TensorProto
        self.assertEqual(
            [dtype.UNDEFINED, dtype.FLOAT, dtype.INT32, dtype.BYTE, dtype.STRING,
             dtype.BOOL, dtype.UINT8, dtype.INT8, dtype.UINT16, dtype.INT16,
             dtype.INT64, dtype.FLOAT16, dtype.DOUBLE],
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13])
        self.assertEqual([doppio_pb2.CPU, doppio_pb2.CUDA, doppio_pb2.MKLDNN,
                          doppio_pb2.OPENGL, doppio_pb2.ONLY_FOR_TEST],
                         [0, 1, 2, 3, 20901701])


if __name__ == "__main__":
    unittest.main()
