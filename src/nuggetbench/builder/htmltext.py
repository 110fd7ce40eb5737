"""Stack Exchange post HTML to plain text, keeping code blocks as fenced blocks.

``<pre><code>...</code></pre>`` becomes a fenced block (the code verbatim), inline ``<code>`` becomes
backticks, paragraphs, headers, list items, block quotes and ``<br>`` become line breaks, links keep
their text, images their alt text. Character references are decoded. Outside code, runs of spaces
collapse and paragraphs are separated by one blank line.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = {
    "p",
    "div",
    "blockquote",
    "ul",
    "ol",
    "table",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
}
_LOOKS_HTML = re.compile(
    r"</?(p|pre|code|br|a|ul|ol|li|h[1-6]|blockquote|div|em|strong|img)\b[^>]*>", re.I
)


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.pre = 0
        self.code = 0

    def _break(self, para: bool = True) -> None:
        self.parts.append("\x03" if para else "\x00")  # paragraph / line marks, resolved in text()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self.pre += 1
            self._break()
            self.parts.append("\x01")
        elif tag == "code":
            self.code += 1
            if not self.pre:
                self.parts.append("`")
        elif tag == "br":
            self.parts.append("\n" if self.pre else "\x00")
        elif tag == "li":
            self._break(para=False)
            self.parts.append("- ")
        elif tag in _BLOCK:
            self._break()
            if tag.startswith("h") and tag[1:].isdigit():
                self.parts.append("#" * int(tag[1:]) + " ")
            elif tag == "blockquote":
                self.parts.append("> ")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.parts.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.parts.append("\x02")
            self._break()
        elif tag == "code":
            self.code = max(0, self.code - 1)
            if not self.pre:
                self.parts.append("`")
        elif tag in _BLOCK:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.pre:
            self.parts.append(data.replace("\x00", "").replace("\x03", ""))
        else:
            self.parts.append(re.sub(r"\s+", " ", data))

    def text(self) -> str:
        out: list[str] = []
        for piece in re.split(r"(\x01.*?\x02)", "".join(self.parts), flags=re.S):
            if piece.startswith("\x01"):
                code = piece[1:-1].strip("\n")
                out.append("\x03```\n" + code + "\n```\x03")
            else:
                out.append(piece)
        text = "".join(out)
        # resolve break marks: a run with a paragraph mark or two line marks is a paragraph break
        text = re.sub(r"[ \t]*(?:[\x00\x03][ \t]*)*\x03(?:[ \t]*[\x00\x03])*[ \t]*", "\n\n", text)
        text = re.sub(r"[ \t]*\x00[ \t]*\x00(?:[ \t]*\x00)*[ \t]*", "\n\n", text)
        text = re.sub(r"[ \t]*\x00[ \t]*", "\n", text)
        text = re.sub(r"\n{3,}", "\n\n", text)
        return text.strip()


def html_to_text(html: str) -> str:
    """Plain text of a post's HTML body (see the module docstring)."""
    conv = _Converter()
    conv.feed(html)
    conv.close()
    return conv.text()


def looks_like_html(text: str) -> bool:
    """True when *text* contains a common HTML tag (``<p>``, ``<code>``, ``<a ...>``...)."""
    return bool(_LOOKS_HTML.search(text))


__all__ = ["html_to_text", "looks_like_html"]
