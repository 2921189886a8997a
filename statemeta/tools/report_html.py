"""The page of ``statemeta report``: a Report (statemeta.tools.report_model) as HTML.

Self-contained on purpose (a CI artefact, a mail attachment, a file opened offline): the CSS,
the script and every picture (inline SVG) are in the page; it loads nothing. Every text from
the input goes through ``html.escape``. The script is small: details of a heatmap cell or a
call on click, and a self-check run on load that writes ``selfcheck: ok`` into the page (or
what is missing, or the script errors seen): what the browser test reads.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence

from statemeta.harness.normalize import Json
from statemeta.tools.report_model import Concurrent, Counterexample, Heatmap, Report

__all__ = ["render"]

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{padding:14px 24px;color:#fff;background:#2b3a55}
header.failed{background:#8c2131} header h1{margin:0;font-size:20px}
main{padding:8px 24px 40px} section{background:#fff;border:1px solid #dde1e8;
border-radius:6px;margin:14px 0;padding:10px 16px}
h2{font-size:16px;margin:4px 0 8px} table{border-collapse:collapse}
td,th{border-bottom:1px solid #e6e9ef;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f6} code,.mono{font:12px ui-monospace,monospace}
.diff{background:#fde2e2} .bad{color:#a11d2e;font-weight:600} .ok{color:#1d6b35}
.muted{color:#6b7385} svg text{font:11px system-ui,sans-serif}
.cell{cursor:pointer} #detail{min-height:1.4em;margin-top:6px}
details{margin:4px 0} .changes{margin:0;padding-left:16px}
.kv td:first-child{color:#6b7385} .legend span{display:inline-block;width:12px;height:12px;
margin:0 4px 0 12px;vertical-align:middle;border:1px solid #aaa}
"""

SCRIPT = """
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  document.addEventListener('click', function (e) {
    var el = e.target.closest('[data-detail]');
    if (el) { document.getElementById('detail').textContent = el.getAttribute('data-detail'); }
  });
  document.addEventListener('DOMContentLoaded', function () {
    var want = JSON.parse(document.getElementById('expected').textContent);
    var missing = want.filter(function (name) {
      return !document.querySelector('[data-section="' + name + '"] svg, ' +
                                     '[data-section="' + name + '"] table');
    });
    var ok = missing.length === 0 && errors.length === 0;
    var mark = document.getElementById('selfcheck');
    mark.setAttribute('data-ok', ok ? '1' : '0');
    mark.textContent = ok ? 'selfcheck: ok' :
      'selfcheck: FAILED ' + missing.concat(errors).join(', ');
  });
})();
"""

_E = html.escape
_TAKEN, _MISSED, _NONE, _UNKNOWN = "#2e8b57", "#f3c1c6", "#f1f2f5", "#d9dde5"


def _svg(width: int, height: int, body: Iterable[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_E(label)}">'
            + "".join(body) + "</svg>")


def _shade(times: int, most: int) -> str:
    """A green whose depth grows with log(times), so rare rows stay visible."""
    share = math.log1p(times) / math.log1p(max(most, 1))
    light = round(88 - 55 * share)
    return f"hsl(146,50%,{light}%)"


