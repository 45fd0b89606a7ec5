"""Caffe2's modifier_context: the base of the contexts that give parameters
a modifier (an optimizer, a regularizer) inside a `with` block.

    with UseOptimizer({'WEIGHT': adagrad, 'BIAS': sgd}): ...
    with UseRegularizer(L2Norm(1e-4)): ...

A context keeps a stack of {key: modifier} dicts; the current modifiers
are their union, inner blocks overriding outer ones. A single modifier
stands for {DEFAULT_MODIFIER: modifier}. Not thread-safe.
"""

DEFAULT_MODIFIER = 'DEFAULT'


class ModifierContext(object):
    """The modifiers of the enclosing blocks (subclasses name the kind)."""

    def __init__(self):
        self._modifiers = {}
        self._modifiers_list = []

    def _rebuild_modifiers(self):
        self._modifiers = {}
        for modifiers in self._modifiers_list:
            self._modifiers.update(modifiers)

    def _has_modifier(self, name):
        return name in self._modifiers

    def _get_modifier(self, name):
        return self._modifiers.get(name)

    def push_modifiers(self, modifiers):
        self._modifiers_list.append(modifiers)
        self._modifiers.update(modifiers)

    def pop_modifiers(self):
        if not self._modifiers_list:
            raise AssertionError('pop_modifiers without a matching push_modifiers')
        self._modifiers_list.pop()
        self._rebuild_modifiers()


class UseModifierBase(object):
    """A block whose parameters get a modifier, or a dict of them by key."""

    def __init__(self, modifier_or_dict):
        self._modifiers = (dict(modifier_or_dict) if isinstance(modifier_or_dict, dict)
                           else {DEFAULT_MODIFIER: modifier_or_dict})

    def _context_class(self):
        raise NotImplementedError('UseModifierBase subclasses name their context class')

    def __enter__(self):
        self._context_class().current().push_modifiers(self._modifiers)
        return self

    def __exit__(self, etype, value, traceback):
        self._context_class().current().pop_modifiers()
