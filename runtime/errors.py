"""Errors the runtime raises; self-contained so that the runtime ships to a board alone.

``hetcc.errors`` makes its ``ManifestError`` an alias or subclass of the one here, so the CLI
catches both with one clause and prints the one-line message.
"""
from __future__ import annotations

__all__ = ["ManifestError", "InputError"]


class ManifestError(Exception):
    """An artifact directory, manifest or slice file is missing, malformed or tampered with."""

    exit_code = 2


class InputError(ManifestError):
    """A feed given to ``Executor.run`` does not match the model's inputs (name, dtype, shape)."""
