"""`python -m llmval check-inventory FILE...` validates inventories with the same validation pytest runs
(exit 0: all valid; 4: an invalid one, as pytest's usage error); `python -m llmval schema` prints the
inventory's JSON Schema (committed as inventories/inventory.schema.json for editors); `python -m llmval bench`
calibrates the perf instruments (`--calibrated`, `--ceiling`); `llmval init DIR --engine E` scaffolds an ops
repo; `llmval snapshot --inventory X [--replay DIR]... [--out FILE]` writes what the deployment shows as an
inventory and prints the diff against X; `llmval trend RESULTS... [--history DIR] [--out DIR]` draws the runs'
history as one HTML page (exit 4: a results file it cannot read)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pytest

from .. import DISTRIBUTION, __version__
from ..core.errors import InventoryError
from ..core.files import read_regular_text
from ..core.secrets import secret_problems
from ..engines import ADAPTERS
from ..inventory import MAX_INVENTORY_BYTES, inventory_json_schema, load_inventory

CONTRACT_HELP = """\
the contract itself runs under pytest (this command only prepares and inspects):
  llmval init . --engine vllm                 # inventory.toml, pytest.ini (llmval_inventory), CI, systemd
  pytest                                      # your tests and the whole contract (pytest.ini names the inventory)
  pytest -m smoke --wait-ready=300            # the after-reboot checks, once the stack answers
  pytest --inventory=inventory.toml -m smoke  # without the ini setting (write the path with '=')
  pytest --replay=rec/                        # judge a recording (--record=rec/) offline: reports/replay/
