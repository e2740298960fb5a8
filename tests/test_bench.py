"""`make bench` writes its figures; this checks the shape of what it writes, never the speed."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.slow
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
    for section in ("compression", "cli_start", "overhead", "campaign", "cost_per_order", "memory", "misses",
                    "targets"):
        assert section in results
    assert set(results["overhead"]) == {"no-fault", "concurrent-claims", "sqs-batch-failure"}
    for v in results["overhead"].values():
        # The ratios are taken before rounding; the rounded times reproduce them to within rounding.
        assert v["raw_moto_s"] > 0 and v["ratio_x"] == pytest.approx(v["scenario_s"] / v["raw_moto_s"], rel=0.02)
        assert v["prebuilt_s"] > 0 and v["aws_calls"] > 0
        assert v["prebuilt_ratio_x"] == pytest.approx(v["scenario_s"] / v["prebuilt_s"], rel=0.02)
    cli = results["cli_start"]
    assert cli["ratio_x"] == pytest.approx(cli["cli_s"] / cli["bare_import_s"], rel=0.02)
    campaign = results["campaign"]
    assert campaign["runs"] == len(SCENARIOS) and campaign["valid"] == campaign["runs"]
    table = out.with_suffix(".txt").read_text()
    assert "Scenario wall time" in table and "Targets missed" in table
    assert table.strip() in proc.stdout
