"""Packaging: the package list is found, never kept by hand. ``hetcc`` lives in ``hetcc/``; the
compiler passes, the board files and the runtime keep top-level folders of their own
(``passes/``, ``targets/``, ``runtime/``) and install as ``hetcc.passes``, ``hetcc.targets`` and
``hetcc.runtime``. Every sub-package below each root is found by ``find_packages``, so a new one
can never go missing from an install (``tests/test_packaging.py`` checks the wheel)."""
from setuptools import find_packages, setup

ROOTS = {"hetcc": "hetcc", "hetcc.passes": "passes", "hetcc.targets": "targets", "hetcc.runtime": "runtime"}


def packages() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
    return found


setup(packages=packages(), package_dir=ROOTS)
