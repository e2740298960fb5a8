"""Reading a class's files as hostile input: no link followed, nothing read that the student could not hand in.

A submissions folder is written by students (or by ``unzip`` of what they uploaded), so any entry in it may
be a symbolic link (to ``solutions/``, to a classmate's file, to ``/etc``), a hard link (the same inode as
a file outside the student's folder), a FIFO that blocks a reader for ever, or a file of gigabytes. The
grader reads nothing through a link: every folder from the submissions root down is opened with
``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's descriptor, and the file itself with ``O_NOFOLLOW``;
its descriptor is then ``fstat``-ed and read. What is checked is what is read, so nothing can swap the
file between the check and the read (the time-of-check to time-of-use race a path-based ``lstat`` then
``open`` leaves).

The rules, each refusal with its reason (``Refused``, a ``ValueError``):

- a symbolic link, to a file or a folder, is never followed, wherever it points (even inside the student's
  own folder: one rule is easier to state than a judgement of where a link leads);
- a regular file with more than one name (``st_nlink > 1``) is refused: a hard link shares its inode
  with another name that may be outside the submission (the solutions, a classmate's answer), and nothing
  in the file says where that other name is. A student's own files have one name each; a copy is a file
  of its own;
- only regular files are read (a FIFO, a socket or a device is refused, and opened with ``O_NONBLOCK`` so
  that even opening one cannot block);
- at most ``MAX_BYTES`` are read: an answer is a few kilobytes, a notebook with its outputs rarely a few MB.
"""
from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Bytes read of one file at most (a notebook with plots is a few MB; an answer a few KB).
MAX_BYTES = 20 * 1024 * 1024
#: Folders below a student's folder the grader looks into (a deeper tree is no exercise's layout).
MAX_DEPTH = 24
#: Entries of one student's folder the grader looks at (an unzipped node_modules is not an answer).
MAX_ENTRIES = 5_000

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class Refused(ValueError):
    """A file the grader will not read; ``str()`` is the reason, in words a student understands."""


#: Characters a name is never printed with: controls (a newline would start a line of its own in the
#: feedback), format characters (U+202E, right-to-left override, shows "fdp.py" for "yp.pdf"), line and
#: paragraph separators, and surrogates (which cannot be written as UTF-8).
_UNPRINTED = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def shown(name: str) -> str:
    """A file name as the reports print it: undecodable bytes and the characters above written as escapes,
    so that no name can break or disguise a line of feedback, a CSV row or the summary, or fail to encode."""
    out = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif unicodedata.category(ch) in _UNPRINTED:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def link_target(parent_fd: int, name: str) -> str:
    try:
        return shown(os.readlink(name, dir_fd=parent_fd))
    except OSError:
        return "?"


