"""A tab's pages of a conversation: the Runtime's rows as the shell shows them.

A page is a run of the conversation's rows in its order (``lineup.runtime.
timeline_pages``); here it becomes the loose rows the shell shows, the sub-session
groups whose hidden ``app_session.opened`` row falls in it (each group is placed where
it opened), and the bounds the tab pages on from. Hidden rows count for the bounds,
so no row between two pages is ever skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lineup.protocol import AppSessionOpenedEnvelope, decode
from lineup.runtime import Runtime, TimelineItem, TimelinePage

from .channel import AppSessionView, ItemView, RowBound
from .views import group_view, in_group, item_view

__all__ = ["PAGE", "PageView", "page_view"]

PAGE = 50
"""Rows per page (hidden rows included)."""

_OPENED = AppSessionOpenedEnvelope.__struct_config__.tag


@dataclass(frozen=True, slots=True)
class PageView:
    items: list[ItemView]
    groups: list[AppSessionView]
    first: RowBound | None
    last: RowBound | None


def _shown_rows(
    items: Iterable[TimelineItem], unread: frozenset[tuple[str, str]]
) -> list[ItemView]:
    """Loose timeline rows: interactions of a sub-session are shown in its group."""
    views = (
        item_view(i, unread=(i.conversation_id, i.envelope_id) in unread)
        for i in items
        if not in_group(i)
    )
    return [view for view in views if view is not None]


async def page_view(
    runtime: Runtime, page: TimelinePage, unread: frozenset[tuple[str, str]]
) -> PageView:
    """``page`` as the shell shows it, with the groups that opened in it."""
    opened = [
        envelope.payload.app_session_id
        for envelope in (decode(i.body) for i in page.items if i.type == _OPENED)
        if isinstance(envelope, AppSessionOpenedEnvelope)
    ]
    groups = await runtime.app_session_groups_by_id(opened) if opened else []
    return PageView(
        items=_shown_rows(page.items, unread),
        groups=[group_view(g) for g in groups],
        first=_bound(page.items[0]) if page.items else None,
        last=_bound(page.items[-1]) if page.items else None,
    )


def _bound(item: TimelineItem) -> RowBound:
    return RowBound(key=item.id, seq=item.seq)
