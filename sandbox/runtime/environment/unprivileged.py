"""Starting the contained template as an unprivileged user, wherever root's Python lives.

A root grader starts bubblewrap as the system user ``rwh-grader`` (``containment.unprivileged_user``),
so that the user namespace bubblewrap makes maps the sandbox's "nobody" to that user outside, never
to root. bubblewrap then runs as that user, and it can only bind what that user can reach: every
folder above a path must be searchable by others (bwrap resolves each bind's source with realpath(3)
before mounting, and ``--ro-bind-fd`` goes through /proc/self/fd's link, which is resolved the same
way). A pyenv Python under ``/root`` (mode 0700), or a venv in a private folder, is out of its reach.

So a root grader starts a small helper instead (this file, run by path with ``python -I -S``: the
standard library only, no import of the sandbox package as root). In a mount namespace of its own
(private: nothing it mounts is seen outside, and it all goes when the template ends), it mounts a
tmpfs on an empty folder, binds each unreachable root there at its own path (``STAGE/root/.pyenv/...``),
gives up root (``setgroups([])``, ``setgid``, ``setuid``) and executes bubblewrap, whose binds of those
roots now name their copies in the stage as sources. Inside the sandbox every path is what it is
outside (``sys.executable``, ``pyvenv.cfg``'s home, ``.pth`` files hold absolute paths), and the
folders bubblewrap creates above the binds are searchable. What the user still needs is to read the
roots themselves (a pyenv or venv folder is 0755 with 0644 files); when one is not readable by others,
``unreachable_roots`` says which, and the grader refuses with that path rather than run as root.
"""
from __future__ import annotations

import ctypes
import os
import stat
import sys
import tempfile
from typing import Any

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18


def blocked(path: str) -> str | None:
    """The first folder above ``path`` (or ``path`` itself, a folder) that others cannot search; None: none."""
    real = os.path.realpath(path)
    parts = real.strip("/").split("/")
    for i in range(len(parts) + 1):
        folder = "/" + "/".join(parts[:i])
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            return folder
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return folder
    return None


def unreadable(root: str) -> str | None:
    """Why others cannot use ``root`` once its folders above are searchable (None: they can)."""
    real = os.path.realpath(root)
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        return f"{real}: {exc.strerror}"
    needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    if mode & needed != needed:
        return f"{real} has mode {stat.S_IMODE(mode):o}, which others cannot read"
    return None


def staged_command(bwrap: list[str], roots: list[str], uid: int, gid: int) -> list[str]:
    """The helper's command line that starts ``bwrap`` as ``uid``:``gid`` with ``roots`` staged.

    Each ``--ro-bind ROOT ROOT`` of a staged root becomes ``--ro-bind STAGE/ROOT ROOT``. The stage is an
    empty folder only the helper's namespace mounts anything on (removed when this process exits).
    """
    stage = ""
    real_roots = sorted({os.path.realpath(r) for r in roots})
    if real_roots:
        stage = tempfile.mkdtemp(prefix="rwh-stage-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
        os.chmod(stage, 0o755)
        import atexit

        atexit.register(_remove_stage, stage)
    staged = set(real_roots)
    command = list(bwrap)
    for i in range(len(command) - 2):
        if command[i] == "--ro-bind" and os.path.realpath(command[i + 1]) in staged:
            command[i + 1] = stage + os.path.realpath(command[i + 1])
    # only the outermost roots are mounted: one inside another is reached through it
    outer = [r for r in real_roots if not any(r != o and r.startswith(o + "/") for o in real_roots)]
    return [sys.executable, "-I", "-S", __file__, str(uid), str(gid), stage, str(len(outer)), *outer, *command]


def _remove_stage(stage: str) -> None:
    try:
        os.rmdir(stage)
    except OSError:  # a template still running keeps its namespace's mounts, not this folder's content
        pass


def _fail(message: str) -> None:
    sys.stderr.write(f"rwh: cannot start the contained template as an unprivileged user: {message}\n")
    sys.exit(126)


def _mount(libc: Any, source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None) -> None:
    if libc.mount(source, target.encode(), fstype, flags, data) != 0:
        errno = ctypes.get_errno()
        _fail(f"mount on {target}: {os.strerror(errno)}")


def main(argv: list[str]) -> None:
    """The helper (as root): stage the roots in a private mount namespace, drop to the user, exec bwrap."""
    uid, gid, stage, count = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    roots, command = argv[4:4 + count], argv[4 + count:]
    if roots:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNS) != 0:
            _fail(f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}")
        _mount(libc, b"none", "/", None, MS_REC | MS_PRIVATE, None)  # nothing below leaks to the machine
        _mount(libc, b"tmpfs", stage, b"tmpfs", 0, b"mode=0755")
        os.umask(0o022)
        for root in roots:
            os.makedirs(stage + root, exist_ok=True)
            _mount(libc, root.encode(), stage + root, None, MS_BIND | MS_REC, None)
            _mount(libc, None, stage + root, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        _fail("still root after setuid")
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
