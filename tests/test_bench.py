"""`make bench` writes its figures; this checks the shape of what it writes, never the speed."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT


def test_quick_bench_writes_json_and_table(tmp_path):
    out = tmp_path / "bench-results.json"
    proc = subprocess.run([sys.executable, "-m", "sandbox.bench", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())
    from sandbox.scenarios import SCENARIOS

    assert set(results["scenario_wall"]) == set(SCENARIOS)
    for figure in results["scenario_wall"].values():
        assert figure["wall_s"] > 0 and figure["verdict"] == "valid"  # the idempotent handler is valid everywhere
    for section in ("compression", "overhead", "cost_per_order", "memory", "misses", "targets"):
        assert section in results
    for v in results["overhead"].values():
        # The ratio is taken before rounding; the rounded times reproduce it to within rounding.
        assert v["raw_moto_s"] > 0 and v["ratio_x"] == pytest.approx(v["scenario_s"] / v["raw_moto_s"], rel=0.02)
    table = out.with_suffix(".txt").read_text()
    assert "Scenario wall time" in table and "Targets missed" in table
    assert table.strip() in proc.stdout
