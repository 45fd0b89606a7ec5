"""Caffe2's regularizer_context: regularizers for the parameters a block
creates, by key, for layers that take them (`with
UseRegularizer({'WEIGHT': L2Norm(1e-4)})` ... `RegularizerContext.current()
.get_regularizer('WEIGHT')`)."""
from doppio import context
from doppio.modifier_context import ModifierContext, UseModifierBase


@context.define_context(allow_default=True)
class RegularizerContext(ModifierContext):
    """The regularizers of the enclosing UseRegularizer blocks."""

    def has_regularizer(self, name):
        return self._has_modifier(name)

    def get_regularizer(self, name):
        if not self.has_regularizer(name):
            raise AssertionError('{} regularizer is not provided!'.format(name))
        return self._get_modifier(name)


class UseRegularizer(UseModifierBase):
    def _context_class(self):
        return RegularizerContext
