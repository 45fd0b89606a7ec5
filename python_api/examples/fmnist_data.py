"""Fashion-MNIST's files for fmnist_train.py (which re-exports these): the
IDX files of the Debian package, the training and test DBs that
tools/make_db builds from them, and the raw test set read with numpy.
`args` is fmnist_train's parsed command line (data_dir, workdir, db_type,
tools_dir, num_shards, shard_id).
"""
import gzip
import os
import shutil
import subprocess

import numpy as np


def tool(args, name):
    path = os.path.join(args.tools_dir, name)
    if not os.access(path, os.X_OK):
        raise SystemExit('fmnist_train: {} not found in {} (build it with `bazel build '
                         '//tools:{}`, or pass --tools_dir)'.format(name, args.tools_dir, name))
    return path


def idx_files(data_dir, split):
    prefix = 'train' if split == 'train' else 't10k'
    images = os.path.join(data_dir, prefix + '-images-idx3-ubyte.gz')
    labels = os.path.join(data_dir, prefix + '-labels-idx1-ubyte.gz')
    for path in (images, labels):
        if not os.path.exists(path):
            raise SystemExit('fmnist_train: {} is missing (Debian package '
                             'dataset-fashion-mnist, or pass --data_dir)'.format(path))
    return images, labels


def make_db(args, split, limit):
    """Runs tools/make_db; returns (db path, number of records)."""
    images, labels = idx_files(args.data_dir, split)
    db_path = os.path.join(args.workdir, 'fmnist_{}_{}'.format(split, args.db_type))
    if args.num_shards > 1:
        # The shards may share a workdir: each builds its own copy.
        db_path += '_shard{}'.format(args.shard_id)
    if os.path.isdir(db_path):
        shutil.rmtree(db_path)
    elif os.path.exists(db_path):
        os.remove(db_path)
    subprocess.run([tool(args, 'make_db'), '--image_file', images, '--label_file', labels,
                    '--output_file', db_path, '--db', args.db_type,
                    '--data_limit', str(limit), '--channel_first'],
                   check=True, stdout=subprocess.DEVNULL)
    return db_path, record_count(args, split, limit)


def record_count(args, split, limit):
    """The number of images of a split, from its IDX header."""
    _, labels = idx_files(args.data_dir, split)
    with gzip.open(labels) as f:
        count = int.from_bytes(f.read(8)[4:], 'big')
    return count if limit < 0 else min(limit, count)


def read_idx(args, split, limit):
    """The raw test images and labels, read with numpy (independently of
    make_db and the DB reader) for scoring the exported net."""
    images, labels = idx_files(args.data_dir, split)
    with gzip.open(images) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(labels) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int32)
    if limit >= 0:
        x, y = x[:limit], y[:limit]
    return x, y
