"""`hyperion-console`: the Textual console over the headless core."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hyperion-console", description=__doc__)
    parser.add_argument("--cfg-dir", default="conf", help="directory of site YAML files")
    parser.add_argument("--checkpoint", help="open the Checkpoint screen on this checkpoint")
    parser.add_argument("--record", help="a q/NAME.submit.json record to watch / resubmit")
    parser.add_argument("--demo", action="store_true",
                        help="build a demo checkpoint with the local backend and open it")
    parser.add_argument("--demo-dir", help="where --demo builds (default ~/.cache/hyperion-console/demo)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from .app import make_app
    from .errors import describe_error
    try:
        app = make_app(cfg_dir=args.cfg_dir, checkpoint=args.checkpoint, record=args.record,
                       demo=args.demo, demo_dir=args.demo_dir)
    except Exception as exc:  # InputError and friends: one line, exit 2
        print(f"hyperion-console: error: {describe_error(exc)}", file=sys.stderr)
        return 2
    app.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
