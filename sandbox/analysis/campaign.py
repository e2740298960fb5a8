"""``python -m sandbox campaign``: every strategy against every scenario, many seeds, on every core.

A strategy is a handler: each stage of ``run_once`` (``sandbox.stages``) and two built on
Powertools for AWS Lambda (``examples/powertools_function.py``, ``examples/powertools_decorator.py``).
A column is a scenario with one of its settings variants (``VARIANTS``; the scenario's defaults
when it has none). A cell is one strategy in one column, run with seeds 0..N-1; it stops at its
first failing seed (invalid or unknown), and says "valid" only when every seed was.

Each variant says whether it stays within the improved handler's stated assumptions
(``ASSUMPTIONS``): outside them a failure is expected, and the scoreboard marks the column.

    python -m sandbox campaign                       # all of it (make campaign)
    python -m sandbox campaign --strategy improved --scenario ttl-lag --seeds 20

Writes ``scoreboard.csv``, ``scoreboard.png`` and ``scoreboard.txt`` to ``--out``. Exit code:
1 if the improved stage fails any column within its assumptions, 2 for bad arguments, else 0.

Where Powertools (3.37) stands against the improved ``run_once``:

- **Worse, its own retried claim.** A claim whose answer was lost is sent again by botocore and
  refused by its own first attempt; Powertools takes that item for another invocation's and
  raises its in-progress error, so its own caller hears "in progress" and the order is never
  done (``own-write-retried``). The improved ``run_once`` sees its ``owner`` token in the refused
  item and goes on.
- **Worse, fencing.** Powertools saves the result and deletes a failed claim unconditionally, so
  an invocation that outlives its lock overwrites (or deletes) the record of the invocation that
  took the key over; ``run_once_improved`` makes both conditional on its ``owner`` token.
  ``lock-shorter-than-work`` shows it: with a 10 s lock and a 30 s email, both Powertools
  handlers delete the duplicate's COMPLETED record and Lambda's retry emails the customer again
  (seed 0 on), while the improved handler's fenced delete is refused and the retry replays.
  To be fair: Powertools sizes its lock to the invocation's remaining time and offers no shorter
  one, so inside Lambda its lock is outlived only when something shortens it (here the Powertools
  handlers are told at most ``RUN_ONCE_LOCK_SECONDS`` of remaining time, like the stages' lock).
- **Worse, the default retention.** ``expires_after_seconds`` defaults to an hour; Lambda's async
  queue retries for up to 6 hours. ``async-late-retry`` with ``keep_for=3600`` (Powertools'
  default) repeats the email. Both Powertools handlers here read ``RUN_ONCE_KEEP_FOR`` like the
  stages, so the default columns compare designs, not defaults.
- **Worse, the handler decorator on batches.** ``@idempotent`` keys one record per event: a batch
  that fails half-way is deleted and re-run whole (``sqs-batch-failure``, ``stream-batch-retry``,
  ``ddb-stream-batch-retry``, ``async-retry``...). Per order, ``idempotent_function``, it holds.
- **The same.** One conditional PutItem with ``ReturnValuesOnConditionCheckFailure=ALL_OLD``, so a
  duplicate costs one call; an IN_PROGRESS lock sized to the remaining time; a payload hash.
- **Better.** Its handler does not depend on the event source mapping's configuration: it
  raises, so the whole batch comes back and is replayed, and it loses nothing when
  ReportBatchItemFailures is off (the improved handler reports batch item failures, which
  Lambda then ignores). It also offers a local cache, other stores (Redis) and serializers.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import BadInput
from ..scenarios import SCENARIOS, run_scenario
from ..stages import EXAMPLES, STAGES
from ..vocab import Effect, Status

if TYPE_CHECKING:
    from tqdm import tqdm

IMPROVED = "improved"
POWERTOOLS = {"powertools-function": "powertools_function.py", "powertools-decorator": "powertools_decorator.py"}
#: Every strategy the campaign compares, in stage order: name -> ``path/file.py:handler``.
STRATEGIES: dict[str, str] = {**{name: s.handler for name, s in STAGES.items()},
                              **{name: f"{EXAMPLES / file}:handler" for name, file in POWERTOOLS.items()}}
DEFAULT_SEEDS = 200
#: Seeds for the strategies other than the improved stage: all of them at 200 seeds do not fit
#: in 10 minutes on 2 cores, and a weaker stage breaks on one of its first few seeds wherever it
#: breaks at all (the first failing seed is 0 in every broken cell of the stored scoreboard).
#: ``--others-seeds`` raises it.
DEFAULT_OTHERS_SEEDS = 10
CHUNK = 10  # seeds per job sent to a worker
ASSUMPTIONS = ("the lock lasts at least as long as the work",
               "results are kept at least as long as the source may deliver the event again",
               "no fault lands between an effect that takes no idempotency key and the saved result "
               "(the remaining window)",
               "SQS and stream mappings have ReportBatchItemFailures on")


def strategy_handler(name: str) -> str:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise BadInput(f"unknown strategy {name!r}; strategies: {', '.join(STRATEGIES)}") from None


@dataclass(frozen=True)
class Variant:
    """Settings for one column of a scenario, and whether they stay within ``ASSUMPTIONS``."""

    label: str  # short: it is the column's label on the heat map
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    within: bool = True
    why: str = ""  # what the variant changes, or which assumption it breaks


DEFAULT = Variant("default")
OFF = "ReportBatchItemFailures off: the improved handler's batchItemFailures are ignored, and a failed order is lost"
#: The variants that matter, by scenario; a scenario not named here runs at its defaults.
VARIANTS: dict[str, tuple[Variant, ...]] = {
    "apigw-client-retry": (
        DEFAULT,
        Variant("no key header", {"idempotency_key": False}, why="the client sends no Idempotency-Key header"),
        Variant("client retries 409", {"retry_conflict": True}, why="the client retries a 409 too")),
    "async-retry": (
        DEFAULT, Variant("also a duplicate", {"duplicate_probability": 1.0}, why="a spontaneous duplicate as well")),
    "async-duplicate": (
        DEFAULT, Variant("duplicate at once", {"duplicate_delay": 0.0}, why="the duplicate runs alongside")),
    "timeout-after-effect": (
        DEFAULT,
        Variant("fault in window", {"fault_in_window": True}, within=False,
                why="the fault lands in the remaining window"),
        Variant("cut-off email sent", {"indefinite": True}, within=False,
                why="the cut-off email still reaches the provider: the remaining window")),
    "async-late-retry": (
        DEFAULT, Variant("kept 1 h", {"keep_for": 3600}, within=False,
                         why="results kept an hour (Powertools' default), the retry comes after 2 h")),
    "sqs-batch-failure": (
        DEFAULT, Variant("card payments", {"payment": "card"}, why="orders pay by card: a charge, then the email"),
        Variant("poison message", {"poison": 1}, why="a message that is not JSON, until it is dead-lettered"),
        Variant("partial batch off", {"report_batch_item_failures": False}, within=False, why=OFF)),
    "stream-batch-retry": (
        DEFAULT, Variant("partial batch off", {"report_batch_item_failures": False}, within=False, why=OFF)),
    "concurrent-claims": (
        DEFAULT, Variant("5 copies", {"copies": 5}, why="five identical deliveries at once"),
        Variant("3 copies, staggered", {"copies": 3, "stagger": 0.1}, why="three copies 0.1 s apart")),
    "crash-mid-work": (
        DEFAULT, Variant("crash after email", {"crash_after": Effect.EMAIL}, within=False,
                         why="the crash lands after the email: the remaining window")),
    "ttl-lag": (DEFAULT, Variant("TTL on time", {"ttl_lag": 0.0}, why="TTL deletes on time")),
    "lock-shorter-than-work": (
        Variant("default", within=False, why="the lock (10 s) runs out while the first attempt's email takes 30 s"),
        Variant("lock 40 s > work", {"lock_seconds": 40}, why="the lock outlasts the 30 s email")),
}


@dataclass(frozen=True)
class Column:
    scenario: str
    variant: Variant

    @property
    def name(self) -> str:
        """``scenario`` for its default settings, ``scenario/variant`` otherwise."""
        return self.scenario if not self.variant.settings else f"{self.scenario}/{self.variant.label}"


def columns(scenarios: Iterable[str] | None = None) -> list[Column]:
    """The columns of the scoreboard, in catalogue order: each scenario's variants (its defaults if none)."""
    names = list(SCENARIOS) if scenarios is None else list(scenarios)
    for name in names:
        if name not in SCENARIOS:
            raise BadInput(f"unknown scenario {name!r}; scenarios: {', '.join(SCENARIOS)}")
    cols = [Column(name, v) for name in names for v in VARIANTS.get(name, (DEFAULT,))]
    for col in cols:
        SCENARIOS[col.scenario].resolve(dict(col.variant.settings))  # a setting that no longer exists: say so now
    return cols


