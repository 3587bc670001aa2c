"""Backend choice: the CPU (NumPy/SciPy) or the GPU (CuPy, CUDA kernels).

``device="auto"`` picks the GPU when CuPy imports and sees at least one CUDA device, else the
CPU, and records why in :attr:`Backend.reason`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from .errors import BackendUnavailableError, InvalidArgumentError

DEVICES = ("auto", "cpu", "gpu")


@dataclass(frozen=True)
class Backend:
    """A resolved backend.

    Attributes
    ----------
    name : {"cpu", "gpu"}
        The backend in use.
    xp : module
        The array module: :mod:`numpy` or :mod:`cupy`.
    reason : str
        Why this backend was chosen (shown by the CLI).
    """

    name: str
    xp: ModuleType
    reason: str

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    def to_host(self, array) -> np.ndarray:
        """Copy ``array`` to a NumPy array (a device-to-host copy on the GPU: synchronizes)."""
        return to_host(array)

    def asarray(self, array, dtype=None):
        """Put ``array`` on this backend (a host-to-device copy on the GPU)."""
        return self.xp.asarray(array, dtype=dtype)

    def synchronize(self) -> None:
        """Wait for the work queued on the device (nothing to wait for on the CPU).

        Called around timed stages so that wall-clock timings include the device work.
        """
        if self.is_gpu:
            self.xp.cuda.Device().synchronize()


def to_host(array) -> np.ndarray:
    """``array`` as a NumPy array, whichever backend holds it.

    Parameters
    ----------
    array : array_like
        A NumPy or CuPy array (or anything :func:`numpy.asarray` takes).

    Returns
    -------
    ndarray
        A device-to-host copy for a CuPy array (synchronizes), else ``np.asarray(array)``.
    """
    return array.get() if hasattr(array, "get") else np.asarray(array)


@functools.lru_cache(maxsize=1)
def _probe_gpu() -> tuple[bool, str]:
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return False, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CuPy sees no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return False, "CuPy sees no CUDA device"
    try:
        name = _gpu_name(cupy)
    except Exception:  # the name is only for the message
        name = "CUDA device"
    return True, f"CuPy sees {count} CUDA device(s): {name}"


def _gpu_name(cupy) -> str:
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    return props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])


def device_name(backend: Backend) -> str:
    """The processor a backend runs on, for reports: the GPU's name or ``CPU (<machine>)``."""
    if backend.is_gpu:
        return _gpu_name(backend.xp)
    import platform

    return f"CPU ({platform.processor() or platform.machine()})"


def gpu_available() -> bool:
    """Whether the GPU backend can be used here."""
    return _probe_gpu()[0]


def _cupy_with_limit():
    """CuPy, its memory pool capped by ``STREAMRANK_GPU_MEMORY_LIMIT`` when that is set."""
    import cupy

    from .store.memory import apply_device_limit_setting

    apply_device_limit_setting(cupy)
    return cupy


def resolve_backend(device: str = "auto") -> Backend:
    """Resolve a device name to a :class:`Backend`.

    Parameters
    ----------
    device : {"auto", "cpu", "gpu"}
        ``"auto"`` chooses the GPU when available, else the CPU.

    Returns
    -------
    Backend

    Raises
    ------
    InvalidArgumentError
        For an unknown device name.
    BackendUnavailableError
        For ``"gpu"`` on a machine without a usable GPU.
    """
    if isinstance(device, Backend):
        return device
    if device not in DEVICES:
        raise InvalidArgumentError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "cpu":
        return Backend("cpu", np, "CPU requested")
    ok, why = _probe_gpu()
    if device == "gpu":
        if not ok:
            hint = (" (install the GPU extra: pip install 'streamrank[gpu]')" if "not importable" in why
                    else " (check the NVIDIA driver and CUDA_VISIBLE_DEVICES)")
            raise BackendUnavailableError(f"--device gpu: {why}{hint}")
        return Backend("gpu", _cupy_with_limit(), why)
    if ok:
        return Backend("gpu", _cupy_with_limit(), f"auto: {why}")
    return Backend("cpu", np, f"auto: {why}; using the CPU backend")
