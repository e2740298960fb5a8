"""``python -m sandbox grade``: a folder of mixed submissions graded in child processes, robustness
(hangs, crashes, megabytes of output, reading the solutions, tampering), the CSV and the reports,
the command line's errors, and the Gradescope bundle run locally."""
import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from sandbox.core.history import History
from sandbox.grading import autograder, batch, catalog
from sandbox.grading import classroom as grade_cli
from sandbox.grading.grader import tampered
from sandbox.grading.recorder import digest
from sandbox.grading.scoring import RunInfo

from conftest import ROOT

MUTANTS = ROOT / "tests" / "mutants"
CHEATS = MUTANTS / "cheats"
CLAIM = "02_claim_the_key"

SEED_GAMER = '''"""Claims the key only on the public tests' seeds, and sends blindly on any other."""
import os

import boto3

from sandbox import orders_in, send_confirmation_email
from sandbox.core import active


def handler(event, context):
    public = active.current().history.meta.get("seed", 0) < 1000
    for order in orders_in(event):
        if public:
            table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
            try:
                table.put_item(Item={"pk": order["orderId"]}, ConditionExpression="attribute_not_exists(pk)")
            except table.meta.client.exceptions.ConditionalCheckFailedException:
                continue
        send_confirmation_email(order)
    return {}
'''

def _mixed_folder(root):
    """20 students: good, wrong, hanging, crashing and cheating answers to exercise 02 (one also hands in 01).

    Returns {student: expected total score}; None where the score is checked another way."""
    sub = root / "submissions"
    sub.mkdir()

    def put(name, source=None, text=None):
        path = sub / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is not None:
            path.write_text(text)
        else:
            shutil.copyfile(source, path)

    put("alice/claim key FINAL v2.py", ROOT / "solutions" / f"{CLAIM}.py")  # misnamed: its name has the words
    put("bella.ipynb", ROOT / "solutions" / f"{CLAIM}.ipynb")  # the notebook names its exercise
    put(f"carl_{CLAIM}.py", ROOT / "exercises" / f"{CLAIM}.py")  # the stub, as generated
    put(f"dina/{CLAIM}.py", MUTANTS / "02_read_then_write.py")
    put(f"emil/{CLAIM}.py", MUTANTS / "02_module_level_cache.py")
    put(f"fay/{CLAIM}.py", MUTANTS / "02_effect_before_claim.py")
    put(f"gus/{CLAIM}.py", MUTANTS / "02_swallows_conditional_check.py")
    put(f"hana/{CLAIM}.py", CHEATS / "busy_loop.py")
    put(f"ivan/{CLAIM}.py", CHEATS / "real_sleep.py")
    put(f"jon/{CLAIM}.py", CHEATS / "raises.py")
    put(f"kim/{CLAIM}.py", CHEATS / "missing_import.py")
    put(f"lea/{CLAIM}.py", CHEATS / "prints_megabytes.py")
    put(f"max/{CLAIM}.py", CHEATS / "reads_solutions.py")
    put(f"nia/{CLAIM}.py", CHEATS / "patches_checker.py")
    put(f"otto/{CLAIM}.py", CHEATS / "deletes_duplicates.py")
    put(f"pia/{CLAIM}.py", ROOT / "solutions" / f"{CLAIM}.py")
    put("pia/01_name_the_source.py", ROOT / "solutions" / "01_name_the_source.py")
    put("pia/README.md", text="my notes\n")  # noise: named in grades.csv, never graded
    put("pia/__pycache__/x.cpython-311.pyc", text="")
    put(f"quinn/{CLAIM}.py", text=SEED_GAMER)
    put(f"rosa/{CLAIM}.ipynb", text="{ this is not a notebook")
    put(f"sam/{CLAIM}.py", ROOT / "solutions" / f"{CLAIM}.py")
    put(f"sam/.ipynb_checkpoints/{CLAIM}-checkpoint.py", ROOT / "exercises" / f"{CLAIM}.py")
    put(f"sam/{CLAIM}.ipynb", ROOT / "solutions" / f"{CLAIM}.ipynb")  # beside the .py: the notebook is graded
    put("class-notes.txt", text="not a submission\n")
    put(f"tara/{CLAIM}.py", CHEATS / "hides_effects.py")
    return sub, {"alice": 10, "bella": 10, "carl": 0, "dina": 3.5, "emil": 2, "fay": 0, "gus": 1, "hana": 0, "ivan": 0,
                 "jon": 0, "kim": 0, "lea": 0, "max": 0, "nia": 0, "otto": 0, "pia": 16, "quinn": None, "rosa": 0,
                 "sam": 10, "tara": 0}


