"""A software prefetch for the Numba kernels: LLVM's ``llvm.prefetch`` as a Numba intrinsic.

The frontier loop's gather into the sweep order and its scatter back
(:func:`.frontier_order.enter`, :func:`.frontier_order.leave_to_sparse`) visit the store's ids at random
(the sweep order is by in-degree), one cache line per vertex and array that the hardware
prefetcher cannot guess. :func:`prefetch` asks for the lines of the vertex a few positions
ahead, so that their misses overlap the work on the vertices before it. A prefetch never faults
and changes no value: results are the same bits with or without it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, i):
    """Hint (in compiled code) that ``arr[i]`` will be read soon: a read prefetch into all cache
    levels. ``arr`` a contiguous 1-d array, ``i`` an integer index within it; returns None."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(i, types.Integer):
        return None
    sig = types.none(arr, i)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # read (0), high locality (3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen
