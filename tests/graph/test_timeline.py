"""The SVG picture of a fact's versions (issue 21 item 6): valid time across, recorded
time down; the best guess, the bound correction and the superseded belief told apart;
drawn on the decide page and the inbox fact page."""

import re
from xml.etree import ElementTree

from graph.models import NodeVersion
from graph.timeline import versions_svg

DAY = 86_400_000_000
JUN_12, OCT_1 = 1_781_222_400_000_000, 1_790_812_800_000_000


def version(
    seq, valid_from, valid_to, tx_from, tx_to=None, pending=False, evidence="system_extraction"
):
    return NodeVersion(
        seq=seq,
        valid_from=valid_from,
        valid_to=valid_to,
        tx_from=tx_from,
        tx_to=tx_to,
        pending=pending,
        evidence_class=evidence,
    )


def rows(svg: str) -> list[dict]:
    root = ElementTree.fromstring(svg)  # well-formed XML, or this raises
    ns = {"s": "http://www.w3.org/2000/svg"}
    out = []
    for g in root.findall("s:g[@data-seq]", ns):
        rect = g.find("s:rect", ns)
        out.append(
            {
                "seq": int(g.get("data-seq")),
                "class": g.get("class"),
                "x": float(rect.get("x")),
                "width": float(rect.get("width")),
                "y": float(rect.get("y")),
                "title": g.find("s:title", ns).text,
            }
        )
    return out


def test_the_best_guess_then_the_bound_correction():
    guess = version(1, OCT_1, None, tx_from=100, tx_to=200, pending=True)
    bound = version(2, JUN_12, None, tx_from=200, evidence="steward_override")
    svg = str(versions_svg([bound, guess], bound_tx=200))
    first, second = rows(svg)
    assert (first["seq"], second["seq"]) == (1, 2)  # recorded order, top to bottom
    assert second["y"] > first["y"]
    assert first["class"] == "version version-superseded"
    assert second["class"] == "version version-bound"
    assert second["x"] < first["x"]  # 12 June is left of 1 October
    assert "superseded belief; valid 2026-10-01 → open" in first["title"]
    assert "bound correction; valid 2026-06-12 → open" in second["title"]
    for name in ("best guess (pending)", "bound correction", "superseded belief"):
        assert name in svg


def test_a_pending_best_guess_and_a_closed_interval():
    [bar] = rows(str(versions_svg([version(1, JUN_12, JUN_12 + 30 * DAY, 5, pending=True)])))
    assert bar["class"] == "version version-pending"
    assert bar["width"] > 100  # the one interval fills the axis
    assert "valid 2026-06-12 → 2026-07-12" in bar["title"]


def test_one_date_is_labelled_once():
    svg = str(versions_svg([version(1, JUN_12, None, 5), version(2, JUN_12, None, 9)]))
    assert svg.count(">2026-06-12<") == 1 and ">2026-06-13<" not in svg


def test_an_undated_fact_is_drawn_open_both_ways():
    svg = str(versions_svg([version(1, None, None, 5)]))
    [bar] = rows(svg)
    assert bar["class"] == "version version-current"
    assert "◀ open → open ▶" in svg


def test_text_is_escaped():
    svg = str(versions_svg([version(1, None, None, 5, evidence="<script>")]))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert re.search(r'<svg class="fact-timeline"', svg)