def _report(out, student):
    return json.loads((out / student / "report.json").read_text())


def _claim(report):
    [ex] = [e for e in report["exercises"] if e["exercise"] == CLAIM]
    return ex


def _reasons(report):
    ex = _claim(report)
    texts = [ex["reason"] or "", *ex["tampering"]]
    for item in ex["items"]:
        for t in item["tests"]:
            texts.append(t["reason"] or "")
            if t["failure"]:
                texts += [t["failure"]["explanation"], *[h["text"] for h in t["failure"]["hints"]]]
    return "\n".join(texts)


@pytest.mark.grading
def test_a_folder_of_twenty_mixed_submissions_is_graded_right(tmp_path, capsys):
    """The grader end to end on a class (about 1.5 minutes): in make test-grading, which CI runs after make test.
    make test keeps a slice: discovery and the gradebook files (test_grade_class), the bundle grading one
    submission, the four cheats, and the mutants."""
    # How fast a class is graded is a benchmark figure (bench_grading), not asserted here.
    sub, expected = _mixed_folder(tmp_path)
    out = tmp_path / "results"
    roster, manifest = tmp_path / "roster.csv", tmp_path / "submitted_at.csv"
    roster.write_text("student,id,email\n" + "".join(f"{s},{100 + i},{s}@uni.example\n"
                                                     for i, s in enumerate([*expected, "zed"])))
    manifest.write_text("student,submitted_at\nfay,2030-01-02T01:00:00+00:00\n")
    # A fixed batch seed: the read-then-write answer holds on some seeds, and credit per seed counts them.
    code = grade_cli.main([str(sub), "--out", str(out), "--jobs", "2", "--timeout", "2", "--seed", "5000",
                           "--submission-timeout", "30", "--no-progress", "--roster", str(roster),
                           "--lms", "canvas", "--lms", "moodle", "--deadline", "2030-01-01T00:00:00+00:00",
                           "--submitted-at", str(manifest)])
    assert code == 0
    summary = capsys.readouterr().out
    # the rate counts the submissions graded (20 of exercise 02, pia's 01), not the "not submitted" pairs
    assert "graded 21 submission(s) of 21 student(s) x 2 exercise(s)" in summary
    assert "class-notes.txt: not a student's folder" in summary and "README.md: not a .py file" in summary

    with (out / "grades.csv").open() as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert set(rows) == set(expected) | {"zed"}  # zed is on the roster, with nothing handed in
    assert list(next(iter(rows.values()))) == ["student", "id", "email", "score", "max_score", "01_name_the_source",
                                               CLAIM, "submitted_at", "late_by", "notes", "ignored_files"]
    # nothing handed in is its own mark, not 0
    assert (rows["zed"]["id"], rows["zed"]["score"], rows["zed"]["max_score"]) == ("120", "not submitted", "16")
    _every_file_is_graded_or_named(sub, out, rows)
    _the_gradebook_files_and_late_work(out, rows)
    for student, score in expected.items():
        assert rows[student]["max_score"] == "16", student
        if score is not None:
            assert float(rows[student]["score"]) == score, (student, rows[student], _reasons(_report(out, student)))

    # hard-coding the public seeds earns nothing: every seeded test runs on fresh seeds
    quinn = _claim(_report(out, "quinn"))
    assert [i["item"] for i in quinn["items"] if i["tests"][0]["kind"] == "seeds" and i["passed"]] == []
    assert float(rows["quinn"]["score"]) < 9

    # each broken submission's reason is stated
    reasons = {s: _reasons(_report(out, s)) for s in expected}
    assert "NotImplementedError" in reasons["carl"]
    assert "read the key, then wrote it unconditionally" in reasons["dina"]
    hang = ("blocked outside the sandbox", "made no progress for 2 s", "ran past the 30 s")
    assert any(h in reasons["hana"] for h in hang) and any(h in reasons["ivan"] for h in hang)
    assert "does not load: RuntimeError: my module blows up on import" in reasons["jon"]
    # Lambda's own word for it (awslambdaric's Runtime.ImportModuleError)
    assert ("Runtime.ImportModuleError: Unable to import module '02_claim_the_key': No module named "
            "'requests_that_do_not_exist'") in reasons["kim"]
    assert any(h in reasons["lea"] for h in hang) or "printing megabytes" in reasons["lea"]
    # The solutions are not mounted in a contained environment: there is nothing there to read.
    assert "No such file or directory" in reasons["max"] and "solutions/02_claim_the_key.py" in reasons["max"]
    assert "could not read the submission" in reasons["rosa"] and "not a notebook" in reasons["rosa"]

    # Patching the checker, rewriting the history, hiding effects: none of it is in the submission's reach
    # (its code runs in an environment of its own, where no world is open), so each is graded on what it did.
    for cheat in ("nia", "otto", "tara"):
        assert "invalid" in reasons[cheat], (cheat, reasons[cheat])
    assert "'NoneType' object has no attribute 'services'" in reasons["tara"]  # active.current() is None there
    assert not any(_claim(_report(out, s))["tampering"] for s in expected)

    # the Gradescope files agree with the CSV
    for student, row in rows.items():
        gs = json.loads((out / student / "results.json").read_text())
        nothing = row["score"] == "not submitted"
        assert gs["score"] == (0 if nothing else float(row["score"]))
        assert gs["execution_time"] >= (1 if student in ("alice", "pia") else 0)
        assert sum(t["max_score"] for t in gs["tests"]) == 16
        assert {t["visibility"] for t in gs["tests"]} == {"visible", "after_published"}
        assert (out / student / "feedback.txt").read_text().startswith(
            f"{student}: not submitted (0/16)" if nothing else f"{student}: {row['score']}/16")