def _heatmap(chart: Heatmap, name: str) -> str:
    cell_w, cell_h, left, top = 92, 30, 110, 96
    column = {event: n for n, event in enumerate(chart.events)}
    row = {source: n for n, source in enumerate(chart.sources)}
    width, height = left + cell_w * len(chart.events) + 10, top + cell_h * len(chart.sources) + 4
    most = max((h.times or 0 for h in chart.hits), default=1)
    body = []
    for event, n in column.items():
        x = left + n * cell_w + cell_w // 2
        body.append(f'<text x="{x}" y="{top - 6}" transform="rotate(-35 {x} {top - 6})">'
                    f"{_E(event)}</text>")
    for source, n in row.items():
        y = top + n * cell_h
        body.append(f'<text x="{left - 6}" y="{y + 19}" text-anchor="end">{_E(source)}</text>')
        body += [f'<rect x="{left + m * cell_w}" y="{y}" width="{cell_w - 2}" '
                 f'height="{cell_h - 2}" fill="{_NONE}"><title>no row: rejected</title></rect>'
                 for m in range(len(chart.events))]
    for hit in chart.hits:
        x, y = left + column[hit.event] * cell_w, top + row[hit.source] * cell_h
        if hit.times is None:
            fill, said = _UNKNOWN, "not counted in this input"
        elif hit.times:
            fill, said = _shade(hit.times, most), f"taken {hit.times} times"
        else:
            fill, said = _MISSED, f"not taken: {hit.why or 'no reason given'}"
        detail = f"{hit.label}: {said}"
        ink = "#fff" if hit.times and hit.times > most ** 0.5 else "#1d2330"
        body.append(
            f'<g class="cell" data-detail="{_E(detail)}"><rect x="{x}" y="{y}" '
            f'width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}" '
            f'stroke="{"#a11d2e" if hit.times == 0 else "none"}">'
            f"<title>{_E(detail)}</title></rect>"
            f'<text x="{x + 4}" y="{y + 12}" fill="{ink}">&#8594; {_E(hit.target)}</text>'
            f'<text x="{x + 4}" y="{y + 25}" fill="{ink}">'
            f'{"?" if hit.times is None else hit.times}</text></g>'
        )
    taken = sum(1 for h in chart.hits if h.times)
    missed = [h for h in chart.hits if h.times == 0]
    legend = (f'<p class="legend">{taken}/{len(chart.hits)} rows taken'
              f'<span style="background:{_shade(most, most)}"></span>taken (darker: more)'
              f'<span style="background:{_MISSED};border-color:#a11d2e"></span>not taken'
              f'<span style="background:{_NONE}"></span>no row (rejected)</p>')
    why = "".join(f"<tr><td class=mono>{_E(h.label)}</td><td>{_E(h.why or '')}</td></tr>"
                  for h in missed)
    table = (f"<details{' open' if missed else ''}><summary>{len(missed)} row(s) not taken, "
             f"and why</summary><table><tr><th>row</th><th>why</th></tr>{why}</table>"
             "</details>")
    return _section(name, f"{chart.title}: rows taken", legend
                    + _svg(width, height, body, chart.title) + table)


def _bars(rows: Sequence[tuple[str, int, int]], name: str, title: str) -> str:
    """Horizontal bars, one per (label, value, out of)."""
    left, bar_w, bar_h = 120, 360, 20
    top = max((total for _, _, total in rows), default=1) or 1
    body = []
    for n, (label, value, total) in enumerate(rows):
        y = n * (bar_h + 4)
        whole = round(bar_w * total / top)
        part = round(bar_w * value / top)
        body += [f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{_E(label)}</text>',
                 f'<rect x="{left}" y="{y}" width="{max(whole, 1)}" height="{bar_h}" '
                 f'fill="{_MISSED if value < total else _NONE}"/>',
                 f'<rect x="{left}" y="{y}" width="{part}" height="{bar_h}" fill="{_TAKEN}"/>',
                 f'<text x="{left + max(whole, part) + 6}" y="{y + 14}">{value}/{total}</text>']
    return _section(name, title, _svg(left + bar_w + 90, len(rows) * (bar_h + 4) + 4, body,
                                      title))


def _json_block(value: Json) -> str:
    return f"<pre class=mono>{_E(json.dumps(value, indent=1))}</pre>"


def _leaves(value: Json, path: str = "") -> dict[str, str]:
    """A view's leaves by path, for the side-by-side table."""
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items()
                for k, v in _leaves(item, f"{path}.{key}" if path else str(key)).items()}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return {k: v for n, item in enumerate(value)
                for k, v in _leaves(item, f"{path}[{n}]").items()}
    return {path: json.dumps(value, separators=(",", ":"))}


def _side_by_side(reference: Json, sut: Json) -> str:
    left, right = _leaves(reference), _leaves(sut)
    rows = []
    for path in [*left, *(p for p in right if p not in left)]:
        a, b = left.get(path, "(absent)"), right.get(path, "(absent)")
        rows.append(f'<tr{" class=diff" if a != b else ""}><td class=mono>{_E(path)}</td>'
                    f"<td class=mono>{_E(a)}</td><td class=mono>{_E(b)}</td></tr>")
    return ("<table class=side><tr><th>where</th><th>reference</th><th>implementation</th></tr>"
            + "".join(rows) + "</table>")


