"""caffe2.python: each submodule is the doppio module of the same name (the
import hook in caffe2/__init__.py).

Nothing is imported eagerly, as in Caffe2: `import caffe2.python` stays cheap
and does not require modules a script never uses.
"""
