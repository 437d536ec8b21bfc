"""The Web Host's own pages in the person's language: the shell's page and the login
page.

The language is the one the person chose in the shell (kept by the Runtime), else the
first shipped one of the browser's ``Accept-Language`` (``lineup.i18n.negotiate``).
The shell's page is ``static/index.html`` with ``[[key]]`` markers filled from the
catalogue (escaped), ``<html lang>`` set, and the whole catalogue inline for
``static/i18n.js``: the first paint is already in the person's language.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from importlib import resources

from lineup.i18n import negotiate, parse_accept_language, shell

__all__ = ["index_html", "login_html", "page_locale"]

_MARKER = re.compile(r"\[\[([A-Za-z0-9_.-]+)\]\]")


def page_locale(choice: str | None, accept_language: str | None) -> str:
    """The language of a page: the person's choice, else the browser's."""
    return choice or negotiate(parse_accept_language(accept_language))


def _inline_json(value: object) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@cache
def index_html(locale: str, choice: str) -> str:
    """The shell's page in ``locale``; ``choice`` is the setting behind it ("auto" or
    a language), for the shell's language menu."""
    template = resources.files(__package__).joinpath("static/index.html").read_text("utf-8")
    strings = shell().strings(locale)
    special = {
        "lang": locale,
        "choice": choice,
        "catalogue": _inline_json(dict(strings)),
    }

    def fill(match: re.Match[str]) -> str:
        key = match[1]
        if key in special:
            return special[key] if key == "catalogue" else html.escape(special[key])
        return html.escape(shell().text(locale, key), quote=True)

    return _MARKER.sub(fill, template)


_ERRORS = ("credentials", "unavailable", "link")


def login_html(locale: str, error: str | None, username: str = "") -> str:
    """The login page; after a refused attempt (``error``), with the one-line reason and
    the ``username`` that was tried filled in, the focus on the password field."""

    def t(key: str) -> str:
        return html.escape(shell().text(locale, key), quote=True)

    notice = (
        f'<p class="error" id="login-error" role="alert">{t(f"login.error.{error}")}</p>'
        if error in _ERRORS
        else ""
    )
    name_attrs = f' value="{html.escape(username, quote=True)}"' if username else ""
    retry_attrs = ""
    if username:  # tried once: type the password again
        retry_attrs = ' autofocus aria-describedby="login-error"'
        if error == "credentials":
            retry_attrs += ' aria-invalid="true"'
    else:
        name_attrs += " autofocus"
    return f"""<!doctype html>
<html lang="{html.escape(locale)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t("login.title")}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/style.css">
</head>
<body class="login">
<main class="login-card">
<h1>LineUp</h1>
<p class="subtitle">{t("login.subtitle")}</p>
{notice}
<form method="post" action="/login">
<label>{t("login.username")}
<input name="username" autocomplete="username" required maxlength="64"{name_attrs}></label>
<label>{t("login.password")}
<input name="password" type="password" autocomplete="current-password"
 required{retry_attrs}></label>
<button type="submit">{t("login.submit")}</button>
</form>
</main>
</body>
</html>
"""
