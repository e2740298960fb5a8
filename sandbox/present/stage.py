"""What a dashboard shows in the page, replaced in one step: its verdict and its pictures, never a mix of two runs.

An ipywidgets ``Image`` puts its new picture in the page the moment its message arrives, and the
picture appears only once the browser has decoded it; an ``HTML`` verdict appears at once. Shown
with those, a move shows a new verdict beside old pictures for a moment, and each picture blinks.

A ``Stage`` instead sends everything one rerun shows in one message, to a hidden ``feed``: the
verdict's HTML and each picture as a PNG (each sent once). In the page, a one-pixel image in that
message (its ``onload``: HTML widgets run no scripts) waits until every picture in it has decoded,
and then, in one task (so in one frame), moves each part into its place on the dashboard (its
``slots``) and takes the notices it answers off the page, which undims the pictures. It does so only
when the message is the feed's latest and the dashboard's controls still show the values the
message was drawn for: a rerun the learner has already moved past is never shown, and the one for
where they stopped follows. The page also dims the pictures itself, in the frame a control comes to show
other values than the ones on show, before the kernel has heard of the move (its notice says why a moment
later). Nothing here asks the kernel anything: the page decides alone.
"""
from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # ipywidgets is imported where a stage is made: a grading child imports this module unused
    import ipywidgets as widgets

#: The class of the widget a dashboard is displayed as: the page's script finds its slots and controls under it.
ROOT = "sandbox-dashboard"
#: A control's class, with the setting's name after it: the page reads what the control shows now.
SETTING = "sandbox-setting-"
#: The class of a notice that something is being redrawn; while one is on the page, what it names is dimmed.
STALE = "sandbox-redrawing"
#: Set on a dashboard by the page itself the moment its controls show other values than its pictures were drawn
#: for (a key press, a drag): they are dimmed in that very frame, before the kernel has heard of the move.
MOVED = "data-sandbox-moved"
#: The class of the part of a notice that names a control's value: the page shows the value the control shows now
#: (``live_value``), so that in a burst of key presses the notice never names a value the slider has passed (the
#: kernel, busy running the first, hears of the others only afterwards).
NOW = "sandbox-now"
#: The classes of a verdict map's place and of its notice ("verdict map: 4 of 20 cells run…"), which stands over the
#: map's top left corner: under the map it came and went as a line of its own, and the timeline under it jumped 28 px
#: down and back (``STAGE_CSS``).
MAP_SIDE, MAP_NOTICE = "sandbox-map-side", "sandbox-map-notice"
#: The class of a dashboard's first row, its controls and verdict: it stays in view while the learner scrolls
#: down its pictures (``STAGE_CSS``).
TOP = "sandbox-top"
#: How a dashboard looks: its pictures dimmed while a notice of their kind is up (``data-dims``: "all", or "map").
#: Its controls and verdict stick to the top of the notebook's view while the rest of the dashboard is in it: at
#: 1280x800 a timeline under a verdict map is below the fold, and a learner pressing keys wants the slider and the
#: timeline on screen together. A sticky row sticks to its nearest ancestor that clips or scrolls, so JupyterLab's
#: output boxes around a dashboard (each ``overflow: auto`` or ``hidden``) let it overflow instead (``!important``:
#: ipywidgets' rules for its boxes weigh as much as ours); its pictures are never wider than the output
#: (``max-width``), so nothing is lost. The widget carries its own style, as a notebook has no stylesheet of ours.
STAGE_CSS = ("<style>"
             f".{ROOT}:has(.{STALE}[data-dims~=all]) .sandbox-slot, .{ROOT}[{MOVED}] .sandbox-slot, "
             f".{ROOT}:has(.{STALE}[data-dims~=map]) .sandbox-slot-map {{opacity: 0.35;}} "
             f".{STALE} {{color: #8a5a00; font-weight: 600;}} .{NOW}::after {{content: var(--shown);}} "
             ".sandbox-slot img {max-width: 100%; display: block;} "
             f".{MAP_SIDE} {{position: relative;}} .{MAP_SIDE} > .{MAP_NOTICE} {{position: absolute; top: 0; left: 0; "
             "margin: 0; background: rgba(255, 255, 255, 0.9);} "
             f".jp-OutputArea:has(.{TOP}), .jp-OutputArea-child:has(.{TOP}), .jp-OutputArea-output:has(.{TOP}), "
             f".{ROOT}:has(> .{TOP}) {{overflow: visible !important;}} "
             f".{ROOT} > .{TOP} {{position: sticky; top: 0; z-index: 10; overflow: visible !important; "
             "background: var(--jp-layout-color0, #fff); border-bottom: 1px solid var(--jp-border-color2, #e0e0e0);} "
             "</style>")
