"""The timeline scrolls like a mature chat app, in a real Chromium: it opens at the
newest row; at the bottom it stays there as rows of changing height arrive; scrolled
up it does not move what the person reads and counts what came; a new question is
fully in view; an older page keeps the row under the eye; and a long live session
lets old rows go without losing any (scrolling back brings every one, in order)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page, expect
from playwright.async_api import TimeoutError as PlaywrightTimeout

from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in, tool_call
from tests.support.timeline import arrived, record_of, say
from tests.support.webhost import Client

# How far the end of the list is below the end of the scroller.
GAP = "() => { const t = document.getElementById('timeline');"
GAP += " return t.scrollHeight - t.scrollTop - t.clientHeight; }"


async def gap(page: Page) -> float:
    return float(await page.evaluate(GAP))


async def at_end(page: Page) -> None:
    """The scroller reaches (within a pixel) the end of the list, checked each frame."""
    try:
        await page.wait_for_function(f"() => ({GAP})() < 2", timeout=10_000)
    except PlaywrightTimeout:
        where = await page.evaluate(
            "() => { const t = document.getElementById('timeline'); return [t.scrollTop,"
            " t.scrollHeight, t.clientHeight, document.querySelectorAll('#items > li').length,"
            " document.getElementById('jump').textContent]; }"
        )
        raise AssertionError(f"not at the end: {await gap(page)} px short, {where}") from None


async def more_rows_than(page: Page, count: int) -> None:
    await page.wait_for_function(
        "(n) => document.querySelectorAll('#items > li.item').length > n",
        arg=count,
        timeout=10_000,
    )


async def row_top(page: Page, key: int) -> float:
    return float(
        await page.evaluate(
            '(key) => document.querySelector(`#items > li[data-key="${key}"]`)'
            ".getBoundingClientRect().top",
            key,
        )
    )


async def talk(client: Client, count: int, start: int = 0, *, long_every: int = 7) -> str:
    """The agent says ``count`` messages, some of them long; the last one's id."""
    last = ""
    for n in range(start, start + count):
        text = f"message {n}"
        if n % long_every == 0:
            text += "\n\n" + "\n\n".join(f"paragraph {p} of a long message" for p in range(6))
        last = await say(client, text)
    await arrived(client, last)
    return last


async def opened_after(page: Page, client: Client, count: int) -> None:
    """The agent says ``count`` messages, then the person logs in: at the newest."""
    await talk(client, count)
    await log_in(page, client)
    await at_the_end(page, f"message {count - 1}")


async def shown_keys(page: Page) -> list[int]:
    keys: list[Any] = await page.evaluate(
        "[...document.querySelectorAll('#items > li.item')].map((li) => Number(li.dataset.key))"
    )
    return [int(k) for k in keys]


async def at_the_end(page: Page, text: str) -> None:
    """The newest row says ``text`` and the scroller is at its end."""
    await expect(page.locator("#items > li.item").last).to_contain_text(text)
    await at_end(page)


OLDER_CAME = """(first) =>
  Number(document.querySelector("#items > li.item")?.dataset.key) !== first
  || document.getElementById("older").hidden"""
NEWER_CAME = """(last) =>
  Number(document.querySelector("#items > li.item:last-child")?.dataset.key) !== last"""


async def older_page_came(page: Page, first: int) -> None:
    """The first row is another (an older page came), or there is nothing older."""
    await page.wait_for_function(OLDER_CAME, arg=first, timeout=10_000)


async def newer_page_came(page: Page, last: int) -> None:
    await page.wait_for_function(NEWER_CAME, arg=last, timeout=10_000)


def contiguous(shown: list[int], record: list[int]) -> bool:
    """``shown`` is a run of the record, in order, nothing skipped or doubled."""
    if not shown or shown[0] not in record:
        return False
    start = record.index(shown[0])
    return record[start : start + len(shown)] == shown


