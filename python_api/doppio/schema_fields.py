"""The Field types of Caffe2's schema (see doppio.schema, which re-exports
them with the record functions): typed, nested records stored column by
column in blobs.

A schema is a tree of Fields: Scalar leaves (a numpy dtype, maybe a blob
holding the column), Structs of named fields, and Lists, which add a
`lengths` column to their values. Flattened, the tree gives one column per
Scalar, named by its path with ':' between parts ('a', 'b:c',
'l:lengths', 'l:values:x'). A record is a schema whose scalars carry
blobs (BlobReferences in a net, or numpy arrays).

    s = Struct(('id', Scalar(np.int64)), ('tags', List(np.int32)))
    s.field_names()      # ['id', 'tags:lengths', 'tags:values']
"""
import collections
import io
import logging

import numpy as np

from doppio.core_blob import BlobReference

logger = logging.getLogger(__name__)

FIELD_SEPARATOR = ':'


def _join_field_name(prefix, suffix):
    return FIELD_SEPARATOR.join(part for part in (prefix, suffix) if part)


def _normalize_field(field_or_type_or_blob, keep_blobs=True):
    """A Field for a container: a clone of a Field, a Scalar of a type, or
    a Scalar holding a blob."""
    if isinstance(field_or_type_or_blob, Field):
        return field_or_type_or_blob.clone(keep_blobs=keep_blobs)
    if type(field_or_type_or_blob) in (type, np.dtype):
        return Scalar(dtype=field_or_type_or_blob)
    return Scalar(blob=field_or_type_or_blob)


FeatureSpec = collections.namedtuple(
    'FeatureSpec', ['feature_type', 'feature_names', 'feature_ids',
                    'feature_is_request_only', 'desired_hash_size'])
FeatureSpec.__new__.__defaults__ = (None,) * 5


class Metadata(collections.namedtuple(
        'Metadata', ['categorical_limit', 'expected_value', 'feature_specs'])):
    """Extra facts about a Scalar: categorical_limit (integral fields: the
    largest value plus one, e.g. an embedding table's size), expected_value
    (e.g. a list's mean length), feature_specs."""
    __slots__ = ()


Metadata.__new__.__defaults__ = (None, None, None)


class Field(object):
    """A node of a schema. Subclasses call Field.__init__ with their
    children once those are set."""

    def __init__(self, children):
        self._parent = (None, 0)
        self._field_offsets = [0]
        for child in children:
            self._field_offsets.append(self._field_offsets[-1] + len(child.field_names()))

    def clone_schema(self):
        return self.clone(keep_blobs=False)

    def field_names(self):
        raise NotImplementedError('Field is an abstract class.')

    def field_types(self):
        raise NotImplementedError('Field is an abstract class.')

    def field_metadata(self):
        raise NotImplementedError('Field is an abstract class.')

    def field_blobs(self):
        raise NotImplementedError('Field is an abstract class.')

    def all_scalars(self):
        raise NotImplementedError('Field is an abstract class.')

    def has_blobs(self):
        raise NotImplementedError('Field is an abstract class.')

    def clone(self, keep_blobs=True):
        raise NotImplementedError('Field is an abstract class.')

    def _set_parent(self, parent, relative_id):
        self._parent = (parent, relative_id)

    def slice(self):
        """The range of this field's columns among its root's."""
        base = self._child_base_id()
        return slice(base, base + len(self.field_names()))

    def _child_base_id(self, child_index=None):
        parent, index = self._parent
        position = 0 if child_index is None else self._field_offsets[child_index]
        if parent:
            position += parent._child_base_id(index)
        return position

    def __eq__(self, other):
        return (self.field_names() == other.field_names() and
                self.field_types() == other.field_types() and
                self.field_metadata() == other.field_metadata())

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    def _pprint_impl(self, indent, out):
        raise NotImplementedError('Field is an abstract class.')

    def __repr__(self):
        out = io.StringIO()
        self._pprint_impl(0, out)
        return out.getvalue()


