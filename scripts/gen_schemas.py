"""Write the lineup.v1 JSON Schemas into docs/protocol/.

Run after changing a model in ``lineup.protocol`` or the release in
``lineup.delivery.release`` (``lineup.schema_files`` puts the set together);
``tests/protocol`` fails while the committed files differ from what the models
generate. ``--check`` only compares.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lineup.schema_files import render_schema_files

OUT_DIR = Path(__file__).resolve().parent.parent / "docs" / "protocol"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if any file is stale")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="target directory")
    args = parser.parse_args(argv)
    out: Path = args.out
    files = render_schema_files()
    stale = (
        sorted(p.name for p in out.glob("*.json") if p.name not in files) if out.is_dir() else []
    )
    changed = [
        name
        for name, text in files.items()
        if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
    ]
    if args.check:
        for name in changed + stale:
            print(f"stale: {out / name}", file=sys.stderr)
        return 1 if changed or stale else 0
    out.mkdir(parents=True, exist_ok=True)
    for name in changed:
        (out / name).write_text(files[name], encoding="utf-8", newline="\n")
    for name in stale:
        (out / name).unlink()
    print(f"{len(changed)} written, {len(stale)} removed, {len(files)} schemas in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
