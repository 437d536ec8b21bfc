"""Many conversations at once (issue 11, part 3): 200 users, each in a conversation
with one agent (the agent SDK, replying to every message), each sending 100 messages
over its own WebSocket while its link is cut at random; the agent replies to each.
Checks zero loss, zero duplicates and order in every conversation (from the
AppServer's log and from what each user received) and prints the round trip (a
user's send to the agent's reply on the user's stream), p50 and p99.

Run: ``.venv/bin/python benchmarks/conversation_load.py [--users 200] [--messages 100]
[--database postgresql://...] [--seed N]`` (about 2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.appserver import AppServerProcess  # noqa: E402
from tests.support.conversation_load import LoadBroken, run_load  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database", default=None, help="a postgresql:// URL [SQLite]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lineup-load-") as root:
        server = AppServerProcess(
            Path(root) / "data", Path(root) / "appserver.log", database=args.database
        )
        server.start()
        try:
            report = asyncio.run(
                run_load(server, users=args.users, messages=args.messages, seed=args.seed)
            )
        except LoadBroken as broken:
            print(f"BROKEN: {broken}", file=sys.stderr)
            return 1
        finally:
            server.stop()
    engine = "PostgreSQL" if args.database else "SQLite"
    print(f"AppServer on {engine}, one process; agent SDK in this process\n" + report.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