def _every_file_is_graded_or_named(sub, out, rows):
    """Each file in a student's folder was graded (its report names it) or is named in ignored_files, with why."""
    for folder in (p for p in sub.iterdir() if p.is_dir()):
        graded = {e["source"] for e in _report(out, folder.name)["exercises"] if e["source"]}
        ignored = rows[folder.name]["ignored_files"]
        for path in (p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(folder)
            assert rel.name in graded or f"{rel}: " in ignored or f"{rel.parts[0]}/ (" in ignored, (rel, ignored)
    assert "graded claim key FINAL v2.py: its name has exercise 02's words" in rows["alice"]["notes"]
    assert float(rows["alice"]["score"]) == 10
    assert (f"{CLAIM}.py: not graded; {CLAIM}.ipynb was, for exercise 02 (the notebook's answer cell is the answer"
            in rows["sam"]["ignored_files"]) and "the two hold the same code" in rows["sam"]["ignored_files"]
    assert ".ipynb_checkpoints/ (1 file): Jupyter's autosave copies" in rows["sam"]["ignored_files"]
    assert "Not graded:" in (out / "sam" / "feedback.txt").read_text()


def _the_gradebook_files_and_late_work(out, rows):
    """Canvas's and Moodle's import files (headers as their import documentation gives them), and lateness."""
    with (out / "canvas.csv").open() as f:
        canvas = list(csv.reader(f))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_name_the_source", CLAIM]
    assert canvas[1] == ["Points Possible", "", "", "", "", "6", "10"] and len(canvas) == 2 + len(rows)
    assert ["alice", "", "100", "alice@uni.example", "", "", "10"] in canvas  # 01 not handed in: no grade
    assert ["zed", "", "120", "zed@uni.example", "", "", ""] in canvas
    with (out / "moodle.csv").open() as f:
        moodle = list(csv.reader(f))
    assert moodle[0] == ["Student", "ID number", "Email address", "01_name_the_source", CLAIM]
    assert ["pia", "115", "pia@uni.example", "6", "10"] in moodle
    # file times are before the 2030 deadline; fay's time comes from the manifest, a day and an hour late
    assert rows["fay"]["late_by"] == "1d 01:00:00" and rows["fay"]["submitted_at"] == "2030-01-02T01:00:00+00:00"
    assert "submitted_at from --submitted-at" in rows["fay"]["notes"]
    assert {r["late_by"] for s, r in rows.items() if s != "fay"} == {""}
    assert rows["zed"]["submitted_at"] == "" and rows["alice"]["submitted_at"]


def test_the_grader_names_a_rewritten_history_and_a_patched_checker_as_tampering():
    history = History({"seed": 1, "scenario": "async-duplicate"}, [])
    history.append("invoke_start", 0.0, inv="inv-1", source="async", cause="first delivery", container="c1",
                   keys=["o-1"])
    records = history.events
    honest = RunInfo(0, group=1, seed=1, status="valid", length=len(records), digest=digest(records))
    assert tampered(honest, history, checker=lambda h: type("V", (), {"status": "valid"})) is None
    shorter = RunInfo(0, group=1, seed=1, status="valid", length=len(records) - 1, digest=digest(records[:-1]))
    assert "rewrote its history" in tampered(shorter, history)
    lying = RunInfo(0, group=1, seed=1, status="valid", length=len(records), digest=digest(records))
    assert "patched the checker" in tampered(lying, history, checker=lambda h: type("V", (), {"status": "invalid"}))
    assert "no history" in tampered(honest, None)
    hidden = tampered(honest, history, checker=lambda h: type("V", (), {"status": "valid"}), witnessed=2)
    assert "the services reported 2 effects to the grader, the history holds 0" in hidden


def test_discovery_reads_folders_files_and_notebook_metadata(tmp_path):
    cat = catalog.grading_catalogue()
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "02_claim_the_key.py").write_text("")
    (tmp_path / "ann" / "notes.py").write_text("")
    (tmp_path / "ann" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "ann" / ".ipynb_checkpoints" / "02_claim_the_key-checkpoint.py").write_text("")
    (tmp_path / "ben_03_store_and_replay.py").write_text("")
    shutil.copyfile(ROOT / "exercises" / "04_locks_and_retention.ipynb", tmp_path / "cy.ipynb")
    (tmp_path / "dee.py").write_text("")
    subs = {s.student: s for s in batch.discover(tmp_path, cat, [])}
    assert {k: sorted(v.files) for k, v in subs.items()} == {"ann": ["02"], "ben": ["03"], "cy": ["04"], "dee": []}
    assert subs["ann"].ignored == ["notes.py: names no exercise (not its name, its notebook metadata or its code)",
                                   ".ipynb_checkpoints/ (1 file): Jupyter's autosave copies"]
    assert subs["dee"].ignored == ["dee.py: names no exercise (not its name, its notebook metadata or its code)"]
    only = {s.student: s for s in batch.discover(tmp_path, cat, ["05"])}
    assert sorted(only["dee"].files) == ["05"]  # one exercise graded: a bare file is its answer


