"""The browser fixtures (page, screenshot, client ...) for the reference MiniApps."""

from tests.browser.conftest import (  # noqa: F401 - fixtures are found by name
    _watched_page,
    browser,
    page,
    page_watch,
    screenshot,
)
from tests.support.webhost import client, client_own_server  # noqa: F401
