"""Every scenario still produces exactly what it produced when the fingerprints were taken.

The fingerprints (``tests/golden/fingerprints.json``) cover every scenario x seeds 0-9 x
the naive and the idempotent handler: the history, the JSON report and, for seed 0, the
timeline PNG. The test suite compares seeds 0-1 of each (``python tests/golden_runs.py --check``
compares all ten). A change that alters any of them on purpose regenerates the file with
``python tests/golden_runs.py --write`` and says why in its commit.
"""
import json

import pytest

from sandbox import SCENARIOS

from golden_runs import FILE, HANDLERS, PNG_SEEDS, SEEDS, fingerprint, key

WANT = json.loads(FILE.read_text())


def test_fingerprints_cover_every_scenario():
    assert {k.split("|")[0] for k in WANT} == set(SCENARIOS)
    assert len(WANT) == len(SCENARIOS) * len(HANDLERS) * len(SEEDS)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("handler", list(HANDLERS))
def test_runs_match_their_fingerprints(scenario, handler):
    differ = []
    for seed in SEEDS[:2]:
        got = fingerprint(scenario, handler, seed, png=seed in PNG_SEEDS)
        want = WANT[key(scenario, handler, seed)]
        differ += [f"seed {seed}: {field}" for field, value in got.items() if want[field] != value]
    assert differ == []
