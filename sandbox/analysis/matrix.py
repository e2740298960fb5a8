"""The duplicate matrix: one handler against every scenario, a row each.

It is the first table a workshop projects: which delivery sources make this handler repeat
its work, how often, and why. ``python -m sandbox matrix --handler F.py:FUNC`` prints it;
``--plot page.png`` adds one small timeline per source (the scenario that hurt the handler
most for that source), on one page.

    from sandbox.analysis.matrix import duplicate_matrix
    duplicate_matrix("examples/naive_email.py:handler")
"""
from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ..core.views import html_of
from ..errors import BadInput
from ..paths import ROOT
from ..scenarios import SCENARIOS, RunResult, get_scenario, run_scenario
from ..vocab import Status

#: Width of one timeline on the page, in inches; two sit side by side.
PANEL_WIDTH = 9.0
PANEL_DPI = 110


class MatrixRowJson(TypedDict):
    """``MatrixRow.to_dict``: one scenario's line of the duplicate matrix."""

    scenario: str
    source: str
    verdict: str
    extra_effects: int
    lost: int
    causes: list[str]


class MatrixJson(TypedDict):
    """``DuplicateMatrix.to_dict``: the handler, the seed, the verdict over all rows, and the rows."""

    handler: str
    seed: int
    verdict: str
    rows: list[MatrixRowJson]


@dataclass(frozen=True)
class MatrixRow:
    """What one scenario did to the handler."""

    scenario: str
    source: str
    verdict: str
    #: Effects beyond the one each order is owed (an email sent three times counts 2).
    extra_effects: int
    lost: int  # orders that never got an effect they were owed
    #: What delivered the repeats, in the history's words ("redelivery", "retry 1", "client retry").
    causes: tuple[str, ...]
    result: RunResult = field(compare=False, repr=False)

    def damage(self) -> str:
        """"2 extra, 1 lost", or the verdict when there is neither."""
        parts = [f"{n} {what}" for n, what in ((self.extra_effects, "extra"), (self.lost, "lost")) if n]
        return ", ".join(parts) or self.verdict

    def to_dict(self) -> MatrixRowJson:
        return {"scenario": self.scenario, "source": self.source, "verdict": self.verdict,
                "extra_effects": self.extra_effects, "lost": self.lost, "causes": list(self.causes)}


def row_of(result: RunResult) -> MatrixRow:
    verdict = result.verdict
    invs = result.history.invocation_records()
    extra = sum(max(0, verdict.effects_per_key.get(f.key, {}).get(f.effect, 0) - 1) for f in verdict.duplicates
                if f.effect is not None)
    causes = dict.fromkeys(cause for f in verdict.duplicates for i in f.invocations[1:] if i in invs
                           if (cause := invs[i].start.cause))
    return MatrixRow(result.scenario, get_scenario(result.scenario).source, verdict.status, extra,
                     len({f.key for f in verdict.lost}), tuple(causes), result)


@dataclass
class Matrix:
    handler: str
    seed: int
    rows: list[MatrixRow]

    @property
    def status(self) -> str:
        """invalid if any scenario was, unknown if any was unknown, else valid (the CLI's exit code)."""
        verdicts = {r.verdict for r in self.rows}
        for status in (Status.INVALID, Status.UNKNOWN):
            if status in verdicts:
                return status
        return Status.VALID

    def table(self) -> str:
        """The matrix as fixed-width text, with a summary line under it."""
        from tabulate import tabulate

        head = ("scenario", "source", "verdict", "extra effects", "lost", "repeated by")
        body = [(r.scenario, r.source, r.verdict, r.extra_effects, r.lost, ", ".join(r.causes) or "-")
                for r in self.rows]
        return tabulate(body, head, tablefmt="simple") + "\n\n" + self.summary()

    def summary(self) -> str:
        bad = [r for r in self.rows if r.verdict != Status.VALID]
        extra, lost = sum(r.extra_effects for r in self.rows), sum(r.lost for r in self.rows)
        if not bad:
            where = self.rows[0].scenario if len(self.rows) == 1 else f"all {len(self.rows)} scenarios"
            return f"{self.handler}: valid in {where} (seed {self.seed})."
        who = bad[0].scenario if len(self.rows) == 1 else f"{len(bad)} of {len(self.rows)} scenarios"
        return (f"{self.handler}: {who} broke it (seed {self.seed}): "
                f"{extra} extra effect{'' if extra == 1 else 's'}, {lost} lost order{'' if lost == 1 else 's'}.")

    def to_dict(self) -> MatrixJson:
        return {"handler": self.handler, "seed": self.seed, "verdict": self.status,
                "rows": [r.to_dict() for r in self.rows]}

    def _repr_html_(self) -> str | None:
        return html_of("matrix", self)

    # -- the page of timelines ---------------------------------------------------------------------
    def showcase(self) -> list[MatrixRow]:
        """One row per source, in the matrix's order: the scenario with the most extra effects (then lost
        orders), or the first scenario of that source when the handler survived them all."""
        best: dict[str, MatrixRow] = {}
        for r in self.rows:
            if get_scenario(r.scenario).kind == "control":
                continue
            kept = best.get(r.source)
            if kept is None or (r.extra_effects, r.lost) > (kept.extra_effects, kept.lost):
                best[r.source] = r
        return list(best.values())

    def figure(self):
        """A page with one small timeline per source, two to a row."""
        import matplotlib.image as mpimg
        from matplotlib.figure import Figure

        from ..present.timeline import plot_timeline

        panels = []
        for r in self.showcase():
            title = f"{r.source} · {r.scenario} · {r.damage()}"
            fig = plot_timeline(r.result.history, title=title, width=PANEL_WIDTH, dpi=PANEL_DPI)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=PANEL_DPI, metadata={"Software": None})
            buf.seek(0)
            panels.append(mpimg.imread(buf, format="png"))
        rows = [panels[i:i + 2] for i in range(0, len(panels), 2)]
        heights = [max(p.shape[0] for p in row) for row in rows]
        page = Figure(figsize=(2 * PANEL_WIDTH, sum(heights) / PANEL_DPI + 0.6), dpi=PANEL_DPI)
        page.suptitle(self.summary(), fontsize=13, y=1 - 0.25 / (sum(heights) / PANEL_DPI + 0.6))
        grid = page.add_gridspec(len(rows), 2, height_ratios=heights, hspace=0.02, wspace=0.01,
                                 top=1 - 0.6 / (sum(heights) / PANEL_DPI + 0.6), bottom=0, left=0, right=1)
        for i, row in enumerate(rows):
            for j in range(2):
                ax = page.add_subplot(grid[i, j])
                ax.set_axis_off()
                if j < len(row):
                    ax.imshow(row[j], interpolation="none")
                    ax.set_anchor("N")
        return page

    def save_plot(self, path: str | Path) -> Path:
        """Write the page (PNG, SVG or PDF, by the file's extension)."""
        path = Path(path)
        fmt = {".svg": "svg", ".pdf": "pdf"}.get(path.suffix.lower(), "png")
        self.figure().savefig(path, format=fmt, metadata={"png": {"Software": None}, "svg": {"Creator": None,
                              "Date": None}, "pdf": {"Creator": None, "Producer": None,
                              "CreationDate": None}}[fmt])
        return path