@pytest.mark.parametrize("args, message", [
    (["{missing}", "--out", "{out}"], "no submissions folder"),
    (["{file}", "--out", "{out}"], "is a file; give the folder"),
    (["{empty}", "--out", "{out}"], "holds no submissions"),
    (["{subs}", "--out", "{file}"], "--out"),
    (["{subs}", "--out", "{out}", "--exercise", "42"], "--exercise 42: no such exercise"),
    (["{subs}", "--out", "{out}", "--tests", "{missing}"], "--tests"),
    (["{nameless}", "--out", "{out}"], "no file names an exercise"),
])
def test_bad_command_lines_get_one_clear_error_and_exit_2(tmp_path, capsys, args, message):
    paths = {"missing": tmp_path / "nope", "file": tmp_path / "f.txt", "empty": tmp_path / "empty",
             "subs": tmp_path / "subs", "out": tmp_path / "out", "nameless": tmp_path / "nameless"}
    paths["file"].write_text("x")
    paths["empty"].mkdir()
    (paths["subs"] / "ann").mkdir(parents=True)
    (paths["subs"] / "ann" / "02_claim_the_key.py").write_text("")
    paths["nameless"].mkdir()
    (paths["nameless"] / "ann.py").write_text("")
    argv = [a.format(**paths) for a in args]
    assert grade_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("bad", [["--jobs", "0"], ["--timeout", "soon"], []])
