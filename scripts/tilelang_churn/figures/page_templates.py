"""The HTML pages' one Jinja2 environment (templates/: the comparison's and the knockout's markup, style and
scripts), and what both kinds of page compute alike: a page's file name, a text diff and its lines' classes."""

from __future__ import annotations

import difflib
import html
import re
from pathlib import Path

import jinja2
from markupsafe import Markup

from tilelang_churn.core import files

# a page's file name in bytes, ".html" included: under NAME_MAX (255) with room for atomic_file's temporary
# (".<name>.<pid>.tmp") and the "_" that tell equal names apart
MAX_PAGE_NAME = 180

# the pages' markup, style and scripts (templates/): autoescaped, so every value a page shows is escaped as HTML
# text or attribute; a value already HTML (a macro's output, the data block's JSON) comes marked safe
TEMPLATES_DIR = Path(__file__).parent / "templates"


def _escape(value) -> Markup:
    """What autoescape writes for a value: html.escape's entities (&quot; &#x27;, not markupsafe's &#34; &#39;),
    the pages' bytes as before the templates; None is the empty text, as a missing cell's."""
    if value is None:
        return Markup("")
    if hasattr(value, "__html__"):
        return Markup(value.__html__())
    return Markup(html.escape(str(value)))


TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
    autoescape=True,
    finalize=_escape,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)


def render(template: str, **context) -> str:
    return TEMPLATES.get_template(template).render(**context)


def slug(text: str) -> str:
    """A file-name-safe form of a label: letters, digits, ``. _ -``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "configuration"


def page_name(text: str) -> str:
    """A page's file stem: ``slug(text)``, cut with a stable hash of the whole text where it is too long for a
    file name (a kernel parameter of 300 characters), so that two long labels still get two pages."""
    return files.short_name(slug(text), MAX_PAGE_NAME - len(".html"), text)  # slug is ASCII: characters are bytes


# characters that JSON may hold as they are but HTML's script parser (or old JavaScript) reads: as \uXXXX
# escapes any text survives inside <script> and JSON.parse gives it back unchanged
def text_diff(old: str | None, new: str | None, old_name: str, new_name: str, normalize) -> list[str] | None:
    if old is None or new is None:
        return None
    a, b = normalize(old).splitlines(), normalize(new).splitlines()
    return list(difflib.unified_diff(a, b, old_name, new_name, n=3, lineterm=""))


def diff_line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return ""
    return {"+": "line-added", "-": "line-deleted", "@": "line-hunk"}.get(line[:1], "")


def diff_spans(lines) -> list[tuple[str, str]]:
    """A diff's lines as the templates' diff_spans draws them: (class, line)."""
    return [(diff_line_class(line), line) for line in lines or ()]
