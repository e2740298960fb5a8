"""An execution environment's own kernel namespaces: what makes it a Lambda sandbox of its own.

On AWS each execution environment is a Firecracker microVM: nothing of one environment (its
processes, ``/tmp``, sockets, shared memory) is visible to another, and nothing of Lambda's own
machinery is visible to any (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html,
https://docs.aws.amazon.com/whitepapers/latest/security-overview-aws-lambda/lambda-isolation-technologies.html).
The sandbox gets the same separation from Linux namespaces, made for each environment when the
template forks it (``template._Environment``):

- a **user** namespace, in which the handler runs as an unprivileged user with no capabilities;
  outside it that user is ``nobody`` when the world runs as root, and the world's own user otherwise;
- a **PID** namespace, whose init dies with the environment and takes every process the handler
  started with it (a daemon, a pool's workers, a ``sleep`` child); ``/proc`` shows only these;
- a **mount** namespace, in which the whole file system is read-only but for ``/tmp`` (a tmpfs of
  the function's ephemeral storage) and ``/var/tmp`` (a small tmpfs of its own), and ``/dev/shm`` is
  gone, as on Lambda;
- **IPC**, **network** (loopback only: an abstract UNIX socket is the environment's own) and **UTS**
  namespaces.

Everything here is plain system calls through ``ctypes`` (Linux's ``unshare(2)``, ``mount(2)``,
``mount_setattr(2)``, ``capset(2)``, ``prctl(2)``): no helper program is needed. ``available()``
says whether this kernel allows it; where it does not (a Mac, a kernel without unprivileged user
namespaces), ``unavailable_reason`` says what is not contained, and the CLI says it once.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import socket
import struct
import sys
from dataclasses import dataclass

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_ALL = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWCGROUP
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
_MOUNT_ATTR_RDONLY, _AT_RECURSIVE, _AT_FDCWD = 0x1, 0x8000, -100
_SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_SET_NO_NEW_PRIVS = 1, 4, 24, 28, 38
#: SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED... and their locks: root inside gains nothing.
_SECUREBITS_LOCKED = 0x2F
_CAP_LAST = 63
#: Inside its namespace the handler's user and group: unprivileged, as on Lambda.
INSIDE_UID = 993
INSIDE_GID = 990
NOBODY = 65534
#: /var/tmp: small, and the environment's own (Lambda gives 512 MB of /tmp and nothing else
#: writable; these exist so that code which expects them works, and nothing crosses through them).
SMALL_TMPFS_MB = 64


@dataclass(frozen=True)
class Plan:
    """What one environment's namespaces hold."""

    tmp_mb: int  # /tmp's size: the function's ephemeral storage
    keep: tuple[str, ...] = ()  # folders that must stay readable (Python, its packages, the task roots)
    #: The world runs as root: its environments are ``nobody`` outside, which may not pass where root may.
    root_outside: bool = False

    def hidden(self) -> list[str]:
        """Folders above ``keep`` that the environment's user could not pass (``/root``, mode 0700). Asked
        outside the new user namespace: inside it root's files seem to be nobody's, and so passable."""
        return _blocked_ancestors(list(self.keep), NOBODY) if self.root_outside else []


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return (s.encode() if s is not None else None)
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _read_only_everywhere(libc: ctypes.CDLL) -> None:
    """Every mount of this namespace read-only, recursively (one ``mount_setattr``, Linux 5.12 and later)."""
    _read_only_at(libc, "/")


def _read_only_at(libc: ctypes.CDLL, path: str) -> None:
    attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    number = _SYS_MOUNT_SETATTR[platform.machine()]
    _check(libc.syscall(number, _AT_FDCWD, path.encode(), _AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr)),
           f"mount_setattr {path} read-only")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _blocked_ancestors(paths: list[str], uid: int) -> list[str]:
    """Folders above ``paths`` that user ``uid`` (not root) could not pass through (``/root``, mode 0700)."""
    blocked = set()
    for path in paths:
        parts = os.path.realpath(path).split("/")[1:-1]
        folder = ""
        for part in parts:
            folder += "/" + part
            try:
                st = os.stat(folder)
            except OSError:
                break
            if not (st.st_mode & 0o001 or (st.st_uid == uid and st.st_mode & 0o100)):
                blocked.add(folder)
                break
    return sorted(blocked)