# -- cells and the jobs that fill them ---------------------------------------------------------
class CellRow(TypedDict):
    """One cell as the campaign's CSV holds it (``Campaign.rows``)."""

    strategy: str
    scenario: str
    variant: str
    settings: str  # the variant's settings, as sorted JSON
    within_assumptions: bool
    seeds: int
    runs: int
    status: str
    first_failing_seed: int | str  # "" when every seed held
    finding: str
    variant_note: str


@dataclass
class Cell:
    """One strategy in one column: how many seeds it was given, ran, and its first failing seed."""

    strategy: str
    column: Column
    seeds: int
    ran: int = 0
    failure: tuple[int, str, str] | None = None  # (seed, verdict, first finding)
    wall_s: float = 0.0

    @property
    def status(self) -> str:
        return Status.VALID if self.failure is None else self.failure[1]

    @property
    def first_failing_seed(self) -> int | None:
        return None if self.failure is None else self.failure[0]

    def failed_below(self, seed: int) -> bool:
        return self.failure is not None and self.failure[0] < seed


@dataclass(frozen=True)
class Job:
    cell: int
    handler: str
    scenario: str
    settings: tuple[tuple[str, Any], ...]
    seeds: tuple[int, ...]


def run_job(job: Job) -> tuple[int, int, tuple[int, str, str] | None, float]:
    """Run the job's seeds in order, up to the first that is not valid: (cell, runs made, failure, wall)."""
    started, ran = time.perf_counter(), 0
    for seed in job.seeds:
        result = run_scenario(job.scenario, job.handler, seed=seed, settings=dict(job.settings))
        ran += 1
        if result.status != Status.VALID:
            finding = next((f.text for f in result.verdict.findings), "")
            return job.cell, ran, (seed, str(result.status), finding), time.perf_counter() - started
    return job.cell, ran, None, time.perf_counter() - started


