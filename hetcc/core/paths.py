"""Where hetcc keeps its caches (zoo exports, host profiles, planner checkpoints)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$HETCC_CACHE_DIR``, else ``~/.cache/hetcc``."""
    root = os.environ.get("HETCC_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "hetcc")
    return Path(root)


#: the longest cache path under which Ray's session directory can live: Ray puts Unix sockets
#: there (``session_<date>_<pid>/sockets/plasma_store``, ~62 characters below it), and Linux
#: refuses a socket path over 107 bytes
_RAY_PREFIX_MAX = 44


def library_dirs() -> dict[str, str]:
    """Where the libraries hetcc drives keep their caches, config and tokens: under hetcc's cache
    directory (matplotlib's font cache and config, torch's hub, inductor and triton caches: the
    upper-case keys are their environment variables; ``ray_token`` and ``ray_temp``: the token and
    session directory of a Ray that hetcc starts itself). ``ray_temp`` is absent when the cache path is too long for
    Ray's sockets (Ray then uses its default under the system temporary directory)."""
    root = cache_dir()
    dirs = {"MPLCONFIGDIR": root / "matplotlib", "TORCH_HOME": root / "torch",
            "TORCHINDUCTOR_CACHE_DIR": root / "torch" / "inductor", "TRITON_CACHE_DIR": root / "torch" / "triton"}
    out = {k: str(v) for k, v in dirs.items()}
    out["ray_token"] = str(root / "ray" / "auth_token")
    ray_temp = root / "ray" / "tmp"
    if len(str(ray_temp.absolute())) <= _RAY_PREFIX_MAX:
        out["ray_temp"] = str(ray_temp.absolute())
    return out


def check_cache_dir() -> None:
    """A UsageError naming hetcc's cache directory when it, or the nearest of its parents that
    exists, is not a directory (``HETCC_CACHE_DIR=/dev/null/c``, a file's path). Nothing is
    created; torch makes its caches there as it is imported, and would fail inside its own import."""
    root = cache_dir()
    start = p = Path(os.path.abspath(root))
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    if not p.is_dir():
        from hetcc.core.errors import UsageError

        where = "HETCC_CACHE_DIR" if os.environ.get("HETCC_CACHE_DIR") else "hetcc's cache directory"
        what = "is not a directory" if p == start else f"cannot be a directory: {str(p)!r} is not one"
        raise UsageError(f"{where} {str(root)!r} {what}; set HETCC_CACHE_DIR to a directory hetcc may use "
                         "(or unset it for ~/.cache/hetcc)")


def confine_libraries() -> None:
    """Point matplotlib, Ray and torch at hetcc's cache directory (``library_dirs``) unless the
    user set the variable already; call before importing them (they read it at import or start).
    A UsageError when that directory cannot be one (``check_cache_dir``)."""
    check_cache_dir()
    for key, value in library_dirs().items():
        if key.isupper():
            os.environ.setdefault(key, value)
