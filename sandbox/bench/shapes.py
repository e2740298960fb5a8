"""The benchmark's results, section by section, as ``make bench`` writes them to ``bench-results.json``.

They are written as JSON and read back by the tables and the misses, so each stays a plain dict; a TypedDict makes a
key spelt one way where it is measured and another where it is read a type error, not a KeyError at the end of a
half-hour run.
"""
from __future__ import annotations

from typing import NotRequired, TypedDict


class ScenarioWall(TypedDict):
    wall_s: float
    virtual_s: float
    verdict: str
    aws_calls: int


class CliStart(TypedDict):
    cli_s: float
    bare_import_s: float
    ratio_x: float


class EveryCore(TypedDict):
    ratio_x: float
    prebuilt_ratio_x: float


class Overhead(TypedDict):
    """One scenario's wall against the same AWS calls replayed on bare moto."""

    scenario_s: float
    raw_moto_s: float
    prebuilt_s: float
    aws_calls: int
    ratio_x: float
    prebuilt_ratio_x: float
    plain_x: float
    pinned: NotRequired[bool]
    every_core: NotRequired[EveryCore]


class Campaign(TypedDict):
    runs: int
    cores: int
    wall_s: float
    runs_per_s: float
    valid: int


class SizeCost(TypedDict):
    wall_s: float
    ms_per_order: float
    verdict: str


class OrderCost(TypedDict):
    sizes: dict[str, SizeCost]  # by the number of orders, as a string (a JSON key)
    flatness_x: float


class PlotTime(TypedDict):
    """One timeline's drawing (``bench.plots``): medians, ms."""

    plot_ms: float
    png_ms: float
    cpu_ms: float
    wall_ms: float


class Memory(TypedDict):
    scenario: str
    orders: int
    traced_peak_mib: float
    process_max_rss_mib: float


class DynamoCosts(TypedDict):
    rows: dict[str, dict[str, list[str]]]
    text: str


class Search(TypedDict):
    """One exhaustive search of concurrent-claims."""

    schedules: int
    wall_s: float
    status: str
    broken: int
    truncated: bool


class Exploration(TypedDict):
    handler: str
    copies: int
    reduced: Search
    full: NotRequired[Search]


class SlowestCell(TypedDict):
    index: int
    wall_s: float


class NotebookTime(TypedDict):
    wall_s: float
    kernel_start_s: float
    kernel_shutdown_s: float | None
    kernel_cpu_s: float | None
    code_cells: int
    slowest_cell: SlowestCell | None
    error: str | None


class NotebookTimes(TypedDict):
    notebooks: dict[str, NotebookTime]
    course_s: float
    course_kernel_cpu_s: float | None
    complete: bool
    targets: dict[str, float]
    cores: int | None
    load_before: float
    load_after: float


class WidgetMove(TypedDict):
    control: str
    moves: int
    move_ms: float
    bare_ms: float
    ratio_x: float
    runs: int


class WidgetTimes(TypedDict):
    widgets: dict[str, WidgetMove]
    map_cells_s: float | None


class BrowserMove(TypedDict):
    """One key press the browser test timed (tests/test_lab_ui.py writes them)."""

    key: str
    lock_seconds: int
    timeline_ms: float
    map_ms: float
    ms: float


class BrowserTimes(TypedDict, total=False):
    """The browser test's moves against bare runs; or, when it could not run, only ``not_run``: why."""

    not_run: str
    moves: list[BrowserMove]
    move_ms: float
    bare_ms: float
    ratio_x: float


class Throughput(TypedDict):
    submissions: int
    files: int
    jobs: int
    wall_s: float
    submissions_per_min: float
    solutions_full_marks: bool


class GradingBench(TypedDict):
    throughput: Throughput
    with_loops: Throughput
    check_s: dict[str, dict[str, float]]  # exercise -> "solutions"/"exercises" -> seconds
    cores: int | None


class KernelRow(TypedDict):
    """What one kernel's notebook printed (hub._REPORT_CELL), with its wall time added."""

    seed: int
    pid: int
    fingerprint: str
    verdict: str
    emails: int
    ports_opened: int
    rss_mib: float
    peak_rss_mib: float
    kernel_wall_s: float


class Isolation(TypedDict):
    scenario: str
    handler: str
    kernels: int
    wall_s: float
    rows: list[KernelRow]
    rss_median_mib: NotRequired[float]
    rss_max_mib: NotRequired[float]
    problems: NotRequired[list[str]]


class ColdStart(TypedDict, total=False):
    fork_to_ready_ms: float
    empty_handler_init_ms: float
    spare_waiting_ms: float  # information: a cold start with a spare waiting


class RoundTrip(TypedDict, total=False):
    thread_ms: float
    process_ms: float
    extra_ms: float
    machine_floor_ms: float  # environments.crossing_floor: an AWS call's halves in two processes, over one


class EnvironmentRun(TypedDict):
    thread_ms: float
    process_ms: float
    ratio_x: float


class Environments(TypedDict):
    runs: dict[str, EnvironmentRun]
    cold_start: ColdStart
    round_trip: RoundTrip
    targets: dict[str, float | dict[str, float]]


class Machine(TypedDict):
    python: str
    platform: str
    cores: int | None


class Results(TypedDict):
    """The whole report; the sections after ``dynamodb_costs`` are left out by ``--skip``."""

    machine: Machine
    quick: bool
    targets: dict[str, float]
    scenario_wall: dict[str, ScenarioWall]
    compression: dict[str, float]
    cli_start: CliStart
    overhead: dict[str, Overhead]
    campaign: Campaign
    cost_per_order: dict[str, OrderCost]
    plots: NotRequired[dict[str, PlotTime]]
    memory: Memory
    dynamodb_costs: DynamoCosts
    exploration: NotRequired[dict[str, Exploration]]
    notebooks: NotRequired[NotebookTimes]
    widgets: NotRequired[WidgetTimes]
    browser: NotRequired[BrowserTimes]
    grading: NotRequired[GradingBench]
    isolation: NotRequired[Isolation]
    environments: NotRequired[Environments]
    misses: NotRequired[list[str]]
