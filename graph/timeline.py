"""A fact's versions as a picture, drawn on the server as SVG (no JavaScript): valid time
across, transaction time down — one row per version in the order it was recorded, its
bar spanning the interval it claims. The best guess (pending), the bound correction and
the superseded beliefs are told apart by style and named in a legend and in each bar's
`<title>` (the tooltip and what a screen reader reads)."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from common.times import iso

from .models import NodeVersion

WIDTH, LEFT, RIGHT, TOP, ROW = 760, 190, 20, 34, 30
STYLES = {
    "bound": ("#2e7d32", "#c8e6c9", "", "bound correction"),
    "pending": ("#ef6c00", "#ffe0b2", "6 3", "best guess (pending)"),
    "superseded": ("#9e9e9e", "#eeeeee", "2 2", "superseded belief"),
    "current": ("#1565c0", "#bbdefb", "", "current belief"),
}


@dataclass(frozen=True)
class Bar:
    seq: int
    state: str  # a key of STYLES
    x: float
    width: float
    open_start: bool
    open_end: bool
    valid: str
    recorded: str
    evidence: str


HUMAN_BINDINGS = {"human_clarification", "quorum_confirmation", "steward_override"}


def _state(version: NodeVersion, bound_tx: int | None) -> str:
    """superseded (a later version replaced it) / bound (the clarification's binding, or
    any current human binding) / pending (the applied best guess) / current."""
    if version.tx_to is not None:
        return "superseded"
    if version.tx_from == bound_tx or version.evidence_class in HUMAN_BINDINGS:
        return "bound"
    return "pending" if version.pending else "current"


def _day(us: int | None) -> str:
    return iso(us)[:10] if us is not None else "open"


def _bars(
    versions: Sequence[NodeVersion], bound_tx: int | None
) -> tuple[list[Bar], str, str, float]:
    ends = [t for v in versions for t in (v.valid_from, v.valid_to) if t is not None]
    low, high = (min(ends), max(ends)) if ends else (0, 1)
    single = high == low
    if single:
        high = low + 86_400_000_000  # one day, so a single instant still has a width
    span, inner = high - low, WIDTH - LEFT - RIGHT
    # Room for an open start on the left and, wider, for an open end (and its label) on
    # the right: a version starting at the last date still gets a bar you can read.
    margin_left = inner * (0.08 if any(v.valid_from is None for v in versions) else 0.02)
    margin_right = inner * (0.25 if any(v.valid_to is None for v in versions) else 0.02)

    def x(t: int | None, default: float) -> float:
        scale = (inner - margin_left - margin_right) / span
        return default if t is None else LEFT + margin_left + (t - low) * scale

    bars = []
    for v in versions:
        start, end = x(v.valid_from, LEFT), x(v.valid_to, WIDTH - RIGHT)
        bars.append(
            Bar(
                seq=v.seq,
                state=_state(v, bound_tx),
                x=start,
                width=max(end - start, 3.0),
                open_start=v.valid_from is None,
                open_end=v.valid_to is None,
                valid=f"{_day(v.valid_from)} → {_day(v.valid_to)}",
                recorded=f"{iso(v.tx_from)} → {iso(v.tx_to) if v.tx_to else 'now'}",
                evidence=v.evidence_class,
            )
        )
    high_label = _day(high) if ends and not single else ""  # one date: one label
    return bars, _day(low) if ends else "", high_label, x(high, WIDTH - RIGHT)


def _row(i: int, bar: Bar) -> SafeString:
    stroke, fill, dash, name = STYLES[bar.state]
    y = TOP + i * ROW
    return format_html(
        '<g class="version version-{state}" data-seq="{seq}">'
        "<title>v{seq}: {name}; valid {valid}; recorded {recorded}; {evidence}</title>"
        '<text x="8" y="{ty}" font-size="11">v{seq} · {recorded_day}</text>'
        '<rect x="{x}" y="{y}" width="{w}" height="18" rx="3" fill="{fill}" '
        'stroke="{stroke}" stroke-width="1.5" stroke-dasharray="{dash}"/>'
        '<text x="{tx}" y="{ty}" font-size="10" fill="#222">{left}{valid}{right}</text></g>',
        state=bar.state,
        seq=bar.seq,
        name=name,
        valid=bar.valid,
        recorded=bar.recorded,
        recorded_day=bar.recorded[:16],
        evidence=bar.evidence,
        x=f"{bar.x:.1f}",
        y=y,
        w=f"{bar.width:.1f}",
        fill=fill,
        stroke=stroke,
        dash=dash or "none",
        tx=f"{bar.x + 4:.1f}",
        ty=y + 13,
        left="◀ " if bar.open_start else "",
        right=" ▶" if bar.open_end else "",
    )


def versions_svg(versions: Sequence[NodeVersion], *, bound_tx: int | None = None) -> SafeString:
    """The SVG of `versions` (oldest recorded first). `bound_tx`: the transaction time of
    the version a clarification bound (drawn as the bound correction)."""
    versions = sorted(versions, key=lambda v: v.tx_from)
    bars, low, high, x_high = _bars(versions, bound_tx)
    height = TOP + ROW * len(bars) + 34
    legend = format_html_join(
        "",
        '<g class="legend"><rect x="{}" y="{}" width="14" height="10" fill="{}" stroke="{}" '
        'stroke-dasharray="{}"/><text x="{}" y="{}" font-size="10">{}</text></g>',
        (
            (
                LEFT + i * 140,
                height - 20,
                fill,
                stroke,
                dash or "none",
                LEFT + i * 140 + 18,
                height - 11,
                name,
            )
            for i, (stroke, fill, dash, name) in enumerate(STYLES.values())
        ),
    )
    return format_html(
        '<svg class="fact-timeline" xmlns="http://www.w3.org/2000/svg" role="img" '
        'width="{w}" height="{h}" viewBox="0 0 {w} {h}" aria-label="{label}">'
        '<text x="8" y="14" font-size="11" font-weight="bold">recorded ↓ / valid →</text>'
        '<text x="{lx}" y="14" font-size="10">{low}</text>'
        '<text x="{hx}" y="14" font-size="10" text-anchor="middle">{high}</text>'
        '<line x1="{lx}" y1="20" x2="{ex}" y2="20" stroke="#999"/>{rows}{legend}</svg>',
        w=WIDTH,
        h=height,
        label=f"Timeline of {len(bars)} versions: valid time across, recorded time down",
        lx=LEFT,
        hx=f"{x_high:.1f}",
        ex=WIDTH - RIGHT,
        low=low,
        high=high,
        rows=format_html_join("", "{}", ((_row(i, b),) for i, b in enumerate(bars))),
        legend=legend,
    )
