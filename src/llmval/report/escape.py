"""Escaping for each format a report lands in: Markdown (status.md), HTML (report.html), XML (junit), terminal.

What a server, a host or the inventory said is data, never markup: every such string passes through the
function of the format it is written in, after `llmval.core.contract.visible` has written its control characters as
escapes (ESC, BEL and NUL would move a terminal's cursor or end an XML file early).

    md_text("![x](http://t/p.png)\\n## Heading")   # -> ![x\\](http://t/p.png) ⏎ ## Heading: no image, no heading
    md_code("a`b")                                 # -> ``a`b``: a code span its content cannot close
    html_text("<b>\\x00</b>")                      # -> &lt;b&gt;\\x00&lt;/b&gt;
    xml_text("1.0\\x1b[0m")                        # -> 1.0\\x1b[0m (the four characters), XML 1.0 can hold it
    render_inline("**bold** `code`")               # the status document's Markdown as HTML (CommonMark)

Markdown is rendered to HTML by markdown-it-py (CommonMark), with raw HTML, links, images, autolinks and
entities switched off: report.html shows the same text GitHub shows for status.md, and nothing in it is live.
"""

from __future__ import annotations

import functools
import html
import re

from ..core.contract import visible

LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
NEWLINE_MARK = " ⏎ "
"""A newline inside one item's text: a value cannot start a block (a heading, a list, a table row) of its own."""
MD_PUNCTUATION_RE = re.compile(r"([\\`*|~&])|(<)(?=[A-Za-z/!?])|(\])(?=[(\[])|(?<!\w)(_)|(_)(?!\w)")
"""What CommonMark/GFM could read as markup inside a line: backslash, code, emphasis, table pipes, strikethrough,
entities, a `<` that could open a tag or an autolink, the `](` or `][` that makes a link or an image, and `_` at a
word's edge. A bare `[kpro6-ct129]` stays as it is: with no `](` and no line of its own (a value never starts a
line) it cannot become a link."""
XML_ILLEGAL_RE = re.compile("[\ud800-\udfff\ufffe\uffff]")


def one_line(value: object) -> str:
    """`value` as text on one line: control characters escaped, newlines shown as ` ⏎ `."""
    return LINE_BREAK_RE.sub(NEWLINE_MARK, visible(str(value)))


def md_text(value: object) -> str:
    """`value` as Markdown inline text that renders literally: `***` stays `***`, `[click](javascript:…)` is no
    link, `![x](…)` no image, `\\n## Heading` no heading."""
    return MD_PUNCTUATION_RE.sub(lambda m: "\\" + next(g for g in m.groups() if g), one_line(value))


def md_code(value: object) -> str:
    """`value` as a Markdown code span, fenced by more backticks than any run inside it."""
    text = one_line(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(value: object) -> str:
    """`value` as HTML text (element content or an attribute value): control characters escaped, `<>&"'`
    as entities."""
    return html.escape(visible(str(value)))


def xml_text(value: object) -> str:
    """`value` as XML 1.0 character data: control characters escaped, the code points XML cannot hold (lone
    surrogates, U+FFFE, U+FFFF) as `\\u` escapes; ElementTree escapes `<>&"` itself."""
    return XML_ILLEGAL_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", visible(str(value)))


def render_inline(markdown: str) -> str:
    """HTML of one line of the status document's Markdown (`code`, **bold**, *italic*, backslash escapes)."""
    return _markdown().renderInline(visible(markdown))


@functools.cache
def _markdown():
    """The one Markdown renderer, made when a report is rendered: imported with the plugin, markdown_it added 15
    loggers that pytest's log capture walks at each phase of each test (issue 35.1)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).disable(["link", "image", "autolink", "html_inline", "entity"])
