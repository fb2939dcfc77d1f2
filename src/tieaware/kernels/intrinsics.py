"""The numba extensions tieaware's kernels call: LLVM intrinsics and an overload, defined with numba's API.

Kernel modules name them through `backend.JitOnly`, so that only a JIT compile (or the build of the
kernels compiled ahead of time) imports this module and numba.
"""
from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from .memory import MemoryText
from .numba_compat import get_code_point, unicode_charseq_get_code


@intrinsic
def word(typingctx, buf, i):
    """Bytes ``buf[i:i + 8]`` as one uint64, the first byte lowest (one unaligned load)."""
    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = builder.bitcast(builder.gep(array.data, [args[1]]),
                                  context.get_value_type(types.uint64).as_pointer())
        loaded = builder.load(pointer, align=1)
        return loaded if sys.byteorder == "little" else builder.bswap(loaded)
    return types.uint64(buf, types.intp), codegen


@intrinsic
def full_product(typingctx, a, b):
    """(high, low) 64-bit halves of the 128-bit product of two uint64."""
    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, (high, builder.trunc(product, ir.IntType(64))))
    return types.UniTuple(types.uint64, 2)(types.uint64, types.uint64), codegen


@intrinsic
def double_of_bits(typingctx, bits):
    """The double whose IEEE 754 binary64 encoding is ``bits`` (uint64)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


def code_at(text, index):
    """The code point at `index` of a code point array, a unicode string, a UnicodeCharSeq or a
    `memory.MemoryText` (no copy): in kernels only."""
    raise TypeError("code_at runs inside numba kernels only")


@overload(code_at)
def _code_at_impl(text, index):
    if isinstance(text, types.Array):
        return lambda text, index: text[index]
    if isinstance(text, types.UnicodeCharSeq):
        return lambda text, index: unicode_charseq_get_code(text, index)
    if isinstance(text, types.UnicodeType):
        return lambda text, index: get_code_point(text, index)
    if isinstance(text, types.NamedUniTuple) and text.instance_class is MemoryText:
        def in_memory(text, index):
            at = text.address + text.kind * index
            if text.kind == 4:
                return loaded(at, np.uint32(0))
            if text.kind == 2:
                return np.uint32(loaded(at, np.uint16(0)))
            return np.uint32(loaded(at, np.uint8(0)))
        return in_memory
    return None


@intrinsic
def loaded(typingctx, address, like):
    """The value of ``like``'s type stored at memory ``address`` (an int64): a plain load, so only for
    addresses of live memory whose layout is known (`numba_dicts`)."""
    value_type = types.unliteral(like)

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], context.get_value_type(value_type).as_pointer())
        return builder.load(pointer, align=1)
    return value_type(types.int64, like), codegen
