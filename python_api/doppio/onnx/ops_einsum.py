"""Einsum (ONNX opset 12+) as Doppio ops: one or two operands, explicit or
implicit output, no ellipsis or repeated letters within an operand (no
diagonals). Letters only one operand has and the output lacks are summed
first (ReduceSum); the rest become one batched product (BatchMatMul):

    A -> [batch, free of A, contracted],  B -> [batch, contracted, free of B]
    out = transpose(reshape(A' B'))

which needs both operands' shapes at conversion time."""

import math

from doppio.onnx import common
from doppio.onnx.context import converts


def _parse(ctx, equation, operands):
    text = equation.decode() if isinstance(equation, bytes) else equation
    text = text.replace(' ', '')
    if '.' in text:
        raise ctx.unsupported('equation {!r}: ellipsis is not supported'.format(equation))
    inputs, arrow, output = text.partition('->')
    terms = inputs.split(',')
    if len(terms) != operands:
        raise ctx.invalid('equation {!r} names {} operands, the node has {}'.format(
            equation, len(terms), operands))
    if not arrow:  # implicit: the letters seen once, in alphabetical order
        letters = ''.join(terms)
        output = ''.join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for term in terms + [output]:
        if (term and not term.isalpha()) or len(set(term)) != len(term):
            raise ctx.unsupported('equation {!r}: term {!r} must be distinct letters (no '
                                  'diagonals)'.format(equation, term))
    if set(output) - set(''.join(terms)):
        raise ctx.invalid('equation {!r}: the output has letters no operand has'.format(
            equation))
    return terms, output


def _sum_out(ctx, name, term, keep):
    """Sums the letters of `term` not in `keep` away; returns (blob, term)."""
    axes = [i for i, c in enumerate(term) if c not in keep]
    if not axes:
        return name, term
    out = ctx.temp('einsum_sum')
    ctx.op('ReduceSum', [name], [out], axes=axes, keepdims=0)
    return out, ''.join(c for c in term if c in keep)


def _arrange(ctx, name, term, order, output=None):
    """Transposes `name` (letters `term`) into letter order `order` (into
    `output` when given)."""
    if term == order and output is None:
        return name
    if term == order:
        ctx.op('Copy', [name], [output])
        return output
    return common.transpose(ctx, name, [term.index(c) for c in order], output=output,
                            hint='einsum_t')


def _one_letter_each(a_term, b_term, output):
    """Whether the product has one free letter per operand and one contracted
    letter, none summed alone (attention's "bhid,bhjd->bhij"): then it needs
    no reshapes, so no shapes."""
    every = set(a_term) | set(b_term)
    free_a = [c for c in a_term if c not in b_term]
    free_b = [c for c in b_term if c not in a_term]
    contracted = [c for c in a_term if c in b_term and c not in output]
    return (len(free_a) == len(free_b) == len(contracted) == 1 and
            set(free_a + free_b) <= set(output) and len(output) == len(every) - 1)


def _batched_product(ctx, a_term, b_term, output):
    batch = [c for c in output if c in a_term and c in b_term]
    free_a = [c for c in a_term if c not in b_term]
    free_b = [c for c in b_term if c not in a_term]
    contracted = [c for c in a_term if c in b_term and c not in output]
    a = _arrange(ctx, ctx.input(0), a_term, ''.join(batch + free_a + contracted))
    # B as [batch, free, contracted] is B^T of the product: no transpose.
    trans_b = b_term == ''.join(batch + free_b + contracted)
    b = ctx.input(1) if trans_b else _arrange(ctx, ctx.input(1), b_term,
                                              ''.join(batch + contracted + free_b))
    product_term = ''.join(batch + free_a + free_b)
    product = ctx.output(0) if product_term == output else ctx.temp('einsum_product')
    ctx.op('BatchMatMul', [a, b], [product], broadcast=1, trans_b=int(trans_b))
    if product != ctx.output(0):
        _arrange(ctx, product, product_term, output, ctx.output(0))


@converts('Einsum')
def convert_einsum(ctx):
    ctx.check_outputs(1)
    count = len(ctx.node.input)
    if count not in (1, 2):
        raise ctx.unsupported('Einsum of {} operands (1 or 2 are supported)'.format(count))
    terms, output = _parse(ctx, ctx.attrs.string('equation'), count)
    if count == 1:
        x, term = _sum_out(ctx, ctx.input(0), terms[0], set(output))
        _arrange(ctx, x, term, output, ctx.output(0))
        return
    a_term, b_term = terms
    if _one_letter_each(a_term, b_term, output):
        _batched_product(ctx, a_term, b_term, output)
        return
    sizes = {}
    for name, term in ((ctx.input(0), a_term), (ctx.input(1), b_term)):
        for c, d in zip(term, ctx.static_shape(name)):
            if sizes.setdefault(c, d) != d and 1 not in (d, sizes[c]):
                raise ctx.invalid('letter {!r} is {} and {}'.format(c, sizes[c], d))
            sizes[c] = max(sizes[c], d)
    a, a_term = _sum_out(ctx, ctx.input(0), a_term, set(b_term) | set(output))
    b, b_term = _sum_out(ctx, ctx.input(1), b_term, set(a_term) | set(output))
    batch = [c for c in output if c in a_term and c in b_term]
    free_a = [c for c in output if c in a_term and c not in b_term]
    free_b = [c for c in output if c in b_term and c not in a_term]
    contracted = [c for c in a_term if c in b_term and c not in output]

    def dims(letters):
        return [sizes[c] for c in letters]

    size = lambda letters: int(math.prod(dims(letters)))  # noqa: E731
    a = _arrange(ctx, a, a_term, ''.join(batch + free_a + contracted))
    a = common.reshape(ctx, a, dims(batch) + [size(free_a), size(contracted)], hint='einsum_a')
    b = _arrange(ctx, b, b_term, ''.join(batch + contracted + free_b))
    b = common.reshape(ctx, b, dims(batch) + [size(contracted), size(free_b)], hint='einsum_b')
    product = ctx.temp('einsum_product')
    ctx.op('BatchMatMul', [a, b], [product], broadcast=1)
    product_term = ''.join(batch + free_a + free_b)
    if product_term == output:
        common.reshape(ctx, product, dims(output), ctx.output(0))
        return
    product = common.reshape(ctx, product, dims(batch) + dims(free_a) + dims(free_b),
                             hint='einsum_out')
    _arrange(ctx, product, product_term, output, ctx.output(0))
