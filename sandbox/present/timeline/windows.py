"""The idempotency-table windows: when a lock was held, a result kept, an expired record left.

Table requests arrive in history order; :class:`TableWindows` opens a window when a
claim or a completion writes a key, and closes every open window on that key when
the record is replaced, deleted or swept. A window whose ``expiresAt`` passed before
it was closed ends at its expiry and is followed by an "expired" window until then:
DynamoDB's TTL deletes items late, and that lag is what the learner should see.
"""
from __future__ import annotations

from .model import Window, WindowKind


class TableWindows:
    """Every window opened so far (in order) and the ones still open, per key."""

    def __init__(self) -> None:
        self.all: list[Window] = []
        self._open: dict[str, list[Window]] = {}

    def open(self, kind: WindowKind, inv: str, key: str, t: float, expires: float | None) -> None:
        w = Window(kind, inv, key, t, expires)
        self._open.setdefault(key, []).append(w)
        self.all.append(w)

    def close(self, key: str, t: float) -> None:
        """The record for ``key`` was replaced or deleted at ``t``."""
        for w in self._open.pop(key, []):
            if not self._outlived(w, t):
                w.end = t

    def replace(self, kind: WindowKind, inv: str | None, key: str, t: float, expires: float | None) -> None:
        """A new record for ``key``: the old one's windows end, the new one's starts (if its writer is known)."""
        self.close(key, t)
        if inv is not None:
            self.open(kind, inv, key, t, expires)

    def finish(self, t_end: float) -> list[Window]:
        """End what is still open when the history ends; every window, in the order opened."""
        for ws in self._open.values():
            for w in ws:
                if not self._outlived(w, t_end):  # outlived: expired, and nothing deleted it before the end
                    w.end = w.expires  # may be None: never expires
        return self.all

    def _outlived(self, w: Window, t: float) -> bool:
        """If ``w`` expired before ``t``: end it then, and add the expired band until ``t``."""
        if w.expires is not None and w.expires < t:
            # the record outlived its expiresAt: it sat in the table until t (now)
            w.end = w.expires
            self.all.append(Window(WindowKind.EXPIRED, w.inv, w.key, w.expires, None, end=t))
            return True
        return False
