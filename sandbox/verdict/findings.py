"""What a verdict says: its status, its findings, and how many times each order got each effect."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from ..core.views import html_of
from ..vocab import FindingKind, Status


class FindingJson(TypedDict):
    """``Finding.to_dict``: a finding as a run's report (``--json``) holds it."""

    kind: str
    key: str
    effect: str | None
    text: str
    invocations: list[str | None]
    window: list[float] | None
    remaining_window: bool
    retention_too_short: bool


@dataclass
class Finding:
    kind: str  # a FindingKind
    key: str
    effect: str | None
    text: str
    invocations: list[str | None] = field(default_factory=list)  # None: the world's own (no invocation)
    window: tuple[float, float] | None = None
    remaining_window: bool = False
    #: The repeat came after the first invocation's saved result had expired: the idempotency
    #: record's retention was shorter than the time the source could still deliver the event.
    retention_too_short: bool = False

    def to_dict(self) -> FindingJson:
        return {"kind": self.kind, "key": self.key, "effect": self.effect, "text": self.text,
                "invocations": self.invocations, "window": list(self.window) if self.window else None,
                "remaining_window": self.remaining_window, "retention_too_short": self.retention_too_short}


@dataclass
class Verdict:
    status: str  # a Status: valid, invalid or unknown
    findings: list[Finding]
    effects_per_key: dict[str, dict[str, int]]

    @property
    def valid(self) -> bool:
        return self.status == Status.VALID

    @property
    def duplicates(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == FindingKind.DUPLICATE]

    @property
    def lost(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == FindingKind.LOST]

    @property
    def notes(self) -> list[Finding]:
        """Findings about the idempotency record (lock overlaps, stale writes): they explain, never judge."""
        return [f for f in self.findings if FindingKind(f.kind).note]

    def explain(self) -> str:
        def s(n: int) -> str:  # the plural ending: 0 orders, 1 order, 2 orders
            return "" if n == 1 else "s"

        judged = [f for f in self.findings if not FindingKind(f.kind).note]
        if not judged:
            orders = len(self.effects_per_key)
            total = sum(sum(v.values()) for v in self.effects_per_key.values())
            lines = [f"valid: {orders} order{s(orders)}, {total} effect{s(total)}, each exactly once."]
        else:
            lines = [f"{self.status}: {len(judged)} finding{s(len(judged))}"]
            lines += [f"- {f.text}" for f in judged]
        if self.notes:
            lines.append("Notes on the idempotency record:")
            lines += [f"- {f.text}" for f in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def __repr__(self) -> str:
        n = len(self.findings)
        return f"<Verdict {self.status}: {n} finding{'' if n == 1 else 's'}>"

    def _repr_html_(self) -> str | None:
        return html_of("verdict", self)
