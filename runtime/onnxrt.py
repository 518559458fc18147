"""The one place hetcc imports onnxruntime: telemetry off unless the user opts in.

Official onnxruntime builds ship Microsoft's 1DS telemetry, on by default: importing
onnxruntime creates a device id and an event database under the user's cache
(``~/.cache/Microsoft/DeveloperTools/.onnxruntime/``) and a long-running process looks up and
contacts a telemetry host. onnxruntime's documented switch is the environment variable
``ORT_DISABLE_TELEMETRY=1``, read when the library initialises, that is when it is imported;
so it has to be set before the first ``import onnxruntime``.

* ``configure()`` sets ``ORT_DISABLE_TELEMETRY=1`` with ``os.environ.setdefault`` (a value the
  user set wins) unless ``HETCC_ORT_TELEMETRY=1`` opts in. ``hetcc.runtime`` calls it when the
  package is imported, so anything that imports the runtime or the compiler's frontend (which
  imports ``hetcc.runtime.manifest``) has it set before onnxruntime loads.
* ``load()`` is what the runtime and the compiler call instead of ``import onnxruntime``:
  ``configure()``, the import, and (unless opted in) ``onnxruntime.disable_telemetry_events()``
  where the build has it, which also suppresses events when onnxruntime was imported by
  someone else first, before the variable could take effect.

Standard library only until ``load()`` is called (the runtime's manifest module, imported by
the compiler, must not pull in onnxruntime).
"""
from __future__ import annotations

import os
from types import ModuleType

__all__ = ["OPT_IN_ENV", "ORT_ENV", "telemetry_opted_in", "configure", "load"]

#: set to 1 (or true / yes / on) to leave onnxruntime's telemetry as onnxruntime ships it
OPT_IN_ENV = "HETCC_ORT_TELEMETRY"
#: onnxruntime's own switch, read once when the library initialises
ORT_ENV = "ORT_DISABLE_TELEMETRY"

_events_disabled = False


def telemetry_opted_in() -> bool:
    """True when the user asked for onnxruntime's telemetry (``HETCC_ORT_TELEMETRY=1``)."""
    return os.environ.get(OPT_IN_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def configure() -> None:
    """Set ``ORT_DISABLE_TELEMETRY=1`` unless the user opted in or set it already; cheap, idempotent,
    imports nothing."""
    if not telemetry_opted_in():
        os.environ.setdefault(ORT_ENV, "1")


def load() -> ModuleType:
    """``import onnxruntime`` with telemetry off (see the module docstring); returns the module."""
    global _events_disabled
    configure()
    import onnxruntime

    if not _events_disabled and not telemetry_opted_in():
        disable = getattr(onnxruntime, "disable_telemetry_events", None)
        if disable is not None:
            try:
                disable()
            except Exception:  # pragma: no cover - a build without the telemetry API
                pass
        _events_disabled = True
    return onnxruntime
