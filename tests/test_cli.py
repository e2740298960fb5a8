"""The CLI: scenarios, run, JSON report, exit codes and one-line errors."""
import contextlib
import fcntl
import json
import os
import pty
import re
import shlex
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest

from sandbox import run_scenario
from sandbox.cli import BROKEN_PIPE, main
from sandbox.modes.explore import Exploration

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
    solution = str(ROOT / "solutions" / "02_claim_the_key.py") + ":handler"
    assert main(["run", "concurrent-claims", "--handler", solution, "--policy", "exhaustive"]) == 0
    assert "0 broke the invariant" in capsys.readouterr().out


def test_scripted_interleaving_from_the_shell(capsys):
    race = "inv-1:GetItem,inv-2:GetItem,inv-1:PutItem,inv-2:PutItem"
    assert main(["run", "concurrent-claims", "--handler", example("read_then_write.py"), "--script", race]) == 1
    code = main(["run", "concurrent-claims", "--handler", example("read_then_write.py"), "--script", "inv-7"])
    assert code == 2 and "wants 'inv-7'" in capsys.readouterr().err


# -- no tracebacks: every failure is one line and exit 2 -----------------------------------------
def assert_one_line_error(code, out, err, message):
    assert "Traceback" not in err
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err


def test_a_handler_file_that_is_not_python_is_refused(tmp_path):
    text = tmp_path / "handler.txt"
    text.write_text((ROOT / "examples" / "naive_email.py").read_text())
    assert_one_line_error(*cli("run", "no-fault", "--handler", f"{text}:handler"), "ending in .py")


def test_a_handler_file_with_null_bytes_is_refused(tmp_path):
    bad = tmp_path / "nul.py"
    bad.write_bytes(b"def handler(event, context):\n    return 1\n\x00\n")
    assert_one_line_error(*cli("run", "no-fault", "--handler", f"{bad}:handler"), "contains null bytes")


@pytest.mark.parametrize("words", [["run", "no-fault", "--handler", "{tmp}/handler.txt:handler"],
                                   ["run", "no-fault", "--handler", NAIVE, "--plot", "{tmp}/t.jpg"],
                                   ["run", "no-fault", "--handler", NAIVE, "--policy", "exhaustive", "--script", "a"],
                                   ["matrix", "--handler", "{tmp}/handler.txt:handler"]])
def test_a_mistake_needing_no_scenario_is_answered_before_moto_and_the_environments_start(tmp_path, words):
    """A typo costs a learner no wait: nothing heavy is imported, and no environment template is started."""
    probe = ("import sys; from sandbox.cli import main; code = main(sys.argv[1:]); "
             "print(code, sorted(m for m in ('moto', 'boto3', 'sandbox.scenarios', "
             "'sandbox.runtime.environment.template_process') if m in sys.modules))")
    args = [word.replace("{tmp}", str(tmp_path)) for word in words]
    proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split(None, 1) == ["2", "[]\n"], proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: "), proc.stderr


def test_a_folder_as_handler_is_refused(tmp_path):
    assert_one_line_error(*cli("run", "no-fault", "--handler", f"{tmp_path}:handler"), "is a folder")


def test_plot_into_a_missing_folder_is_refused_before_the_run(tmp_path):
    target = tmp_path / "missing" / "t.png"
    assert_one_line_error(*cli("run", "no-fault", "--handler", NAIVE, "--plot", str(target)), "does not exist")


@pytest.mark.parametrize("name", ["t.jpg", "t", "t.png.bak"])
def test_plot_formats_other_than_png_svg_pdf_are_refused(tmp_path, name):
    code, out, err = cli("run", "no-fault", "--handler", NAIVE, "--plot", str(tmp_path / name))
    assert_one_line_error(code, out, err, "png, svg or pdf")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, magic", [("t.svg", (b"<?xml", b"<svg")), ("t.pdf", (b"%PDF",)),
                                         ("T.PNG", (b"\x89PNG\r\n\x1a\n",))])
def test_plot_format_follows_the_extension(tmp_path, name, magic):
    out = tmp_path / name
    code, _, err = cli("run", "no-fault", "--handler", NAIVE, "--plot", str(out))
    assert code == 0 and "Traceback" not in err and f"timeline saved to {out}" in err
    assert out.read_bytes().startswith(magic)


