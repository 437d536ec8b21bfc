"""The person's language, kept by their Runtime: chosen in the shell, else the one
their newest tab showed; across a restart; refused when not shipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineup.runtime import Runtime
from lineup.runtime.events import LocaleChosen, RuntimeEvent


async def test_the_choice_wins_over_what_tabs_showed_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    heard: list[RuntimeEvent] = []
    runtime = Runtime(tmp_path)
    await runtime.open()
    try:
        runtime.subscribe(heard.append)
        assert await runtime.person_locale() == "en"
        assert await runtime.locale_choice() is None
        await runtime.locale_seen("zh-CN")
        assert await runtime.person_locale() == "zh-CN"
        await runtime.choose_locale("en")
        assert (await runtime.locale_choice(), await runtime.person_locale()) == ("en", "en")
        with pytest.raises(ValueError, match="not a shipped language"):
            await runtime.choose_locale("fr")
        with pytest.raises(ValueError, match="not a shipped language"):
            await runtime.locale_seen("de")
        assert await runtime.locale_choice() == "en"  # nothing changed by the refusals
    finally:
        await runtime.close()
    assert [e for e in heard if isinstance(e, LocaleChosen)] == [LocaleChosen("en")]

    again = Runtime(tmp_path)
    await again.open()
    try:
        assert await again.locale_choice() == "en"
        await again.choose_locale(None)
        assert (await again.locale_choice(), await again.person_locale()) == (None, "zh-CN")
    finally:
        await again.close()