def duplicate_matrix(handler: Any, *, seed: int = 0, scenarios: Iterable[str] | None = None,
                     on_row: Callable[[MatrixRow], None] | None = None) -> Matrix:
    """Run ``handler`` (``path/file.py:function``) through every scenario, or the ones named, at their defaults."""
    names = list(SCENARIOS) if scenarios is None else [get_scenario(n).name for n in scenarios]
    if not names:
        raise BadInput("the matrix needs at least one scenario")
    rows = []
    for name in names:
        row = row_of(run_scenario(name, handler, seed=seed))
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return Matrix(str(handler), seed, rows)


# -- what to key on ---------------------------------------------------------------------------------------
#: The handler file with one handler per choice of key, and where each applies (``APPLIES_TO`` in it).
KEYS_FILE = ROOT / "examples" / "keys.py"
HOLDS = "holds"


@dataclass
class KeyMatrix:
    """Scenario by key: "holds", or what broke it in the checker's words; None where the key does not apply."""

    keys: list[str]
    rows: list[tuple[str, str, list[str | None]]]  # (scenario, source, a cell per key)

    def table(self) -> str:
        from tabulate import tabulate

        head = ("scenario", "source", *self.keys)
        body = [(name, source, *(c or "n/a" for c in cells)) for name, source, cells in self.rows]
        return tabulate(body, head, tablefmt="simple", disable_numparse=True)

    def holds_everywhere(self) -> list[str]:
        """The keys no applicable scenario broke, and at least one tried (a key that applies to none of the
        scenarios was never put to the test)."""
        return [k for i, k in enumerate(self.keys)
                if all(cells[i] in (HOLDS, None) for _, _, cells in self.rows)
                and any(cells[i] == HOLDS for _, _, cells in self.rows)]

    def _repr_html_(self) -> str | None:
        return html_of("key-matrix", self)


def key_matrix(scenarios: Iterable[str] | None = None, *, seed: int = 0,
               keys: Iterable[str] | None = None) -> KeyMatrix:
    """Run each key of ``examples/keys.py`` through the scenarios of the sources it applies to.

    A cell is "holds" when the run was valid, else "breaks: " and what delivered the repeat
    ("producer re-send", "SDK retry"), or the checker's verdict when nothing was repeated.
    """
    applies = _applies_to(KEYS_FILE)
    names = list(keys) if keys is not None else list(applies)
    unknown = [k for k in names if k not in applies]
    if unknown:
        raise BadInput(f"unknown key {unknown[0]!r}; keys: {', '.join(applies)}")
    rows = []
    for name in list(SCENARIOS) if scenarios is None else [get_scenario(n).name for n in scenarios]:
        sc = get_scenario(name)
        if sc.kind != "duplicate source":
            continue
        cells = [_key_cell(name, f"{KEYS_FILE}:{k}", seed) if _covers(applies[k], sc.source) else None
                 for k in names]
        rows.append((name, sc.source, cells))
    return KeyMatrix(names, rows)


def _applies_to(path: Path) -> dict[str, tuple[str, ...] | None]:
    """``APPLIES_TO`` from the keys file, read as a literal: importing it here would load handler code into the
    notebook's process, which only a container should run."""
    import ast

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "APPLIES_TO" for t in node.targets):
            return ast.literal_eval(node.value)
    raise BadInput(f"{path} has no APPLIES_TO")


def _covers(sources: tuple[str, ...] | None, source: str) -> bool:
    """Does a key that applies to ``sources`` (None: to every source) apply to ``source``?"""
    return sources is None or source in sources


def _key_cell(scenario: str, handler: str, seed: int) -> str:
    row = row_of(run_scenario(scenario, handler, seed=seed))
    if row.verdict == Status.VALID:
        return HOLDS
    return "breaks: " + (", ".join(row.causes) or row.verdict)
