"""The Jinja environment for everything the kit renders from pcgkit/templates/ (package data).

Strict: a name missing from the context is an error, not an empty string, so a template can't
silently drop a section of an issue draft or a repro script.
"""

from __future__ import annotations

import functools

from pcgkit import resources

TEMPLATES_DIR = resources.templates_dir()


def inline_code(text: object) -> str:
    """Markdown inline code that survives backticks inside (dynamo quotes `torch.compiler.disable()`)."""
    text = str(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


@functools.lru_cache(maxsize=1)
def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        autoescape=False,  # Markdown and Python, never HTML
    )
    env.filters["code"] = inline_code
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