def _loopback_up() -> None:
    """Bring ``lo`` up in the new network namespace: 127.0.0.1 works, as on Lambda, and reaches only itself."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def unshare() -> None:
    """Step 1, in the environment's manager (a fresh fork of the template): new namespaces of every kind.

    Its parent, the template, then writes the manager's user and group maps (``write_maps``): only a
    process outside the new user namespace may map root's files away from it."""
    _check(_libc().unshare(_ALL), "unshare")


def write_maps(pid: int) -> None:
    """Step 2, in the template: the manager's user is the handler's unprivileged user inside; outside it is
    ``nobody`` when the world runs as root, and the world's own (unprivileged) user otherwise."""
    outside_uid, outside_gid = (NOBODY, NOBODY) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    _write(f"/proc/{pid}/setgroups", "deny")
    _write(f"/proc/{pid}/uid_map", f"{INSIDE_UID} {outside_uid} 1\n")
    _write(f"/proc/{pid}/gid_map", f"{INSIDE_GID} {outside_gid} 1\n")


def mount_private(plan: Plan, hidden: list[str]) -> None:
    """Step 3, in the manager (every capability, inside its own namespaces): the file system it will show.

    The manager still has the world's user outside while it does this, so folders only that user can pass
    (a pyenv Python under ``/root``) are reachable here; each one a handler needs is mounted back where the
    handler's user can reach it, under a tmpfs over the folder that blocked the way."""
    libc = _libc()
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    real = sorted({os.path.realpath(path) for path in plan.keep})
    held = [(path, os.open(path, os.O_PATH)) for path in real if any(path.startswith(h + "/") for h in hidden)]
    owner = f"uid={INSIDE_UID},gid={INSIDE_GID}"
    try:
        for folder in hidden:
            _mount(libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0755,{owner},size=1m")
        for path, fd in held:
            _make_folders(libc, path)
            _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    finally:
        for _, fd in held:
            os.close(fd)
    _read_only_everywhere(libc)
    # What must stay in sight under the folders about to be covered (task roots in /var/tmp, a checkout in
    # /tmp): held open, covered, and mounted back read-only at its own path.
    private = ("/tmp", "/var/tmp", "/dev/shm")
    under = [p for p in real if p.startswith(tuple(f + "/" for f in private))]
    kept = [(path, os.open(path, os.O_PATH)) for path in under
            if not any(path != other and path.startswith(other + "/") for other in under)]
    try:
        _mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{owner},size={plan.tmp_mb}m")
        if os.path.isdir("/var/tmp"):
            _mount(libc, "tmpfs", "/var/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                   f"mode=1777,{owner},size={SMALL_TMPFS_MB}m")
        if os.path.isdir("/dev/shm"):
            # Lambda mounts no /dev/shm: POSIX semaphores and shared memory fail there (glibc wants a tmpfs
            # at /dev/shm, and says ENOSYS), so multiprocessing's Pool, Queue and Lock raise OSError 38.
            # The machine's own /dev/shm is covered by something that is no tmpfs, empty and read-only.
            _mount(libc, "mqueue", "/dev/shm", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY)
        for path, fd in kept:
            _make_folders(libc, path)
            _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            _read_only_at(libc, path)
    finally:
        for _, fd in kept:
            os.close(fd)
    _loopback_up()
    socket.sethostname("localhost")


def _make_folders(libc: ctypes.CDLL, path: str) -> None:
    """``os.makedirs`` as the handler's user: root's own uid has no name in the new namespace, and the kernel
    refuses to create a file for a user it cannot map (EOVERFLOW). Root's uid cannot be taken back here, and
    nothing after this needs it: every folder root alone could pass is held open already."""
    libc.setfsgid(INSIDE_GID)
    libc.setfsuid(INSIDE_UID)
    os.makedirs(path, exist_ok=True)


def resize_tmp(megabytes: int) -> None:
    """The function's ephemeral storage, once it is known (a spare environment is made before it is)."""
    _mount(_libc(), None, "/tmp", None, MS_REMOUNT | MS_NOSUID | MS_NODEV, f"size={megabytes}m")


def become_init() -> None:
    """In the new PID namespace's first process: a ``/proc`` of this namespace only, then reap until killed.

    It dies with the process that made the namespace (PR_SET_PDEATHSIG), and with it, as the kernel ends
    a PID namespace whose init is gone, every process the environment ever started."""
    libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, 9)
    libc.prctl(_PR_SET_DUMPABLE, 0)
    _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def set_dumpable(dumpable: bool) -> None:
    """Non-dumpable: no process without privileges over this one may ptrace it or read its /proc files."""
    _libc().prctl(_PR_SET_DUMPABLE, int(dumpable))


def drop_privileges() -> None:
    """The learner's process: no capabilities, none regained by exec, and no lock shared with other environments."""
    libc = _libc()
    for cap in range(_CAP_LAST + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap)  # past the last the kernel knows: EINVAL, ignored
    _check(libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS_LOCKED), "securebits")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # two empty (effective, permitted, inheritable) sets
    _check(libc.syscall(_SYS_CAPSET[platform.machine()], ctypes.c_char_p(header), data), "capset")
    _filter_syscalls(libc)


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