class List(Field):
    """A variable-length list per entry of the parent: its columns are
    `lengths` (int32) and the values' columns under `values`."""

    def __init__(self, values, lengths_blob=None):
        if isinstance(lengths_blob, Field):
            if not isinstance(lengths_blob, Scalar):
                raise AssertionError('a List\'s lengths must be a Scalar')
            self.lengths = _normalize_field(lengths_blob)
        else:
            self.lengths = Scalar(np.int32, lengths_blob)
        self._items = _normalize_field(values)
        self.lengths._set_parent(self, 0)
        self._items._set_parent(self, 1)
        Field.__init__(self, [self.lengths, self._items])

    def field_names(self):
        return ['lengths'] + [_join_field_name('values', v)
                              for v in self._items.field_names()]

    def field_types(self):
        return self.lengths.field_types() + self._items.field_types()

    def field_metadata(self):
        return self.lengths.field_metadata() + self._items.field_metadata()

    def field_blobs(self):
        return self.lengths.field_blobs() + self._items.field_blobs()

    def all_scalars(self):
        return self.lengths.all_scalars() + self._items.all_scalars()

    def has_blobs(self):
        return self.lengths.has_blobs() and self._items.has_blobs()

    def clone(self, keep_blobs=True):
        return List(_normalize_field(self._items, keep_blobs=keep_blobs),
                    _normalize_field(self.lengths, keep_blobs=keep_blobs))

    def _pprint_impl(self, indent, out):
        out.write('  ' * indent + 'List(\n')
        out.write('  ' * (indent + 1) + 'lengths=\n')
        self.lengths._pprint_impl(indent + 2, out)
        out.write('  ' * (indent + 1) + '_items=\n')
        self._items._pprint_impl(indent + 2, out)
        out.write('  ' * indent + ')\n')

    def __getattr__(self, item):
        """A list of structs exposes the struct's fields; `value` / `items`
        are the values."""
        if item.startswith('__'):
            raise AttributeError(item)
        items = self.__dict__.get('_items')
        if isinstance(items, Struct):
            return getattr(items, item)
        if item in ('value', 'items') and items is not None:
            return items
        raise AttributeError('Field not found in list: %s.' % item)

    def __getitem__(self, item):
        head, _, rest = item.partition(FIELD_SEPARATOR)
        if not rest and item == 'lengths':
            return self.lengths
        if not rest and item == 'values':
            return self._items
        if rest and head == 'values':
            return self._items[rest]
        raise KeyError('Field not found in list: %s.' % item)


def _nested_struct(nested_name, field):
    """('a:b:c', f) -> ('a', Struct(('b', Struct(('c', f)))))."""
    head, _, rest = nested_name.partition(FIELD_SEPARATOR)
    if not rest:
        return head, field
    inner_name, inner = _nested_struct(rest, field)
    return head, Struct((inner_name, inner))