reports: reports/status.md, junit.xml, results.json (a replay's status under reports/replay/, a partial run's
under reports/partial/); options: pytest --help (group "llmval")"""


class _Version(argparse.Action):
    """`llmval --version`: one line, never wrapped (argparse's own version action wraps long paths)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object):
        super().__init__(option_strings, dest, nargs=0, help=kwargs.get("help"))  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object,
                 option_string: str | None = None) -> None:
        print(f"llmval {__version__} ({DISTRIBUTION}, {Path(__file__).resolve().parent.parent})")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llmval", description=__doc__, epilog=CONTRACT_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="print the version and where llmval is installed")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("schema", help="print the inventory JSON Schema")
    check = commands.add_parser("check-inventory", help="validate inventory files")
    check.add_argument("paths", nargs="+", metavar="FILE",
                       help="inventory TOML files (e.g. inventory.toml, as `llmval init` writes it)")
    commands.add_parser("bench", add_help=False,
                        help="calibrate the perf instruments (--calibrated, --ceiling; see bench --help)")
    snap = commands.add_parser("snapshot", help="read the deployment and write what it observed as an inventory")
    snap.add_argument("--inventory", default=None,
                      help="where to look: its hosts, transports, endpoints (default: inventory.toml, as "
                           "`llmval init` writes it, else inventories/local.toml of the checkout)")
    snap.add_argument("--replay", action="append", default=[], metavar="DIR",
                      help="answer from a recording instead of the live deployment (repeat to merge recordings)")
    snap.add_argument("--out", default=None, metavar="FILE",
                      help="write the observed inventory here: a new file (never the inventory read, never "
                           "through a link; an existing one only with --force)")
    snap.add_argument("--force", action="store_true",
                      help="let --out replace an existing file (kept beside it as FILE.bak-<UTC time>)")
    init = commands.add_parser("init", help="scaffold an ops repo: inventory, CI workflow, systemd smoke timer")
    init.add_argument("dir", nargs="?", default=".", help="the folder to write into (default: here)")
    init.add_argument("--engine", choices=list(ADAPTERS), help="the engine served (required)")
    # `--platform` was this option's first name; in the inventory `platform` groups hosts, so the option is
    # --engine, and the old name still works (with a note) for the scripts written against it
    init.add_argument("--platform", dest="engine_as_platform", choices=list(ADAPTERS), help=argparse.SUPPRESS)
    trend = commands.add_parser("trend", help="the deployment's history as one HTML page with plots (from results "
                                              "files)")
    trend.add_argument("results", nargs="*", metavar="RESULTS",
                       help="results files of the runs (reports/history/results-*.json, results.json)")
    trend.add_argument("--history", default=None, metavar="DIR",
                       help="also every results-*.json in DIR (reports/history)")
    trend.add_argument("--out", default="reports/trend", metavar="DIR",
                       help="where index.html and its plots go (default: reports/trend)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # its own parser (`python -m llmval bench --help`)
        from ..bench import main as bench_main

        return bench_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "schema":
        sys.stdout.write(inventory_json_schema())
        return 0
    if args.command == "snapshot":
        return _snapshot(args)
    if args.command == "init":
        return _init(args)
    if args.command == "trend":
        return _trend(args)
    status = 0
    for path in args.paths:
        try:
            inventory = load_inventory(path)
        except InventoryError as error:
            print(error, file=sys.stderr)
            status = int(pytest.ExitCode.USAGE_ERROR)
        else:
            if problems := secret_problems(inventory.model_dump(mode="json")):  # set, but too short to redact
                print(InventoryError(str(path), problems), file=sys.stderr)
                status = int(pytest.ExitCode.USAGE_ERROR)
                continue
            print(f"{path}: ok ({len(inventory.hosts)} hosts, {len(inventory.endpoints)} endpoints)")
    return status


def _init(args: argparse.Namespace) -> int:
    from .init import INI_SETTING, InitRefused, installed_source, pytest_config_of, scaffold

    engine = args.engine or args.engine_as_platform
    if engine is None or (args.engine and args.engine_as_platform and args.engine != args.engine_as_platform):
        print(f"llmval init: name the engine served: --engine {{{','.join(ADAPTERS)}}}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    if args.engine_as_platform:
        print("llmval init: --platform is now --engine (an inventory's `platform` is a group of hosts)",
              file=sys.stderr)
    own = pytest_config_of(Path(args.dir))  # before writing: the pytest.ini init writes is not the folder's own
    try:
        written = scaffold(Path(args.dir), engine)
    except (InitRefused, OSError) as error:
        print(f"llmval init: {error}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    for path in written:
        print(f"wrote {path}")
    if own is not None:
        print(f"{own} is this folder's pytest configuration: add `{INI_SETTING}` to its pytest section, so that "
              "every pytest run here runs the contract")
    source = installed_source()
    print(f"llmval installs in CI and the unit as: pip install {shlex.quote(source.requirement)}")
    if source.local_path is not None:
        print(f"note: that line {source.note()}")
    print(f"next: edit {written[0]}, then `llmval check-inventory {written[0]}` and "
          f"`llmval snapshot --inventory {written[0]}` to see what the deployment says; `pytest` runs it")
    return 0


def _trend(args: argparse.Namespace) -> int:
    from ..core.errors import LlmvalError
    from ..report.trend import read_runs, write_trend

    try:
        runs = read_runs([Path(p) for p in args.results], Path(args.history) if args.history else None)
        page = write_trend(runs, Path(args.out))
    except LlmvalError as error:  # an unreadable or newer results file, runs of two deployments, no folder
        print(f"llmval trend: {error}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    print(f"wrote {page.path} ({len(runs)} runs, {len(page.plots)} plots)")
    for history in page.flipped:
        word = "FLAKY" if history.is_flaky else "changed"
        print(f"  {word} {history.check} [{history.target}]: {history.flips} flip(s)")
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    from ..core.errors import LlmvalError
    from ..core.files import write_new
    from ..report.exitcodes import ExitCode
    from .snapshot import diff, placeholder_paths, render_diff, take, write_toml

    source = Path(args.inventory or ("inventory.toml" if Path("inventory.toml").is_file()
                                     else "inventories/local.toml"))
    try:
        _, snap = take(source, [Path(r) for r in args.replay])
    except InventoryError as error:
        print(error, file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    except LlmvalError as error:  # a recording folder that is not one
        print(f"llmval snapshot: {error}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    declared = read_regular_text(source, MAX_INVENTORY_BYTES)
    changes = diff(snap, placeholder_paths(declared))
    print(render_diff(changes))
    for what, why in snap.unread.items():
        print(f"  could not read     {what}: {why}")
    where = ", ".join(args.replay) if args.replay else "the live deployment"
    if not snap.observations:  # an empty recording, nothing answering: no reading to write, and not a success
        print(f"llmval snapshot: nothing could be read from {where} (looking where {source} says)"
              + (f"; {args.out} not written" if args.out else ""), file=sys.stderr)
        return int(ExitCode.COULD_NOT_CHECK)
    if args.out:
        text = write_toml(snap.inventory(changes), f"written by `llmval snapshot` from {where}, looking where "
                                                    f"{source} says", declared,
                          {obs.path: obs.source for obs in snap.observations},
                          [c for c in changes if c.kind == "differs"])
        try:
            backup = write_new(args.out, text, replace=args.force, protect=(source,))
        except OSError as error:
            print(f"llmval snapshot: --out {args.out}: {error.strerror or error}; nothing written", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
        rewritten = sum(c.rewrites for c in changes)
        kept = sum(c.kind == "filled" and not c.rewrites for c in changes)
        contradicted = sum(c.kind == "differs" for c in changes)
        print(f"wrote {args.out}: {rewritten} value(s) written from readings (the placeholder filled and added "
              f"lines above with a new value), {kept} placeholder(s) confirmed as written (the value stays, its "
              f"comment says where it was read), {contradicted} contradicted rule(s) kept with the reading as a "
              f"comment, every other value as {source} declares it"
              + (f"; the file it replaced is {backup}" if backup else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