def _counterexample(example: Counterexample, name: str) -> str:
    rows = []
    last = len(example.steps)
    for n, step in enumerate(example.steps, 1):
        differs = step.reference != step.sut
        changed = ("".join(f"<li class=mono>{_E(c)}</li>" for c in step.changed)
                   or "<li class=muted>no change</li>")
        state = ("" if step.state is None else
                 f"<details><summary>state after step {n}</summary>"
                 f"{_json_block(step.state)}</details>")
        impl = _E(step.sut) + ("" if n == last else
                               "<div class=muted>state: same as the reference</div>")
        rows.append(
            f'<tr{" class=diff" if differs else ""}><td>{n}</td><td class=mono>{_E(step.op)}'
            f"</td><td class=mono>{_E(step.reference)}</td><td class=mono>{impl}</td>"
            f"<td><ul class=changes>{changed}</ul>{state}</td></tr>"
        )
    steps = ("<table><tr><th>#</th><th>operation</th><th>reference</th><th>implementation</th>"
             "<th>what changed (reference)</th></tr>" + "".join(rows) + "</table>")
    film = _filmstrip(example)
    where = ""
    if example.reference_view is not None and example.sut_view is not None:
        where = ("<h3>both views where it failed</h3>"
                 + "".join(f"<p class='bad mono'>{_E(d)}</p>" for d in example.differences)
                 + f"<details open><summary>side by side</summary>"
                 f"{_side_by_side(example.reference_view, example.sut_view)}</details>")
    note = f"<p class=muted>{_E(example.note)}</p>" if example.note else ""
    body = (f"<p><b>{_E(example.kind)}</b>: {_E(example.detail)}</p>{note}{film}{steps}{where}")
    return _section(name, f"counterexample: {example.title}", body)


def _filmstrip(example: Counterexample) -> str:
    """The steps as a strip of boxes, the failing one red: the shape of the run at a glance."""
    box_w, gap = 170, 26
    body = []
    for n, step in enumerate(example.steps):
        x = n * (box_w + gap)
        failing = n == len(example.steps) - 1
        body += [f'<rect x="{x}" y="4" width="{box_w}" height="46" rx="5" '
                 f'fill="{_MISSED if failing else "#e4eefc"}" stroke="#7d8aa3">'
                 f"<title>{_E(step.op)}</title></rect>",
                 f'<text x="{x + 6}" y="20">{n + 1}. {_E(_short(step.op, 24))}</text>',
                 f'<text x="{x + 6}" y="40" class="mono">{_E(_short(step.reference, 26))}</text>']
        if n:
            body.append(f'<path d="M{x - gap + 2} 27 h{gap - 6}" stroke="#7d8aa3" '
                        'marker-end="url(#arrow)"/>')
    marker = ('<defs><marker id="arrow" markerWidth="8" markerHeight="8" refX="6" refY="4" '
              'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#7d8aa3"/></marker></defs>')
    width = max(len(example.steps) * (box_w + gap), 1)
    return _svg(width, 56, [marker, *body], "the steps")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _timeline(drawn: Concurrent, name: str) -> str:
    """Porcupine's picture: a lane per client, each call a bar from invocation to response,
    the linearization as a line through the calls in order, the call that cannot follow red."""
    left, col_w, lane_h, top = 80, 64, 44, 8
    lane = {client: n for n, client in enumerate(drawn.clients)}
    width = left + col_w * (drawn.columns + 2)
    height = top + lane_h * len(lane) + 10
    body = [f'<text x="4" y="{top + n * lane_h + 24}">client {client}</text>'
            for client, n in lane.items()]
    points: list[tuple[int, int]] = []
    for call in sorted(drawn.calls, key=lambda c: (c.order is None, c.order or 0)):
        y = top + lane[call.client] * lane_h
        x0 = left + call.start * col_w
        x1 = left + ((drawn.columns if call.end is None else call.end) * col_w) + col_w // 2
        fill = ("#f1a5ae" if call.blocked else "#b9dcc5" if call.order is not None
                else "#dfe3ea")
        detail = (f"#{call.index} client {call.client}: {call.op} -> {call.result}"
                  + (f"; linearized {call.order + 1}." if call.order is not None else "")
                  + (f"; cannot follow: {call.blocked}" if call.blocked else ""))
        body.append(
            f'<g class="cell" data-detail="{_E(detail)}"><rect x="{x0}" y="{y + 6}" '
            f'width="{max(x1 - x0, 8)}" height="26" rx="4" fill="{fill}" stroke="#7d8aa3">'
            f"<title>{_E(detail)}</title></rect><text x=\"{x0 + 4}\" y=\"{y + 23}\">"
            f"#{call.index} {_E(_short(call.op, max((x1 - x0) // 7, 4)))}</text></g>"
        )
        if call.order is not None:
            x = max(x0 + 6, (points[-1][0] + 6) if points else 0)
            points.append((min(x, x1 - 4), y + 19))
    if points:
        line = " ".join(f"{x},{y}" for x, y in points)
        body.append(f'<polyline points="{line}" fill="none" stroke="#1d6b35" '
                    'stroke-width="2" stroke-dasharray="4 2"/>')
        body += [f'<circle cx="{x}" cy="{y}" r="4" fill="#1d6b35"><title>linearized '
                 f"{n + 1}.</title></circle>" for n, (x, y) in enumerate(points)]
    rows = "".join(
        f"<tr><td>{n}</td><td>#{c.index}</td><td class=mono>{_E(c.op)}</td>"
        f"<td class=mono>{_E(c.observed)}</td><td><ul class=changes>"
        + ("".join(f"<li class=mono>{_E(x)}</li>" for x in c.changed)
           or "<li class=muted>no change</li>") + "</ul></td></tr>"
        for n, c in enumerate(drawn.order, 1)
    )
    blocked = "".join(
        f"<tr class=diff><td>next</td><td>#{c.index}</td><td class=mono>{_E(c.op)}</td>"
        f"<td class=mono>{_E(c.result)}</td><td class=bad>{_E(c.blocked or '')}</td></tr>"
        for c in drawn.calls if c.blocked
    )
    title = "the linearization" if drawn.linearizable else "the linearization that failed"
    table = (f"<h3>{title}</h3><table><tr><th>order</th><th>call</th><th>operation</th>"
             f"<th>observed</th><th>what it changed in the reference</th></tr>{rows}{blocked}"
             "</table>")
    legend = ('<p class="legend"><span style="background:#b9dcc5"></span>linearized'
              '<span style="background:#f1a5ae"></span>cannot be linearized next'
              '<span style="background:#dfe3ea"></span>not reached</p>')
    return _section(name, "client lanes", f"<p>{_E(drawn.verdict)}</p>{legend}"
                    + _svg(width, height, body, "client lanes") + table)


