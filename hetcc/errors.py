"""The error hierarchy: every error a user can cause is a HetccError with a one-line message."""
from __future__ import annotations


class HetccError(Exception):
    """Base class; the CLI prints the message on one line and exits with ``exit_code``."""

    exit_code = 2


class ModelError(HetccError):
    """The input model cannot be read, checked or given static shapes."""


class TargetError(HetccError):
    """A target name is unknown or a target file is malformed."""


class UsageError(HetccError):
    """A command-line value or API argument is malformed."""


class ManifestError(HetccError):
    """An artifact directory, manifest or slice file is missing, malformed or tampered with."""


class PipelineError(HetccError):
    """A pass ran before the analyses it requires (a programming error, not user input)."""

    exit_code = 1


class InfeasibleError(HetccError):
    """No plan satisfies the constraints (deadline, power cap, legality)."""

    exit_code = 3