def plan(strategies: list[str], cols: list[Column], seeds: int, others_seeds: int) -> tuple[list[Cell], list[Job]]:
    """The cells, and their jobs in rounds: every cell's first seeds first, so failures are found early."""
    cells = [Cell(s, c, seeds if s == IMPROVED else min(seeds, others_seeds)) for s in strategies for c in cols]
    jobs = []
    for start in range(0, seeds, CHUNK):
        for i, cell in enumerate(cells):
            chunk = tuple(range(start, min(start + CHUNK, cell.seeds)))
            if chunk:
                jobs.append(Job(i, STRATEGIES[cell.strategy], cell.column.scenario,
                                tuple(sorted(cell.column.variant.settings.items())), chunk))
    return cells, jobs


def _outcomes(cells: list[Cell], jobs: list[Job], workers: int,
              skip: Callable[[Job], None]) -> Iterator[tuple[Job, tuple]]:
    """Run the jobs, on ``workers`` processes (1: here), and yield each with its outcome as it ends.

    A job whose cell has already failed at a lower seed is skipped (``skip(job)``), so a cell stops
    at its first failing seed; the seeds below that failure always run, so it is the first.
    """
    pending = list(reversed(jobs))

    def take() -> Job | None:
        while pending:
            job = pending.pop()
            if not cells[job.cell].failed_below(job.seeds[0]):
                return job
            skip(job)
        return None

    if workers == 1:
        while (job := take()) is not None:
            yield job, run_job(job)
        return
    import multiprocessing

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        running: dict[Any, Job] = {}
        while True:
            while len(running) < 2 * workers and (job := take()) is not None:
                running[pool.submit(run_job, job)] = job
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield running.pop(future), future.result()


