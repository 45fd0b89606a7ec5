"""doppio.schema (Caffe2's): nested records flatten to the column names and
types their structure implies, rebuild from those columns, merge and
subtract, and round-trip through a workspace as records of blobs."""
import pickle
import sys

import numpy as np
import pytest

from doppio import core, schema, workspace
from doppio.schema import List, Map, Scalar, Struct, Tuple


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def example():
    return Struct(
        ('id', Scalar(np.int64)),
        ('tags', List(np.int32)),
        ('props', Map(np.int32, np.float32)),
        ('pos:x', np.float32),
        ('pos:y', np.float32),
    )


def test_columns_follow_the_structure():
    s = example()
    assert s.field_names() == ['id', 'tags:lengths', 'tags:values', 'props:lengths',
                               'props:values:keys', 'props:values:values', 'pos:x', 'pos:y']
    assert s.field_types() == [np.dtype(t) for t in (np.int64, np.int32, np.int32, np.int32,
                                                     np.int32, np.float32, np.float32,
                                                     np.float32)]
    assert s.pos.y.id() == 7 and s.tags.slice() == slice(1, 3)
    assert s['props:values:keys'] is s.props.keys and 'pos:x' in s and 'pos:z' not in s
    assert Tuple(np.int32, np.float32).field_names() == ['field_0', 'field_1']


def test_columns_rebuild_the_schema():
    s = example()
    rebuilt = schema.from_column_list(s.field_names(), col_types=s.field_types())
    assert rebuilt == s and isinstance(rebuilt.props, List)
    assert schema.from_column_list([]) == Struct()


def test_add_and_subtract_merge_recursively():
    a = Struct(('x', np.int32), ('nested', Struct(('p', np.int32))))
    b = Struct(('nested', Struct(('q', np.float32))), ('y', np.int64))
    assert (a + b).field_names() == ['x', 'nested:p', 'nested:q', 'y']
    assert ((a + b) - b).field_names() == ['x', 'nested:p']
    assert (a - Struct(('nested', Struct(('p', np.int32))))).field_names() == ['x']
    with pytest.raises(ValueError, match='Duplicate field name'):
        Struct(('x', np.int32), ('x', np.int32))
    with pytest.raises(TypeError):
        a.x = Scalar()


def test_scalar_values_and_checks():
    s = Scalar(np.float32, np.array([[1, 2], [3, 4]]))
    assert s.dtype == np.dtype((np.float32, (2,))) and s.get().dtype == np.float32
    assert Scalar(np.float64, 3.0).get().shape == (1,)  # a 0-d value becomes a vector
    with pytest.raises(ValueError, match='ambiguous'):
        Scalar(np.int32, 'name')
    with pytest.raises(AssertionError, match='integral'):
        Scalar(np.float32, metadata=schema.Metadata(categorical_limit=3))
    assert pickle.loads(pickle.dumps(example())) == example()


def test_records_round_trip_through_a_workspace():
    s = example()
    net = core.Net('records')
    record = schema.NewRecord(net, s)
    assert all(isinstance(b, core.BlobReference) for b in record.field_blobs())
    values = [np.array([7], np.int64), np.array([2], np.int32), np.array([4, 5], np.int32),
              np.array([1], np.int32), np.array([9], np.int32), np.array([0.5], np.float32),
              np.array([1.5], np.float32), np.array([2.5], np.float32)]
    schema.FeedRecord(record, values)
    fetched = schema.FetchRecord(record)
    for got, want in zip(fetched.field_blobs(), values):
        np.testing.assert_array_equal(got, want)
    assert fetched['tags:values'].get().tolist() == [4, 5] and fetched.tags.items is not None


def test_init_empty_record_makes_typed_empty_columns():
    net = core.Net('empty')
    record = schema.InitEmptyRecord(net, Struct(('a', np.int64), ('b', List(np.float32))))
    workspace.RunNetOnce(net)
    arrays = schema.FetchRecord(record).field_blobs()
    assert [a.dtype for a in arrays] == [np.int64, np.int32, np.float32]
    assert all(a.shape == (0,) for a in arrays)


def test_as_record_and_from_dtype():
    assert schema.as_record({'a': np.int32}).field_names() == ['a']
    assert schema.as_record([('a', np.int32), ('b', np.int64)]).field_names() == ['a', 'b']
    assert schema.as_record([np.int32, np.int64]).field_names() == ['field_0', 'field_1']
    structured = np.dtype([('u', np.int32), ('v', np.float64, (3,))])
    s = schema.from_dtype(structured)
    assert s.field_names() == ['u', 'v'] and s.v.dtype == np.dtype((np.float64, (3,)))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