def why_not_regular(st: os.stat_result) -> str | None:
    """Why a file (its lstat or fstat) is not one the grader reads, or None."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        return f"{kind}, not a file the grader reads"
    if st.st_nlink > 1:
        return (f"a hard link (one file with {st.st_nlink} names; another name may be outside the submission, "
                f"such as the solutions or a classmate's file): hand in a copy, not a link")
    return None


def _refuse_link(parent_fd: int, name: str, what: str = "") -> Refused:
    return Refused(f"{what}a symbolic link (to {link_target(parent_fd, name)}): the grader follows no link out of "
                   f"a submission; hand in the file itself")


def open_dir(root: Path, parts: tuple[str, ...] = ()) -> int:
    """A descriptor of ``root/parts...``, each folder below ``root`` opened without following a link.

    ``root`` (the submissions folder the instructor named) is opened as given."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    if _is_link(fd, part):
                        raise _refuse_link(fd, part, f"its folder {shown(part)} is ") from None
                    raise Refused(f"its folder {shown(part)} is not a folder") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(parent_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_at(parent_fd: int, name: str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``name`` in the folder ``parent_fd``: opened once without following a link, checked on
    its descriptor (a regular file with one name), read from that descriptor."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENXIO and _is_link(parent_fd, name)):
            raise _refuse_link(parent_fd, name) from None
        if exc.errno == errno.ENXIO:  # a FIFO with no writer, or a socket
            raise Refused("not a regular file (a FIFO or a socket), not a file the grader reads") from None
        raise Refused(f"could not be opened ({os.strerror(exc.errno or 0) or exc})") from None
    try:
        why = why_not_regular(os.fstat(fd))
        if why:
            raise Refused(why)
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise Refused(f"larger than {limit // (1024 * 1024)} MB: no answer is that large")
        return b"".join(chunks)
    except OSError as exc:
        raise Refused(f"could not be read ({os.strerror(exc.errno or 0) or exc})") from None
    finally:
        os.close(fd)


def read_file(path: Path, root: Path | None = None, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``path``; every folder between ``root`` (default: the file's own folder) and it must be
    a real folder, and the file a regular file with one name (see the module's docstring)."""
    path = Path(path)
    base = Path(root) if root is not None else path.parent
    try:
        parts = path.parent.relative_to(base).parts
    except ValueError:
        base, parts = path.parent, ()
    try:
        fd = open_dir(base, parts)
    except Refused:
        raise
    except OSError as exc:
        raise Refused(f"could not be opened ({os.strerror(exc.errno or 0) or exc})") from None
    try:
        return read_at(fd, path.name, limit)
    finally:
        os.close(fd)


def decode(data: bytes) -> str:
    """A student's file as text: UTF-8 (a BOM dropped), undecodable bytes replaced, as ``errors="replace"``."""
    return data.decode("utf-8-sig", errors="replace")


@dataclass
class Entry:
    """One entry of a student's folder, as listed without following links."""

    parts: tuple[str, ...]  # its path below the folder walked
    kind: str  # "file" (a regular file with one name), "dir", or "refused"
    why: str | None = None  # for "refused": the reason
    mtime: float | None = None

    @property
    def rel(self) -> str:
        return shown("/".join(self.parts)) or "."


def walk(root: Path, start: tuple[str, ...] = (), max_depth: int | None = None,
         max_entries: int | None = None) -> Iterator[Entry]:
    """Every entry below ``root/start``, sorted, never through a link: links, hard links, FIFOs and the like
    come out as ``refused`` with the reason.

    Raises ``Refused`` when ``start`` itself is a link. Iterative, so a tree thousands of folders deep costs
    no Python recursion; folders deeper than ``max_depth`` are listed as refused."""
    max_depth = MAX_DEPTH if max_depth is None else max_depth
    max_entries = MAX_ENTRIES if max_entries is None else max_entries
    seen = 0
    stack: list[tuple[str, ...]] = [()]
    while stack:
        rel = stack.pop()
        try:
            fd = open_dir(root, start + rel)
        except (Refused, OSError) as exc:
            if not rel:  # the student's folder itself: the caller says why
                raise
            # a folder that changed since it was listed, or that cannot be read: named, and the walk goes on
            why = str(exc) if isinstance(exc, Refused) else f"could not be read ({os.strerror(exc.errno or 0)})"
            yield Entry(rel, "refused", why)
            continue
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            subdirs = []
            for e in entries:
                seen += 1
                if seen > max_entries:
                    yield Entry(rel, "refused", f"more than {max_entries} files and folders: the rest were not "
                                                "looked at")
                    return
                entry = _entry(fd, rel + (e.name,), e, max_depth)
                if entry.kind == "dir":
                    subdirs.append(entry.parts)
                yield entry
            stack.extend(reversed(subdirs))
        finally:
            os.close(fd)


def _entry(fd: int, parts: tuple[str, ...], e: os.DirEntry, max_depth: int) -> Entry:
    """What one listed entry is, from its own lstat: a folder to enter, a file to read, or refused and why."""
    try:
        st = e.stat(follow_symlinks=False)
    except OSError as exc:
        return Entry(parts, "refused", f"could not be read ({os.strerror(exc.errno or 0)})")
    if stat.S_ISLNK(st.st_mode):
        return Entry(parts, "refused", f"a symbolic link (to {link_target(fd, e.name)}): the grader follows no "
                                       "link out of a submission")
    if stat.S_ISDIR(st.st_mode):
        if len(parts) > max_depth:
            return Entry(parts, "refused", f"a folder nested more than {max_depth} deep: not looked into")
        return Entry(parts, "dir")
    refused = why_not_regular(st)
    return Entry(parts, "refused" if refused else "file", refused, st.st_mtime)
