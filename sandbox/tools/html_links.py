"""Point the links of a rendered course (``make html``) at pages that exist.

A lesson links to the next one as a notebook, ``[02 · Async invokes](02_async_invokes.ipynb)``:
right in JupyterLab, but nbconvert keeps the ``.ipynb`` in the HTML, and ``out/html/`` holds
no notebooks. This rewrites every relative link to a notebook in the rendered pages:

- to the page rendered from that notebook (``02_async_invokes.html``, keeping any ``#anchor``);
- to the notebook itself, from where the pages are, when it was not rendered (an exercise);
- as it was, when it names no notebook that exists (the lesson's own mistake, left visible).

``python -m sandbox.tools.html_links OUT_DIR SOURCE_DIR`` rewrites ``OUT_DIR/*.html`` in place, the
pages rendered from the notebooks of ``SOURCE_DIR``.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from urllib.parse import quote, unquote

# href="x.ipynb" or href="../dir/x.ipynb#part": relative (no scheme, no leading slash or #)
_NOTEBOOK_HREF = re.compile(r'href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|/|#)([^"#?]+\.ipynb)(#[^"]*)?"')


def link_target(href: str, out_dir: Path, source_dir: Path) -> str | None:
    """Where a page in ``out_dir`` should link for ``href`` written in a notebook of ``source_dir``."""
    notebook = (source_dir / unquote(href)).resolve()
    page = out_dir / f"{notebook.stem}.html"
    if notebook.parent == source_dir.resolve() and page.is_file():
        return quote(page.name)
    if notebook.is_file():
        return quote(Path(os.path.relpath(notebook, out_dir.resolve())).as_posix())
    return None


def rewrite(html: str, out_dir: Path, source_dir: Path) -> str:
    """``html`` with its notebook links pointed at pages (or files) that exist."""
    def replace(match: re.Match) -> str:
        target = link_target(match[1], out_dir, source_dir)
        return match[0] if target is None else f'href="{target}{match[2] or ""}"'

    return _NOTEBOOK_HREF.sub(replace, html)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m sandbox.tools.html_links OUT_DIR SOURCE_DIR", file=sys.stderr)
        return 2
    out_dir, source_dir = Path(args[0]), Path(args[1])
    for folder in (out_dir, source_dir):
        if not folder.is_dir():
            print(f"error: {folder} is not a folder", file=sys.stderr)
            return 2
    for page in sorted(out_dir.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        fixed = rewrite(text, out_dir, source_dir)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