#: The smallest GIF, whose load event runs the swap.
_PIXEL = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

#: The page's side (see the module docstring). ``shown`` reads what a control shows (a slider's handle, a box, a
#: switch, a choice); a control it cannot read does not hold a message back.
SWAP_JS = """(function (boot) {
  const message = boot.parentNode, root = boot.closest('.%(root)s');
  if (!message || !root) return;
  const shown = (el) => {
    const target = el.querySelector('.noUi-target');
    if (target && target.noUiSlider) return Number(target.noUiSlider.get(true));
    const handle = el.querySelector('[aria-valuenow]');
    if (handle) return Number(handle.getAttribute('aria-valuenow'));
    const box = el.querySelector('input[type=checkbox]');
    if (box) return box.checked;
    const choice = el.querySelector('select');
    // ipywidgets writes a Dropdown's spaces as no-break spaces
    if (choice) return choice.selectedOptions[0] ? choice.selectedOptions[0].textContent.replace(/\u00a0/g, ' ')
      : undefined;
    const input = el.querySelector('input');
    return input ? input.value : undefined;
  };
  const same = (now, want) => now === undefined || (typeof want === 'number'
    ? Number.isNaN(Number(now)) || Math.abs(Number(now) - want) <= 1e-6 * Math.max(1, Math.abs(want))
    : String(now) === String(want));
  const showing = (values) => Object.entries(JSON.parse(values)).every(([name, want]) => {
    const control = root.querySelector('.%(setting)s' + name);
    return !control || same(shown(control), want);
  });
  const current = () => showing(message.dataset.values);
  const said = (value) => typeof value === 'boolean' ? (value ? 'True' : 'False')
    : typeof value === 'number' ? String(Number(value.toPrecision(6))) : String(value);
  if (!root.sandboxMoved) {  // once per dashboard: dim the moment a control leaves the values on show
    root.sandboxMoved = () => {
      for (const control of root.querySelectorAll('[class*="%(setting)s"]')) {
        const name = [...control.classList].find((c) => c.startsWith('%(setting)s'));
        const value = shown(control);
        if (value !== undefined) root.style.setProperty('--' + name, JSON.stringify(said(value)));
      }
      const moved = root.dataset.sandboxShown !== undefined && !showing(root.dataset.sandboxShown);
      if (moved !== root.hasAttribute('%(moved)s')) root.toggleAttribute('%(moved)s', moved);
    };
    new MutationObserver(root.sandboxMoved).observe(root, {subtree: true, attributes: true,
      attributeFilter: ['aria-valuenow']});
    for (const kind of ['input', 'change']) root.addEventListener(kind, root.sandboxMoved, true);
  }
  const pictures = [...message.querySelectorAll('img:not(.sandbox-boot)')];
  Promise.all(pictures.map((p) => p.decode().catch(() => null))).then(() => {
    if (!message.isConnected || !current()) return;
    for (const part of [...message.querySelectorAll(':scope > [data-part]')]) {
      const slot = root.querySelector('.sandbox-slot-' + part.dataset.part + ' .widget-html-content');
      if (slot) slot.replaceChildren(...part.childNodes);
    }
    root.dataset.sandboxShown = message.dataset.values;
    root.sandboxMoved();
    const clears = message.dataset.clears.split(' ');
    for (const notice of [...root.querySelectorAll('.%(stale)s')]) {
      if (clears.includes(notice.dataset.dims)) notice.remove();
    }
    message.remove();
  });
})(this)"""