#: System call numbers, per processor, of what the filter below rules on.
_NUMBERS = {
    "x86_64": {"arch": 0xC000003E, "flock": 73, "fcntl": 72, "add_key": 248, "request_key": 249, "keyctl": 250,
               "preadv2": 327, "pwritev2": 328, "mincore": 27, "inotify_init": 253, "inotify_init1": 294,
               "fanotify_init": 300, "memfd_create": 319, "prctl": 157},
    "aarch64": {"arch": 0xC00000B7, "flock": 32, "fcntl": 25, "add_key": 217, "request_key": 218, "keyctl": 219,
                "preadv2": 286, "pwritev2": 287, "mincore": 232, "inotify_init1": 26, "fanotify_init": 262,
                "memfd_create": 279, "prctl": 167},
}
#: fcntl's commands that take a record lock (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW).
_LOCKING = (6, 7, 37, 38)
_RWF_NOWAIT = 0x8
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000


def _errno(code: int) -> int:
    return 0x00050000 | code  # SECCOMP_RET_ERRNO: the call returns -code (0: "succeeds", doing nothing)


def _rule(number: int, ret: int, arg: int | None = None, values: tuple[int, ...] = (), mask: int = 0) -> list:
    """``number`` returns ``ret``: always, or when its argument ``arg`` is one of ``values`` (or has ``mask``)."""
    if arg is None:
        return [(_BPF_JEQ, 0, 1, number), (_BPF_RET, 0, 0, ret)]
    offset = 16 + 8 * arg  # seccomp_data.args[arg], its low 32 bits (little-endian)
    tests = [(_BPF_JSET, 0, 1, mask)] if mask else [(_BPF_JEQ, 0, 1, v) for v in values]
    body: list = []
    for test in tests:
        body += [(_BPF_LD_W_ABS, 0, 0, offset), test, (_BPF_RET, 0, 0, ret)]
    body.append((_BPF_LD_W_ABS, 0, 0, 0))  # the system call's number again, for the rules after this one
    return [(_BPF_JEQ, 0, len(body), number), *body]


