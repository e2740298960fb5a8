"""The capstone's scoreboard: a campaign's results read back from its CSV, and checked live.

A campaign (``python -m sandbox campaign``, ``make campaign``) runs every strategy in every
scenario column for many seeds. Even one seed of it is 400 runs, over a minute on two cores:
too long for a lesson. So lesson 13 reads the seed-0 snapshot kept with the lessons
(``SNAPSHOT_CSV``), written by

    python -m sandbox campaign --seeds 1 --others-seeds 1 --out /tmp/board
    cp /tmp/board/scoreboard.csv notebooks/data/scoreboard-seed0.csv

and reruns a few of its cells live (``rerun``), so that a board older than the handlers shows;
``tests/test_capstone.py`` does the same on every test run. After ``make campaign``,
``read_scoreboard(CAMPAIGN_CSV)`` reads its many-seed board instead.

    board = read_scoreboard(SNAPSHOT_CSV)
    tall_figure(board)
    rerun(board, "article", "lock-shorter-than-work").agrees
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg

from .. import paths
from ..errors import BadInput
from ..present.timeline import audit
from ..scenarios import RunResult, run_scenario
from ..settings import SettingValue
from ..vocab import Status
from .campaign import (
    COLOURS,
    IMPROVED,
    POWERTOOLS,
    STRATEGIES,
    Cell,
    Column,
    Scoreboard,
    Variant,
    column_labels,
    legend_handles,
    seeds_note,
    strategy_handler,
    style_board_labels,
    valid_label,
)

ROOT = paths.ROOT
CAMPAIGN_CSV = ROOT / "campaign-results" / "scoreboard.csv"
SNAPSHOT_CSV = ROOT / "notebooks" / "data" / "scoreboard-seed0.csv"
#: What ``Scoreboard.write_csv`` writes, and ``read_scoreboard`` needs.
CSV_FIELDS = ("strategy", "scenario", "variant", "settings", "within_assumptions", "seeds", "runs", "status",
              "first_failing_seed", "finding", "variant_note")


def read_scoreboard(path: str | Path) -> Scoreboard:
    """The scoreboard a campaign wrote as CSV (``Scoreboard.write_csv``), rows and columns in its order."""
    try:
        with Path(path).open(newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
    except OSError as err:
        raise BadInput(f"cannot read the scoreboard {path}: {err.strerror}") from None
    if not rows:
        raise BadInput(f"{path} holds no scoreboard rows")
    missing = [name for name in CSV_FIELDS if name not in (reader.fieldnames or [])]
    if missing:
        raise BadInput(f"{path} is not a campaign's scoreboard.csv: it has no column {', '.join(missing)}")
    columns: dict[tuple[str, str], Column] = {}
    cells = []
    for r in rows:
        key = (r["scenario"], r["variant"])
        if key not in columns:
            columns[key] = Column(r["scenario"], Variant(r["variant"], json.loads(r["settings"]),
                                                         r["within_assumptions"] == "True", r["variant_note"]))
        failure = None if r["first_failing_seed"] == "" else (int(r["first_failing_seed"]), r["status"],
                                                               r["finding"])
        cells.append(Cell(r["strategy"], columns[key], int(r["seeds"]), int(r["runs"]), failure))
    seeds = {name: max(c.seeds for c in cells if c.strategy == name) for name in dict.fromkeys(r["strategy"]
                                                                                              for r in rows)}
    others = [n for name, n in seeds.items() if name != IMPROVED] or list(seeds.values())
    return Scoreboard(list(seeds), list(columns.values()), cells, seeds.get(IMPROVED, max(others)), max(others))


def select(board: Scoreboard, *, strategies: Iterable[str] | None = None,
           columns: Iterable[Column] | None = None) -> Scoreboard:
    """The same board with fewer rows or columns: a heat map a notebook page can hold."""
    names = list(board.strategies if strategies is None else strategies)
    cols = list(board.columns if columns is None else columns)
    cells = [board.cell(s, c) for s in names for c in cols]
    return Scoreboard(names, cols, cells, board.seeds, board.others_seeds, board.workers, board.wall_s)


def column(board: Scoreboard, scenario: str, settings: Mapping[str, SettingValue] | None = None) -> Column:
    """The board's column for ``scenario`` with these settings (its defaults when None or empty)."""
    wanted = dict(settings or {})
    for col in board.columns:
        if col.scenario == scenario and dict(col.variant.settings) == wanted:
            return col
    raise BadInput(f"the scoreboard has no column {scenario} with settings {wanted}")


@dataclass
class Rerun:
    """One cell of a board run again, here and now, with one seed."""

    strategy: str
    column: Column
    seed: int
    on_board: str  # the board's verdict for that seed
    result: RunResult

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def agrees(self) -> bool:
        return self.status == self.on_board


def board_verdict(cell: Cell, seed: int) -> str:
    """What the board says of ``seed``: its first failure's verdict there, valid below it (or with none).

    A cell stops at its first failing seed, so a seed above that one was never run: unknown.
    """
    if cell.failure is not None and cell.failure[0] <= seed:
        return cell.failure[1] if cell.failure[0] == seed else Status.UNKNOWN
    return Status.VALID if seed < cell.seeds else Status.UNKNOWN


