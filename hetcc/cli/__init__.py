"""The ``hetcc`` command line: one module per command family, helpers every command borrows in
``common``. ``main`` is the CLI's entry (``python -m hetcc.cli`` runs it through ``hetcc._entry``)."""
from __future__ import annotations


def main(argv=None) -> int:  # noqa: ANN001
    """Run the ``hetcc`` command line with ``argv`` (default ``sys.argv[1:]``); return its exit code."""
    from hetcc.cli.app import main as app_main

    return app_main(argv)
