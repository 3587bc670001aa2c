"""The package's own exceptions.

Every error a caller of the public API can see derives from :class:`StreamrankError`, so
``except StreamrankError`` catches them all. Low-level errors (NumPy, CuPy, pyarrow, kafka-python,
OS errors) are re-raised as one of these with the original attached as ``__cause__``.
"""

from __future__ import annotations


class StreamrankError(Exception):
    """Base class of every error raised by streamrank."""


class InvalidArgumentError(StreamrankError, ValueError):
    """A public function was called with an argument outside its documented domain."""


class ConfigError(InvalidArgumentError):
    """A combination of engine or daemon settings that cannot work together (for example
    ``multi_edges="sum"`` without ``weighted=True``, or a personalized PageRank method that takes
    no weights on the GPU asked of a weighted graph)."""


class BackendUnavailableError(StreamrankError, RuntimeError):
    """The requested backend (for example ``device="gpu"``) cannot be used on this machine."""


class BatchFormatError(StreamrankError, ValueError):
    """An edge batch or record is malformed (bad id, unknown op, missing field, ...)."""


class SourceError(StreamrankError, IOError):
    """An edge source (file, directory, Kafka topic) could not be read."""


class CheckpointError(StreamrankError, IOError):
    """A checkpoint could not be written, found, or restored."""


class KernelError(StreamrankError, RuntimeError):
    """A CUDA kernel failed to compile, load, or launch."""


class GraphCapacityError(StreamrankError, MemoryError):
    """A batch (or a build) needs more memory than the graph store may take.

    Raised before the store changes anything: the graph, its id map and the ranks stay exactly as
    they were before the batch, so the caller can checkpoint, apply smaller batches, or move to a
    larger device. The message says what was needed, what was free and what to do.

    Attributes
    ----------
    needed : int
        Bytes the operation would allocate.
    available : int
        Bytes it could have had (the tighter of free device memory and the store's limit).
    """

    def __init__(self, message: str, *, needed: int = 0, available: int = 0):
        super().__init__(message)
        self.needed = int(needed)
        self.available = int(available)


class DeviceMemoryError(KernelError, MemoryError):
    """The device ran out of memory inside a rank computation (CuPy's ``OutOfMemoryError`` or
    thrust's ``std::bad_alloc``), after the memory checks that guard the graph store passed.

    Unlike :class:`GraphCapacityError` it can come after the batch changed the graph: the engine
    then holds the batch's graph with the ranks of before (the message says so), and the caller
    recomputes the ranks or restores the last checkpoint; the daemon stops without writing a
    checkpoint, so the last one stands. The message says what was free and what to do.

    Attributes
    ----------
    needed : int
        Bytes of the allocation that failed, when known (else 0).
    available : int
        Bytes free when it failed.
    """

    def __init__(self, message: str, *, needed: int = 0, available: int = 0):
        super().__init__(message)
        self.needed = int(needed)
        self.available = int(available)


class StateUnreadableError(CheckpointError):
    """A checkpoint directory holds state (full checkpoints, batch logs, a manifest), but no full
    checkpoint in it reads: restoring would have to guess, starting afresh would drop the state.

    Attributes
    ----------
    directory : str
    unreadable : list of tuple
        ``(path, reason)`` of each full checkpoint that did not read.
    files : list of str
        Every state file found in the directory.
    """

    def __init__(self, message: str, *, directory: str = "", unreadable=(), files=()):
        super().__init__(message)
        self.directory = str(directory)
        self.unreadable = list(unreadable)
        self.files = list(files)
