"""`make html`: the rendered pages link to each other, never to notebooks that out/html does not hold."""
import re

import nbformat
from nbconvert import HTMLExporter

from sandbox.tools.html_links import main


def _notebook(path, markdown):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown)]), path)


def _hrefs(page):
    return re.findall(r'<a href="([^"]+)"', page.read_text())


def test_links_between_rendered_notebooks_point_at_their_pages(tmp_path):
    lessons, out = tmp_path / "notebooks", tmp_path / "out" / "html"
    _notebook(lessons / "00_first.ipynb", "Next: [01 · Second](01_second.ipynb), then [its end](01_second.ipynb#End). "
              "Exercise: [one](../exercises/01_one.ipynb). Gone: [x](99_missing.ipynb). "
              "Elsewhere: [docs](https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html).")
    _notebook(lessons / "01_second.ipynb", "# End\nBack to [the first](00_first.ipynb).")
    _notebook(tmp_path / "exercises" / "01_one.ipynb", "An exercise.")
    out.mkdir(parents=True)
    for name in ("00_first", "01_second"):  # as `jupyter nbconvert --to html --output-dir out/html` does
        body, _ = HTMLExporter().from_filename(str(lessons / f"{name}.ipynb"))
        (out / f"{name}.html").write_text(body)
    assert "01_second.ipynb" in _hrefs(out / "00_first.html")  # what nbconvert leaves: a link to nothing

    assert main([str(out), str(lessons)]) == 0
    first = _hrefs(out / "00_first.html")
    assert first[:4] == ["01_second.html", "01_second.html#End", "../../exercises/01_one.ipynb", "99_missing.ipynb"]
    assert "https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html" in first
    assert _hrefs(out / "01_second.html")[-1] == "00_first.html"
    for href in first[:3]:
        assert (out / href.partition("#")[0]).is_file(), href


def test_a_missing_folder_is_refused(tmp_path, capsys):
    assert main([str(tmp_path / "nope"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope is not a folder" in err