def _catalogue(entries: Sequence[dict[str, object]], name: str) -> str:
    rows = "".join(
        f"<tr><td>{n}</td><td class=mono>{_E(str(e.get('op')))}</td>"
        f"<td class=mono>{_E(str(e.get('at')))}</td><td>{_E(str(e.get('kind')))}</td>"
        f"<td class=mono>{_E(json.dumps(e.get('reference')))}</td>"
        f"<td class=mono>{_E(json.dumps(e.get('sut')))}</td><td>{_E(str(e.get('steps')))}</td>"
        f"<td class=mono>{_E(str(e.get('trace')))}</td></tr>"
        for n, e in enumerate(entries, 1)
    )
    bars = _bars([(f"{n}. {e.get('at')}"[:18], int(str(e.get("steps", 0))),
                   max(int(str(x.get("steps", 0))) for x in entries))
                  for n, e in enumerate(entries, 1)], name + "-steps", "steps of each trace")
    return _section(name, f"keep-going catalogue: {len(entries)} distinct divergence(s)",
                    "<table><tr><th>#</th><th>after</th><th>where</th><th>kind</th>"
                    "<th>reference</th><th>implementation</th><th>steps</th><th>trace</th>"
                    f"</tr>{rows}</table>{bars}")


def _section(name: str, title: str, body: str) -> str:
    return f'<section id="{name}" data-section="{name}"><h2>{_E(title)}</h2>{body}</section>'


def sections(report: Report) -> list[tuple[str, str]]:
    """The page's sections, (name, html), in order."""
    out = [("summary", _section("summary", "run", "<table class=kv>" + "".join(
        f"<tr><td>{_E(k)}</td><td class=mono>{_E(v)}</td></tr>" for k, v in report.summary)
        + "</table>"))]
    if report.lifecycle is not None:
        out.append(("lifecycle", _heatmap(report.lifecycle, "lifecycle")))
    if report.roles is not None:
        out.append(("roles", _heatmap(report.roles, "roles")))
    if report.families:
        out.append(("coverage", _bars(report.families, "coverage",
                                      "coverage classes reached, per family")))
    if report.depths:
        out.append(("depths", _bars([(f"depth {n}", k, k) for n, k in enumerate(report.depths)],
                                    "depths", "states per depth")))
    for n, example in enumerate(report.counterexamples, 1):
        out.append((f"counterexample-{n}", _counterexample(example, f"counterexample-{n}")))
    if report.catalogue:
        out.append(("catalogue", _catalogue(report.catalogue, "catalogue")))
    if report.concurrent is not None:
        out.append(("lanes", _timeline(report.concurrent, "lanes")))
    return out


def render(report: Report) -> str:
    """The whole page."""
    parts = sections(report)
    expected = json.dumps([name for name, _ in parts]).replace("</", "<\\/")
    state = "" if report.passed else " class=failed"
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{_E(report.title)}</title><style>{CSS}</style>"
        f'<script id="expected" type="application/json">{expected}</script>'
        f"<script>{SCRIPT}</script></head><body>"
        f"<header{state}><h1>{_E(report.title)}</h1><div>{_E(report.verdict)}</div></header>"
        '<main><p id="selfcheck" class=muted data-ok="">selfcheck: not run</p>'
        '<p id="detail" class="mono muted">click a cell or a call for its details</p>'
        + "".join(html_part for _, html_part in parts)
        + "</main></body></html>\n"
    )