def test_argparse_errors_name_the_option(tmp_path, capsys, bad):
    argv = [str(tmp_path)] + (["--out", str(tmp_path / "o")] if bad else []) + bad
    with pytest.raises(SystemExit) as exc:
        grade_cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert (bad[0] if bad else "--out") in err


def test_the_gradescope_bundle_has_its_layout_and_grades_one_submission_with_gradescope_paths(tmp_path):
    archive = autograder.build(tmp_path / "bundle", ["02"])
    names = set(zipfile.ZipFile(archive).namelist())
    assert {"setup.sh", "run_autograder", "requirements.txt", "constraints.txt", "tests.json", "run_once_kit.py",
            "sandbox/grading/child.py", "sandbox/verdict/checker.py"} <= names
    assert not any(n.startswith(("solutions/", "exercises/", "tests/")) or n.endswith(".ipynb") for n in names)
    requirements = [line for line in (tmp_path / "bundle" / "requirements.txt").read_text().splitlines()
                    if line and not line.startswith("#")]
    assert requirements and all("==" in line for line in requirements)
    assert not any(line.startswith(("jupyterlab", "ipywidgets")) for line in requirements)
    tests = json.loads((tmp_path / "bundle" / "tests.json").read_text())
    assert [e["id"] for e in tests["exercises"]] == ["02"] and any(t["hidden"] for t in tests["exercises"][0]["tests"])
    for script in ("setup.sh", "run_autograder"):
        assert (tmp_path / "bundle" / script).stat().st_mode & stat.S_IXUSR
        assert subprocess.run(["bash", "-n", str(tmp_path / "bundle" / script)]).returncode == 0

    # Gradescope's /autograder, mapped to a temporary folder: source/ unzipped, submission/ in, results/ out
    root = tmp_path / "autograder"
    zipfile.ZipFile(archive).extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    shutil.copyfile(ROOT / "solutions" / f"{CLAIM}.ipynb", root / "submission" / "my_answer.ipynb")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 10 and sum(t["max_score"] for t in results["tests"]) == 10
    assert all(t["status"] == "passed" for t in results["tests"])
    assert {t["name"].split(" · ")[0] for t in results["tests"]} == {CLAIM}


def test_the_bundle_refuses_an_unpinned_requirement():
    with pytest.raises(Exception, match="not pinned"):
        autograder.grading_requirements("boto3>=1\n")
    assert autograder.grading_requirements("# pins\nboto3==1\njupyterlab==4\n") == "# pins\nboto3==1\n"


