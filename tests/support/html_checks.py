"""HTML checks shared by the report tests: tag/attribute collection, SVGs, sections."""

from __future__ import annotations

import html.parser
import json
import re
import xml.etree.ElementTree as ET


class Collector(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]

    handle_startendtag = handle_starttag


def parse(doc: str) -> Collector:
    c = Collector()
    c.feed(doc)
    c.close()
    return c


def svgs(doc: str, cls: str) -> list[ET.Element]:
    return [
        ET.fromstring(m.group(0))
        for m in re.finditer(rf'<svg[^>]*class="{cls}".*?</svg>', doc, re.S)
    ]


def section(doc: str, title: str) -> str:
    m = re.search(rf"<h2>{re.escape(title)}</h2>(.*?)</section>", doc, re.S)
    assert m, title
    return m.group(1)


def json_island(doc: str, island_id: str) -> dict:
    """The JSON data a report carries in ``<script type="application/json" id=…>`` (exactly
    one such island)."""
    (m,) = re.finditer(rf'<script type="application/json" id="{re.escape(island_id)}">'
                       r"(.*?)</script>", doc, re.S)
    return json.loads(m.group(1))
