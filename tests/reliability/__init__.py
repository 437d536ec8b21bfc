"""The reliability harness (issue 11): crashes, dropped links, load, fuzzing and log
hygiene, each checked against the invariants in docs/reliability.md."""
