"""Caffe2's optimizer_context: choose the optimizer of the parameters a
block of model-building code creates.

    with UseOptimizer(SgdOptimizer(0.1)):                   # every parameter
        brew.conv(model, 'data', 'conv', 3, 16, 3)
    with UseOptimizer({'WEIGHT': adagrad, 'BIAS': sgd}):    # by parameter tag
        brew.fc(model, 'conv', 'fc', 16, 10)

ModelHelper.create_param records the optimizer in the parameter's
ParameterInfo (a tag's optimizer first, else the DEFAULT one), and the
build_* functions use it for that parameter instead of their own.
"""
from doppio import context
from doppio.modifier_context import DEFAULT_MODIFIER, ModifierContext, UseModifierBase

DEFAULT_OPTIM = DEFAULT_MODIFIER


@context.define_context(allow_default=True)
class OptimizerContext(ModifierContext):
    """The optimizers of the enclosing UseOptimizer blocks."""

    def has_optimizer(self, name):
        return self._has_modifier(name)

    def get_optimizer(self, name):
        if not self.has_optimizer(name):
            raise AssertionError('{} optimizer is not provided!'.format(name))
        return self._get_modifier(name)

    def push_optimizers(self, optimizers):
        self.push_modifiers(optimizers)

    def pop_optimizers(self):
        self.pop_modifiers()


class UseOptimizer(UseModifierBase):
    """A block whose new parameters get `optimizer`: one optimizer (the
    DEFAULT for every parameter) or a dict from parameter tags (and
    DEFAULT_OPTIM) to optimizers."""

    def _context_class(self):
        return OptimizerContext