class Struct(Field):
    """Named fields sharing one domain. Names may be nested ('b:c'), which
    builds inner Structs; two Structs under one name merge."""

    def __init__(self, *fields):
        for field in fields:
            if len(field) != 2 or not field[0]:
                raise AssertionError('Struct fields are (non-empty name, field) pairs, got '
                                     '{!r}'.format(field))
            if field[0] == 'lengths':
                raise AssertionError('Struct cannot contain a field named `lengths`.')
        self.fields = collections.OrderedDict()
        for name, field in fields:
            name, field = _nested_struct(name, _normalize_field(field))
            if name not in self.fields:
                self.fields[name] = field
            elif isinstance(field, Struct) and isinstance(self.fields[name], Struct):
                self.fields[name] = self.fields[name] + field
            else:
                raise ValueError('Duplicate field name: %s' % name)
        for index, field in enumerate(self.fields.values()):
            field._set_parent(self, index)
        Field.__init__(self, self.fields.values())
        self._frozen = True

    def get_children(self):
        return list(self.fields.items())

    def field_names(self):
        return [_join_field_name(name, f)
                for name, field in self.fields.items() for f in field.field_names()]

    def _gather(self, method):
        return [x for field in self.fields.values() for x in getattr(field, method)()]

    def field_types(self):
        return self._gather('field_types')

    def field_metadata(self):
        return self._gather('field_metadata')

    def field_blobs(self):
        return self._gather('field_blobs')

    def all_scalars(self):
        return self._gather('all_scalars')

    def has_blobs(self):
        return all(field.has_blobs() for field in self.fields.values())

    def clone(self, keep_blobs=True):
        return Struct(*[(name, _normalize_field(field, keep_blobs=keep_blobs))
                        for name, field in self.fields.items()])

    def _get_field_by_nested_name(self, nested_name):
        head, _, rest = nested_name.partition(FIELD_SEPARATOR)
        field = self.fields.get(head)
        if field is None or not rest:
            return field
        try:
            return field[rest]
        except (KeyError, TypeError):
            return None

    def _pprint_impl(self, indent, out):
        out.write('  ' * indent + 'Struct( \n')
        for name, field in self.fields.items():
            out.write('  ' * (indent + 1) + '{}=\n'.format(name))
            field._pprint_impl(indent + 2, out)
        out.write('  ' * indent + ') \n')

    def __contains__(self, item):
        return self._get_field_by_nested_name(item) is not None

    def __len__(self):
        return len(self.fields)

    def __getitem__(self, item):
        """A nested name ('a:b'), a first-level index, or a list/tuple of
        those (a Struct of the picked fields)."""
        if isinstance(item, (list, tuple)):
            keys = list(self.fields)
            return Struct(*[(keys[k] if isinstance(k, int) else k, self[k]) for k in item])
        if isinstance(item, int):
            return list(self.fields.values())[item]
        field = self._get_field_by_nested_name(item)
        if field is None:
            raise KeyError('field "%s" not found' % item)
        return field

    def get(self, item, default_value):
        return getattr(self, item, default_value)

    def __getattr__(self, item):
        if item.startswith('__'):
            raise AttributeError(item)
        try:
            return self.__dict__['fields'][item]
        except KeyError:
            raise AttributeError(item)

    def __setattr__(self, key, value):
        if getattr(self, '_frozen', None) and not key.startswith('_'):
            raise TypeError('Struct.__setattr__() is disabled after __init__()')
        super(Struct, self).__setattr__(key, value)

    def __add__(self, other):
        """The fields of both; common Struct fields merge recursively."""
        if not isinstance(other, Struct):
            return NotImplemented
        children = collections.OrderedDict(self.get_children())
        for name, right in other.get_children():
            children[name] = children[name] + right if name in children else right
        return Struct(*children.items())

    def __sub__(self, other):
        """The fields of self not in other, recursively; a Struct left empty
        goes too."""
        if not isinstance(other, Struct):
            return NotImplemented
        children = collections.OrderedDict(self.get_children())
        for name, right in other.get_children():
            if name not in children:
                continue
            left = children[name]
            if type(left) != type(right):
                raise TypeError('Type of left_field, {}, is not the same as that of '
                                'right_field, {}, yet they have the same field name, {}'
                                .format(type(left), type(right), name))
            if isinstance(left, Struct):
                rest = left - right
                if rest.get_children():
                    children[name] = rest
                    continue
            children.pop(name)
        return Struct(*children.items())


