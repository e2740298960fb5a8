"""The CLI: scenarios, run, JSON report, exit codes and one-line errors."""
import json
import subprocess
import sys

import pytest

from sandbox.cli import main

from conftest import ROOT, example

NAIVE = "examples/naive_email.py:handler"


def cli(*args):
    proc = subprocess.run([sys.executable, "-m", "sandbox", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_naive_handler_is_valid_in_no_fault():
    code, out, err = cli("run", "no-fault", "--handler", example("naive_email.py"), "--json")
    assert code == 0, err
    report = json.loads(out)
    for field in ("scenario", "seed", "verdict", "effects_per_key", "duplicates", "lost", "invocations",
                  "dynamodb_calls"):
        assert field in report
    assert report["verdict"] == "valid" and report["scenario"] == "no-fault"
    assert report["effects_per_key"] == {"o-1": {"email": 1}, "o-2": {"email": 1}, "o-3": {"email": 1}}


def test_double_sender_is_invalid_with_exit_1(capsys):
    code = main(["run", "no-fault", "--handler", example("double_email.py"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["verdict"] == "invalid"
    assert len(report["duplicates"]) == 3


def test_dynamodb_calls_are_counted_per_operation(capsys):
    assert main(["run", "no-fault", "--handler", example("read_then_write.py"), "--json", "--set", "orders=4"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dynamodb_calls"] == {"GetItem": 4, "PutItem": 4}


def test_plot_is_written(tmp_path, capsys):
    out = tmp_path / "t.png"
    assert main(["run", "no-fault", "--handler", example("naive_email.py"), "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scenarios_are_listed(capsys):
    assert main(["scenarios"]) == 0
    assert "no-fault" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["run", "no-fault", "--handler", "missing.py:handler"], "handler file not found: missing.py"),
    (["run", "no-fault", "--handler", "examples/naive_email.py"], "path/to/file.py:function"),
    (["run", "no-fault", "--handler", "examples/naive_email.py:nope"], "defines no 'nope'"),
    (["run", "no-such-scenario", "--handler", NAIVE], "unknown scenario 'no-such-scenario'"),
    (["run", "no-fault", "--handler", NAIVE, "--set", "colour=red"], "has no setting 'colour'"),
    (["run", "no-fault", "--handler", NAIVE, "--set", "orders=many"], "orders takes an int"),
    (["run", "no-fault", "--handler", "examples/naive_email.py:handler", "--set", "orders"], "KEY=VALUE"),
    (["run", "no-fault", "--handler", "examples/naive_email.py:handler", "--seed", "x"], "invalid int value"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_gets_a_one_line_error_and_exit_2(args, message):
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err


def test_handler_with_syntax_error_is_named(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("def handler(event, context)\n    return 1\n")
    code, _, err = cli("run", "no-fault", "--handler", f"{bad}:handler")
    assert code == 2 and "syntax error on line 1" in err


def test_json_output_is_identical_across_processes():
    a = cli("run", "no-fault", "--handler", example("naive_email.py"), "--json", "--seed", "5")
    b = cli("run", "no-fault", "--handler", example("naive_email.py"), "--json", "--seed", "5")
    assert a == b and a[0] == 0


@pytest.mark.slow
def test_exhaustive_policy_counts_broken_schedules(capsys):
    assert main(["run", "concurrent-claims", "--handler", example("read_then_write.py"), "--policy", "exhaustive",
                 "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["schedules"] > report["broken"] > 0 and report["first_broken_schedule"]
    solution = str(ROOT / "solutions" / "01_claim_the_key.py") + ":handler"
    assert main(["run", "concurrent-claims", "--handler", solution, "--policy", "exhaustive"]) == 0
    assert "0 broke the invariant" in capsys.readouterr().out


def test_scripted_interleaving_from_the_shell(capsys):
    race = "inv-1:GetItem,inv-2:GetItem,inv-1:PutItem,inv-2:PutItem"
    assert main(["run", "concurrent-claims", "--handler", example("read_then_write.py"), "--script", race]) == 1
    code = main(["run", "concurrent-claims", "--handler", example("read_then_write.py"), "--script", "inv-7"])
    assert code == 2 and "wants 'inv-7'" in capsys.readouterr().err
