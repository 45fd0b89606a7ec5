"""workspace.C.create_db: Caffe2's Python DB handles over the minidb and
LMDB backends. Records written through transactions read back in order
through cursors; a dropped transaction commits; a DB with live handles
cannot be closed; errors name the path."""
import os
import sys

import pytest

from doppio import workspace

RECORDS = [('key{}'.format(i).encode(), 'value{}'.format(i).encode()) for i in range(1, 10)]


@pytest.mark.parametrize('db_type', ['minidb', 'lmdb'])
def test_round_trip(tmp_path, db_type):
    path = str(tmp_path / 'db')
    db = workspace.C.create_db(db_type, path, workspace.C.Mode.new)
    transaction = db.new_transaction()
    for key, value in RECORDS:
        transaction.put(key, value)
    del transaction  # commits, as in Caffe2
    db.close()
    db = workspace.C.create_db(db_type, path, workspace.C.Mode.read)
    cursor = db.new_cursor()
    seen = []
    while cursor.valid():
        seen.append((cursor.key(), cursor.value()))
        cursor.next()
    assert seen == RECORDS
    cursor.seek_to_first()
    assert cursor.key() == RECORDS[0][0]
    with pytest.raises(RuntimeError, match='still use it'):
        db.close()
    del cursor
    db.close()
    db.close()  # closing twice is harmless


def test_errors_name_the_path(tmp_path):
    missing = str(tmp_path / 'missing.minidb')
    with pytest.raises(RuntimeError, match='missing.minidb'):
        workspace.C.create_db('minidb', missing, workspace.C.Mode.read)
    with pytest.raises(RuntimeError, match='nosuchdb'):
        workspace.C.create_db('nosuchdb', missing, workspace.C.Mode.new)
    path = str(tmp_path / 'one')
    db = workspace.C.create_db('minidb', path, workspace.C.Mode.new)
    transaction = db.new_transaction()
    transaction.put(b'k', b'v')
    transaction.commit()
    del transaction
    db.close()
    db = workspace.C.create_db('minidb', path, workspace.C.Mode.read)
    cursor = db.new_cursor()
    cursor.next()
    with pytest.raises(RuntimeError, match='past the last record'):
        cursor.key()
    assert os.path.exists(path)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
