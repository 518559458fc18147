"""The error hierarchy: every error a user can cause has a one-line message and an exit code."""
from __future__ import annotations

# The runtime ships alone to boards, so its errors (artifact/manifest problems, bad feeds) are
# defined in hetcc.runtime.errors, outside this hierarchy, and this module does not import the
# runtime (nor onnxruntime); ``is_user_error`` recognises both kinds for the CLI.
import sys


class HetccError(Exception):
    """Base class; the CLI prints the message on one line and exits with ``exit_code``."""

    exit_code = 2


class ModelError(HetccError):
    """The input model cannot be read, checked or given static shapes."""


class TargetError(HetccError):
    """A target name is unknown or a target file is malformed."""


class UsageError(HetccError):
    """A command-line value or API argument is malformed."""


class PipelineError(HetccError):
    """A pass ran before the analyses it requires (a programming error, not user input)."""

    exit_code = 1


class InfeasibleError(HetccError):
    """No plan satisfies the constraints (deadline, power cap, legality)."""

    exit_code = 3


def is_user_error(exc: BaseException) -> bool:
    """A HetccError or one of the runtime's errors (those have a one-line message and exit code)."""
    if isinstance(exc, HetccError):
        return True
    rt = sys.modules.get("hetcc.runtime.errors")
    return rt is not None and isinstance(exc, rt.ManifestError)
