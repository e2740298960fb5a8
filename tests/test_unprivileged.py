"""A root grader's submissions run as an unprivileged user, wherever root's Python lives.

Before: with Python under /root (pyenv, mode 0700), ``rwh-grader`` could not reach it, so the template ran
as 'nobody' in a user namespace, which is root outside (every process of it had Uid 0 in /proc), and the
grader told the instructor to create a user that already existed. Now the unreachable prefix is bound into
the sandbox (``sandbox/runtime/environment/unprivileged.py``) and every process runs as that user.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import textwrap

import pytest

from sandbox.runtime.environment import containment
from sandbox.runtime.environment.containment import ContainmentUnavailable
from sandbox.runtime.environment.namespaces import INSIDE_UID

from conftest import ROOT

TEST_USER = "rwh-grader-test"  # not rwh-grader: other runs on this machine keep their own set-up

#: Run inside the private venv: one contained invocation, then the host's view of the template's processes.
_CHECK = """
import json, os, sys
from sandbox import Sandbox
from sandbox.runtime.environment.containment import containment_summary
from sandbox.runtime.environment.host import Template

def descendants(top):
    found, todo = [], [top]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    status = open(f"/proc/{d}/status").read()
                except OSError:
                    continue
                if int(status.split("PPid:")[1].split()[0]) == pid:
                    todo.append(int(d))
    return found

summary = containment_summary()
with Sandbox(seed=0) as sb:
    inv = sb.function(sys.argv[1]).invoke({})
    uids = {}
    for pid in descendants(Template._instances[True].process.pid):
        try:
            line = next(l for l in open(f"/proc/{pid}/status") if l.startswith("Uid:"))
        except OSError:
            continue
        uids[pid] = [int(u) for u in line.split()[1:]]
print(json.dumps({"summary": summary, "outcome": inv.outcome, "result": inv.result, "error": inv.error_text,
                  "prefix": sys.prefix, "uids": uids}))
"""


def _test_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("no useradd to create the grader's system user")
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", TEST_USER], check=True)
        return pwd.getpwnam(TEST_USER)


@pytest.mark.skipif(os.geteuid() != 0, reason="the grader drops to an unprivileged user only when it is root")
def test_a_root_grader_with_python_in_a_private_folder_runs_submissions_as_the_unprivileged_user(tmp_path):
    try:
        containment.check_available()
    except ContainmentUnavailable as exc:
        pytest.skip(str(exc))
    user = _test_user()
    # A venv in a folder only root may enter (as /root is), using this Python's packages and this sandbox.
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    venv = private / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    shared = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    (site / "rwh_shared.pth").write_text("\n".join([*shared, str(ROOT)]) + "\n")
    os.chmod(private, 0o700)
    handler = tmp_path / "app.py"
    handler.write_text(textwrap.dedent("""
        import os

        def handler(event, context):
            return {"uid": os.getuid()}
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RWH_"))}
    env.update(RWH_ISOLATION="contained", RWH_GRADER_USER=TEST_USER, PYTHONPATH=str(ROOT))
    done = subprocess.run([str(venv / "bin" / "python"), "-c", _CHECK, f"{handler}:handler"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["prefix"].startswith(str(private))  # the interpreter really is out of the user's reach
    assert facts["outcome"] == "ok", facts["error"]
    assert facts["result"] == {"uid": INSIDE_UID}  # inside: an unprivileged user, in a user namespace of its own
    # Outside, seen from the host: bubblewrap and every process below it run as the grader's user, never root.
    assert facts["uids"] and all(u == [user.pw_uid] * 4 for u in facts["uids"].values()), facts["uids"]
    assert f"unprivileged user {TEST_USER} (uid {user.pw_uid})" in facts["summary"]
    assert str(private) in facts["summary"]  # says what it bound in for that user


def test_a_python_the_user_cannot_read_is_refused_with_its_path(tmp_path, monkeypatch):
    closed = tmp_path / "closed-python"
    closed.mkdir(mode=0o700)
    os.chmod(closed, 0o700)
    monkeypatch.setattr(containment.os, "geteuid", lambda: 0)
    monkeypatch.setenv("RWH_GRADER_USER", "nobody")
    monkeypatch.setattr(containment, "_package_roots", lambda: [str(closed)])
    with pytest.raises(ContainmentUnavailable, match=f"cannot read this Python: {closed} has mode 700"):
        containment.unprivileged_user()


def test_a_root_grader_without_the_user_is_told_to_create_it_and_a_named_user_that_is_missing_is_refused(
        monkeypatch):
    monkeypatch.setattr(containment.os, "geteuid", lambda: 0)
    monkeypatch.delenv("RWH_GRADER_USER", raising=False)
    monkeypatch.setattr(containment, "GRADER_USER", "rwh-no-such-user")
    summary = containment.containment_summary()
    assert "there is no user rwh-no-such-user" in summary and "useradd --system" in summary
    monkeypatch.setenv("RWH_GRADER_USER", "rwh-no-such-user")
    with pytest.raises(ContainmentUnavailable, match="no such user"):
        containment.unprivileged_user()
    # A user that exists is never told to be created.
    monkeypatch.setenv("RWH_GRADER_USER", "nobody")
    monkeypatch.setattr(containment, "_package_roots", lambda: [])
    monkeypatch.setattr(containment, "_real_executable", lambda: "/bin/sh")
    assert "create" not in containment.containment_summary()