class Scalar(Field):
    """A leaf: a numpy dtype (np.void when unknown; a sub-array dtype for
    fixed-shape entries) and maybe a blob holding the column, a
    BlobReference or a numpy array."""

    def __init__(self, dtype=None, blob=None, metadata=None):
        self._metadata = None
        self.set(dtype, blob, metadata, unsafe=True)
        Field.__init__(self, [])

    def field_names(self):
        return ['']

    def field_type(self):
        return self.dtype

    def field_types(self):
        return [self.dtype]

    def field_metadata(self):
        return [self._metadata]

    def has_blobs(self):
        return self._blob is not None

    def field_blobs(self):
        if self._blob is None:
            raise AssertionError('Value is not set for this field.')
        return [self._blob]

    def all_scalars(self):
        return [self]

    def clone(self, keep_blobs=True):
        return Scalar(dtype=self._original_dtype, blob=self._blob if keep_blobs else None,
                      metadata=self._metadata)

    def get(self):
        """The blob of this field."""
        if self._blob is None:
            raise AssertionError('Value is not set for this field.')
        return self._blob

    def __call__(self):
        return self.get()

    @property
    def metadata(self):
        return self._metadata

    def set_metadata(self, value):
        if not isinstance(value, Metadata):
            raise AssertionError('metadata must be Metadata, got {}'.format(type(value)))
        self._metadata = value
        self._validate_metadata()

    def _validate_metadata(self):
        if self._metadata is None or self._metadata.categorical_limit is None:
            return
        if self.dtype is not None and not np.issubdtype(self.dtype, np.integer):
            raise AssertionError('`categorical_limit` can be specified only in integral '
                                 'fields but got {}'.format(self.dtype))

    def set_value(self, blob, throw_on_type_mismatch=False, unsafe=False):
        """Sets the blob, keeping (and with throw_on_type_mismatch, checking)
        the dtype."""
        if self.dtype.base != np.void and throw_on_type_mismatch:
            if not isinstance(blob, np.ndarray) or blob.dtype.base != self.dtype.base:
                raise AssertionError('Expected {}, got {!r}'.format(self.dtype.base, blob))
        self.set(dtype=self._original_dtype, blob=blob, unsafe=unsafe)

    def set(self, dtype=None, blob=None, metadata=None, unsafe=False):
        """Sets type, blob and metadata. A non-BlobReference blob becomes a
        numpy array of the dtype (a 0-d one a 1-element vector); the dtype
        is inferred from it when not given, and a blob of rank > 1 makes it a
        sub-array dtype. A str blob is refused: say np.array(s) or
        BlobReference(s)."""
        if not unsafe:
            logger.warning('Scalar should be considered immutable. Only call Scalar.set() '
                           'on newly created Scalar with unsafe=True.')
        if isinstance(blob, str):
            raise ValueError('Passing str blob to Scalar.set() is ambiguous. Do either '
                             'set(blob=np.array(blob)) or set(blob=BlobReference(blob))')
        self._original_dtype = dtype
        dtype = None if dtype is None else np.dtype(dtype)
        if blob is not None and not isinstance(blob, BlobReference):
            preserve_shape = isinstance(blob, np.ndarray)
            if dtype is not None and dtype != np.void:
                blob = np.array(blob, dtype=dtype.base)
                if blob.size == 0 and not preserve_shape:
                    blob = blob.reshape((0,) + dtype.shape)
            elif not isinstance(blob, np.ndarray):
                raise AssertionError('Invalid blob type: %s' % str(type(blob)))
            if blob.ndim == 0 and not preserve_shape:
                blob = blob.reshape((1,))
            if blob.ndim > 1 and dtype is not None and dtype.base != np.void:
                dtype = np.dtype((dtype.base, blob.shape[1:]))
        if dtype is None:
            dtype = np.dtype(np.void)
        if dtype.fields:
            raise AssertionError('Cannot create Scalar with a structured dtype. Use '
                                 'from_dtype instead.')
        self.dtype = dtype
        self._blob = blob
        if metadata is not None:
            self.set_metadata(metadata)
        self._validate_metadata()

    def set_type(self, dtype):
        self._original_dtype = dtype
        self.dtype = np.dtype(np.void if dtype is None else dtype)
        self._validate_metadata()

    def _pprint_impl(self, indent, out):
        out.write('  ' * indent + 'Scalar({!r}, {!r}, {!r})\n'.format(
            self.dtype, self._blob, self._metadata))

    def id(self):
        """This scalar's column index in its root schema."""
        return self._child_base_id()


def Map(keys, values, keys_name='keys', values_name='values', lengths_blob=None):
    """A List of Struct(keys, values)."""
    return List(Struct((keys_name, keys), (values_name, values)), lengths_blob=lengths_blob)


def NamedTuple(name_prefix, *fields):
    return Struct(*[('%s_%d' % (name_prefix, i), field) for i, field in enumerate(fields)])


def Tuple(*fields):
    """A Struct whose fields are named field_0, field_1, ..."""
    return NamedTuple('field', *fields)


def RawTuple(num_fields, name_prefix='field'):
    """A tuple of `num_fields` untyped scalars."""
    if not isinstance(num_fields, int) or num_fields < 0:
        raise AssertionError('num_fields must be an int >= 0, got {!r}'.format(num_fields))
    return NamedTuple(name_prefix, *([np.void] * num_fields))


def from_dtype(dtype, _outer_shape=()):
    """The schema of a numpy dtype: a Scalar, or for a structured dtype a
    Struct of its fields (outer shapes carried into the leaves). Only packed
    structured dtypes (no gaps between fields) are supported."""
    if not isinstance(dtype, np.dtype):
        shape = _outer_shape
        dtype = np.dtype((dtype, _outer_shape))
    else:
        shape = _outer_shape + dtype.shape
        if shape != dtype.shape:
            dtype = np.dtype((dtype.base, shape))
    if not dtype.fields:
        return Scalar(dtype)
    fields = []
    packed_offset = 0
    for name in dtype.names:
        field_dtype, offset = dtype.fields[name][:2]
        if offset != packed_offset:
            raise AssertionError('Fields with byte offsets are not supported (field {} '
                                 'is at byte {}, not {}).'.format(name, offset, packed_offset))
        packed_offset += field_dtype.itemsize
        fields.append((name, from_dtype(field_dtype, _outer_shape=shape)))
    return Struct(*fields)
