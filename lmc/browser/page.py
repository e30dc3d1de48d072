"""Pages as gpt-oss's browser tool shows them: text with numbered lines and numbered links.

gpt-oss was trained on the output of OpenAI's reference browser (``gpt_oss/tools/
simple_browser`` in the openai/gpt-oss repository): links are written inline as
``【{id}†{text}】`` (``【{id}†{text}†{domain}】`` for another site), lines are wrapped at 80
characters and shown as ``L{n}: ...``, and every view opens with ``[{cursor}] {title}
({url})`` and a ``**viewing lines [a - b] of N**`` bar. This module reproduces that format
(the model cites ``【{cursor}†L{a}-L{b}】`` from it) with lxml for the tree and html2text, a
maintained HTML-to-text converter, for the text. It does no I/O.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, unquote, urljoin, urlparse

__all__ = [
    "Extract",
    "Page",
    "find_in_page",
    "join_lines",
    "page_from_html",
    "page_from_text",
    "render_view",
    "wrap_lines",
]

_SUP: Final = re.compile(r"<sup( [^>]*)?>([\w\-]+)</sup>")
_SUB: Final = re.compile(r"<sub( [^>]*)?>([\w\-]+)</sub>")
_TAGS_BETWEEN_WORDS: Final = re.compile(r"(?<=\w)((<[^>]*>)+)(?=\w)")
_WHITESPACE_AFTER_ANCHOR: Final = re.compile(r"(【\@[^】]+】)(\s+)")
_BLANK_LINE: Final = re.compile(r"^\s+$", flags=re.MULTILINE)
_EXTRA_NEWLINES: Final = re.compile(r"\n(\s*\n)+")
_ASTRAL: Final = re.compile(r"[\U00010000-\U0001FFFF]")
_SPECIAL: Final = {"【": "〖", "】": "〗", "◼": "◾", "\u200b": ""}
_SPECIAL_RE: Final = re.compile("|".join(map(re.escape, _SPECIAL)))
_PARTIAL_START_LINK: Final = re.compile(r"^[^【】]*】")
_PARTIAL_END_LINK: Final = re.compile(r"【\d*(?:†(?P<content>[^†】]*)(?:†[^†】]*)?)?$")
_LINK: Final = re.compile(r"【\d+†(?P<content>[^†】]+)(?:†[^†】]+)?】")
#: Characters of a URL shown in a view's header before it is cut with "...".
_URL_SHOWN: Final = 1024


@dataclass(frozen=True, slots=True)
class Extract:
    """A passage of a page (a find match), with the line it starts on."""

    url: str
    text: str
    title: str
    line_idx: int | None = None


@dataclass(slots=True)
class Page:
    """One page of the browser's stack: its text, and its links by id."""

    url: str
    title: str
    text: str
    urls: dict[str, str] = field(default_factory=dict)
    #: Set on find results (and only there): ``find`` cannot search them again.
    snippets: dict[str, Extract] | None = None


def domain_of(url: str) -> str:
    """The host of ``url`` (a bare domain is returned as it is)."""
    if "http" not in url:
        url = "http://" + url
    return urlparse(url).netloc