def _record(cell: Cell, outcome: tuple) -> None:
    _, ran, failure, wall = outcome
    cell.ran += ran
    cell.wall_s += wall
    if failure is not None and (cell.failure is None or failure[0] < cell.failure[0]):
        cell.failure = failure


# -- the scoreboard ------------------------------------------------------------------------------
@dataclass
class Scoreboard:
    strategies: list[str]
    columns: list[Column]
    cells: list[Cell]
    seeds: int
    others_seeds: int
    workers: int = 1
    wall_s: float = 0.0
    _index: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def runs(self) -> int:
        return sum(c.ran for c in self.cells)

    def cell(self, strategy: str, column: Column) -> Cell:
        if len(self._index) != len(self.cells):
            self._index = {(c.strategy, c.column): c for c in self.cells}
        return self._index[(strategy, column)]

    def improved_failures(self) -> list[Cell]:
        """The improved stage's cells within its assumptions that were not valid (the acceptance check)."""
        return [c for c in self.cells if c.strategy == IMPROVED and c.column.variant.within and c.failure]

    def rows(self) -> list[CellRow]:
        """One dict per cell, as the CSV holds them."""
        return [{"strategy": c.strategy, "scenario": c.column.scenario, "variant": c.column.variant.label,
                 "settings": json.dumps(dict(c.column.variant.settings), sort_keys=True),
                 "within_assumptions": c.column.variant.within, "seeds": c.seeds, "runs": c.ran,
                 "status": str(c.status), "first_failing_seed": "" if c.failure is None else c.failure[0],
                 "finding": "" if c.failure is None else c.failure[2], "variant_note": c.column.variant.why}
                for c in self.cells]

    def write_csv(self, path: str | Path) -> Path:
        path = Path(path)
        rows = self.rows()
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["strategy"])
            writer.writeheader()
            writer.writerows(rows)
        return path

    def text(self) -> str:
        return scoreboard_text(self)

    def save_png(self, path: str | Path) -> Path:
        return save_heatmap(self, path)


def run_campaign(strategies: Iterable[str] | None = None, scenarios: Iterable[str] | None = None, *,
                 seeds: int = DEFAULT_SEEDS, others_seeds: int = DEFAULT_OTHERS_SEEDS, workers: int = 1,
                 progress: bool = False) -> Scoreboard:
    """Run every strategy in every column for its seeds; each cell stops at its first failing seed."""
    names = list(STRATEGIES) if strategies is None else [n for n in STRATEGIES if n in set(strategies)]
    for name in strategies or ():
        strategy_handler(name)
    if seeds < 1 or others_seeds < 1 or workers < 1:
        raise BadInput("--seeds, --others-seeds and --jobs must be at least 1")
    cols = columns(scenarios)
    cells, jobs = plan(names, cols, seeds, others_seeds)
    board = Scoreboard(names, cols, cells, seeds, others_seeds, workers)
    started = time.perf_counter()
    with _bar(progress, sum(len(j.seeds) for j in jobs)) as tick:
        for job, outcome in _outcomes(cells, jobs, workers, skip=lambda job: tick(0, len(job.seeds))):
            _record(cells[job.cell], outcome)
            tick(outcome[1], len(job.seeds) - outcome[1])
    board.wall_s = time.perf_counter() - started
    return board


