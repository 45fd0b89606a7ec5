"""Caffe2's predictor serde: protobuf messages to and from the bytes stored
in a string blob."""


def serialize_protobuf_struct(protobuf_struct):
    return protobuf_struct.SerializeToString()


def deserialize_protobuf_struct(serialized_protobuf, struct_type):
    """A `struct_type` message parsed from `serialized_protobuf` (bytes; a
    str is taken as its UTF-8 encoding)."""
    if isinstance(serialized_protobuf, str):
        serialized_protobuf = serialized_protobuf.encode('utf-8')
    message = struct_type()
    message.ParseFromString(serialized_protobuf)
    return message
