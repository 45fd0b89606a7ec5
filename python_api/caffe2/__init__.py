"""Caffe2's package name over Doppio, so unchanged Caffe2 scripts run.

Every caffe2.python.X / caffe2.proto.X module here does not copy doppio.X's
names: it replaces itself in sys.modules with doppio.X. `caffe2.python.core`
therefore IS `doppio.core`, which is what legacy code needs: isinstance checks
across both names agree (a caffe2 BlobReference is a doppio BlobReference),
and module-level state, above all the name and device scopes and the net name
counter, exists once however a script spells its imports. A re-exporting copy
would give two scope stacks and two sets of classes.
"""

import importlib
import sys


def _alias(alias_name, target_name):
    """Makes the module being imported as alias_name be target_name itself.

    Called from the alias module's own body: the import system returns
    whatever sys.modules holds under the name once the body has run, and binds
    that object on the parent package, so `from caffe2.python import core`
    yields doppio.core.
    """
    target = importlib.import_module(target_name)
    sys.modules[alias_name] = target
    return target
