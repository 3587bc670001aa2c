"""The ``streamrank serve`` daemon: sources -> batches -> engine -> sinks -> checkpoints.

Modules: :mod:`.config` (TOML + environment + flags), :mod:`.loop` (the event loop),
:mod:`.signals` (shutdown flag), :mod:`.metrics` (Prometheus), :mod:`.drift` (drift guard).
"""

from .config import DaemonConfig, load_config

__all__ = ["DaemonConfig", "load_config"]
