"""``uqx datasets list|check|fetch``: the registry of literature datasets."""

from __future__ import annotations

import sys

from uqx.cli.commands._console import print_df
from uqx.cli.commands._options import HelpFormatter
from uqx.errors import InputError

NAME = "datasets"


def register(subparsers):
    """Add the ``datasets`` command."""
    p = subparsers.add_parser(
        NAME,
        help="list, check or download the literature datasets",
        description="List the registered literature datasets, check that their files "
        "are present with the right checksums, or download them from their Zenodo records "
        "(fetch NAME... or fetch --all).",
        formatter_class=HelpFormatter,
    )
    p.add_argument("action", choices=["list", "check", "fetch"], help="what to do")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="datasets to fetch or check (registry names or aliases), right "
                        "after the action")
    p.add_argument(
        "--data-dir", default=None, help="literature data directory (else $UQX_DATA_DIR)"
    )
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    g = p.add_argument_group("fetch")
    g.add_argument("--all", action="store_true", help="fetch every registered dataset")
    g.add_argument("--cache-dir", default=None,
                   help="download cache (else $UQX_CACHE_DIR, else the user cache of uqx)")
    g.add_argument("--url", default=None, metavar="BASE",
                   help="server laid out as Zenodo (else $UQX_DATASETS_URL, else "
                        "https://zenodo.org)")
    g.add_argument("--force", action="store_true",
                   help="download files that are already present and correct too")
    g.add_argument("--retries", type=int, default=3,
                   help="further attempts after a failed or corrupted download")
    return p


def _check(args) -> int:
    from uqx.dataio.datasets import check_datasets, get_spec

    df = check_datasets(args.data_dir)
    if args.names:
        wanted = {get_spec(n).name for n in args.names}
        df = df[df["name"].isin(wanted)]
    print_df(df.set_index("name"))
    bad = df[~(df["present"] & df["checksum_ok"].fillna(False).astype(bool))]
    if len(bad):
        hint = " ".join(bad["name"]) if len(bad) < len(df) or args.names else "--all"
        print(
            f"\n{len(bad)} of {len(df)} dataset file(s) missing or with a wrong checksum; "
            f"`uqx datasets fetch {hint}` downloads them",
            file=sys.stderr,
        )
        return 1
    print(f"\nall {len(df)} dataset files present, checksums OK")
    return 0


def _fetch(args) -> int:
    from uqx.dataio.fetch import fetch_datasets

    if args.retries < 0:
        raise InputError(f"--retries must be >= 0, got {args.retries}")
    quiet = bool(getattr(args, "quiet", False))
    df = fetch_datasets(args.names, args.data_dir, all=args.all, cache=args.cache_dir,
                        base_url=args.url, force=args.force, progress=not quiet,
                        retries=args.retries)
    if args.format == "json":
        print(df.to_json(orient="records", indent=1))
        return 0
    fetched = df[df["status"] == "fetched"]
    target = df["data_dir"].iloc[0] if len(df) else "?"
    for doi, group in fetched.groupby("source", sort=False):
        print(f"fetched {len(group)} file(s) from the Zenodo record {doi}")
    n_present = int((df["status"] == "present").sum())
    if n_present:
        print(f"{n_present} file(s) already present with the right checksum")
    print(f"all {len(df)} file(s) in {target}, SHA-256 checked; "
          f"`uqx datasets check --data-dir {target}` verifies them again")
    return 0


def run(args) -> int:
    """List the registry, check the files (status 1 when some are wrong), or fetch them."""
    from uqx.dataio.datasets import list_datasets

    if args.action == "fetch":
        return _fetch(args)
    if args.action == "check":
        return _check(args)
    df = list_datasets()
    if args.format == "json":
        print(df.to_json(orient="records", indent=1))
    else:
        print_df(df[["name", "family", "M", "file"]].set_index("name"))
    return 0
