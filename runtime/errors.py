"""Errors the runtime raises; self-contained so that the runtime ships to a board alone.

The CLI catches ``ManifestError`` (and its subclasses) beside ``hetcc.core.errors.HetccError`` and
prints the one-line message; importing this module imports neither onnxruntime nor numpy.
"""
from __future__ import annotations

__all__ = ["ManifestError", "InputError", "RemoteSliceError", "SliceRunError", "PolicyError", "TraceError"]


class ManifestError(Exception):
    """An artifact directory, manifest or slice file is missing, malformed or tampered with."""

    exit_code = 2


class InputError(ManifestError):
    """A feed given to ``Executor.run`` does not match the model's inputs (name, dtype, shape)."""


class RemoteSliceError(ManifestError):
    """A slice was planned for a remote device (reached over a link) and this runtime was not
    told to run it locally (``local_fallback`` / ``--local-fallback``)."""


class SliceRunError(ManifestError):
    """onnxruntime failed while running a slice on the given inputs (e.g. an index input out of
    range for a Gather): one line naming the slice, onnxruntime's message and what to check."""


class InferenceTimeout(SliceRunError):
    """An inference ran past the time it was given (``Executor(timeout=...)``, ``hetcc run
    --timeout``) and was stopped inside onnxruntime (its run's terminate flag)."""


class PolicyError(ManifestError):
    """An AutoScale policy or Q-table file (``policy/autoscale.json``, ``hetcc.qtable/1``) is
    missing, malformed or does not match the manifest's sha256, or the policy cannot act (no
    action allowed): one line naming the file and what to do."""


class TraceError(PolicyError):
    """A signal-strength trace (``hetcc run --policy --trace FILE``) cannot be read: one line
    naming the file, the line and the fix."""