def _filter_syscalls(libc: ctypes.CDLL) -> None:
    """What namespaces leave shared, closed with a seccomp filter.

    Every environment sees the same files (the standard library's), and the kernel keeps some state per
    file, whichever namespace asks. Separate microVMs share none of it, so here:
    - a lock (``flock``, and ``fcntl``'s record and open-file-description locks) succeeds and locks
      nothing: a lock no other environment can see, and a test for one (F_GETLK) finds none;
    - whether a file's pages are in memory cannot be asked (``mincore``, reads with RWF_NOWAIT);
    - no inotify or fanotify: their events on a shared file reach every environment that watches it;
    - no ``memfd_create``: memory no process maps, that the manager could not count;
    - ``prctl(PR_SET_DUMPABLE)`` is refused: a process that hid its memory from the manager;
    - the kernel's keyrings are refused (kept per user, not per namespace), as Docker's default refuses
      them, and x32 system calls (another numbering) are refused."""
    n = _NUMBERS[platform.machine()]
    program = [
        (_BPF_LD_W_ABS, 0, 0, 4), (_BPF_JEQ, 1, 0, n["arch"]), (_BPF_RET, 0, 0, _errno(errno.ENOSYS)),
        (_BPF_LD_W_ABS, 0, 0, 0), (_BPF_JGE, 0, 1, 0x40000000), (_BPF_RET, 0, 0, _errno(errno.ENOSYS)),
        *_rule(n["flock"], _errno(0)),
        *_rule(n["fcntl"], _errno(0), arg=1, values=_LOCKING),
        *_rule(n["mincore"], _errno(errno.ENOSYS)),
        *_rule(n["preadv2"], _errno(errno.EOPNOTSUPP), arg=5, mask=_RWF_NOWAIT),
        *_rule(n["pwritev2"], _errno(errno.EOPNOTSUPP), arg=5, mask=_RWF_NOWAIT),
        *[step for name in ("inotify_init", "inotify_init1", "fanotify_init", "memfd_create") if name in n
          for step in _rule(n[name], _errno(errno.ENOSYS))],
        *_rule(n["prctl"], _errno(errno.EPERM), arg=0, values=(_PR_SET_DUMPABLE,)),
        *[step for name in ("add_key", "request_key", "keyctl") for step in _rule(n[name], _errno(errno.EPERM))],
        (_BPF_RET, 0, 0, _ALLOW),
    ]
    steps = (_SockFilter * len(program))(*[_SockFilter(*step) for step in program])
    prog = _SockFprog(len(program), steps)
    _check(libc.prctl(22, 2, ctypes.byref(prog), 0, 0), "seccomp")  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


def set_limits(nofile: int, nproc: int) -> None:
    """Lambda's per-environment quotas on file descriptors and on processes and threads
    (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). The process count is kept per
    user namespace (Linux 5.14 and later), so each environment counts only its own."""
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def fork_into(plan: Plan, confirm: bool = True) -> int:
    """Fork a process into an environment's new namespaces (steps 1 to 3); the caller must be single-threaded.

    In the parent: the child's pid once it is ready (``OSError`` with the child's reason if it could not be
    made); with ``confirm`` False, as soon as its maps are written (the child mounts on its own meanwhile, and
    says on its stderr why, if it cannot). In the child: 0, inside its namespaces, dying with its parent."""
    child = fork_started(plan)
    if child.pid:
        child.finish(confirm)
    return child.pid


class Started:
    """A process forked into namespaces of its own, in the parent: ``pid``; the pipes to and from it until its maps
    are written (``finish``). ``waiting``: the pipe that becomes readable once it has unshared, for ``select``."""

    def __init__(self, pid: int, from_child: int, to_child: int) -> None:
        self.pid, self.waiting, self._to_child = pid, from_child, to_child

    def fds(self) -> tuple[int, int]:
        """Its pipes, while its maps are still to write: no other child may keep them."""
        return self.waiting, self._to_child

    def finish(self, confirm: bool = False) -> None:
        """Step 2: wait until the child has unshared, then write its maps (``confirm``: and wait until it has
        mounted). ``OSError`` with the child's reason, the child killed and reaped, if it could not."""
        try:
            said = os.read(self.waiting, 1)
            if said == b"u":
                write_maps(self.pid)
                os.write(self._to_child, b"m")
                if not confirm:
                    return
                said = os.read(self.waiting, 500)
            if said != b"r":
                why = (said + (os.read(self.waiting, 500) if said == b"e" else b""))[1:].decode(errors="replace")
                raise OSError(errno.EPERM, why or "the process ended before its namespaces were made")
        except BaseException:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (OSError, ChildProcessError):
                pass
            raise
        finally:
            os.close(self.waiting)
            os.close(self._to_child)


