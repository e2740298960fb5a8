"""Helpers for the browser-driven UI tests: a private JupyterLab server and Debian's chromium.

Nothing here reaches the network. The server listens on 127.0.0.1 only, with a random
token, its own runtime/config/data/settings folders (so neither a learner's ``~/.jupyter``
nor this test can affect the other), the course's JupyterLab defaults (``lab-settings/``, as
`make lab` starts it), no news feed and no update check. The browser is
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
INSTALL_CHROMIUM = "apt-get install chromium"
CHROMIUM_MISSING = (
    f"{CHROMIUM} not found: the browser UI tests did NOT run. They drive Debian's chromium; "
    f"install it with: {INSTALL_CHROMIUM} (or run `make test-ui` as root, which installs it)"
)
#: Set by `make test-ui` and .ci/run: a missing chromium is then a failure, never a skip.
REQUIRE_ENV = "LAB_UI_REQUIRED"
#: Where the screenshots for a person to look at go (out/ is gitignored); $LAB_UI_SCREENSHOTS overrides.
SCREENSHOTS = ROOT / "out" / "screenshots"
#: The test modules driving the browser, named in the terminal summary whatever their outcome.
UI_TEST_FILES = ("tests/test_lab_ui.py",)
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

#: The course's own JupyterLab defaults, as `make lab` gives them (no news toast over a lesson): the test server
#: reads the same folder, so what a learner gets is what the tests see.
LAB_APP_SETTINGS = ROOT / "lab-settings"
# JupyterLab user settings for the test server: every cell kept in the page (no windowing), so a cell far
# down is there to find and to screenshot.
LAB_USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none",
    },
}

# urllib that ignores http_proxy/https_proxy: the server is on loopback.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def ui_tests_required() -> bool:
    """True under CI and `make test-ui`: there a missing chromium fails the run instead of skipping."""
    return bool(os.environ.get(REQUIRE_ENV) or os.environ.get("CI"))


def require_chromium() -> Path:
    """Return chromium's path. Without it: fail under CI or `make test-ui`, else skip with a loud reason
    (and :func:`report_ui_tests` repeats it at the end of the run, so a green run cannot hide it)."""
    if CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    if ui_tests_required():
        pytest.fail(CHROMIUM_MISSING, pytrace=False)
    pytest.skip(CHROMIUM_MISSING)


def report_ui_tests(terminalreporter) -> None:
    """A section at the end of every pytest run that collected a browser test: each one's outcome and time.

    Called from tests/conftest.py's ``pytest_terminal_summary``; under xdist the controller gets every
    worker's reports. When a browser test was skipped, the last line says so and gives the install command.
    """
    phases: dict[str, list] = {}
    # pytest files a passing setup or teardown under "" and the call under "passed": read them all.
    for outcome in ("", "passed", "failed", "skipped", "error"):
        for r in terminalreporter.stats.get(outcome, []):
            if getattr(r, "nodeid", "").startswith(UI_TEST_FILES) and getattr(r, "when", None):
                phases.setdefault(r.nodeid, []).append(r)
    if not phases:
        return
    terminalreporter.write_sep("=", "browser UI tests (JupyterLab + Debian's chromium)")
    skipped = False
    for nodeid, reports in sorted(phases.items()):
        if any(r.failed for r in reports):
            word = "FAILED" if any(r.failed and r.when == "call" for r in reports) else "ERROR"
        elif any(r.skipped for r in reports):
            word, skipped = "SKIPPED", True
        else:
            word = "PASSED"
        seconds = sum(r.duration for r in reports)
        terminalreporter.write_line(f"UI {word:<7} {nodeid} ({seconds:.1f} s)",
                                    red=word != "PASSED", green=word == "PASSED")
    if skipped:
        terminalreporter.write_line(f"UI TESTS NOT RUN: {CHROMIUM} is missing. Install it with: {INSTALL_CHROMIUM}",
                                    red=True, bold=True)


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
        f"--LabApp.app_settings_dir={LAB_APP_SETTINGS}",
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


#: What a served copy of the course needs: lessons name ../examples/*.py, exercises save their answer cell.
COURSE_FOLDERS = ("notebooks", "examples", "exercises")


def copy_course(dest_root: Path) -> Path:
    """Copy the course's folders under ``dest_root`` (the server autosaves outputs, ``check`` saves answers)."""
    for folder in COURSE_FOLDERS:
        shutil.copytree(ROOT / folder, dest_root / folder,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.py.bak"))
    return dest_root


def screenshot_dir() -> Path:
    path = Path(os.environ.get("LAB_UI_SCREENSHOTS") or SCREENSHOTS)
    path.mkdir(parents=True, exist_ok=True)
    return path


# -- driving a notebook in the page ------------------------------------------------------------------
# JS: the open notebook panel (window.jupyterapp exists because of expose_app_in_browser).
PANEL_JS = ("(() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
            " return w && w.sessionContext && w.content ? w : null; })()")

KERNEL_IDLE_JS = f"""() => {{
  const p = {PANEL_JS};
  return !!p && p.sessionContext.isReady && p.sessionContext.session?.kernel?.status === 'idle';
}}"""

# "done" when every code cell has run (a number in its prompt, no [*]), the kernel is idle, the outputs
# hold every expected text and at least ``images`` pictures; "error" as soon as a cell failed (Run All
# stops there, so waiting longer would only burn the timeout). textContent, not innerText: it reads
# cells that are off screen too.
ALL_RAN_JS = f"""([expected, images]) => {{
  const p = {PANEL_JS};
  if (!p) return false;
  const cells = p.content.model.cells;
  let pending = false;
  for (let i = 0; i < cells.length; i++) {{
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    if (c.executionCount == null) pending = true;
    for (let j = 0; j < c.outputs.length; j++) if (c.outputs.get(j).type === 'error') return 'error';
  }}
  if (pending || p.sessionContext.session?.kernel?.status !== 'idle') return false;
  const out = [...p.node.querySelectorAll('.jp-OutputArea-output')].map(e => e.textContent).join('\\n');
  const imgs = p.node.querySelectorAll('.jp-OutputArea-output img').length;
  return expected.every(t => out.includes(t)) && imgs >= images ? 'done' : false;
}}"""

# What the learner's page shows, for assertions and failure messages.
SUMMARY_JS = f"""() => {{
  const p = {PANEL_JS};
  const cells = p.content.model.cells;
  const errors = [], prompts = [];
  for (let i = 0; i < cells.length; i++) {{
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    prompts.push(c.executionCount);
    for (let j = 0; j < c.outputs.length; j++) {{
      const o = c.outputs.get(j);
      if (o.type === 'error') errors.push(`cell ${{i}}: ${{o.toJSON().ename}}: ${{o.toJSON().evalue}}`);
    }}
  }}
  const stderr = [...p.node.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')].map(e => e.textContent);
  const imgs = [...p.node.querySelectorAll('.jp-OutputArea-output img')].map(
      e => ({{w: e.naturalWidth, h: e.naturalHeight, src: e.src.slice(0, 22)}}));
  const text = [...p.node.querySelectorAll('.jp-OutputArea-output')].map(e => e.textContent).join('\\n');
  return {{errors, stderr, imgs, prompts, text, kernel: p.sessionContext.session?.kernel?.status ?? null}};
}}"""

# The index of the first cell whose source starts with the given text (-1 if none).
CELL_INDEX_JS = f"""(prefix) => {{
  const cells = {PANEL_JS}.content.model.cells;
  for (let i = 0; i < cells.length; i++) if (cells.get(i).sharedModel.getSource().startsWith(prefix)) return i;
  return -1;
}}"""

#: Watches a dashboard (its output element) for every moment it shows: at every animation frame, and after every
#: change to its page (a MutationObserver, so a state that lasts less than a frame is seen too), it notes the
#: verdict's text (its findings too), the picture each shown timeline and verdict map image holds, how dimmed
#: they are (the opacity of the least opaque), whether both are decoded, whether a "redrawing" notice is up, and
#: the slider's value;
#: a moment is noted when any of those changed. Pictures (data: or blob: URLs) are fingerprinted as first seen,
#: from their bytes. ``window.__rwhWatch.press(label)`` notes a key press's time, in the page's own clock.
WATCH_JS = """(root) => {
  const fnv = (bytes) => { let h = 2166136261;
    for (const b of bytes) { h ^= b; h = Math.imul(h, 16777619) >>> 0; } return `${bytes.length}:${h.toString(16)}`; };
  const W = {frames: [], presses: [], prints: new Map(), on: true};
  window.__rwhWatch = W;
  W.press = (label) => W.presses.push({label, t: performance.now(), at: W.frames.length});
  const shown = (el) => el && !el.closest('.sandbox-feed') && el.getClientRects().length > 0;
  const picture = (kind) => [...root.querySelectorAll('img.sandbox-' + kind)].find(shown) || null;
  const opacity = (el) => { let o = 1;
    for (let e = el; e && e !== root.parentElement; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o; };
  const print = (src) => { if (src && !W.prints.has(src)) W.prints.set(src, fetch(src)
    .then((r) => r.arrayBuffer()).then((b) => fnv(new Uint8Array(b))).catch(() => 'unreadable')); };
  const sample = () => {
    if (!W.on) return;
    const verdict = [...root.querySelectorAll('.widget-html')]
      .find((e) => shown(e) && e.textContent.includes(' · seed '));
    const findings = [...root.querySelectorAll('.sandbox-slot-findings')].find(shown);
    const timeline = picture('timeline'), map = picture('map');
    const handle = root.querySelector('.noUi-handle[aria-valuenow]');
    const frame = {t: performance.now(),
      verdict: verdict ? verdict.textContent.trim() + (findings ? ' | ' + findings.textContent.trim() : '') : null,
      timeline: timeline ? timeline.src : null, map: map ? map.src : null,
      dim: Math.min(...[verdict, timeline, map].filter(Boolean).map(opacity)),
      decoded: [timeline, map].every((i) => i && i.complete && i.naturalWidth > 0),
      notice: [...root.querySelectorAll('.sandbox-redrawing')].some(shown),
      named: [...root.querySelectorAll('.sandbox-redrawing .sandbox-now')].filter(shown)
        .map((e) => JSON.parse(getComputedStyle(e, '::after').content)).join(' ') || null,
      lock: handle ? Number(handle.getAttribute('aria-valuenow')) : null};
    print(frame.timeline); print(frame.map);
    const last = W.frames[W.frames.length - 1];
    const keys = ['verdict', 'timeline', 'map', 'dim', 'decoded', 'notice', 'named', 'lock'];
    if (!last || keys.some((k) => last[k] !== frame[k])) W.frames.push(frame);
  };
  W.sample = sample;
  new MutationObserver(sample).observe(root, {subtree: true, childList: true, attributes: true, characterData: true});
  const tick = () => { sample(); if (W.on) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""
#: What the watch saw: its frames (each picture as its fingerprint) and presses; the watch goes on.
WATCHED_JS = """async () => {
  const W = window.__rwhWatch;
  const prints = {};
  for (const [src, p] of W.prints) prints[src] = await p;
  return {presses: W.presses, frames: W.frames.map((f) => ({...f, timeline: f.timeline && prints[f.timeline],
    map: f.map && prints[f.map]}))};
}"""
# -- what the watch saw, judged ----------------------------------------------------------------------
def _shown(frame: dict) -> tuple:
    return frame["verdict"], frame["timeline"], frame["map"]


def _said(frame: dict) -> str:
    return (f"verdict {frame['verdict'][:90]!r}..., timeline {frame['timeline']}, map {frame['map']}, "
            f"opacity {frame['dim']:.2f}, decoded {frame['decoded']}, notice {frame['notice']} "
            f"({frame.get('named')}), slider {frame['lock']}")


def check_moments(watched: dict, moves: list[tuple[str, int, int, int]]) -> dict[int, tuple]:
    """Every moment the page showed, against what each lock settles to: no moment mixes two settings.

    ``moves`` are (label, lock before, lock after, index of the press that began it). A move's moments may show
    the settings it left (dimmed from the moment the slider shows another value, and while a notice says it is
    redrawing) or the ones it reached (undimmed, the notice gone), never another (a value a burst passed through
    included), and never a picture not yet decoded. A notice that names a value names the one the slider shows
    (in a burst, the kernel is still running the first press's value when the slider has passed it).
    """
    frames, presses = watched["frames"], watched["presses"]
    ends = [presses[i]["at"] for _, _, _, i in moves[1:]] + [len(frames)]
    settled: dict[int, tuple] = {}
    for (label, _, after, _), end in zip(moves, ends):
        last = frames[end - 1]
        assert last["lock"] == after, (label, _said(last))
        assert settled.setdefault(after, _shown(last)) == _shown(last), f"lock {after} showed other pictures again"
    lock_of = {shown: lock for lock, shown in settled.items()}
    for (label, before, after, press), end in zip(moves, ends):
        allowed = {settled[before]: "the settings it left", settled[after]: "the settings it reached"}
        noticed = False  # once the page said it is redrawing, the settings left stay dimmed until the new ones show
        for frame in frames[presses[press]["at"]:end]:
            shown = _shown(frame)
            assert shown in allowed, f"{label} ({before} -> {after}): a moment mixing settings: {_said(frame)}"
            assert frame["decoded"], f"{label}: a picture shown before it was decoded: {_said(frame)}"
            assert frame.get("named") in (None, str(frame["lock"])), f"{label}: the notice names another value than " \
                f"the slider's: {_said(frame)}"
            noticed = noticed or frame["notice"]
            if frame["lock"] != lock_of[shown]:  # the slider already says another lock: the page dims at once
                assert frame["dim"] < 0.5, f"{label}: the slider and the pictures disagree, undimmed: {_said(frame)}"
            if shown == settled[after] and shown != settled[before]:
                assert frame["dim"] > 0.99 and not frame["notice"], f"{label}: the new settings dimmed: {_said(frame)}"
            elif noticed:
                assert frame["dim"] < 0.5, f"{label}: the settings left shown undimmed while redrawing: {_said(frame)}"
    return settled


def move_times(watched: dict, moves: list[tuple[str, int, int, int]], settled: dict[int, tuple]) -> list[dict]:
    """ms from each key press (a burst's last) until the page showed each picture of where it stopped."""
    frames, presses, out = watched["frames"], watched["presses"], []
    for k, (label, _, after, first) in enumerate(moves):
        last_press = (moves[k + 1][3] if k + 1 < len(moves) else len(presses)) - 1
        t0, start = presses[last_press]["t"], presses[first]["at"]
        want = dict(zip(("verdict", "timeline", "map"), settled[after]))
        seen = {name: next((f["t"] - t0 for f in frames[start:] if f[name] == value), None)
                for name, value in want.items()}
        out.append({"key": label, "lock_seconds": after, "timeline_ms": round(seen["timeline"] or 0),
                    "map_ms": round(seen["map"] or 0), "ms": round(max(v or 0 for v in seen.values()))})
    return out


#: Set to a file's path, the lesson 10 browser test times extra moves there as JSON (``sandbox.bench.browser``).
BROWSER_TIMING_ENV = "RWH_BROWSER_TIMING"


class LocalOnly:
    """A Playwright route handler: requests to the lab server go through, anything else is aborted and noted."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.offsite: list[str] = []

    def __call__(self, route) -> None:
        url = route.request.url
        if url.startswith(self.base_url + "/") or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.offsite.append(url)
            route.abort()


def run_all_cells(page) -> None:
    """Run > Run All Cells from the menu bar, as a learner does."""
    import re

    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item:not(.lm-mod-hidden)", has_text=re.compile(r"^Run All Cells")).click()


def wait_for_run_all(page, lab: LabServer, expected: list[str], images: int, timeout_ms: int) -> dict:
    """Wait until Run All has ended with the ``expected`` texts and ``images`` pictures; else fail, saying why."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        state = page.wait_for_function(ALL_RAN_JS, arg=[expected, images], timeout=timeout_ms).json_value()
    except PlaywrightTimeout:
        state = f"not finished after {timeout_ms // 1000} s"
    summary = page.evaluate(SUMMARY_JS)
    if state != "done":
        save_screenshot(page, "failed-" + page.url.rsplit("/", 1)[-1].split("?")[0] + ".png")
        pytest.fail(
            f"Run All Cells did not end with {expected} and {images} pictures ({state}).\n"
            f"errors={summary['errors']}\nprompts={summary['prompts']} kernel={summary['kernel']} "
            f"images={summary['imgs']}\n--- stderr/tracebacks ---\n" + "\n".join(summary["stderr"])[-3000:]
            + f"\n--- outputs ---\n{summary['text'][-2000:]}\n--- server log ---\n{lab.log_tail(15)}",
            pytrace=False,
        )
    return summary


def save_screenshot(target, name: str) -> Path:
    """Screenshot a page (what the window shows) or a locator (that element) into :func:`screenshot_dir`."""
    path = screenshot_dir() / name
    target.screenshot(path=str(path))
    return path
