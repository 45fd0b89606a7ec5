"""Caffe2's optimizer_context: choose the optimizer of the parameters a
block of model-building code creates.

    with UseOptimizer(SgdOptimizer(0.1)):                   # every parameter
        brew.conv(model, 'data', 'conv', 3, 16, 3)
    with UseOptimizer({'WEIGHT': adagrad, 'BIAS': sgd}):    # by parameter tag
        brew.fc(model, 'conv', 'fc', 16, 10)

ModelHelper.create_param records the optimizer in the parameter's
ParameterInfo (a tag's optimizer first, else the DEFAULT one), and the
build_* functions use it for that parameter instead of their own. Blocks
nest: an inner block's optimizers override the outer ones' for the same
keys. Not thread-safe: one model is built at a time.
"""

DEFAULT_OPTIM = 'DEFAULT'


class OptimizerContext(object):
    """The optimizers of the enclosing UseOptimizer blocks."""

    _current = None

    def __init__(self):
        self._stack = [{}]

    @classmethod
    def current(cls):
        if cls._current is None:
            cls._current = cls()
        return cls._current

    def has_optimizer(self, name):
        return name in self._stack[-1]

    def get_optimizer(self, name):
        if not self.has_optimizer(name):
            raise KeyError('no optimizer for {!r} in the current UseOptimizer block'.format(name))
        return self._stack[-1][name]

    def push_optimizers(self, optimizers):
        merged = dict(self._stack[-1])
        merged.update(optimizers)
        self._stack.append(merged)

    def pop_optimizers(self):
        if len(self._stack) == 1:
            raise RuntimeError('pop_optimizers without a matching push_optimizers')
        self._stack.pop()


class UseOptimizer(object):
    """A block whose new parameters get `optimizer`: one optimizer (the
    DEFAULT for every parameter) or a dict from parameter tags (and
    DEFAULT_OPTIM) to optimizers."""

    def __init__(self, optimizer):
        self._optimizers = (dict(optimizer) if isinstance(optimizer, dict)
                            else {DEFAULT_OPTIM: optimizer})

    def __enter__(self):
        OptimizerContext.current().push_optimizers(self._optimizers)
        return self

    def __exit__(self, *exc):
        OptimizerContext.current().pop_optimizers()
        return False