async def test_it_opens_at_the_newest_row_and_stays_there_as_rows_grow(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await opened_after(page, client, 80)
    await page.reload()
    await at_the_end(page, "message 79")
    for n in range(80, 90):
        await say(client, f"message {n}" + ("\n\n" + "tall\n\n" * 8 if n % 3 == 0 else ""))
        await at_the_end(page, f"message {n}")
    # A row that grows after its first paint (an image that loads, a card that settles).
    await page.evaluate(
        "document.querySelector('#items > li.item:last-child .body').style.minHeight = '400px'"
    )
    await at_end(page)
    # The window narrows (a phone, a side panel): still the end.
    await page.set_viewport_size({"width": 420, "height": 700})
    await at_end(page)
    await screenshot("at-the-end-narrow")
    page_watch.assert_clean()


async def test_scrolled_up_it_stays_put_and_counts_what_came(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await opened_after(page, client, 60)
    # Scroll up, and return once the shell heard it (its scroll listener, added before
    # this one, lets go of the end): a row arriving before that counts as seen.
    await page.locator("#timeline").evaluate(
        """(t) => new Promise((done) => {
          t.addEventListener("scroll", () => done(), { once: true });
          t.scrollTop = t.scrollHeight / 3;
        })"""
    )
    keys = await shown_keys(page)
    reading = keys[len(keys) // 2]
    before = await row_top(page, reading)
    await talk(client, 5, start=60)
    await expect(page.locator("#items > li.item").last).to_contain_text("message 64")
    jump = page.locator("#jump")
    await expect(jump).to_be_visible()
    await expect(jump).to_have_text("5 new messages")
    assert abs(await row_top(page, reading) - before) < 1  # what they read did not move
    await tool_call(
        client,
        "interact.choice",
        {"prompt": "Pick one", "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]},
        "while-reading",
    )
    await expect(jump).to_have_text("6 new messages · a question is waiting")
    assert abs(await row_top(page, reading) - before) < 1
    await screenshot("reading-history-with-new-rows")
    await jump.click()
    await expect(jump).to_be_hidden()
    await at_end(page)
    await expect(page.get_by_role("button", name="Submit")).to_be_in_viewport()
    page_watch.assert_clean()


async def test_a_new_question_arrives_fully_in_view(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await opened_after(page, client, 40)
    options = [{"id": f"o{n}", "label": f"Option {n}"} for n in range(6)]
    await tool_call(client, "interact.choice", {"prompt": "Which one?", "options": options}, "q1")
    card = page.locator("#items > li.item.interaction").last
    await expect(card).to_contain_text("Which one?")
    await expect(card).to_be_in_viewport(ratio=1)
    await expect(card.get_by_role("button", name="Submit")).to_be_in_viewport(ratio=1)
    await screenshot("question-in-view")
    page_watch.assert_clean()


async def test_an_older_page_keeps_the_row_under_the_eye(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await opened_after(page, client, 170)
    older = page.locator("#older")
    for _ in range(3):
        await expect(older).to_be_visible()
        keys = await shown_keys(page)
        # Scroll near the top, as a person does, and note where the first row is on
        # screen before the page it asks for comes (the same task: no event ran yet).
        before = await page.evaluate(
            """(key) => {
              document.getElementById("timeline").scrollTop = 30;
              return document.querySelector(`#items > li[data-key="${key}"]`)
                .getBoundingClientRect().top;
            }""",
            keys[0],
        )
        await more_rows_than(page, len(keys))
        assert abs(await row_top(page, keys[0]) - before) < 2
        if await older.is_hidden():
            break
    await screenshot("older-page-kept-the-anchor")
    page_watch.assert_clean()


async def _count(page: Page) -> int:
    return len(await shown_keys(page))


async def test_a_long_live_session_lets_old_rows_go_and_brings_every_one_back(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    await talk(client, 420, long_every=50)
    await at_the_end(page, "message 419")
    held = await _count(page)
    assert held <= 240, f"{held} rows in the page: the window did not let old ones go"
    conversation = await chat_id(client)
    record = (await record_of(client.runtime, conversation)).keys
    assert await page.locator("#older").is_visible()
    seen = set(await shown_keys(page))
    for _ in range(30):
        if await page.locator("#older").is_hidden():
            break
        keys = await shown_keys(page)
        await page.locator("#timeline").evaluate("(t) => { t.scrollTop = 0; }")
        await older_page_came(page, keys[0])
        now = await shown_keys(page)
        assert contiguous(now, record) and len(now) <= 240, (now[:3], now[-3:])
        seen.update(now)
    await expect(page.locator("#older")).to_be_hidden()
    assert sorted(seen) == sorted(record)  # every row came back, each in its place
    top = await shown_keys(page)
    assert top == record[: len(top)]
    await screenshot("long-session-all-the-way-back")
    page_watch.assert_clean()


async def test_a_rejected_envelope_takes_its_place_as_a_safe_row(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    """The AppServer stores it; the Runtime refuses it (an app scope it does not know):
    the row says so with its code, between the rows around it, live and after a reload."""
    conversation = await chat_id(client)
    await log_in(page, client)
    await say(client, "before it")
    agent = client.pair.agent
    body = agent.envelope(conversation, kind="lineup.v1.message", payload={"text": "<b>secret</b>"})
    body["target"] = {"app_scope": "nope"}
    assert (await agent.post(conversation, body)).status_code == 201
    await talk(client, 1, start=1)
    for _ in range(2):
        rows = page.locator("#items > li.item")
        await expect(rows).to_have_count(3)
        await expect(rows.nth(1)).to_have_text(
            "This message could not be shown (app_scope_mismatch)."
        )
        await expect(rows.nth(0)).to_contain_text("before it")
        await expect(rows.nth(2)).to_contain_text("message 1")
        assert "secret" not in await page.locator("#items").inner_text()
        await page.reload()
    await screenshot("rejected-row")
    page_watch.assert_clean()


async def test_reading_far_back_lets_the_newest_go_and_the_way_down_brings_them_back(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await talk(client, 600, long_every=40)
    conversation = await chat_id(client)
    await log_in(page, client)
    await at_the_end(page, "message 599")
    older = page.locator("#older")
    for _ in range(40):
        if await older.is_hidden():
            break
        keys = await shown_keys(page)
        await page.locator("#timeline").evaluate("(t) => { t.scrollTop = 0; }")
        await older_page_came(page, keys[0])
        assert len(await shown_keys(page)) <= 240
    await expect(older).to_be_hidden()
    record = (await record_of(client.runtime, conversation)).keys
    top = await shown_keys(page)
    assert top == record[: len(top)] and len(top) <= 240
    # New rows while the person reads the start: counted, not put in.
    await talk(client, 3, start=600)
    jump = page.locator("#jump")
    await expect(jump).to_have_text("3 new messages")
    assert await shown_keys(page) == top
    await screenshot("far-back-with-new-rows")
    # Scrolling down pages forward, a window at a time, up to the newest.
    for _ in range(40):
        if "message 602" in (await page.locator("#items > li.item").last.inner_text()):
            break
        last = (await shown_keys(page))[-1]
        await page.locator("#timeline").evaluate("(t) => { t.scrollTop = t.scrollHeight; }")
        await newer_page_came(page, last)
        assert len(await shown_keys(page)) <= 240
    # Read to the end: the rows counted are seen, the control goes.
    await page.locator("#timeline").evaluate("(t) => { t.scrollTop = t.scrollHeight; }")
    await expect(jump).to_be_hidden()
    record = (await record_of(client.runtime, conversation)).keys
    down = await shown_keys(page)
    assert contiguous(down, record) and down[-1] == record[-1], (down[:3], down[-3:])
    # Back far up, then the control takes the person straight to the newest row.
    for _ in range(6):
        keys = await shown_keys(page)
        await page.locator("#timeline").evaluate("(t) => { t.scrollTop = 0; }")
        await older_page_came(page, keys[0])
    await talk(client, 1, start=603)
    await expect(jump).to_have_text("1 new message")
    await jump.click()
    await at_the_end(page, "message 603")
    await expect(jump).to_be_hidden()
    record = (await record_of(client.runtime, conversation)).keys
    newest = await shown_keys(page)
    assert newest == record[-len(newest) :]
    await screenshot("back-at-the-newest")
    page_watch.assert_clean()