def rerun(board: Scoreboard, strategy: str, scenario: str, settings: Mapping[str, SettingValue] | None = None,
          seed: int = 0) -> Rerun:
    """Run one cell of ``board`` again (``strategy`` in the column of ``scenario`` and ``settings``)."""
    col = column(board, scenario, settings)
    result = run_scenario(scenario, strategy_handler(strategy), seed=seed, settings=dict(col.variant.settings))
    return Rerun(strategy, col, seed, board_verdict(board.cell(strategy, col), seed), result)


# -- a scoreboard a notebook page can hold -------------------------------------------------------
class ScoreboardFigure(audit.Audited):
    """A Figure that shows itself as PNG in Jupyter without pyplot (a notebook shows a bare Figure as text)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=self.dpi, metadata={"Software": None})
        return buf.getvalue()


#: Inches: a strategy's column, a scenario's row, and the margins around them. About 910 px wide at
#: 100 dpi, so a notebook shows it at full size: a row per scenario setting, a column per strategy.
TALL_CELL_W, TALL_CELL_H = 0.5, 0.27
TALL_MARGIN = {"left": 2.9, "right": 1.2, "top": 2.3, "bottom": 1.0}


def tall_figure(board: Scoreboard, title: str = "Which handler survives which duplicate delivery?"):
    """The scoreboard turned on its side: scenario settings down, strategies across (``heatmap_figure`` is
    the campaign's wide one, made for a projector or a page of its own)."""
    width = TALL_MARGIN["left"] + TALL_CELL_W * len(board.strategies) + TALL_MARGIN["right"]
    height = TALL_MARGIN["top"] + TALL_CELL_H * len(board.columns) + TALL_MARGIN["bottom"]
    fig = ScoreboardFigure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((TALL_MARGIN["left"] / width, TALL_MARGIN["bottom"] / height,
                       TALL_CELL_W * len(board.strategies) / width, TALL_CELL_H * len(board.columns) / height))
    _tall_cells(ax, board)
    _tall_labels(ax, board)
    fig.text(0.02, 1 - 0.15 / height, title, fontsize=14, fontweight="bold", va="top")
    fig.text(0.02, 1 - 0.5 / height, f"A cell: one strategy in one scenario setting ({seeds_note(board)}).\n"
             "A number: the first seed that broke it. '+ ...': the scenario above, one setting changed.",
             fontsize=10, va="top", color="#333333")
    _tall_legend(fig, board)
    audit.finish(fig, "scoreboard")
    return fig


def _tall_cells(ax, board: Scoreboard) -> None:
    from matplotlib.patches import Rectangle

    for r, col in enumerate(board.columns):
        outside = not col.variant.within
        for c, strategy in enumerate(board.strategies):
            cell = board.cell(strategy, col)
            colour = COLOURS[Status(cell.failure[1])] if cell.failure else COLOURS[Status.VALID]
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="white", linewidth=1,
                                   hatch="///" if outside else None, hatchcolor="#FFFFFF99" if outside else None))
            if cell.failure:
                ax.text(c + 0.5, r + 0.5, str(cell.failure[0]), ha="center", va="center", fontsize=8.5,
                        fontweight="bold", color="white",
                        bbox={"boxstyle": "round,pad=0.1", "fc": colour, "ec": "none"} if outside else None)
        if r and col.scenario != board.columns[r - 1].scenario:
            ax.axhline(r, color="white", linewidth=3.5)
    for c in range(1, len(board.strategies)):
        if (board.strategies[c] in POWERTOOLS) != (board.strategies[c - 1] in POWERTOOLS):
            ax.axvline(c, color="white", linewidth=6)
    if IMPROVED in board.strategies:
        ax.add_patch(Rectangle((board.strategies.index(IMPROVED), 0), 1, len(board.columns), fill=False,
                               edgecolor="#222222", linewidth=2, clip_on=False, zorder=5))


def _tall_labels(ax, board: Scoreboard) -> None:
    ax.set_xlim(0, len(board.strategies))
    ax.set_ylim(len(board.columns), 0)
    ax.xaxis.tick_top()
    ax.set_xticks([c + 0.5 for c in range(len(board.strategies))], labels=board.strategies, rotation=50,
                  ha="left", rotation_mode="anchor", fontsize=10)
    labels = [f"{text} *" if not col.variant.within else text
              for text, col in zip(column_labels(board.columns), board.columns)]
    ax.set_yticks([r + 0.5 for r in range(len(board.columns))], labels=labels, fontsize=9.5)
    style_board_labels(ax, board, ax.get_xticklabels(), ax.get_yticklabels(), pad=3)


def _tall_legend(fig, board: Scoreboard) -> None:
    handles = legend_handles(valid_label(board), "invalid (number: first seed)", "unknown (number: first seed)",
                             "* outside the improved handler's assumptions")
    fig.legend(handles=handles, loc="lower left", ncol=2, fontsize=9.5, frameon=False,
               bbox_to_anchor=(0.01, 0.05 / fig.get_figheight()), handlelength=2, handleheight=1.2)


__all__ = ["CAMPAIGN_CSV", "SNAPSHOT_CSV", "STRATEGIES", "Rerun", "ScoreboardFigure", "board_verdict", "column",
           "read_scoreboard", "rerun", "select", "tall_figure"]