class _bar:
    """A tqdm progress bar on stderr whose total shrinks as failing cells skip their later seeds."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total = enabled, total
        self.bar: tqdm[Any] | None = None

    def __enter__(self) -> Callable[[int, int], None]:
        if self.enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, unit=" runs", desc="campaign", file=sys.stderr, smoothing=0.05)
        return self.tick

    def tick(self, ran: int, skipped: int) -> None:
        if self.bar is None:
            return
        if skipped:
            assert self.bar.total is not None  # given when the bar was made
            self.bar.total -= skipped
        self.bar.update(ran)
        if skipped and not ran:
            self.bar.refresh()

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.close()


# -- reading it: text ----------------------------------------------------------------------------
def cell_text(cell: Cell) -> str:
    """``valid``, or the first failing seed and its verdict (``s3 invalid``); ``-`` if it never ran."""
    if cell.failure is not None:
        return f"s{cell.failure[0]} {cell.failure[1]}"
    return str(Status.VALID) if cell.ran == cell.seeds else "-"


def _header(name: str, width: int) -> tuple[str, str]:
    """A strategy's name on two lines of ``width``, broken after a hyphen when it is too long."""
    if len(name) <= width:
        return "", name
    cut = name.rfind("-", 0, width)
    return (name[:cut + 1], name[cut + 1:]) if cut > 0 else (name[:width], name[width:])


def _seeds(n: int) -> str:
    return "seed 0" if n == 1 else f"seeds 0-{n - 1}"


def seeds_note(board: Scoreboard) -> str:
    """Which seeds each strategy ran: ``improved: seeds 0-199; others: seeds 0-19``."""
    others = [s for s in board.strategies if s != IMPROVED]
    parts = [f"{IMPROVED}: {_seeds(board.seeds)}"] if IMPROVED in board.strategies else []
    if others:
        parts.append(f"{'others' if parts else 'every strategy'}: {_seeds(min(board.seeds, board.others_seeds))}")
    return "; ".join(parts)


def summary(board: Scoreboard) -> list[str]:
    """A line per strategy: in how many columns it held, within the improved handler's assumptions and outside."""
    lines = []
    for name in board.strategies:
        mine = [c for c in board.cells if c.strategy == name]
        within = [c for c in mine if c.column.variant.within]
        outside = [c for c in mine if not c.column.variant.within]
        line = (f"  {name}: valid in {sum(c.failure is None for c in within)} of {len(within)} "
                f"column{'' if len(within) == 1 else 's'} within the assumptions")
        if outside:
            line += f", {sum(c.failure is None for c in outside)} of {len(outside)} outside them"
        lines.append(line)
    return lines


def scoreboard_text(board: Scoreboard) -> str:
    from tabulate import tabulate

    heads = ["\n".join(_header(s, 11)) for s in board.strategies]
    rate = board.runs / board.wall_s if board.wall_s else 0.0
    strategies, columns = len(board.strategies), len(board.columns)
    lines = [f"Campaign: {strategies} strateg{'y' if strategies == 1 else 'ies'} x {columns} scenario "
             f"setting{'' if columns == 1 else 's'} "
             f"({seeds_note(board)}); {board.runs:,} run{'' if board.runs == 1 else 's'} in {board.wall_s:.0f} s on "
             f"{board.workers} "
             f"worker{'s' if board.workers > 1 else ''} ({rate:.1f} runs/s)",
             "A cell: 'valid' (every seed), or the first failing seed and its verdict. "
             "* = outside the improved handler's assumptions.", ""]
    body = []
    for col in board.columns:
        mark = "" if col.variant.within else " *"
        body.append([col.name + mark, *(cell_text(board.cell(s, col)) for s in board.strategies)])
    lines.append(tabulate(body, ["\nscenario / variant", *heads], tablefmt="simple", disable_numparse=True))
    lines += ["", "Summary:", *summary(board), "", "The improved handler's assumptions:"]
    lines += [f"  - {a}" for a in ASSUMPTIONS]
    return "\n".join(lines)


