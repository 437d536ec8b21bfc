"""The credential and membership caches: expiry, eviction, answers."""

from __future__ import annotations

from lineup.server.caches import CredentialCache, MembershipCache
from lineup.server.storage import Principal


def test_credentials_expire_after_the_ttl_and_drop_at_once() -> None:
    now = [100.0]
    cache = CredentialCache(ttl=2.0, clock=lambda: now[0])
    alice = Principal("user", "u1")
    cache.put("h1", alice)
    assert cache.get("h1") == alice
    now[0] += 1.99
    assert cache.get("h1") == alice
    now[0] += 0.02
    assert cache.get("h1") is None
    cache.put("h2", alice)
    cache.drop("h2")
    assert cache.get("h2") is None


def test_caches_are_bounded() -> None:
    credentials = CredentialCache(max_entries=3)
    for n in range(10):
        credentials.put(f"h{n}", Principal("agent", f"a{n}"))
    assert [credentials.get(f"h{n}") is not None for n in range(10)] == [False] * 7 + [True] * 3
    members = MembershipCache(max_entries=2)
    for n in range(3):
        members.put(f"c{n}", "u", "a")
    assert members.is_member("c0", Principal("user", "u")) is None


def test_membership_answers_for_both_sides_and_strangers() -> None:
    members = MembershipCache()
    members.put("c1", "u1", "a1")
    assert members.is_member("c1", Principal("user", "u1")) is True
    assert members.is_member("c1", Principal("agent", "a1")) is True
    assert members.is_member("c1", Principal("user", "a1")) is False
    assert members.is_member("c1", Principal("agent", "u1")) is False
    assert members.is_member("c2", Principal("user", "u1")) is None
