"""Caffe2's schema: typed, nested records stored column by column in blobs.

A schema is a tree of Fields (doppio.schema_fields): Scalar leaves (a
numpy dtype, maybe a blob holding the column), Structs of named fields, and
Lists, which add a `lengths` column to their values. Flattened, the tree
gives one column per Scalar, named by its path with ':' between parts
('a', 'b:c', 'l:lengths', 'l:values:x'). A record is a schema whose
scalars carry blobs (BlobReferences in a net, or numpy arrays); the
functions here make, feed and fetch records.

    s = Struct(('id', Scalar(np.int64)), ('tags', List(np.int32)))
    s.field_names()      # ['id', 'tags:lengths', 'tags:values']
    record = NewRecord(net, s)
"""
import logging

import numpy as np

from doppio import core
from doppio import workspace
from doppio.core import BlobReference
from doppio.schema_fields import (  # noqa: F401  (Caffe2's schema names)
    FIELD_SEPARATOR, FeatureSpec, Field, List, Map, Metadata, NamedTuple, RawTuple, Scalar,
    Struct, Tuple, _normalize_field, from_dtype)

logger = logging.getLogger(__name__)


class _SchemaNode(object):
    """A node of the name tree from_column_list builds."""

    def __init__(self, name, type_str=''):
        self.name = name
        self.children = []
        self.type_str = type_str
        self.field = None

    def add_child(self, name, type_str=''):
        for child in self.children:
            if child.name == name and child.type_str == type_str:
                return child
        child = _SchemaNode(name, type_str)
        self.children.append(child)
        return child

    def get_field(self):
        """The field of this node: its Scalar, or a List when its children
        are lengths and values, a Map when lengths, keys and values, else a
        Struct."""
        if not self.children or self.field is not None:
            return self.field if self.field is not None else Struct()
        by_name = {child.name: child for child in self.children}
        if set(by_name) == {'lengths', 'values'}:
            self.field = List(by_name['values'].get_field(),
                              lengths_blob=by_name['lengths'].get_field())
            self.type_str = 'List'
        elif set(by_name) == {'lengths', 'keys', 'values'}:
            self.field = Map(by_name['keys'].get_field(), by_name['values'].get_field(),
                             lengths_blob=by_name['lengths'].get_field())
            self.type_str = 'Map'
        else:
            self.field = Struct(*[(child.name, child.get_field()) for child in self.children])
            self.type_str = 'Struct'
        return self.field


def from_column_list(col_names, col_types=None, col_blobs=None, col_metadata=None):
    """The schema whose columns are `col_names` (':'-separated paths), with
    their types, blobs and metadata when given."""
    count = len(col_names)
    col_types = [None] * count if col_types is None else col_types
    col_metadata = [None] * count if col_metadata is None else col_metadata
    col_blobs = [None] * count if col_blobs is None else col_blobs
    for what, values in (('col_types', col_types), ('col_metadata', col_metadata),
                         ('col_blobs', col_blobs)):
        if len(values) != count:
            raise AssertionError('col_names and {} must have the same length.'.format(what))
    root = _SchemaNode('root', 'Struct')
    for name, col_type, blob, metadata in zip(col_names, col_types, col_blobs, col_metadata):
        parts = name.split(FIELD_SEPARATOR)
        node = root
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            node = node.add_child(part, col_type if last else '')
            if last:
                node.field = Scalar(dtype=col_type, blob=blob, metadata=metadata)
    return root.get_field()


def from_blob_list(schema, values, throw_on_type_mismatch=False):
    """A clone of `schema` whose scalars hold `values`, in column order."""
    if not isinstance(schema, Field):
        raise AssertionError('Argument `schema` must be a Field.')
    if isinstance(values, BlobReference):
        values = [values]
    record = schema.clone_schema()
    scalars = record.all_scalars()
    if len(scalars) != len(values):
        raise AssertionError('Values must have %d elements, got %d.' % (len(scalars),
                                                                         len(values)))
    for scalar, value in zip(scalars, values):
        scalar.set_value(value, throw_on_type_mismatch, unsafe=True)
    return record


def as_record(value):
    """A Field from a Field, a list of (name, value) pairs or a dict (a
    Struct), another list or tuple (a Tuple), or a type or blob (a
    Scalar). (Caffe2's version meant to treat pair lists as Structs but
    made Tuples of them.)"""
    if isinstance(value, Field):
        return value
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(f, tuple) and len(f) == 2 and isinstance(f[0], str)
                         for f in value):
            return Struct(*[(k, as_record(v)) for k, v in value])
        return Tuple(*[as_record(f) for f in value])
    if isinstance(value, dict):
        return Struct(*[(k, as_record(v)) for k, v in value.items()])
    return _normalize_field(value)


