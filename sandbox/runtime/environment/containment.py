"""Containment by the operating system: bubblewrap around the environments' template.

The grader runs every submission's environments contained (Debian's ``bubblewrap``,
https://github.com/containers/bubblewrap): the template, and so each environment forked from
it, sees the Python installation, the sandbox package and the task roots read-only, a ``/tmp``
of its own and a new ``/proc``; it has no network (its own empty network namespace), no
capabilities, and runs as user 65534 ("nobody") in a user namespace of its own. It cannot see
``solutions/``, hidden tests, the grader's output or other students' files, because none of
them is mounted there. Its one way out is the channel the world reads.

When the grader runs as root (Gradescope does), a user namespace alone maps "nobody" back to root
outside it; so the template is started as an unprivileged system user (``rwh-grader``, which the
Gradescope bundle's ``setup.sh`` creates; ``RWH_GRADER_USER`` names another) whenever that user exists.
A Python that user cannot reach (pyenv's under ``/root``) is bound into the sandbox for it
(``unprivileged.py``). ``unprivileged_user`` says which user, and ``containment_summary`` says it in words.
"""
from __future__ import annotations

import os
import pwd
import shutil
import stat
import sys
from pathlib import Path

from ...errors import BadInput
from ...paths import PACKAGE

#: System folders Python and its C extensions load from (each bound read-only if it exists).
_SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/alternatives", "/etc/ld.so.cache",
           "/etc/localtime", "/etc/ssl/certs")
NOBODY = 65534
#: The unprivileged user a contained template runs as when the grader is root.
GRADER_USER = "rwh-grader"


class ContainmentUnavailable(BadInput):
    """bubblewrap is missing or cannot make namespaces here (asking for containment is then bad input)."""


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise ContainmentUnavailable(
            "bubblewrap (bwrap) is not installed: on Debian or Ubuntu run `sudo apt-get install bubblewrap`")
    return found


def check_available() -> None:
    """Raise ``ContainmentUnavailable``, saying why, unless bubblewrap can make its namespaces here."""
    import subprocess

    command = bwrap_command(["/bin/true"], readable=[])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ContainmentUnavailable(f"bubblewrap could not run: {exc}") from None
    if done.returncode != 0:
        raise ContainmentUnavailable(f"bubblewrap cannot contain processes here: {done.stderr.strip()[:300]} "
                                     "(it needs user namespaces; in a container, run it with them allowed)")


def _package_roots() -> list[str]:
    """Python itself, the environment's packages, and this sandbox package."""
    sandbox_dir = str(PACKAGE)
    roots = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix, sandbox_dir}
    roots.update(p for p in sys.path if p and os.path.isdir(p) and "site-packages" in p)
    return sorted(roots)


def bwrap_command(command: list[str], readable: list[str]) -> list[str]:
    """``command`` under bubblewrap, seeing only Python, the sandbox and ``readable``, all read-only.

    The PID namespace is left out here on purpose: each environment the template forks makes its own
    (``namespaces``), with a ``/proc`` of its own, and the kernel lets it mount one only where a whole
    ``/proc`` is already in sight (bubblewrap's own ``--proc`` covers parts of itself). So the template,
    which never runs learner code, keeps the machine's ``/proc``, where its children's pids are its own."""
    args = [bwrap_path(), "--unshare-user", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--uid", str(NOBODY), "--gid", str(NOBODY),
            "--bind", "/proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/var/tmp"]
    for path in _SYSTEM:
        args += ["--ro-bind-try", path, path]
    for path in [*_package_roots(), *readable]:
        args += ["--ro-bind", path, path]
    return [*args, "--chdir", "/", *command]


def _reachable_by_others(path: str) -> bool:
    """Can a user with no claim on ``path`` read it (every folder above it searchable by others)?"""
    real = Path(os.path.realpath(path))
    try:
        for folder in [*reversed(real.parents), real]:
            mode = folder.stat().st_mode
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                return False
        return bool(real.stat().st_mode & stat.S_IROTH)
    except OSError:
        return False


def unprivileged_user() -> tuple[str, int, int] | None:
    """(name, uid, gid) to start contained environments as; None: as this process's own user.

    Only for a root grader, and only when the user exists (the Gradescope bundle's setup.sh creates
    ``rwh-grader``). Its Python need not be in that user's reach: ``unprivileged_command`` binds it into
    the sandbox (``unprivileged.py``). Raises ``ContainmentUnavailable``, naming the path, when that user
    still could not read it (a Python folder or file others may not read), or when ``RWH_GRADER_USER``
    names a user that does not exist or is root."""
    if os.geteuid() != 0:
        return None
    asked = os.environ.get("RWH_GRADER_USER")
    name = asked or GRADER_USER
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        if asked:
            raise ContainmentUnavailable(f"RWH_GRADER_USER names {name!r}, and there is no such user") from None
        return None
    if entry.pw_uid == 0:
        raise ContainmentUnavailable(f"the grader's user {name!r} has uid 0: submissions' code must not run as root")
    from .unprivileged import unreadable

    problems = [p for p in map(unreadable, [*_package_roots(), _real_executable()]) if p]
    if problems:
        raise ContainmentUnavailable(
            f"submissions' code would run as {name}, which cannot read this Python: {problems[0]}. Make the "
            f"installation readable by others (chmod -R o+rX on it; pyenv and venv make it so), or grade with a "
            f"Python outside private folders")
    return name, entry.pw_uid, entry.pw_gid


def _real_executable() -> str:
    return os.path.realpath(sys.executable)


def unprivileged_command(command: list[str], user: tuple[str, int, int]) -> list[str]:
    """``command`` (bubblewrap's, from ``bwrap_command``) started by root as ``user``, with the roots of
    Python and the sandbox that ``user`` cannot reach bound in from a private mount namespace."""
    from .unprivileged import staged_command

    staged = [root for root in _package_roots() if not _reachable_by_others(root)]
    return staged_command(command, staged, user[1], user[2])


def containment_summary() -> str:
    """Who a contained environment's code runs as, in words (the grader prints it)."""
    user = unprivileged_user()
    if user is not None:
        staged = [root for root in _package_roots() if not _reachable_by_others(root)]
        bound = (f"; this Python ({', '.join(staged)}) is out of that user's reach, so it is bound into the "
                 f"sandbox read-only" if staged else "")
        return f"submissions' code runs as the unprivileged user {user[0]} (uid {user[1]}), under bubblewrap{bound}"
    if os.geteuid() == 0:
        return (f"submissions' code runs under bubblewrap as 'nobody' in a user namespace, which is root outside "
                f"it: there is no user {GRADER_USER}; create it (`useradd --system --no-create-home --shell "
                f"/usr/sbin/nologin {GRADER_USER}`; the Gradescope bundle's setup.sh does) and it runs as that "
                f"user instead")
    return f"submissions' code runs under bubblewrap as your own user (uid {os.geteuid()}), never as root"
