"""The checks of the options, run before any command (:func:`check_options`).

Every number against its range, the columns named, and the options that the command would
ignore refused (rather than nothing done with them), whichever command declared them; each
message names the option, its value and what it accepts. Imported when ``uqx`` starts:
numpy and the library are imported inside the checks that need them.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from uqx.cli.commands._console import cli_message
from uqx.cli.commands._inputs import input_kind
from uqx.engine.defaults import INTEGER_MINIMA, MINIMA_WHY
from uqx.errors import InputError

__all__ = ["check_options", "OPTION_RANGES", "OPTION_MINIMA"]


#: Accepted ranges of the numeric options, by argparse ``dest``: (low, high, inclusive
#: low, what). Checked by :func:`check_options` before any command runs.
OPTION_RANGES = {
    "min_uE_rel_sd": (0.0, float("inf"), True, "a relative threshold >= 0"),
    "threshold": (0.0, float("inf"), True, "a |z| threshold >= 0"),
    "dpi": (20.0, 1200.0, True, "between 20 and 1200 dots per inch"),
    "font_size": (4.0, 72.0, True, "between 4 and 72 points"),
    "nu": (2.0, float("inf"), False, "> 2 (a unit-variance Student t needs nu > 2)"),
}

#: ``--nu`` of the studies whose nu is not (only) that of a Student t, by study name and
#: scenario (None: any): ``pval`` takes nu_IG > 0 for NIG (001 Fig. 4's grid is 2-10) and
#: the t errors' nu_D > 2 for TIG; ``appendix-b`` the shape of its IG variances.
_STUDY_NU_RANGES = {
    "pval": {
        "NIG": (0.0, float("inf"), False, "> 0 for NIG (nu_IG, the shape of the inverse "
                "gamma variances)"),
        "TIG": (2.0, float("inf"), False, "> 2 for TIG (a unit-variance Student t needs "
                "nu > 2)"),
    },
    "appendix-b": {None: (0.0, float("inf"), False, "> 0 (the shape of the inverse gamma "
                          "distribution of the variances)")},
}

#: Integer options that must be at least this (argparse ``dest``: minimum): the rule of
#: :class:`uqx.workflow.settings.Settings`, read here so that the command line and
#: :func:`uqx.validate` refuse the same values.
OPTION_MINIMA = dict(INTEGER_MINIMA)

#: Why an integer option has its minimum, where the bare number does not say it.
_MINIMA_WHY = {k: v.replace("conditional=False", "--no-conditional")
               for k, v in MINIMA_WHY.items()}

#: Options of a validation run, with their flags: ignored with a saved result or
#: (the conditional ones) with ``--no-conditional``.
_CONDITIONAL_FLAGS = ("--cond-bins", "--cond-n-boot", "--cond-ci", "--extrapolation-n-mc")
_VALIDATION_FLAGS = ("--stats", "--n-boot", "--n-mc", "--seed", "--nu", "--alpha", "--pop-min",
                     "--bins", "--binning", "--ties", "--no-conditional", *_CONDITIONAL_FLAGS)


#: What ``--X`` and ``--V`` name, for the messages.
_FEATURES = {"X": "input feature", "V": "predicted value"}


def _given(argv, flag: str) -> bool:
    """Tell whether ``flag`` is on the command line.

    As ``--flag VALUE``, ``--flag=VALUE`` or an abbreviation that argparse accepted
    (``--cond-b 5``).
    """
    for a in argv:
        name = a.split("=", 1)[0]
        if name.startswith("--") and len(name) > 3 and flag.startswith(name):
            return True
    return False


def check_options(args, argv=()) -> None:
    """Refuse option values that cannot mean anything, and options that would be ignored.

    Run by :func:`uqx.cli.app.main` before any command: every number is checked against
    :data:`OPTION_RANGES` / :data:`OPTION_MINIMA` (NaN and infinities refused; ``--nu``
    of ``uqx sweep pval`` and ``appendix-b`` by its own range, per scenario), the
    comma-separated ``--levels`` must lie in (0, 1), ``--stats`` must name a statistic,
    ``--E`` and ``--uE`` must differ, ``--X`` and ``--V`` must be neither of them, and an
    option that the command would ignore (conditional options with ``--no-conditional``,
    validation options with a saved result, ``--data-dir`` when no input is a
    registered dataset) is an error rather than nothing.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of one command.
    argv : sequence of str
        The command line (to tell an option given from its default).

    Raises
    ------
    InputError
        The message names the option, its value and what it accepts.
    """
    argv = [str(a) for a in (argv or ())]
    _check_ranges(args)
    _check_minima(args)
    _check_levels(args)
    _check_stats(args)
    _check_columns(args)
    _check_conditional(args, argv)
    _check_data_dir(args)
    if not _check_saved_result(args, argv):
        _warn_small_settings(args)


def _flag(key: str) -> str:
    """Return the option of an argparse ``dest``, for the messages (``--dpi``)."""
    return "--min-uE-rel-sd" if key == "min_uE_rel_sd" else "--" + key.replace("_", "-")


def _ranges(args) -> list:
    """Return the ranges to check, as ``(dest, (low, high, inclusive low, what))``.

    :data:`OPTION_RANGES`, with the ``--nu`` of ``uqx sweep pval`` and ``appendix-b``
    replaced by the range of each scenario asked for.
    """
    checks = list(OPTION_RANGES.items())
    study = getattr(args, "study", None) if getattr(args, "command", None) == "sweep" else None
    if study in _STUDY_NU_RANGES:  # per command and scenario: not every nu is a Student t's
        by_scenario = _STUDY_NU_RANGES[study]
        checks = [(k, r) for k, r in checks if k != "nu"]
        for s in dict.fromkeys(getattr(args, "scenario", None) or [None]):
            rng = by_scenario.get(s, by_scenario.get(None))
            if rng is not None:  # an unknown scenario: the study names it
                checks.append(("nu", rng))
    return checks


def _check_ranges(args) -> None:
    """Every number (or each of a list) within its range; NaN and infinities refused."""
    for key, (lo, hi, incl, what) in _ranges(args):
        value = getattr(args, key, None)
        for v in value if isinstance(value, list | tuple) else [value]:
            if v is None or not isinstance(v, int | float):
                continue
            v = float(v)
            if (math.isnan(v) or (math.isinf(v) and not (key == "nu" and v > 0))
                    or v < lo or (v == lo and not incl) or v > hi):
                raise InputError(f"{_flag(key)} must be {what}, got {v:g}")


def _check_minima(args) -> None:
    """Every integer option at least its minimum (:data:`OPTION_MINIMA`)."""
    for key, low in OPTION_MINIMA.items():
        v = getattr(args, key, None)
        if v is not None and int(v) < low:
            why = f" ({_MINIMA_WHY[key]})" if key in _MINIMA_WHY else ""
            raise InputError(f"{_flag(key)} must be an integer >= {low}, got {v}{why}")


def _check_levels(args) -> None:
    """``--levels``: comma-separated numbers, each strictly between 0 and 1."""
    levels = getattr(args, "levels", None)
    if not isinstance(levels, str):
        return
    try:
        vals = [float(x) for x in levels.split(",")]
    except ValueError:
        raise InputError(f"--levels: expected comma-separated numbers, got {levels!r}"
                         ) from None
    bad = [x for x in vals if not (0.0 < x < 1.0)]
    if bad:
        raise InputError(f"--levels are probabilities, each strictly between 0 and 1 "
                         f"(0.95 for 95 %), got {bad[0]:g}")


def _check_stats(args) -> None:
    """``--stats``: at least one name, and no empty name between commas."""
    stats = getattr(args, "stats", None)
    if isinstance(stats, str) and not [s for s in stats.split(",") if s.strip()]:
        raise InputError("--stats is empty: name at least one statistic (e.g. --stats zms,rce)"
                         " or leave the option out for the default ones")
    if isinstance(stats, str) and any(not s.strip() for s in stats.split(",")):
        raise InputError(f"--stats {stats!r}: empty name between commas")


def _check_columns(args) -> None:
    """``--E`` and ``--uE`` name two columns; ``--X`` and ``--V`` neither of them."""
    E, uE = getattr(args, "E", None), getattr(args, "uE", None)
    if E is not None and E == uE:
        raise InputError(f"--E and --uE name the same column {E!r}: Z = E/uE would be 1 on "
                         "every row; name the error column and the uncertainty column")
    for key in ("X", "V"):
        col = getattr(args, key, None)
        for flag, other in (("--E", E), ("--uE", uE)):
            if col is not None and col == other:
                raise InputError(f"--{key} names the column {col!r}, which is {flag}: the "
                                 f"{_FEATURES[key]} must be another column than the errors "
                                 f"and the uncertainties; name it, or leave --{key} out")


def _check_conditional(args, argv) -> None:
    """No option of the conditional routes with ``--no-conditional``, which skips them."""
    if getattr(args, "no_conditional", False):
        extra = [f for f in _CONDITIONAL_FLAGS if _given(argv, f)]
        if extra:
            raise InputError(f"{', '.join(extra)} set(s) up the conditional routes, which "
                             "--no-conditional skips: leave out one or the other")


def _check_data_dir(args) -> None:
    """No ``--data-dir`` where no input is a registered dataset (:func:`_data_dir_applies`)."""
    data_dir = getattr(args, "data_dir", None)
    if data_dir is not None and not _data_dir_applies(args):
        names = [str(s) for s in [*(getattr(args, "inputs", None) or []),
                                  *(getattr(args, "data", None) or [])]]
        raise InputError(f"--data-dir {data_dir} locates the registered literature data sets "
                         f"('uqx datasets list'), but no input here is one (files: "
                         f"{', '.join(names)}): leave --data-dir out")


def _check_saved_result(args, argv) -> bool:
    """No validation option with a saved result (``uqx report RESULT.nc``).

    Returns whether an input of ``uqx report`` is a saved result.
    """
    if getattr(args, "command", None) != "report":
        return False
    from uqx.dataio.netcdf import NETCDF_SUFFIXES, netcdf_kind

    saved = [s for s in getattr(args, "inputs", None) or []
             if Path(str(s)).suffix.lower() in NETCDF_SUFFIXES and netcdf_kind(s) == "result"]
    if saved:
        extra = [f for f in _VALIDATION_FLAGS if _given(argv, f)]
        if extra:
            raise InputError(f"{', '.join(extra)} set(s) up a validation, but {saved[0]} is a "
                             "saved result (already validated; its settings are kept): leave "
                             "them out, or run 'uqx report INPUT...' on the data to validate "
                             "again")
    return bool(saved)


def _warn_small_settings(args) -> None:
    """Warn, after ``uqx validate`` or ``uqx report`` has run, of too few draws."""
    if getattr(args, "command", None) not in ("validate", "report"):
        return
    from uqx._checks import small_settings_note

    text = small_settings_note(getattr(args, "n_boot", None), getattr(args, "n_mc", None))
    if text and callable(getattr(args, "_run", None)):
        args._run = _warn_after(args._run, f"uqx: warning: {cli_message(text)}")


def _data_dir_applies(args) -> bool:
    """Tell whether a command reads ``--data-dir``.

    It does for a registered dataset among the inputs (or the ``--data`` of a saved
    result), for ``--paper-sets``, and in the commands that read the directory itself.
    """
    if (getattr(args, "command", None) in ("datasets", "demo")
            or getattr(args, "paper_sets", False)):
        return True
    names = [*(getattr(args, "inputs", None) or []), *(getattr(args, "data", None) or [])]
    # no input at all: the command says what it needs (a study: its default sets)
    return not names or any(input_kind(n) == "dataset" for n in names)


def _warn_after(run, text: str):
    """Wrap a command's ``run``: print ``text`` on stderr once it has succeeded."""

    def wrapped(args):
        status = run(args)
        print(text, file=sys.stderr)
        return status

    return wrapped