class Part:
    """One thing a dashboard shows (its verdict's HTML, a picture's PNG), as last sent to the page: ``value``."""

    def __init__(self, name: str, value: Any = b""):
        self.name, self.value = name, value

    def __repr__(self) -> str:
        return f"<Part {self.name}: {len(self.value)} {'characters' if isinstance(self.value, str) else 'bytes'}>"


def picture_html(png: bytes, name: str) -> str:
    """A PNG as an ``<img>`` (empty bytes: nothing)."""
    if not png:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="sandbox-{name}" alt="{html.escape(name)}" src="data:image/png;base64,{data}">'


class Stage:
    """A dashboard's slots, one per part (``slot(name)``), and the hidden feed that fills them (module docstring).

    ``send(parts, values, clears)`` sends one message: ``parts`` maps a slot's name to its HTML, or to PNG
    bytes for a picture; ``values`` are the settings the parts were drawn for, by control name; ``clears`` the
    kinds of notice (a notice's ``data-dims``) the page takes away when it shows them.
    """

    def __init__(self, names: Iterable[str] = ()):
        import ipywidgets as widgets

        self.slots: dict[str, widgets.HTML] = {}
        self.feed = widgets.HTML(layout={"display": "none"})
        self.feed.add_class("sandbox-feed")
        self.sent = 0  # messages sent so far: each has its own number, so a message is never the one before
        for name in names:
            self.slot(name)

    def slot(self, name: str) -> widgets.HTML:
        """The place on the page where part ``name`` is shown (made on first use)."""
        import ipywidgets as widgets

        if name not in self.slots:
            self.slots[name] = widgets.HTML(layout={"max_width": "100%"})
            self.slots[name].add_class("sandbox-slot").add_class(f"sandbox-slot-{name}")
        return self.slots[name]

    def send(self, parts: Mapping[str, str | bytes], values: Mapping[str, Any], clears: Iterable[str]) -> None:
        self.sent += 1
        body = "".join(f'<div data-part="{html.escape(name)}">'
                       f"{picture_html(part, name) if isinstance(part, bytes) else part}</div>"
                       for name, part in parts.items())
        said = html.escape(json.dumps({k: _plain(v) for k, v in values.items()}), quote=True)
        swap = html.escape(SWAP_JS % {"root": ROOT, "setting": SETTING, "stale": STALE, "moved": MOVED}, quote=True)
        self.feed.value = (f'<div class="sandbox-message" data-sent="{self.sent}" data-values="{said}" '
                           f'data-clears="{" ".join(clears)}">{body}'
                           f'<img class="sandbox-boot" alt="" src="{_PIXEL}" onload="{swap}"></div>')


def _plain(value: Any) -> Any:
    """A control's value as JSON carries it (a number stays a number; anything else as its words)."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return value
    return str(value)


def notice(why: str, dims: str = "all", then: str = "") -> str:
    """A notice that the parts of kind ``dims`` are being redrawn: they are dimmed while it is on the page. ``then``
    (``live_value``) follows ``why``."""
    return f'<span class="{STALE}" data-dims="{dims}">{html.escape(why)}{then}</span>'


def live_value(setting: str, value: str) -> str:
    """Control ``setting``'s value in a notice, as the page shows it now (``NOW``); ``value`` (the one the kernel
    heard of) until the page's script has run, and where scripts do not run."""
    was = html.escape(json.dumps(value, ensure_ascii=False), quote=True)
    return f'<span class="{NOW}" style="--shown: var(--{SETTING}{setting}, {was})"></span>'
