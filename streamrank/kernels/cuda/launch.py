"""Launch helpers shared by the device modules: CuPy import, grid sizes, kernel launches."""

from __future__ import annotations

import functools

from ...errors import BackendUnavailableError, KernelError

#: Threads per block of the helper kernels.
BLOCK = 256


def _cupy():
    try:
        import cupy
    except Exception as exc:
        raise BackendUnavailableError(f"the GPU graph store needs CuPy: {exc}") from exc
    return cupy


@functools.lru_cache(maxsize=None)
def sm_count() -> int:
    """Multiprocessors of the current device (queried once)."""
    cp = _cupy()
    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def grid_for_threads(items: int, *, block: int = BLOCK, per_sm: int = 16) -> int:
    """Blocks for a grid-stride kernel over ``items`` threads, capped at ``per_sm`` per SM."""
    need = max(1, -(-int(items) // int(block)))
    return int(min(need, per_sm * sm_count()))


def grid_for_warps(items: int, *, block: int = BLOCK, per_sm: int = 16) -> int:
    """Blocks for a grid-stride kernel with one warp per item."""
    return grid_for_threads(int(items) * 32, block=block, per_sm=per_sm)


def launch(fn, grid: int, block: int, args: tuple, *, shared_mem: int = 0) -> None:
    """Launch ``fn`` on the current stream (asynchronous), re-raising CuPy errors as KernelError.

    Scalars in ``args`` must be NumPy scalars of the kernel's parameter types.
    """
    try:
        fn((int(grid),), (int(block),), args, shared_mem=int(shared_mem))
    except Exception as exc:  # cupy.cuda.driver.CUDADriverError, TypeError on bad arguments
        raise KernelError(f"launching {getattr(fn, 'name', fn)} failed: {exc}") from exc