@pytest.mark.parametrize("args", [
    ["scenarios"],
    ["run", "no-fault", "--handler", NAIVE, "--json"],
    ["run", "concurrent-claims", "--handler", NAIVE, "--policy", "exhaustive", "--max-schedules", "2"],
])
def test_a_reader_that_stops_reading_ends_the_run_quietly(args):
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # gone before the first write: that write meets a broken pipe, every time
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == BROKEN_PIPE
    assert err == ""


@pytest.mark.parametrize("pipeline", [
    "{python} -m sandbox scenarios | head -1",
    "{python} -m sandbox run no-fault --handler " + NAIVE + " --json | head -c 10",
])
def test_shell_pipelines_into_head_show_no_traceback(pipeline):
    proc = subprocess.run(["bash", "-c", pipeline.format(python=shlex.quote(sys.executable))], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout and "Traceback" not in proc.stderr and proc.stderr == ""


# -- wording -------------------------------------------------------------------------------------
def test_a_mistyped_scenario_gets_a_suggestion():
    assert_one_line_error(*cli("run", "no-fult", "--handler", NAIVE), "did you mean 'no-fault'?")


def test_a_python_without_the_packages_says_to_use_the_venv_in_one_line():
    # -S leaves site-packages out: the interpreter then lacks moto and time_machine, as a system python3 does
    proc = subprocess.run([sys.executable, "-S", "-m", "sandbox", "scenarios"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "use the project's environment: "
                          ".venv/bin/python -m sandbox ..., or source .venv/bin/activate")


def test_importing_the_package_without_its_packages_names_the_venv():
    proc = subprocess.run([sys.executable, "-S", "-c", "import sandbox"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("ModuleNotFoundError: this Python ")
    assert "source .venv/bin/activate" in proc.stderr


def test_a_mistyped_handler_function_gets_a_suggestion():
    assert_one_line_error(*cli("run", "no-fault", "--handler", "examples/naive_email.py:handle"),
                          "defines no 'handle'; did you mean 'handler'?")


def test_a_handler_function_nothing_resembles_gets_no_suggestion(capsys):
    assert main(["run", "no-fault", "--handler", "examples/naive_email.py:zzz"]) == 2
    err = capsys.readouterr().err
    assert "defines no 'zzz'" in err and "did you mean" not in err


def test_a_mistyped_setting_gets_a_suggestion(capsys):
    assert main(["run", "no-fault", "--handler", NAIVE, "--set", "order=2"]) == 2
    err = capsys.readouterr().err
    assert "has no setting 'order'; did you mean 'orders'?" in err and "its settings are:" in err


def test_a_setting_nothing_resembles_gets_no_suggestion(capsys):
    assert main(["run", "no-fault", "--handler", NAIVE, "--set", "colour=red"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_one_order_and_one_effect_are_singular(capsys):
    assert main(["run", "no-fault", "--handler", NAIVE, "--set", "orders=1"]) == 0
    out = capsys.readouterr().out
    assert "valid: 1 order, 1 effect, each exactly once." in out and "1 invocation;" in out


def test_scenarios_brief_is_one_line_per_scenario(capsys):
    from sandbox import SCENARIOS

    assert main(["scenarios", "--brief"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(SCENARIOS)
    for line, sc in zip(lines, SCENARIOS.values()):
        name, kind, headline = re.split(r"\s{2,}", line, maxsplit=2)
        assert (name, kind, headline) == (sc.name, sc.kind, sc.headline.replace("`", ""))
    by_name = {line.split()[0]: line for line in lines}
    assert by_name["no-fault"].endswith("  nothing: the control, every order delivered once")
    assert by_name["sqs-batch-failure"].endswith("  a failed SQS batch comes back whole, handled records included")
    assert by_name["apigw-client-retry"].endswith("the client retries, a new request with a new requestId")


# -- exhaustive mode -----------------------------------------------------------------------------
READ_THEN_WRITE = example("read_then_write.py")
CLAIM = str(ROOT / "solutions" / "02_claim_the_key.py") + ":handler"


def exhaustive(handler, *extra):
    return cli("run", "concurrent-claims", "--handler", handler, "--policy", "exhaustive", *extra)


def test_exhaustive_all_valid_and_complete_exits_0():
    code, out, err = exhaustive(CLAIM)
    assert code == 0, err
    assert out.splitlines()[0] == "exploring every interleaving of concurrent-claims, up to 5000 schedules"
    assert "0 broke the invariant" in out and "Traceback" not in err


def test_exhaustive_stopped_at_its_cap_exits_2():
    # Three copies: even the reduced search has more than 3 schedules to run.
    code, out, err = exhaustive(CLAIM, "--max-schedules", "3", "--set", "copies=3")
    assert code == 2, err
    assert "up to 3 schedules" in out and "3 schedules explored (stopped at the limit of 3)" in out
    assert "--max-schedules" in out


def test_exhaustive_with_an_unknown_schedule_and_no_invalid_one_exits_2(monkeypatch, capsys):
    import sandbox.modes.explore

    def unknown(*args, **kw):
        return Exploration(schedules=4, broken=1, verdicts={"valid": 3, "unknown": 1}, first_broken=[1],
                           first_broken_verdict="unknown", max_schedules=kw["max_schedules"])

    monkeypatch.setattr(sandbox.modes.explore, "explore_scenario", unknown)
    assert main(["run", "concurrent-claims", "--handler", CLAIM, "--policy", "exhaustive", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["verdict"] == "unknown"


def test_exhaustive_replays_its_first_broken_schedule_from_the_command_it_prints(tmp_path):
    # The third schedule is the first broken one: a cap of 3 finds it quickly.
    code, out, err = exhaustive(READ_THEN_WRITE, "--max-schedules", "3", "--json", "--seed", "4")
    assert code == 1, err
    report = json.loads(out)
    assert report["verdict"] == "invalid" and report["first_broken_verdict"] == "invalid"
    script = report["first_broken_script"]
    assert script.startswith("inv-1:dynamodb.GetItem,inv-2:dynamodb.GetItem,")
    words = shlex.split(report["replay_command"])
    assert words[:3] == ["python", "-m", "sandbox"] and words[-2:] == ["--script", script]
    assert ["--seed", "4"] == words[words.index("--seed"):words.index("--seed") + 2]
    replay = subprocess.run([sys.executable, *words[1:], "--json"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert replay.returncode == 1 and json.loads(replay.stdout)["verdict"] == report["first_broken_verdict"]


def test_exhaustive_text_names_the_script_and_the_replay_command():
    code, out, _ = exhaustive(READ_THEN_WRITE, "--max-schedules", "3", "--set", "copies=2")
    assert code == 1
    assert "first broken schedule (invalid), as a script:\n  inv-1:dynamodb.GetItem,inv-2:dynamodb.GetItem," in out
    assert (f"python -m sandbox run concurrent-claims --handler {READ_THEN_WRITE} --set copies=2 --script "
            "'inv-1:dynamodb.GetItem,") in out


def test_exhaustive_text_explains_the_counterexample_and_lists_its_timeline_as_check_does():
    """The shell prints what a failed check() shows in a notebook: the explanation and the timeline in words."""
    from sandbox.grading.feedback import text_timeline

    code, out, _ = exhaustive(READ_THEN_WRITE, "--max-schedules", "3", "--set", "copies=2")
    script = out.split("as a script:\n  ", 1)[1].split("\n", 1)[0].split(",")
    replayed = run_scenario("concurrent-claims", READ_THEN_WRITE, settings={"copies": 2}, policy=script)
    assert code == 1 and replayed.status == "invalid"
    assert f"what went wrong in it:\n{replayed.verdict.explain()}" in out
    assert f"its timeline:\n{text_timeline(replayed.history)}" in out
    assert "2nd email for o-1" in out


def test_exhaustive_plot_draws_the_first_broken_schedule(tmp_path, capsys):
    out = tmp_path / "broken.png"
    assert main(["run", "concurrent-claims", "--handler", READ_THEN_WRITE, "--policy", "exhaustive",
                 "--max-schedules", "3", "--json", "--plot", str(out)]) == 1
    report = json.loads(capsys.readouterr().out)
    replayed = run_scenario("concurrent-claims", READ_THEN_WRITE, policy=report["first_broken_script"].split(","))
    assert replayed.status == "invalid"
    assert out.read_bytes() == replayed.save_plot(tmp_path / "expected.png").read_bytes()


def test_max_schedules_goes_with_exhaustive_only():
    assert_one_line_error(*cli("run", "no-fault", "--handler", NAIVE, "--max-schedules", "3"),
                          "--max-schedules goes with --policy exhaustive")
    assert_one_line_error(*exhaustive(CLAIM, "--max-schedules", "0"), "at least 1")


def run_on_a_terminal(*args):
    """Run the CLI with stderr on a pseudo-terminal (80 columns), stdout on a pipe: (code, stdout, stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks = []
    with contextlib.suppress(OSError):  # reading a pty whose other end closed raises EIO
        while data := os.read(master, 65536):
            chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    return proc.wait(timeout=120), out, b"".join(chunks).decode(errors="replace")


def test_exhaustive_shows_a_progress_bar_on_a_terminal_only():
    few = ("run", "concurrent-claims", "--handler", CLAIM, "--policy", "exhaustive", "--max-schedules", "5",
           "--set", "copies=3")
    code, out, err = run_on_a_terminal(*few)
    assert code == 2 and "exploring:" in err and "schedules" in err and "exploring:" not in out
    code, out, err = cli(*few)
    assert code == 2 and err == ""  # piped: no bar
    code, out, err = run_on_a_terminal(*few, "--json")
    assert code == 2 and err == "" and json.loads(out)["schedules"] == 5


def test_one_console_script_reaches_every_command(capsys):
    """``rwh`` (pyproject's console script, sandbox.cli:program) lists the other command lines and runs them."""
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert all(name in listed for name in ("run", "matrix", "check", "drill", "grade", "autograder", "bench"))
    assert main(["exercises"]) == 0  # python -m sandbox.grading exercises: each exercise and its drills
    listed = capsys.readouterr().out
    assert "02_claim_the_key" in listed and "http-replay, http-conflict" in listed
    assert "python -m sandbox drill NAME --handler" in listed
    with pytest.raises(SystemExit):
        main(["drill", "--help"])  # the help names every drill and its promise, under this command's own name
    told = capsys.readouterr().out
    assert told.startswith("usage: python -m sandbox drill") and "stale-release" in told
    assert "a request without an Idempotency-Key gets 400" in told
    with pytest.raises(SystemExit):
        main(["exercises", "--help"])
    assert capsys.readouterr().out.startswith("usage: python -m sandbox exercises")
    assert main(["check", "99"]) == 2  # the grading command line's own bad-input exit
    assert "99" in capsys.readouterr().err
    script = Path(sys.executable).with_name("rwh")  # installed beside the venv's python by make setup
    done = subprocess.run([str(script), "exercises"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "02" in done.stdout


def test_the_timeline_in_words_names_a_poison_message_that_carries_no_order():
    from sandbox.present.run_text import text_timeline

    result = run_scenario("sqs-batch-failure", "examples/naive_email.py:handler", settings={"poison": 1})
    poison = next(e for e in result.history if e["type"] == "delivery" and e["what"] == "batch failed"
                  and not e["keys"])
    lines = text_timeline(result.history, limit=1000).splitlines()
    named = f"sqs batch failed: message {poison['detail']['messageIds'][0][:8]}…"
    assert any(line.endswith(named) for line in lines), lines
    assert any("carries no order" in line for line in lines) and not any(line.endswith(": ") for line in lines)


def test_the_program_ends_at_once_yet_runs_every_exit_handler_and_keeps_its_exit_status():
    """``program`` (``python -m sandbox``, ``rwh``) leaves without freeing botocore's and moto's objects one by one,
    but only after every exit handler ran, those registered before it started too (a temporary folder's
    clean-up, a log's flush), and with main's status."""
    probe = textwrap.dedent("""
        import atexit, os, sys, tempfile
        from sandbox import cli
        folder = tempfile.TemporaryDirectory()  # removed by its finalizer at exit, registered before program()
        atexit.register(lambda: print("handler ran", folder.name, flush=True))
        sys.argv = ["sandbox", *sys.argv[1:]]
        cli.program()
    """)
    for args, status in ((["scenarios", "--brief"], 0), (["run", "no-such-scenario", "--handler", "x.py:h"], 2)):
        proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == status, proc.stderr
        ran = [line for line in proc.stdout.splitlines() if line.startswith("handler ran ")]
        assert len(ran) == 1 and not Path(ran[0].removeprefix("handler ran ")).exists()
