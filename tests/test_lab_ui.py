"""`make lab`, seen through a real browser: JupyterLab opens the tour and Run All Cells works.

A private JupyterLab (the pinned one in .venv) serves a *copy* of notebooks/ on 127.0.0.1
with a random token; Debian's chromium, driven by Playwright, opens 00_start_here.ipynb,
waits for the kernel, picks Run > Run All Cells from the menu bar, and waits until the
learner would see the timelines and the checker's verdicts. Screenshots land in the test's
tmp dir (and in $LAB_UI_SCREENSHOTS, if set, e.g. for CI artifacts).

Nothing leaves the machine: Playwright never downloads a browser, and every browser
request to a host other than the local server is aborted and makes the test fail.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from conftest import ROOT
from ui_support import CHROMIUM_ARGS, LabServer, copy_notebooks, lab_server, require_chromium

pytestmark = pytest.mark.notebook

NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"
VALID = "valid 3 orders, 3 effects, each exactly once"
INVALID = "invalid 3 findings"
RUN_ALL_TIMEOUT_MS = 120_000

# JS: the open notebook panel (window.jupyterapp exists because of expose_app_in_browser).
_PANEL = "(() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;" \
         " return w && w.sessionContext && w.content ? w : null; })()"

_KERNEL_IDLE = f"""() => {{
  const p = {_PANEL};
  return !!p && p.sessionContext.isReady && p.sessionContext.session?.kernel?.status === 'idle';
}}"""

# "done" when every code cell has run (a number in its prompt, no [*]), the kernel is idle,
# and the outputs show both verdicts and at least two images; "error" as soon as a cell
# failed (Run All stops there, so waiting longer would only burn the timeout).
# textContent, not innerText: off-screen cells use content-visibility and have no innerText.
_ALL_RAN = f"""([valid, invalid]) => {{
  const p = {_PANEL};
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
  return out.includes(valid) && out.includes(invalid) && imgs >= 2 ? 'done' : false;
}}"""

# What the learner's page shows, for assertions and failure messages.
_SUMMARY = f"""() => {{
  const p = {_PANEL};
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


@pytest.fixture
def chromium_path() -> Path:
    return require_chromium()


@pytest.fixture
def lab(chromium_path, tmp_path) -> LabServer:
    # Serve a copy: JupyterLab autosaves, and the repo's notebook must stay output-free.
    root = tmp_path / "root"
    copy_notebooks(root)
    yield from lab_server(root, tmp_path / "lab-home")


def _save(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    extra = os.environ.get("LAB_UI_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, Path(extra) / name)
    return path


def test_run_all_cells_in_jupyterlab_shows_timelines_and_verdicts(lab, chromium_path, tmp_path, monkeypatch):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    original = NOTEBOOK.read_bytes()
    offsite: list[str] = []
    page_errors: list[str] = []
    t0 = time.monotonic()

    def local_only(route):
        url = route.request.url
        if url.startswith(lab.base_url + "/") or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            offsite.append(url)
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS, timeout=30_000)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
            context.route("**/*", local_only)
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))

            page.goto(lab.url("/lab/tree/notebooks/00_start_here.ipynb"))
            page.wait_for_function(_KERNEL_IDLE, timeout=60_000)
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            loaded = time.monotonic() - t0

            # What a learner does: Run > Run All Cells.
            page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-item:not(.lm-mod-hidden)",
                         has_text=re.compile(r"^Run All Cells")).click()
            try:
                state = page.wait_for_function(
                    _ALL_RAN, arg=[VALID, INVALID], timeout=RUN_ALL_TIMEOUT_MS
                ).json_value()
            except PlaywrightTimeout:
                state = f"not finished after {RUN_ALL_TIMEOUT_MS // 1000} s"
            if state != "done":
                _save(page, tmp_path, "lab-failed.png")
                summary = page.evaluate(_SUMMARY)
                pytest.fail(
                    f"Run All Cells did not end with both verdicts and two timelines ({state}).\n"
                    f"errors={summary['errors']}\nprompts={summary['prompts']} kernel={summary['kernel']} "
                    f"images={summary['imgs']}\n--- stderr/tracebacks ---\n" + "\n".join(summary["stderr"])[-3000:]
                    + f"\n--- outputs ---\n{summary['text'][-2000:]}\n--- server log ---\n{lab.log_tail(15)}",
                    pytrace=False,
                )
            ran = time.monotonic() - t0
            summary = page.evaluate(_SUMMARY)

            # The learner scrolls to the first timeline, then to the double-send one.
            imgs = page.locator(".jp-NotebookPanel .jp-OutputArea-output img")
            imgs.nth(0).evaluate("e => e.scrollIntoView({block: 'center'})")
            shot = _save(page, tmp_path, "lab-valid.png")
            imgs.nth(1).evaluate("e => e.scrollIntoView({block: 'center'})")
            _save(page, tmp_path, "lab-invalid.png")
        finally:
            browser.close()

    assert summary["errors"] == [], f"error outputs: {summary['errors']}"
    tracebacks = [s for s in summary["stderr"] if "Traceback" in s]
    assert tracebacks == [], "a cell printed a traceback:\n" + "\n---\n".join(tracebacks)
    assert all(isinstance(n, int) for n in summary["prompts"]), summary["prompts"]
    assert len(summary["imgs"]) >= 2, summary["imgs"]
    # Each timeline really decoded as a picture of a sensible size.
    for img in summary["imgs"][:2]:
        assert img["src"].startswith("data:image/png"), img
        assert img["w"] >= 400 and img["h"] >= 100, img
    assert VALID in summary["text"] and INVALID in summary["text"]
    assert offsite == [], f"the page tried to reach the network: {offsite}"
    assert page_errors == [], f"uncaught errors in the page: {page_errors}"
    assert shot.stat().st_size > 10_000

    # The repo's notebook is untouched (the server only ever saw a copy).
    assert NOTEBOOK.read_bytes() == original, f"{NOTEBOOK} changed during the UI test"
    print(f"lab UI: notebook loaded + kernel idle in {loaded:.1f} s, all cells ran by {ran:.1f} s")
