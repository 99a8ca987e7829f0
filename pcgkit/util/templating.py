"""The Jinja environments for everything the kit renders from pcgkit/templates/ (package data).

Strict: a name missing from the context is an error, so a template can't silently drop a section.

`render_markdown` is for text that is posted (issue drafts): every `{{ value }}` is escaped as inert Markdown
prose (sanitize.md_text) unless a filter says what it is: `code`, `fenced` (a block no line inside can close),
`plain` (a title), `url` (an https link). Escaping is the default, so a new field is safe before anyone thinks
about it; macro output is already escaped and passes through.
"""

from __future__ import annotations

import functools
import re

from pcgkit import resources
from pcgkit.util.sanitize import md_fence, md_inline_code, md_text, one_line

TEMPLATES_DIR = resources.templates_dir()


def inline_code(text: object) -> str:
    """Markdown inline code that survives backticks inside (dynamo quotes `torch.compiler.disable()`)."""
    text = str(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _jinja(**options):
    """A Jinja environment over the kit's templates: an undefined name is an error, a file's last newline kept."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        **options,
    )


@functools.lru_cache(maxsize=1)
def environment():
    env = _jinja(trim_blocks=False, autoescape=False)  # Markdown and Python, never HTML
    env.filters["code"] = inline_code
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)


def _markdown_finalize(value: object):
    from markupsafe import Markup

    return value if isinstance(value, Markup) else Markup(md_text("" if value is None else value))


def _url(value: object):
    from urllib.parse import quote

    from markupsafe import Markup

    text = str(value)
    if not text.startswith("https://"):
        return Markup(md_text(text))
    return Markup(quote(text, safe=":/?#&=%.+-_~@!$'*,;"))


@functools.lru_cache(maxsize=1)
def markdown_environment():
    from markupsafe import Markup

    env = _jinja(autoescape=True, finalize=_markdown_finalize)  # with the finalize: Markdown escaping, not HTML

    def fenced(value, info="text"):
        body = "\n".join(map(str, value)) if isinstance(value, (list, tuple)) else value
        return Markup(md_fence(body, info))

    def join(items, separator=""):  # the built-in would HTML-escape only: each item is escaped as prose
        return Markup(str(separator).join(str(_markdown_finalize(item)) for item in items))

    env.filters["code"] = lambda v: Markup(md_inline_code(v))
    env.filters["fenced"] = fenced
    env.filters["join"] = join
    # a title is plain text (GitHub renders no markup there); a mention is still made inert
    env.filters["plain"] = lambda v: Markup(re.sub(r"@(?=[A-Za-z0-9])", "@\u200b", one_line(str(v))))
    env.filters["url"] = _url
    # a value inside a fenced code block (a comment line of the inline repro): one line, no Markdown
    # escaping, and no backtick run that could close the fence
    env.filters["in_code"] = lambda v: Markup(re.sub(r"`+", "'", one_line(str(v))))
    # Markdown the kit itself authored (the case catalog's wording), never a measured value
    env.filters["kit_markdown"] = lambda v: Markup(one_line(str(v)))
    return env


def render_markdown(template: str, **context) -> str:
    return str(markdown_environment().get_template(template).render(**context))
