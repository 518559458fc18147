"""The report of ``hetcc.runtime.hardware``: one ``Setting`` per value the runtime tried to set
(what an OS refusal means, reason and fix, is ``hetcc.runtime.sysfs.why``). Standard library only."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["HardwareReport", "Setting"]


@dataclass
class Setting:
    """One value the runtime tried to set: ``status`` applied | unchanged | skipped | restored;
    ``reason`` says why it was skipped (or a note on an applied one), ``fix`` what would help."""

    what: str
    path: str
    value: str
    status: str
    reason: str = ""
    fix: str = ""

    def line(self) -> str:
        tail = f": {self.reason}" if self.reason else ""
        fix = f" (fix: {self.fix})" if self.fix and self.status == "skipped" else ""
        return f"{self.status:<9} {self.what:<24} {self.value:<26} {self.path}{tail}{fix}"


@dataclass
class HardwareReport:
    """What ``apply_hardware`` (or ``restore``) did, one ``Setting`` per value; ``notes`` for
    choices made (a device's frequency); ``nothing`` says why there was nothing to apply."""

    variant: str | None
    root: str
    settings: list[Setting] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nothing: str | None = None
    _restore: Callable[[], "HardwareReport"] | None = field(default=None, repr=False)

    @property
    def applied(self) -> list[Setting]:
        return [s for s in self.settings if s.status in ("applied", "unchanged", "restored")]

    @property
    def skipped(self) -> list[Setting]:
        return [s for s in self.settings if s.status == "skipped"]

    @property
    def ok(self) -> bool:
        """Nothing was skipped."""
        return not self.skipped

    @property
    def nothing_to_apply(self) -> bool:
        return self.nothing is not None

    def restore(self) -> "HardwareReport":
        """Put back what this apply changed (see ``Hardware.restore``)."""
        if self._restore is None:
            raise RuntimeError("this report does not come from apply_hardware; nothing to restore")
        return self._restore()

    def lines(self) -> list[str]:
        if self.nothing is not None:
            return [f"nothing to apply: {self.nothing}"] + self.notes
        return [s.line() for s in self.settings] + [f"note: {n}" for n in self.notes]

    def summary(self, done: str = "applied", then: str = "running anyway") -> str:
        """One line: what was not ``done`` and how to fix it (empty when everything was)."""
        bad = self.skipped
        if not bad:
            return ""
        fixes = list(dict.fromkeys(s.fix for s in bad if s.fix))
        what = "; ".join(f"{s.what}: {s.reason}" for s in bad)
        return (f"{len(bad)} of {len(self.settings)} hardware setting(s) not {done} ({what})"
                + (f"; fix: {'; '.join(fixes)}" if fixes else "") + f"; {then}")

    def to_json(self) -> dict[str, Any]:
        return {"variant": self.variant, "root": self.root, "nothing": self.nothing, "notes": list(self.notes),
                "settings": [{k: getattr(s, k) for k in ("what", "path", "value", "status", "reason", "fix")}
                             for s in self.settings]}

