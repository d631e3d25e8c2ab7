"""``python -m sim scenario show``: a scenario as commented TOML.

Prints the embedded default scenario, or ``--scenario FILE`` with any
``--set`` changes applied and validated, as TOML a user can save and load
back with ``--scenario`` (it reads back to the same scenario). Every key
carries its meaning, unit and allowed values as comments, taken from the
declarations in :mod:`model.scenario`, so the printout is also the
reference of the scenario language.
"""

from __future__ import annotations
from runio.inputs import load_scenario


def add_parsers(sub) -> None:
    s = sub.add_parser("scenario", help="print a scenario as commented TOML")
    acts = s.add_subparsers(dest="scenario_action", required=True)
    show = acts.add_parser("show", help="the default scenario (or --scenario/--set, resolved) "
                                        "as TOML with units and meanings")
    show.add_argument("--scenario", metavar="FILE.toml",
                      help="scenario TOML (default: the embedded FarReach rack)")
    show.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                      help="override a scenario key, e.g. servers=32 or storage.memtable_mb=16")


def run(args) -> int:
    from model.scenario import Scenario
    sc = load_scenario(args.scenario) if args.scenario is not None else Scenario.default()
    sc = sc.with_overrides(args.sets)
    origin = args.scenario or "the embedded default"
    if args.sets:
        origin += " with " + " ".join(f"--set {s}" for s in args.sets)
    header = (f"kvperf scenario '{sc.name}': {origin}, resolved.\n"
              "Save it and load it with: python -m sim predict --scenario FILE.toml\n"
              "Each key: its meaning, unit and allowed values (model/scenario.py).")
    print(sc.to_toml(header), end="")
    return 0
