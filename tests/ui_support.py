"""Helpers for the browser-driven UI tests: a private JupyterLab server and Debian's chromium.

Nothing here reaches the network. The server listens on 127.0.0.1 only, with a random
token, its own runtime/config/data/settings folders (so neither a learner's ``~/.jupyter``
nor this test can affect the other), no news feed and no update check. The browser is
the system chromium (Playwright never downloads one), and every request it makes to a
host other than 127.0.0.1 is aborted and recorded.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_MISSING = (
    f"{CHROMIUM} not found: the UI tests drive Debian's chromium "
    "(install it with: apt-get install chromium)"
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--no-proxy-server",  # 127.0.0.1 must never go through an http_proxy from the environment
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # no host name resolves
]

# JupyterLab user settings for the test server: no news / update toast over the notebook.
LAB_USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

# urllib that ignores http_proxy/https_proxy: the server is on loopback.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def require_chromium() -> Path:
    """Return chromium's path; skip the test without it, but fail on CI (where .ci/run installs it)."""
    if CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(CHROMIUM_MISSING, pytrace=False)
    pytest.skip(CHROMIUM_MISSING)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    """A running ``jupyter lab`` started by :func:`lab_server`."""

    proc: subprocess.Popen
    root_dir: Path
    home: Path
    token: str
    port: int
    log_path: Path
    children: list = field(default_factory=list)  # psutil.Process of kernels etc.

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """``path`` under the server, with the token (``/lab/tree/x.ipynb`` -> full URL)."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}{path}{sep}token={self.token}"

    def api(self, path: str, method: str = "GET", timeout: float = 5) -> tuple[int, bytes]:
        req = urllib.request.Request(
            self.base_url + path,
            method=method,
            headers={"Authorization": f"token {self.token}"},
            data=b"" if method != "GET" else None,
        )
        try:
            with _DIRECT.open(req, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])

    def remember_children(self) -> None:
        """Note the server's child processes (kernels) so :func:`stop` can reap them."""
        try:
            import psutil  # locked in constraints.txt (ipykernel dependency)

            known = {c.pid for c in self.children}
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                if child.pid not in known:
                    self.children.append(child)
        except Exception:
            pass


def _write_user_settings(settings_dir: Path) -> None:
    for rel, value in LAB_USER_SETTINGS.items():
        path = settings_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")


def start_lab(root_dir: Path, home: Path, *, timeout: float = 60) -> LabServer:
    """Start ``jupyter lab`` serving ``root_dir``; return once ``/api/status`` answers.

    ``home`` is a scratch folder for the server's runtime, config, data, settings and
    workspace files. The caller must call :func:`stop_lab` (use :func:`lab_server`).
    """
    jupyter = VENV_BIN / "jupyter"
    if not jupyter.exists():
        raise RuntimeError(f"{jupyter} missing: run `make setup` first")
    token = secrets.token_hex(24)
    port = free_port()
    dirs = {name: home / name for name in ("runtime", "config", "data", "settings", "workspaces", "ipython")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    _write_user_settings(dirs["settings"])

    env = dict(os.environ)
    env.update(
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PLATFORM_DIRS="1",
    )
    # The kernel should draw with the notebook's inline backend, as for a learner.
    env.pop("MPLBACKEND", None)

    cmd = [
        str(jupyter), "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--ServerApp.root_dir={root_dir}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.password=",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        f"--LabApp.user_settings_dir={dirs['settings']}",
        f"--LabApp.workspaces_dir={dirs['workspaces']}",
        "--LabApp.expose_app_in_browser=True",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")

    log_path = home / "jupyter-lab.log"
    log = open(log_path, "wb")
    try:
        proc = subprocess.Popen(
            cmd, cwd=root_dir, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    finally:
        log.close()
    server = LabServer(proc, root_dir, home, token, port, log_path)
    try:
        _wait_until_ready(server, dirs["runtime"], timeout)
    except BaseException:
        stop_lab(server)
        raise
    return server


def _wait_until_ready(server: LabServer, runtime_dir: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited with {server.proc.returncode} before answering:\n{server.log_tail()}"
            )
        # The port may have been taken between free_port() and the bind: read the real one.
        for info in runtime_dir.glob("jpserver-*.json"):
            try:
                data = json.loads(info.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if data.get("pid") == server.proc.pid and data.get("port"):
                server.port = int(data["port"])
        try:
            status, body = server.api("/api/status", timeout=2)
            if status == 200 and b"started" in body:
                return
            last = f"HTTP {status}"
        except OSError as exc:
            last = repr(exc)
        time.sleep(0.25)
    raise RuntimeError(f"jupyter lab did not answer /api/status within {timeout:.0f} s ({last}):\n{server.log_tail()}")


def stop_lab(server: LabServer) -> None:
    """Shut the server and its kernels down; escalate to SIGTERM, then SIGKILL, by pid."""
    server.remember_children()
    proc = server.proc
    if proc.poll() is None:
        try:
            server.api("/api/shutdown", method="POST", timeout=5)
        except OSError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)  # the server runs in its own session: only what it started
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
    # Kernels are started in their own sessions; kill any the server left behind.
    # is_running() also checks the start time, so a recycled pid is never hit.
    for child in server.children:
        try:
            if child.is_running():
                child.kill()
        except Exception:
            pass


def lab_server(root_dir: Path, home: Path) -> Iterator[LabServer]:
    """Generator for a pytest fixture: yields a started server, always stops it."""
    server = start_lab(root_dir, home)
    try:
        yield server
    finally:
        stop_lab(server)


def copy_notebooks(dest_root: Path) -> Path:
    """Copy the repo's notebooks/ under ``dest_root`` (a server may autosave outputs into it)."""
    dest = dest_root / "notebooks"
    shutil.copytree(ROOT / "notebooks", dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return dest
