"""Load the CUDA sources beside this file as ``cupy.RawModule`` objects, compiled once.

Kernels are C++ templates; the instantiations a caller needs are named up front through
``name_expressions`` (e.g. ``"dfp_rank_thread<int, double>"``) and fetched with
:func:`get_kernel`. Modules are cached per (file, names, options) for the life of the process,
and CuPy's on-disk cache keeps the compiled binaries between processes.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from ...errors import BackendUnavailableError, KernelError

KERNEL_DIR = Path(__file__).resolve().parent

_DEFAULT_OPTIONS = ("-std=c++17", "--use_fast_math")


def source_of(filename: str) -> str:
    """The text of a ``.cu`` file in this folder (``#include "x.cuh"`` resolves here too)."""
    path = KERNEL_DIR / filename
    if not path.is_file():
        raise KernelError(f"no CUDA source {filename!r} in {KERNEL_DIR}")
    return path.read_text()


def headers_digest(directory: Path) -> str:
    """A digest of every ``.cuh`` header in ``directory`` (names and contents).

    CuPy's on-disk cache keys a module by its code and options, not by the files the code
    includes, so an edit to a header alone (a new release of this package, say) would load a
    binary compiled from the old header. :func:`load_module` appends this digest to the code as
    a comment: any header change compiles every module again.
    """
    h = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.cuh")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def _headers_stamp() -> str:
    return f"\n// streamrank headers {headers_digest(KERNEL_DIR)}\n"


@functools.lru_cache(maxsize=None)
def load_module(filename: str, name_expressions: tuple, options: tuple = (), cooperative: bool = False):
    """Compile (once) and return a ``cupy.RawModule`` for ``filename``.

    Parameters
    ----------
    filename : str
        A ``.cu`` file in :data:`KERNEL_DIR`.
    name_expressions : tuple of str
        Template instantiations to compile, e.g. ``("l_inf_blocks<double>",)``.
    options : tuple of str
        Extra NVRTC options (``-D`` macros and the like).
    cooperative : bool
        Compile for cooperative groups; every kernel of the module is then launched with
        ``cuLaunchCooperativeKernel`` (its grid must be resident all at once).

    Raises
    ------
    BackendUnavailableError
        When CuPy is not importable.
    KernelError
        When compilation fails (the compiler log is in the message).
    """
    try:
        import cupy
    except Exception as exc:
        raise BackendUnavailableError(f"CuPy is needed for the CUDA kernels: {exc}") from exc
    code = source_of(filename) + _headers_stamp()  # the headers' digest: see headers_digest
    opts = _DEFAULT_OPTIONS + (f"-I{KERNEL_DIR}",) + tuple(options)
    try:
        module = cupy.RawModule(code=code, options=opts, name_expressions=list(name_expressions),
                                enable_cooperative_groups=cooperative)
        module.compile()
    except Exception as exc:  # cupy.cuda.compiler.CompileException and driver errors
        raise KernelError(f"compiling {filename} failed: {exc}") from exc
    return module


def get_kernel(filename: str, name: str, name_expressions: tuple, options: tuple = (), cooperative: bool = False):
    """One kernel (template instantiation ``name``) from :func:`load_module`."""
    module = load_module(filename, tuple(name_expressions), tuple(options), cooperative)
    try:
        return module.get_function(name)
    except Exception as exc:
        raise KernelError(f"kernel {name!r} not found in {filename}: {exc}") from exc


@functools.lru_cache(maxsize=None)
def _device_limits(device_id: int) -> tuple:
    """(multiprocessors, threads, registers, blocks, shared bytes per multiprocessor), queried
    once per device: reading ``Device.attributes`` asks the driver for every attribute."""
    import cupy as cp

    attrs = cp.cuda.Device(device_id).attributes
    return (int(attrs["MultiProcessorCount"]), int(attrs["MaxThreadsPerMultiProcessor"]),
            int(attrs["MaxRegistersPerMultiprocessor"]), int(attrs.get("MaxBlocksPerMultiprocessor", 32)),
            int(attrs["MaxSharedMemoryPerMultiprocessor"]))


def resident_blocks(kernel, block: int) -> int:
    """Blocks of ``block`` threads of ``kernel`` that are resident at once on the current device
    (the largest grid a cooperative launch of it accepts), from its register and shared memory use."""
    import cupy as cp

    sms, threads, registers, blocks, shared_mem = _device_limits(cp.cuda.Device().id)
    regs = max(int(kernel.num_regs), 1)
    per_block = -(-regs // 8) * 8 * block  # registers are allocated in units of 8 per thread
    per_sm = min(threads // block, registers // per_block, blocks)
    shared = int(getattr(kernel, "shared_size_bytes", 0) or 0)
    if shared:
        per_sm = min(per_sm, shared_mem // shared)
    return max(per_sm, 1) * sms