def test_the_grading_child_imports_its_modules_without_the_labs_packages():
    """The Gradescope image installs the grading requirements only: a module the grading child imports must not
    need ipywidgets or JupyterLab, or every submission scores 0 there ("No module named 'ipywidgets'")."""
    blocked = json.dumps(list(autograder.LAB_ONLY))
    code = f"""
import importlib.abc, sys
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, NotInstalled())
from sandbox.grading.child import import_grading_modules
import_grading_modules()
print(sorted(m for m in sys.modules if m.startswith("sandbox.present")))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "sandbox.present.run_text" in done.stdout  # the walk did reach the presentation modules it keeps


def test_the_four_grader_cheats_score_nothing_and_touch_nothing(tmp_path, capsys):
    """Issue 18's cheats: rewriting the pipe, a spawned copier, a shell through ctypes, a frame walk."""
    from sandbox.grading.catalog import grading_catalogue

    sub = tmp_path / "submissions"
    for student, cheat in (("pipe", "rewrites_pipe.py"), ("spawn", "spawns_copier.py"),
                           ("shell", "ctypes_shell.py"), ("frames", "walks_frames.py")):
        (sub / student).mkdir(parents=True)
        shutil.copyfile(CHEATS / cheat, sub / student / f"{CLAIM}.py")
    (sub / "honest").mkdir()
    shutil.copyfile(ROOT / "solutions" / f"{CLAIM}.py", sub / "honest" / f"{CLAIM}.py")
    canary, loot = Path("/tmp/rwh-canary"), Path("/tmp/loot")
    for leftover in (canary, loot):
        shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink(missing_ok=True)
    out = tmp_path / "results"
    assert grade_cli.main([str(sub), "--out", str(out), "--exercise", "02", "--jobs", "2", "--no-progress"]) == 0
    capsys.readouterr()
    time.sleep(1.0)  # a copier left running would rewrite the grades now

    with (out / "grades.csv").open() as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert {s: float(r["score"]) for s, r in rows.items()} == {"pipe": 0, "spawn": 0, "shell": 0, "frames": 0,
                                                               "honest": 10}
    hidden = [t.item for t in grading_catalogue()["02"].tests if t.hidden]
    assert hidden
    for student in rows:
        feedback = (out / student / "feedback.txt").read_text()
        assert not any(item in feedback for item in hidden), student
        gradescope = json.loads((out / student / "results.json").read_text())
        assert gradescope["score"] == float(rows[student]["score"])
    assert not canary.exists() and not loot.exists()  # nothing written outside the environment
    assert sorted(p.name for p in sub.rglob("*") if p.is_file()) == [f"{CLAIM}.py"] * 5


def test_the_default_bundle_holds_exercise_09_and_grades_its_worked_answer_with_powertools(tmp_path):
    """Exercise 09's answer imports Powertools: the bundle's requirements pin it, and the worked answer, graded with
    Gradescope's paths and every test (hidden ones too), scores full marks."""
    archive = autograder.build(tmp_path / "bundle")
    tests = json.loads((tmp_path / "bundle" / "tests.json").read_text())
    assert "09" in [e["id"] for e in tests["exercises"]]
    assert "aws-lambda-powertools==" in (tmp_path / "bundle" / "requirements.txt").read_text()
    root = tmp_path / "autograder"
    zipfile.ZipFile(archive).extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    name = catalog.grading_catalogue()["09"].name
    shutil.copyfile(ROOT / "solutions" / f"{name}.py", root / "submission" / f"{name}.py")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == catalog.grading_catalogue()["09"].max_score == 12
    ours = [t for t in results["tests"] if t["name"].split(" · ")[0] == name]
    assert ours and all(t["status"] == "passed" for t in ours)


def test_a_received_history_with_a_record_no_world_writes_is_named_as_tampering():
    from sandbox.grading.grader import received_history

    good = {"seq": 0, "t": 0.0, "type": "note", "text": "hello"}
    assert received_history({1: {"seed": 1}}, {1: [good]}, 1).events == [good]
    assert received_history({}, {}, 1) is None
    bad = {**good, "verdict": "valid"}
    said = received_history({1: {"seed": 1}}, {1: [good, bad]}, 1)
    assert isinstance(said, str) and "no world writes" in said and "'verdict'" in said