def _merge_whitespace(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\n", " "))


def _text_of(node: Any) -> str:
    return _merge_whitespace(" ".join(node.itertext()))


def _replace_with_text(node: Any, text: str) -> None:
    """Put ``text`` where ``node`` was, keeping the text around it."""
    previous, parent = node.getprevious(), node.getparent()
    tail = node.tail or ""
    if previous is None:
        parent.text = (parent.text or "") + text + tail
    else:
        previous.tail = (previous.tail or "") + text + tail
    parent.remove(node)


def _number_links(root: Any, page_url: str) -> dict[str, str]:
    """Write each link inline as ``【id†text】`` and return the ids' URLs."""
    here = domain_of(page_url)
    urls: dict[str, str] = {}
    ids: dict[str, str] = {}
    for anchor in root.findall(".//a[@href]"):
        link = anchor.attrib["href"]
        if link.startswith(("mailto:", "javascript:")):
            continue
        text = _text_of(anchor).replace("†", "‡")
        if not re.sub(r"【\@([^】]+)】", "", text):  # an image link: nothing to read
            continue
        if link.startswith("#"):
            _replace_with_text(anchor, text)
            continue
        try:
            link = urljoin(page_url, link)
            domain = domain_of(link)
        except ValueError:
            domain = ""
        if not domain:
            continue
        link_id = ids.get(link)
        if link_id is None:
            link_id = str(len(urls))
            urls[link_id] = link
            ids[link] = link_id
        shown = f"【{link_id}†{text}】" if domain == here else f"【{link_id}†{text}†{domain}】"
        _replace_with_text(anchor, shown)
    return urls


def _replace_images(root: Any) -> None:
    for count, image in enumerate(root.findall(".//img")):
        name = image.get("alt", image.get("title"))
        _replace_with_text(image, f"[Image {count}: {name}]" if name else f"[Image {count}]")


def _html_to_text(html: str) -> str:
    import html2text

    html = _SUP.sub(r"^{\2}", html)
    html = _SUB.sub(r"_{\2}", html)
    html = _TAGS_BETWEEN_WORDS.sub(r" \1", html)
    converter = html2text.HTML2Text()
    converter.ignore_links = True
    converter.ignore_images = True
    converter.body_width = 0
    converter.ignore_tables = True
    converter.unicode_snob = True
    converter.ignore_emphasis = True
    # The reference also tries to turn html2text's Markdown escapes off by patching
    # html2text.utils, which html2text does not read: its output keeps them, and so does ours.
    text: str = converter.handle(html)
    return text.strip()


def page_from_html(html: str, url: str, title: str | None = None, show_url: bool = True) -> Page:
    """A page from HTML: links numbered, images named, text as the model was trained on."""
    import lxml.etree
    import lxml.html

    html = _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group(0)], _ASTRAL.sub("", html))
    if not html.strip():
        html = "<html><body></body></html>"
    try:
        root = lxml.html.fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return page_from_text(html, url, title, show_url=show_url)
    title_node = root.find(".//title")
    if title:
        final_title = title
    elif title_node is not None and title_node.text:
        final_title = title_node.text.strip()
    else:
        final_title = domain_of(url) if url else ""
    urls = _number_links(root, url)
    _replace_images(root)
    for math in root.findall(".//math"):
        math.getparent().remove(math)
    text = _html_to_text(lxml.etree.tostring(root, encoding="UTF-8").decode())
    text = _WHITESPACE_AFTER_ANCHOR.sub(lambda m: m.group(2) + m.group(1), text)
    text = _BLANK_LINE.sub("", text)
    text = _EXTRA_NEWLINES.sub("\n\n", text)
    top = f"\nURL: {url}\n" if show_url else ""
    return Page(url=url, title=final_title, text=top + text, urls=urls)


def page_from_text(text: str, url: str, title: str | None = None, show_url: bool = True) -> Page:
    """A page from plain text (a text file, a JSON answer): shown as it is."""
    top = f"\nURL: {url}\n" if show_url else ""
    return Page(url=url, title=title or domain_of(url) or url, text=top + text)


def wrap_lines(text: str, width: int = 80) -> list[str]:
    """The page's lines as the model sees them: wrapped at ``width``, empty lines kept."""
    return list(
        itertools.chain.from_iterable(
            textwrap.wrap(line, width=width, replace_whitespace=False, drop_whitespace=False)
            if line
            else [""]
            for line in text.split("\n")
        )
    )


def join_lines(lines: list[str], numbered: bool = False, offset: int = 0) -> str:
    if numbered:
        return "\n".join(f"L{i + offset}: {line}" for i, line in enumerate(lines))
    return "\n".join(lines)


def _strip_links(text: str) -> str:
    text = _PARTIAL_START_LINK.sub("", text)
    text = _PARTIAL_END_LINK.sub(lambda m: m.group("content") or "", text)
    return _LINK.sub(lambda m: m.group("content"), text)


def find_in_page(pattern: str, page: Page, max_results: int = 50, shown_lines: int = 4) -> Page:
    """The reference's ``find``: each line holding ``pattern`` (case-insensitive) with the
    lines after it, as a page of its own whose links lead back to the matches."""
    pattern = pattern.lower()
    lines = _strip_links(join_lines(wrap_lines(page.text))).split("\n")
    chunks: list[str] = []
    snippets: dict[str, Extract] = {}
    index = 0
    while index < len(lines):
        if pattern not in lines[index].lower():
            index += 1
            continue
        snippet = "\n".join(lines[index : index + shown_lines])
        number = len(chunks)
        chunks.append(f"# 【{number}†match at L{index}】\n{snippet}")
        snippets[str(number)] = Extract(page.url, snippet, f"#{number}", index)
        if len(chunks) == max_results:
            break
        index += shown_lines
    text = "\n\n".join(chunks) if chunks else f"No `find` results for pattern: `{pattern}`"
    return Page(
        url=f"{page.url}/find?pattern={quote(pattern)}",
        title=f"Find results for text: `{pattern}` in `{page.title}`",
        text=text,
        urls={str(i): page.url for i in range(len(chunks))},
        snippets=snippets,
    )


def render_view(page: Page, cursor: int, *, first: int, end: int, total: int, body: str) -> str:
    """One view: ``[cursor] title (url)``, the scroll bar, then the numbered lines."""
    url = unquote(page.url)
    if len(url) > _URL_SHOWN:
        url = url[: _URL_SHOWN - 3] + "..."
    header = page.title + (f" ({url})" if url else "")
    header += f"\n**viewing lines [{first} - {end - 1}] of {total - 1}**\n\n"
    return f"[{cursor}] {header}{body}"