def fork_started(plan: Plan, close: tuple[int, ...] = ()) -> Started:
    """Step 1: fork a process that unshares into namespaces of its own, and return without waiting for it (a
    ``Started`` with pid 0 in the child, once its namespaces are made). The parent writes its maps when it has
    unshared (``Started.finish``): a template waiting for that meanwhile answered the world late. ``close``: the
    parent's descriptors the child must not keep (other children's pipes)."""
    to_parent_r, to_parent_w = os.pipe()
    to_child_r, to_child_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        for fd in (to_parent_r, to_child_w, *close):
            os.close(fd)
        _child_steps(plan, to_parent_w, to_child_r, parent)
        return Started(0, -1, -1)
    os.close(to_parent_w)
    os.close(to_child_r)
    return Started(pid, to_parent_r, to_child_w)


def _child_steps(plan: Plan, to_parent: int, from_parent: int, parent: int) -> None:
    """The child's side of ``fork_into``: unshare, wait for its maps, mount; or say why not, and end.

    A template killed while it forked (a command line that stopped at bad input) leaves a child that no one waits
    for: it ends at once, and says nothing on the caller's terminal."""
    try:
        _libc().prctl(_PR_SET_PDEATHSIG, 9)
        if os.getppid() != parent:  # the template died before the line above could tie this process to it
            os._exit(0)
        set_dumpable(True)  # the template writes this process's maps in its /proc (it is not dumpable itself)
        hidden = plan.hidden()
        unshare()
        os.write(to_parent, b"u")
        if os.read(from_parent, 1) != b"m":
            os._exit(1)
        mount_private(plan, hidden)
        tell_parent(to_parent, b"r")
    except OSError as exc:
        told = tell_parent(to_parent, b"e" + str(exc).encode(errors="replace")[:400])
        if not told and os.getppid() == parent:  # the template lives on but no longer listens: say why, once
            os.write(2, f"sandbox: an execution environment's namespaces could not be made: {exc}\n".encode())
        os._exit(1)
    os.close(to_parent)
    os.close(from_parent)


def tell_parent(fd: int, said: bytes) -> bool:
    """Say ``said`` to a parent that may have stopped listening (``fork_into(confirm=False)``)."""
    try:
        os.write(fd, said)
        return True
    except BrokenPipeError:
        return False


def probe() -> str | None:
    """None when this kernel lets the sandbox make an environment's namespaces; otherwise why not.

    Called in the template (single-threaded), once."""
    if sys.platform != "linux":
        return f"{platform.system()} has no Linux namespaces"
    if platform.machine() not in _SYS_MOUNT_SETATTR:
        return f"the sandbox does not know this processor's ({platform.machine()}) system call numbers"
    try:
        pid = fork_into(Plan(tmp_mb=1, root_outside=os.geteuid() == 0))
    except OSError as exc:
        return exc.strerror or str(exc)
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return None


def describe_missing(reason: str) -> str:
    """The one warning the CLI and a notebook print when environments cannot have namespaces here."""
    return (f"note: execution environments are NOT contained on this machine ({reason}): each is still a process "
            "with its own modules and /tmp folder, but environments can see each other's processes, sockets and "
            "files, and reach the network. Verdicts of handlers that coordinate through the machine may be wrong. "
            "On Linux, allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1).")


