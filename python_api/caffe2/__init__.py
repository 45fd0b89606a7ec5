"""Caffe2's package name over Doppio, so unchanged Caffe2 scripts run.

`caffe2.python.X` and `caffe2.proto.X` are not copies of doppio.X: an import
hook makes each of them BE the module `doppio.X` (and `doppio.proto.X`). That
is what legacy code needs: isinstance checks across both names agree (a
caffe2 BlobReference is a doppio BlobReference), and module-level state,
above all the name and device scopes and the net name counter, exists once
however a script spells its imports. A re-exporting copy would give two
scope stacks and two sets of classes; a hook, rather than one alias file per
module, means every module Doppio adds is importable under Caffe2's name the
day it lands.

A Caffe2 module Doppio does not have fails as Python's own import does
(ModuleNotFoundError naming `caffe2.python.X`).

Importing this package also restores the numpy names Caffe2-era programs
use and today's numpy dropped (np.asscalar, np.bool ...; see
doppio/legacy_env.py).
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

# Caffe2 package prefix -> the Doppio package holding the same modules.
_ALIASED_PACKAGES = (
    ('caffe2.python.', 'doppio.'),
    ('caffe2.proto.', 'doppio.proto.'),
)


def doppio_name_of(caffe2_name):
    """The Doppio module that the Caffe2 module `caffe2_name` is, or None
    for a name outside the aliased packages (caffe2, caffe2.python and
    caffe2.proto themselves are real, empty packages)."""
    for prefix, target in _ALIASED_PACKAGES:
        if caffe2_name.startswith(prefix):
            return target + caffe2_name[len(prefix):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads a Caffe2 name by importing its Doppio module and handing that
    very object to the import system, which then files it under the Caffe2
    name in sys.modules and binds it on the parent package."""

    def __init__(self, target_name):
        self._target_name = target_name

    def create_module(self, spec):
        return importlib.import_module(self._target_name)

    def exec_module(self, module):
        # The Doppio module ran its body when it was imported.
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):

    def find_spec(self, fullname, path=None, target=None):
        target_name = doppio_name_of(fullname)
        if target_name is None:
            return None
        try:
            target_spec = importlib.util.find_spec(target_name)
        except ModuleNotFoundError:
            return None
        if target_spec is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(target_name),
            is_package=target_spec.submodule_search_locations is not None)


if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

importlib.import_module('doppio.legacy_env').restore_numpy_aliases()
