"""`make help` lists every target of the Makefile, each with what it does."""
import re
import subprocess

from conftest import ROOT


def test_make_help_lists_every_target_once_with_a_line_of_its_own():
    makefile = (ROOT / "Makefile").read_text()
    targets = {m[1] for m in re.finditer(r"^([a-z][a-z-]*)\s*:(?!=)", makefile, re.M)}
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    listed = [re.match(r"make (\S+)\s{2,}(\S.*)$", line) for line in out.splitlines()]
    assert all(listed), out
    names = [m[1] for m in listed]
    assert sorted(names) == sorted(targets) and len(names) == len(set(names)), out