# -- reading it: the heat map --------------------------------------------------------------------
#: Okabe-Ito colours, told apart with any colour vision; a failing cell also carries its seed.
COLOURS = {Status.VALID: "#009E73", Status.INVALID: "#D55E00", Status.UNKNOWN: "#E69F00", None: "#D9D9D9"}
CELL_W, CELL_H = 0.46, 0.52  # inches
MARGIN = {"left": 2.5, "right": 0.3, "top": 3.4, "bottom": 1.3}


def column_labels(cols: list[Column]) -> list[str]:
    """The scenario's name on its first column, ``+ variant`` on the others (read as a list under it)."""
    out, previous = [], None
    for col in cols:
        out.append(col.scenario if col.scenario != previous else f"+ {col.variant.label}")
        previous = col.scenario
    return out


def _cell_style(cell: Cell) -> tuple[str, str]:
    """(colour, text): the first failing seed on a failing cell, nothing on a valid one."""
    if cell.failure is not None:
        return COLOURS[Status(cell.failure[1])], str(cell.failure[0])
    return (COLOURS[Status.VALID], "") if cell.ran == cell.seeds else (COLOURS[None], "-")


def _draw_cells(ax, board: Scoreboard) -> None:
    from matplotlib.patches import Rectangle

    for r, strategy in enumerate(board.strategies):
        for c, col in enumerate(board.columns):
            colour, text = _cell_style(board.cell(strategy, col))
            outside = not col.variant.within
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="white", linewidth=1.5,
                                   hatch="///" if outside else None, hatchcolor="#FFFFFF99" if outside else None))
            if text:
                ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=10.5, fontweight="bold",
                        color="white" if colour != COLOURS[None] else "#333333",
                        bbox={"boxstyle": "round,pad=0.12", "fc": colour, "ec": "none"} if outside else None)
    # White gutters between scenarios, and between the stages and the Powertools rows.
    for c in range(1, len(board.columns)):
        if board.columns[c].scenario != board.columns[c - 1].scenario:
            ax.axvline(c, color="white", linewidth=5)
    for r in range(1, len(board.strategies)):
        if (board.strategies[r] in POWERTOOLS) != (board.strategies[r - 1] in POWERTOOLS):
            ax.axhline(r, color="white", linewidth=7)
    if IMPROVED in board.strategies:  # the row the course builds up to, framed
        ax.add_patch(Rectangle((0, board.strategies.index(IMPROVED)), len(board.columns), 1, fill=False,
                               edgecolor="#222222", linewidth=2.5, clip_on=False, zorder=5))


def _label_axes(ax, board: Scoreboard) -> None:
    ax.set_xlim(0, len(board.columns))
    ax.set_ylim(len(board.strategies), 0)
    ax.set_yticks([r + 0.5 for r in range(len(board.strategies))], labels=board.strategies, fontsize=13)
    ax.xaxis.tick_top()
    ax.set_xticks([c + 0.5 for c in range(len(board.columns))], labels=column_labels(board.columns),
                  rotation=55, ha="left", rotation_mode="anchor", fontsize=11)
    style_board_labels(ax, board, ax.get_yticklabels(), ax.get_xticklabels(), pad=4)


def style_board_labels(ax, board: Scoreboard, strategy_labels, column_labels, pad: float) -> None:
    """The improved strategy in bold, columns outside the assumptions in italics, no ticks or frame.

    Shared by the wide heat map here and the capstone's tall one, whose axes are the other way round."""
    for label, name in zip(strategy_labels, board.strategies):
        label.set_fontweight("bold" if name == IMPROVED else "normal")
    for label, col in zip(column_labels, board.columns):
        if not col.variant.within:
            label.set_fontstyle("italic")
            label.set_color("#7A2E00")
    ax.tick_params(length=0, pad=pad)
    for spine in ax.spines.values():
        spine.set_visible(False)


def valid_label(board: Scoreboard) -> str:
    """What a green cell claims: valid for the one seed run, or for every seed its strategy ran."""
    return "valid (seed 0, the only seed run)" if max(board.seeds, board.others_seeds) == 1 \
        else "valid for every seed it ran"


