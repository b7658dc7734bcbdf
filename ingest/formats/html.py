"""HTML (Beautiful Soup over lxml): the visible text of the body — no scripts, styles,
templates, navigation, asides, the page's own header and footer (a header or footer
inside an article or section is the article's and is kept) or hidden elements (`hidden`,
`aria-hidden="true"`, an inline `display: none` or `visibility: hidden`) — one line per
block; `<title>` is the title; `<meta
name="author">` and a date meta tag (`date`, `dcterms.created`, `article:published_time`)
are the metadata."""

import re
from datetime import datetime

from bs4 import BeautifulSoup, Comment, NavigableString, Tag
from dateutil import parser as dateparser

from .base import Extracted, Metadata

HIDDEN = ["script", "style", "noscript", "template", "nav", "aside", "head", "iframe", "svg"]
# The page's banner and footer (site chrome) — a header or footer of sectioning content
# (an article's byline, a section's heading) is the document's own text.
PAGE_CHROME = ("header", "footer")
SECTIONING = ["article", "main", "section", "aside", "nav"]
HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
DATE_META = ("date", "dcterms.created", "dc.date", "article:published_time", "created")
WHITESPACE = re.compile(r"\s+")
BLOCKS = [
    *("p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "dl", "dt", "dd", "pre"),
    *("table", "tr", "td", "th", "caption", "form", "fieldset", "figure", "figcaption", "hr"),
]
MODIFIED_META = ("dcterms.modified", "article:modified_time", "last-modified")


def _meta(soup: BeautifulSoup, names: tuple[str, ...]) -> str:
    for name in names:
        tag = soup.find("meta", attrs={"name": name}) or soup.find("meta", attrs={"property": name})
        if isinstance(tag, Tag) and str(tag.get("content") or "").strip():
            return str(tag.get("content")).strip()
    return ""


def _when(value: str) -> datetime | None:
    if not value:
        return None
    try:
        return dateparser.isoparse(value)
    except (ValueError, OverflowError):
        return None


def extract(data: bytes, name: str) -> Extracted:
    soup = BeautifulSoup(data, "lxml")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag else ""
    author = _meta(soup, ("author", "dc.creator", "article:author"))
    metadata = Metadata(
        authors=[author] if author else [],
        created=_when(_meta(soup, DATE_META)),
        modified=_when(_meta(soup, MODIFIED_META)),
    )
    for tag in soup.find_all(_hidden):
        tag.decompose()
    return Extracted(text=visible_text(soup.body or soup), title=title, metadata=metadata)


def _hidden(tag: Tag) -> bool:
    """Markup a reader never sees, or site chrome around the document: scripts, styles,
    navigation, asides, the page's header and footer, hidden elements."""
    if tag.name in HIDDEN or tag.get("role") == "navigation" or tag.has_attr("hidden"):
        return True
    if str(tag.get("aria-hidden") or "").strip().lower() == "true":
        return True
    if HIDDEN_STYLE.search(str(tag.get("style") or "")):
        return True
    return tag.name in PAGE_CHROME and tag.find_parent(SECTIONING) is None


def visible_text(body: Tag | BeautifulSoup) -> str:
    """Whitespace inside the markup collapses as a browser collapses it; each block
    element (a paragraph, a heading, a list item, a table cell…) is a line of its own."""
    for string in list(body.find_all(string=True)):
        if not isinstance(string, Comment):
            string.replace_with(NavigableString(WHITESPACE.sub(" ", str(string))))
        else:
            string.extract()
    for tag in body.find_all(BLOCKS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    for tag in body.find_all("br"):
        tag.replace_with("\n")
    lines = (line.strip() for line in body.get_text("").splitlines())
    return "\n".join(line for line in lines if line)
