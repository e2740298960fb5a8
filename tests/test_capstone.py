"""Lesson 13's scoreboard: the seed-0 snapshot it reads still matches the campaign and the handlers as they are.

The snapshot (``notebooks/data/scoreboard-seed0.csv``) is a file; the handlers, scenarios and variants are code.
These tests fail when one moved without the other: rerun the command in ``sandbox/analysis/capstone.py``'s docstring.
"""
import json

import pytest

from sandbox.analysis.campaign import STRATEGIES, columns, run_campaign
from sandbox.analysis.capstone import (
    SNAPSHOT_CSV,
    ScoreboardFigure,
    board_verdict,
    column,
    read_scoreboard,
    rerun,
    tall_figure,
)
from sandbox.errors import BadInput


@pytest.fixture(scope="module")
def board():
    return read_scoreboard(SNAPSHOT_CSV)


def _shape(col):
    return col.scenario, col.variant.label, dict(col.variant.settings), col.variant.within


def test_the_snapshot_has_every_strategy_and_every_column_the_campaign_runs_today(board):
    assert board.strategies == list(STRATEGIES)
    assert [_shape(c) for c in board.columns] == [_shape(c) for c in columns()]
    assert {(cell.seeds, cell.ran) for cell in board.cells} == {(1, 1)}


#: A few cells, valid and invalid, weak stages and strong ones, defaults and variants.
LIVE_CELLS = [
    ("naive", "sqs-batch-failure", {}),
    ("read-then-write", "concurrent-claims", {}),
    ("ttl-only", "ttl-lag", {}),
    ("article", "lock-shorter-than-work", {}),
    ("improved", "lock-shorter-than-work", {}),
    ("improved", "async-late-retry", {"keep_for": 3600}),
    ("powertools-decorator", "sqs-batch-failure", {}),
    ("powertools-function", "sqs-batch-failure", {"report_batch_item_failures": False}),
]


@pytest.mark.parametrize("strategy,scenario,settings", LIVE_CELLS, ids=lambda v: json.dumps(v) if isinstance(
    v, dict) else v)
def test_a_live_rerun_agrees_with_the_snapshot(board, strategy, scenario, settings):
    check = rerun(board, strategy, scenario, settings)
    assert check.agrees, (check.status, check.on_board, check.result.verdict.explain())
    cell = board.cell(strategy, check.column)
    if cell.failure is not None:  # the same first finding, word for word
        assert check.result.verdict.findings[0].text == cell.failure[2]


def test_the_live_cells_cover_both_verdicts(board):
    statuses = {board.cell(s, column(board, sc, st)).status for s, sc, st in LIVE_CELLS}
    assert statuses == {"valid", "invalid"}


def test_a_board_written_as_csv_reads_back_cell_for_cell(tmp_path):
    written = run_campaign(["claim-only", "improved"], ["sqs-batch-failure"], seeds=1, others_seeds=1)
    read = read_scoreboard(written.write_csv(tmp_path / "board.csv"))
    assert read.strategies == written.strategies and read.columns == written.columns
    assert [(c.strategy, c.column, c.seeds, c.ran, c.failure) for c in read.cells] == \
        [(c.strategy, c.column, c.seeds, c.ran, c.failure) for c in written.cells]
    assert any(c.failure for c in read.cells) and any(not c.failure for c in read.cells)


def test_what_the_board_says_of_a_seed(board):
    failed = board.cell("naive", column(board, "sqs-batch-failure"))
    held = board.cell("improved", column(board, "sqs-batch-failure"))
    assert board_verdict(failed, 0) == "invalid" and board_verdict(failed, 1) == "unknown"
    assert board_verdict(held, 0) == "valid" and board_verdict(held, 1) == "unknown"  # seed 1 was never run


def test_bad_scoreboards_and_columns_are_named(tmp_path, board):
    (tmp_path / "empty.csv").write_text("strategy\n")
    with pytest.raises(BadInput, match="no scoreboard rows"):
        read_scoreboard(tmp_path / "empty.csv")
    (tmp_path / "other.csv").write_text("name,value\na,1\n")
    with pytest.raises(BadInput, match="not a campaign's scoreboard.csv: it has no column strategy"):
        read_scoreboard(tmp_path / "other.csv")
    with pytest.raises(BadInput, match="cannot read the scoreboard"):
        read_scoreboard(tmp_path / "missing.csv")
    with pytest.raises(BadInput, match="no column ttl-lag with settings"):
        column(board, "ttl-lag", {"ttl_lag": 12345})


def test_the_tall_scoreboard_fits_a_notebook_and_shows_itself_as_png(board):
    fig = tall_figure(board)
    assert isinstance(fig, ScoreboardFigure)
    png = fig._repr_png_()
    width = int.from_bytes(png[16:20], "big")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and 880 <= width <= 960, width


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_a_one_seed_board_never_says_valid_for_every_seed(board):
    """The stored board ran seed 0 only: a green cell claims that seed, not every seed (lesson 13 said so)."""
    from dataclasses import replace

    from sandbox.analysis.campaign import heatmap_figure

    assert max(board.seeds, board.others_seeds) == 1
    for fig in (tall_figure(board), heatmap_figure(board)):
        texts = _legend_texts(fig)
        assert "valid (seed 0, the only seed run)" in texts and not any("every seed" in t for t in texts), texts
    many = replace(board, seeds=200, others_seeds=10)
    assert "valid for every seed it ran" in _legend_texts(tall_figure(many))