def legend_handles(valid: str, invalid: str, unknown: str, outside: str) -> list:
    """The scoreboard's four swatches (valid, invalid, unknown, outside the assumptions), worded by the caller."""
    from matplotlib.patches import Patch

    return [Patch(facecolor=COLOURS[Status.VALID], label=valid),
            Patch(facecolor=COLOURS[Status.INVALID], label=invalid),
            Patch(facecolor=COLOURS[Status.UNKNOWN], label=unknown),
            Patch(facecolor="#BBBBBB", hatch="///", hatchcolor="white", edgecolor="white", label=outside)]


def _legend(fig, board: Scoreboard) -> None:
    handles = legend_handles(valid_label(board), "invalid (number: the first seed that broke it)",
                             "unknown (number: the first such seed)",
                             "outside the improved handler's assumptions (a failure is expected)")
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=12, frameon=False,
               bbox_to_anchor=(0.5, 0.12 / fig.get_figheight()), handlelength=2.2, handleheight=1.4)


def heatmap_figure(board: Scoreboard):
    from matplotlib.figure import Figure

    width = MARGIN["left"] + CELL_W * len(board.columns) + MARGIN["right"]
    height = MARGIN["top"] + CELL_H * len(board.strategies) + MARGIN["bottom"]
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_axes((MARGIN["left"] / width, MARGIN["bottom"] / height, CELL_W * len(board.columns) / width,
                       CELL_H * len(board.strategies) / height))
    _draw_cells(ax, board)
    _label_axes(ax, board)
    _legend(fig, board)
    fig.text(0.01, 1 - 0.2 / height, "Which handler survives which duplicate delivery?", fontsize=18,
             fontweight="bold", va="top")
    fig.text(0.01, 1 - 0.62 / height, f"A cell: one handler in one scenario ({seeds_note(board)}); a number is "
             f"the first seed that broke it. A '+ ...' column is the scenario on its left with one thing changed.",
             fontsize=12.5, va="top", color="#333333")
    return fig


def save_heatmap(board: Scoreboard, path: str | Path) -> Path:
    path = Path(path)
    heatmap_figure(board).savefig(path, format="png", metadata={"Software": None}, bbox_inches="tight",
                                  pad_inches=0.25)
    return path


# -- the command line ----------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other bad input
        raise BadInput(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m sandbox campaign", description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                   help=f"seeds 0..N-1 for the improved stage (default {DEFAULT_SEEDS})")
    p.add_argument("--others-seeds", type=int, default=DEFAULT_OTHERS_SEEDS, metavar="N",
                   help=f"seeds for every other strategy, at most --seeds (default {DEFAULT_OTHERS_SEEDS}: "
                        f"all of them at 200 seeds take longer than 10 minutes on 2 cores)")
    p.add_argument("--strategy", action="append", metavar="NAME", help=f"repeatable; one of {', '.join(STRATEGIES)}")
    p.add_argument("--scenario", action="append", metavar="NAME", help="repeatable; default: every scenario")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="worker processes (default: one per core)")
    p.add_argument("--out", default="campaign-results", metavar="DIR",
                   help="where to write scoreboard.csv, .png and .txt (default campaign-results/)")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        board = run_campaign(args.strategy, args.scenario, seeds=args.seeds, others_seeds=args.others_seeds,
                             workers=args.jobs, progress=sys.stderr.isatty())
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = board.text()
    (out / "scoreboard.txt").write_text(text + "\n")
    board.write_csv(out / "scoreboard.csv")
    board.save_png(out / "scoreboard.png")
    print(text)
    failures = board.improved_failures()
    for cell in failures:
        assert cell.failure is not None  # improved_failures() gives only failed cells
        print(f"FAIL: {IMPROVED} in {cell.column.name} at seed {cell.failure[0]}: {cell.failure[2]}")
    print(f"\nwrote {out / 'scoreboard.txt'}, {out / 'scoreboard.csv'} and {out / 'scoreboard.png'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