def _check_blob_record(record):
    if not isinstance(record, Field):
        raise AssertionError('a record must be a schema Field')
    blobs = record.field_blobs()
    if not all(isinstance(b, BlobReference) for b in blobs):
        raise AssertionError('every field of the record must hold a BlobReference')
    return blobs


def FetchRecord(blob_record, ws=None, throw_on_type_mismatch=False):
    """The record's values fetched (from `ws`, default the current
    workspace) into a record of numpy arrays."""
    def fetch(blob):
        return workspace.FetchBlob(str(blob)) if ws is None else ws.blobs[str(blob)].fetch()
    arrays = [fetch(b) for b in _check_blob_record(blob_record)]
    return from_blob_list(blob_record, arrays, throw_on_type_mismatch)


def FeedRecord(blob_record, arrays, ws=None):
    """Feeds `arrays` (a list, or a record of arrays) into the record's
    blobs (in `ws`, default the current workspace)."""
    blobs = _check_blob_record(blob_record)
    if isinstance(arrays, Field):
        arrays = arrays.field_blobs()
    if len(arrays) != len(blobs):
        raise AssertionError('Values must contain exactly %d ndarrays.' % len(blobs))
    for blob, array in zip(blobs, arrays):
        if ws is None:
            workspace.FeedBlob(str(blob), array)
        else:
            ws.create_blob(str(blob))
            ws.blobs[str(blob)].feed(array)


def NewRecord(net, schema):
    """A record of `schema` holding new blobs of `net`, one per column,
    named NextScopedBlob(column name)."""
    if isinstance(schema, Scalar):
        result = schema.clone()
        result.set_value(blob=net.NextScopedBlob('unnamed_scalar'), unsafe=True)
        return result
    if not isinstance(schema, Field):
        raise AssertionError('Record must be a schema.Field instance.')
    return from_blob_list(schema, [net.NextScopedBlob(prefix=name)
                                   for name in schema.field_names()])


def ConstRecord(net, array_record):
    """A record of blobs `net` fills (net.Const) with the arrays of
    array_record."""
    blob_record = NewRecord(net, array_record)
    for blob, array in zip(blob_record.field_blobs(), array_record.field_blobs()):
        net.Const(array, blob)
    return blob_record


def InitEmptyRecord(net, schema_or_record, enforce_types=False):
    """`net` fills every column of the record (made with NewRecord for a
    bare schema) with zero rows of its type; a column whose type has no
    TensorProto type gets an empty float tensor, or with enforce_types an
    error."""
    record = (schema_or_record if schema_or_record.has_blobs()
              else NewRecord(net, schema_or_record))
    for blob_type, blob in zip(record.field_types(), record.field_blobs()):
        try:
            data_type = data_type_for_dtype(blob_type)
        except TypeError:
            if enforce_types:
                raise
            logger.warning('Blob {} has type error'.format(blob))
            net.ConstantFill([], blob, shape=[0])
            continue
        net.ConstantFill([], blob, shape=[0] + list(blob_type.shape), dtype=data_type)
    return record


_DATA_TYPE_FOR_DTYPE = [
    (np.str_, core.DataType.STRING),
    (np.float16, core.DataType.FLOAT16),
    (np.float32, core.DataType.FLOAT),
    (np.float64, core.DataType.DOUBLE),
    (np.bool_, core.DataType.BOOL),
    (np.int8, core.DataType.INT8),
    (np.int16, core.DataType.INT16),
    (np.int32, core.DataType.INT32),
    (np.int64, core.DataType.INT64),
    (np.uint8, core.DataType.UINT8),
    (np.uint16, core.DataType.UINT16),
    (np.uint32, core.DataType.UINT32),
    (np.uint64, core.DataType.UINT64),
]


def data_type_for_dtype(dtype):
    """The TensorProto type of a numpy dtype's base type."""
    for np_type, data_type in _DATA_TYPE_FOR_DTYPE:
        if dtype.base == np_type:
            return data_type
    raise TypeError('Unknown dtype: ' + str(dtype.base))


def is_schema_subset(schema, original_schema):
    return set(schema.field_names()).issubset(set(original_schema.field_names()))


def equal_schemas(schema, original_schema, check_field_names=True, check_field_types=True,
                  check_field_metas=False):
    if not isinstance(schema, Field) or not isinstance(original_schema, Field):
        raise AssertionError('equal_schemas compares two schema Fields')
    return not ((check_field_names and
                 schema.field_names() != original_schema.field_names()) or
                (check_field_types and
                 schema.field_types() != original_schema.field_types()) or
                (check_field_metas and
                 schema.field_metadata() != original_schema.field_metadata()))


def schema_check(schema, previous=None):
    record = as_record(schema)
    if previous is not None and not equal_schemas(schema, previous):
        raise AssertionError('the schema differs from the previous one')
    return record


def attach_metadata_to_scalars(field, metadata):
    for scalar in field.all_scalars():
        scalar.set_metadata(metadata)
