"""The settings of :func:`uqx.validate`, in groups that check themselves.

Like scipy's ``BootstrapMethod`` and ``MonteCarloMethod``, each group is a small frozen
dataclass: :class:`Bootstrap`, :class:`Copies`, :class:`Binning`, :class:`Conditional`,
:class:`Decision` and :class:`Compute`. :func:`uqx.validate` takes one of each
(``bootstrap=uqx.Bootstrap(n_boot=500)``), or where it is natural a plain value for the
group's first field (``bootstrap=500``, ``copies=1000``, ``binning=10``,
``conditional=False``); :func:`as_group` turns either into the group, and
:func:`flat_settings` the groups into the keywords of the flat
:class:`uqx.workflow.settings.Settings` that the steps read.

Every field is checked by one rule (:func:`check_values`), the same for a group, for
the flat settings and for the command line, with the same messages. A field's
``metadata`` holds its command-line option where ``uqx validate`` has one (``flag``,
``help`` and the argparse keywords): the options are generated from these declarations
(:func:`cli_options`), so that their defaults and help cannot drift from the API's.

This module imports no numerical library: ``uqx validate --help`` reads it.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import numbers
from dataclasses import MISSING, dataclass, field, fields

from uqx.engine.defaults import (
    ALPHA_RESULT,
    COND_CI,
    INTEGER_MINIMA,
    LEVEL,
    MINIMA_WHY,
    N_BOOT,
    N_MC,
    N_TEST,
    NU,
    POP_MIN,
    SCHEMES,
    TIES,
)
from uqx.errors import InputError
from uqx.progress import check_scheduler

__all__ = ["Bootstrap", "Copies", "Binning", "Conditional", "Decision", "Compute", "GROUPS",
           "as_group", "flat_settings", "check_values", "grouped_keywords", "cli_options",
           "from_options"]


def _cli(flag: str, help: str, **argparse) -> dict:
    """Return the ``metadata`` of a field that ``uqx validate`` has as an option."""
    return {"flag": flag, "help": help, "argparse": argparse}


# ----------------------------------------------------------------------------- checks


def _check_integer(name: str, v) -> None:
    low = INTEGER_MINIMA[name]
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
        why = f": {MINIMA_WHY[name]}" if name in MINIMA_WHY else ""
        raise InputError(f"{name} must be an integer >= {low}, got {v!r}{why}")


def _check_level(v) -> None:
    if not (isinstance(v, numbers.Real) and 0.0 < float(v) < 1.0):
        raise InputError(f"level must be in (0, 1), got {v!r}")


def _check_alpha(v) -> None:
    if not (isinstance(v, numbers.Real) and 0.0 < float(v) < 0.5):
        raise InputError(f"alpha (the family-wise level of the verdicts) must be in "
                         f"(0, 0.5), got {v!r}")


def _check_nu(v) -> None:
    # the scalar case of uqx.engine.generators.check_student_nu (numba: not imported here),
    # with its message
    try:
        ok = v is not None and float(v) > 2
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"unit-variance Student t needs nu > 2, got {v}")


def _check_binning(v) -> None:
    if v not in SCHEMES:
        raise InputError(f"unknown binning scheme {v!r}; choose one of {', '.join(SCHEMES)}")


def _check_ties(v) -> None:
    if v not in TIES:
        raise InputError(f"ties must be one of {', '.join(TIES)}, got {v!r}")


def _check_cond_ci(v) -> None:
    if v not in COND_CI:
        raise InputError(f"cond_ci must be {', '.join(COND_CI[:-1])} or {COND_CI[-1]}, "
                         f"got {v!r}")


def _check_tolerance(t) -> None:
    if t is not None and not (isinstance(t, numbers.Real) and math.isfinite(t) and t > 0):
        raise InputError(f"tolerance must be a positive number (e.g. 0.1: uE right on "
                         f"average within 10 %), got {t!r}")


#: The optional integer settings (None: a default chosen per run).
_OPTIONAL_INTEGERS = ("bins", "cond_bins", "cond_n_boot", "extrapolation_n_mc")

#: The checks of the other settings, by flat name, in the order they run.
_CHECKS = {"level": _check_level, "alpha": _check_alpha, "nu": _check_nu,
           "binning": _check_binning, "ties": _check_ties, "cond_ci": _check_cond_ci}


def check_values(values: dict) -> None:
    """Check settings by their flat names: the one rule of the groups and of ``Settings``.

    Every integer against :data:`uqx.engine.defaults.INTEGER_MINIMA` (None allowed for
    the optional ones), then ``level``, ``alpha``, ``nu``, ``binning``, ``ties``,
    ``cond_ci``, ``scheduler`` with ``num_workers``, ``tolerance``; a name not in
    ``values`` is not checked.

    Parameters
    ----------
    values : dict
        Flat setting name (``n_boot``, ``binning``...) -> value.

    Raises
    ------
    InputError
        The first value refused, named, with what it accepts.
    """
    for name in INTEGER_MINIMA:
        if name in values and not (values[name] is None and name in _OPTIONAL_INTEGERS):
            _check_integer(name, values[name])
    for name, check in _CHECKS.items():
        if name in values:
            check(values[name])
    if "scheduler" in values or "num_workers" in values:
        check_scheduler(values.get("scheduler"), values.get("num_workers"))
    if "tolerance" in values:
        _check_tolerance(values["tolerance"])


# ----------------------------------------------------------------------------- groups


class _Group:
    """What the groups share: their check, their flat names, their one-value form."""

    #: The parameter of :func:`uqx.validate` that takes the group.
    param: str = ""
    #: Field name -> flat setting name, where they differ.
    _flat: dict = {}
    #: Types a plain value may have for the group's first field (none: no plain form).
    _plain: tuple = ()
    #: What the plain value means, in the messages.
    _plain_means: str = ""

    def __post_init__(self):
        """Check every field by :func:`check_values` (messages name the flat setting)."""
        check_values(self.flat())

    def flat(self) -> dict:
        """Return the group's fields under the names of the flat ``Settings``."""
        return {self._flat.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Bootstrap(_Group):
    """The bootstrap of the statistics' confidence intervals.

    ``bootstrap=500`` in :func:`uqx.validate` means ``Bootstrap(n_boot=500)``.

    Parameters
    ----------
    n_boot : int, default 10000
        Bootstrap replicates of the BCa intervals, shared by all statistics (at least 2).
    level : float, default 0.95
        Confidence level of the intervals, and only of them (in (0, 1)); the verdicts'
        level is :attr:`Decision.alpha`.
    """

    param = "bootstrap"
    _plain = (numbers.Integral,)
    _plain_means = "n_boot"

    n_boot: int = field(default=N_BOOT, metadata=_cli(
        "--n-boot", "bootstrap replicates", type=int))
    level: float = LEVEL


@dataclass(frozen=True)
class Copies(_Group):
    """The calibrated copies of the Monte-Carlo tests and the simulated references.

    ``copies=1000`` in :func:`uqx.validate` means ``Copies(n_mc=1000)``.

    Parameters
    ----------
    n_mc : int, default 10000
        Simulated data sets per generative distribution (member of the null family) for
        the references (at least 2); the verdicts' tests read the first
        ``min(n_mc, 1000)`` of them.
    nu : float, default 6
        Degrees of freedom of the Student generative distribution t_s(ν) (> 2).
    simulate_all : bool, default False
        Also simulate the references of statistics with a predefined one (000 Table A1).
    extrapolation_n_mc : int, optional
        Calibrated copies per distribution for the zero-bin extrapolation null (at least
        2; default ``min(n_mc, 500)``: :data:`uqx.engine.mctest.N_HEADLINE`).
    """

    param = "copies"
    _plain = (numbers.Integral,)
    _plain_means = "n_mc"

    n_mc: int = field(default=N_MC, metadata=_cli(
        "--n-mc", "simulated data sets per reference; the verdicts' tests read the first "
        f"min(--n-mc, {N_TEST}) of them (more serve the papers' references)", type=int))
    nu: float = field(default=NU, metadata=_cli(
        "--nu", "Student t_s(nu) reference", type=float))
    simulate_all: bool = False
    extrapolation_n_mc: int | None = field(default=None, metadata=_cli(
        "--extrapolation-n-mc", "calibrated copies per distribution for the zero-bin "
        "extrapolation null (at least 2; default: min(--n-mc, 500))", type=int))


@dataclass(frozen=True)
class Binning(_Group):
    """The rows of each set and their bins: the binned statistics' bins on uE, X, V.

    ``binning=10`` in :func:`uqx.validate` means ``Binning(bins=10)``.

    Parameters
    ----------
    bins : int, optional
        Bins of the binned statistics (at least 1; default 20, capped silently where a
        bin would hold fewer than ``pop_min`` points; where given and a set gets fewer,
        its warnings say so; the bins used are in ``n_bins_used``).
    scheme : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme of the binned statistics.
    pop_min : int, default 30
        Minimal number of points per bin (binned statistics and LZISD; at least 1).
    ties : {"content", "file-order"}, default "content"
        Order of the rows before anything is computed. ``"content"``: rows in the order
        of uE, tie groups ordered by a hash of each row
        (:func:`uqx.engine.binning.content_order`), so every output is a function of the
        set of rows (any permutation of the input gives the same result, bit for bit).
        ``"file-order"``: rows in the stable order of uE, tie groups in input order (R
        ``order()``, the papers' convention; ``uqx validate --paper-sets`` uses it);
        ties of X and V are then split in that order. Without ties in uE both give the
        same output. Input streamed from disk is always read in file order.
    drop_nonfinite : bool, default False
        Drop (and count) rows with NaN/inf instead of raising :class:`uqx.InputError`.
    """

    param = "binning"
    _flat = {"scheme": "binning"}
    _plain = (numbers.Integral,)
    _plain_means = "bins"

    bins: int | None = None
    scheme: str = "equal-count"
    pop_min: int = field(default=POP_MIN, metadata=_cli(
        "--pop-min", "minimal number of points per bin (binned statistics and LZISD)",
        type=int))
    ties: str = field(default="content", metadata=_cli(
        "--ties", "how rows with equal uE (or X, V) are split between bins: 'content' (by "
        "a hash of each row, so the result does not depend on the order of the rows) or "
        "'file-order' (ties in the order of the file, the papers' R convention; rows are "
        "sorted by uE either way, so without ties both give the same output); default: "
        "content, or file-order with --paper-sets", choices=list(TIES), default=None))
    drop_nonfinite: bool = False


@dataclass(frozen=True)
class Conditional(_Group):
    """The conditional routes: LZISD per bin and the zero-bin extrapolation.

    ``conditional=False`` in :func:`uqx.validate` means ``Conditional(enabled=False)``
    (the routes skipped), ``conditional=True`` the default.

    Parameters
    ----------
    enabled : bool, default True
        Run the conditional routes: LZISD per bin with the fraction of valid bins, and
        the zero-bin extrapolation of ENCE, ZMSE, ZVE, on uE and on X / V when present.
    cond_bins : int, optional
        Bins of the LZISD analysis (at least 2; default per set: ErrViewLib's
        max(min(floor(M/150), 15), 2)).
    cond_n_boot : int, optional
        Bootstrap replicates of the LZISD intervals (at least 2; default
        ``min(n_boot, 5000)``).
    cond_ci : {"auto", "bootstrap", "cho"}, default "auto"
        LZISD per-bin intervals: BCa from shared resamples, the analytic 'cho' interval
        (methods page, Binned statistics), or 'cho' when every bin holds at least 400
        points (``"auto"``).
    """

    param = "conditional"
    _flat = {"enabled": "conditional"}
    _plain = (bool,)
    _plain_means = "enabled"

    enabled: bool = field(default=True, metadata={**_cli(
        "--no-conditional", "skip the conditional routes (LZISD bins, zero-bin "
        "extrapolation)", action="store_true", dest="no_conditional"), "inverted": True})
    cond_bins: int | None = field(default=None, metadata=_cli(
        "--cond-bins", "LZISD bins per set (default: max(min(M // 150, 15), 2) per set)",
        type=int))
    cond_n_boot: int | None = field(default=None, metadata=_cli(
        "--cond-n-boot", "LZISD bootstrap replicates (default: min(--n-boot, 5000))",
        type=int))
    cond_ci: str = field(default="auto", metadata=_cli(
        "--cond-ci", "LZISD per-bin intervals (auto: 'cho' when every bin has >= 400 "
        "points)", choices=list(COND_CI)))


@dataclass(frozen=True)
class Decision(_Group):
    """How the verdicts are decided and what they state beyond themselves.

    Parameters
    ----------
    alpha : float, default 0.10
        Family-wise level of each set's verdicts (in (0, 0.5)): a calibrated set reads
        ``invalid`` anywhere in its result at most this often (the nodes of
        :mod:`uqx.engine.questions` share it).
    resolution : bool, default True
        State each test's resolution (the smallest miscalibration it detects with 80 %
        power: :mod:`uqx.workflow.resolutions`; variables ``resolution_*`` and
        ``question_resolution_*``). ``False`` leaves them NaN and changes no verdict.
    tolerance : float, optional
        An equivalence claim on the scale of uE (a positive number T): with ZMS among the
        statistics, say whether the data show the factor f = √ZMS inside
        [1/(1 + T), 1 + T] (``scale_within_tolerance``), by two one-sided Monte-Carlo
        tests of the edges under every member of the null family
        (:func:`uqx.workflow.recalibration.tolerance_step`).
    """

    param = "decision"

    alpha: float = field(default=ALPHA_RESULT, metadata=_cli(
        "--alpha", "family-wise level of each set's verdicts: a calibrated set reads "
        "invalid anywhere in its result at most this often (the intervals keep their "
        "95 %%)", type=float))
    resolution: bool = True
    tolerance: float | None = field(default=None, metadata=_cli(
        "--tolerance", "equivalence claim on the scale of uE: say whether the data show "
        "the factor f = sqrt(ZMS) inside [1/(1+T), 1+T] (two one-sided tests under every "
        "member of the null family; e.g. 0.1: the average scale of uE right within "
        "10 %%; says nothing of consistency)", type=float, metavar="T"))


@dataclass(frozen=True)
class Compute(_Group):
    """How a run computes: the root of its random streams, where, and what it shows.

    The numbers depend on ``seed`` only, never on the scheduler or its workers.

    Parameters
    ----------
    seed : int, optional
        Root seed of every random stream (a non-negative integer; recorded in the
        result's ``attrs["seed"]``; drawn when omitted). The streams are keyed by the
        data's content, not by the set's name.
    scheduler : str, dask.distributed.Client, callable or None, default None
        Dask scheduler of the computations (None: threads).
    num_workers : int, optional
        Its number of workers (a positive integer).
    progress : bool, optional
        One display of the steps, ``step k of n`` with the time left
        (:func:`uqx.progress.steps_progress`), on stderr or in a notebook's output. None
        (default): on a terminal or in a notebook only; True: always; False: never (also
        ``UQX_PROGRESS=0``).
    """

    param = "compute"

    seed: int | None = field(default=None, metadata=_cli(
        "--seed", "root seed (drawn when not given)", type=int))
    scheduler: object = None
    num_workers: int | None = None
    progress: bool | None = None

    def __post_init__(self):
        """Check the seed (a non-negative integer or None), then the other fields."""
        s = self.seed
        if s is not None and (isinstance(s, bool) or not isinstance(s, numbers.Integral)
                              or s < 0):
            raise InputError(f"seed must be a non-negative integer, got {s!r}")
        super().__post_init__()


#: The groups in the order of :func:`uqx.validate`'s parameters.
GROUPS = (Bootstrap, Copies, Binning, Conditional, Decision, Compute)


def as_group(value, cls):
    """Return ``value`` as the group ``cls``: the group itself, None, or its plain form.

    Parameters
    ----------
    value : cls, None or a plain value
        None: the defaults (``cls()``); an instance of ``cls``: itself; a plain value of
        the group's plain types (an int for :class:`Bootstrap`, :class:`Copies`,
        :class:`Binning`, a bool for :class:`Conditional`): the group with its first
        field set to it.
    cls : type
        One of :data:`GROUPS`.

    Returns
    -------
    cls

    Raises
    ------
    TypeError
        Anything else, with the form to use.
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    plain = cls._plain
    ok = bool(plain) and isinstance(value, plain) and (
        bool in plain or not isinstance(value, bool))
    if ok:
        return cls(**{cls._plain_means: value})
    numpy_bool = (getattr(getattr(value, "dtype", None), "kind", None) == "b"
                  and getattr(value, "shape", None) == ())  # numpy.bool_
    if numpy_bool and bool in plain:
        return cls(**{cls._plain_means: bool(value)})
    kind = "a bool" if bool in plain else "an int"
    also = f" or {kind} (its {cls._plain_means})" if plain else ""
    hint = ""
    if isinstance(value, str) and cls is Binning:
        hint = f"; for the scheme: binning=uqx.Binning(scheme={value!r})"
    raise TypeError(f"{cls.param} takes a uqx.{cls.__name__}{also}, got {value!r}{hint}")


def flat_settings(bootstrap=None, copies=None, binning=None, conditional=None,
                  decision=None, compute=None) -> dict:
    """Return the groups (or their plain forms) as the flat ``Settings``' keywords.

    Parameters
    ----------
    bootstrap, copies, binning, conditional, decision, compute
        As :func:`uqx.validate` takes them (each turned into its group by
        :func:`as_group`).

    Returns
    -------
    dict
        Flat setting name -> value: every field of every group (``binning`` the scheme,
        ``conditional`` whether the routes run, ``bins`` None where not given).
    """
    out = {}
    for cls, value in zip(GROUPS, (bootstrap, copies, binning, conditional, decision,
                                   compute), strict=True):
        out.update(as_group(value, cls).flat())
    return out


# ------------------------------------------------------------ the old flat keywords

#: Each old keyword of :func:`uqx.validate` -> its group and its field there.
OLD_KEYWORDS = {f.name: (cls, f.name) for cls in GROUPS for f in fields(cls)}
OLD_KEYWORDS["n_bins"] = (Binning, "bins")
OLD_KEYWORDS["rng"] = (Compute, "seed")


def _example(cls, items: dict) -> str:
    """``bootstrap=uqx.Bootstrap(n_boot=500) (or bootstrap=500)`` for old keywords."""
    args = ", ".join(f"{name}={value!r}" for name, value in items.items())
    text = f"{cls.param}=uqx.{cls.__name__}({args})"
    (name, value), = list(items.items())[:1]
    if len(items) == 1 and name == cls._plain_means and isinstance(value, cls._plain):
        text += f" (or {cls.param}={value!r})"
    return text


def keyword_error(func_name: str, params, given: dict) -> TypeError:
    """Return the :class:`TypeError` of keywords a function does not take, and why.

    An old flat keyword of :func:`uqx.validate` names its group (``n_boot=500``:
    ``bootstrap=uqx.Bootstrap(n_boot=500) (or bootstrap=500)``; several of one group
    one example); a misspelt one the keyword it resembles and, where it is an old one,
    its group.

    Parameters
    ----------
    func_name : str
        The function, as the message names it.
    params : collection of str
        The keywords it takes.
    given : dict
        The keywords it does not take -> their values.

    Returns
    -------
    TypeError
    """
    parts, grouped, meant = [], {}, []
    for key, value in given.items():
        name = key
        if name not in OLD_KEYWORDS:
            close = difflib.get_close_matches(key, [*OLD_KEYWORDS, *params], n=1,
                                              cutoff=0.75)
            if not close:
                parts.append(f"{func_name}() got an unexpected keyword argument {key!r} "
                             f"(it takes {', '.join(params)})")
                continue
            name = close[0]
            parts.append(f"{func_name}() got an unexpected keyword argument {key!r}; did "
                         f"you mean {name}?")
            if name not in OLD_KEYWORDS:
                continue
        cls, fname = OLD_KEYWORDS[name]
        grouped.setdefault(cls, {})[fname] = value
    for cls, items in grouped.items():
        meant.append(f"{func_name}() takes its {cls.param} settings grouped: "
                     f"{_example(cls, items)}")
    return TypeError("; ".join(parts + meant))


def grouped_keywords(func):
    """Decorate a function that takes the groups: an old flat keyword gets a clear error.

    The wrapper keeps the function's signature (:func:`functools.wraps`), and before the
    call refuses the keywords that the function does not take (and that no ``**kwargs``
    of it would) with :func:`keyword_error` instead of Python's bare "unexpected keyword
    argument".

    Parameters
    ----------
    func : callable

    Returns
    -------
    callable
    """
    sig = inspect.signature(func)
    names = [p.name for p in sig.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        raise TypeError("grouped_keywords: a function with **kwargs forwards them")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        unknown = {k: v for k, v in kwargs.items() if k not in names}
        if unknown:
            raise keyword_error(func.__name__, names, unknown)
        return func(*args, **kwargs)

    return wrapper


# --------------------------------------------------------------- the command line


#: The order of the options in ``uqx validate --help`` (a declared option not named here
#: comes last).
CLI_ORDER = ("--n-boot", "--n-mc", "--seed", "--nu", "--alpha", "--pop-min", "--cond-bins",
             "--cond-n-boot", "--cond-ci", "--extrapolation-n-mc", "--tolerance", "--ties",
             "--no-conditional")


def cli_options() -> list:
    """Return the ``uqx validate`` options declared by the groups' fields, in order.

    Returns
    -------
    list of (str, dict)
        In the order of :data:`CLI_ORDER`: the flag and the keywords of
        ``argparse.ArgumentParser.add_argument``: ``help``, ``default`` (the field's,
        unless the declaration sets its own), ``dest`` (the flat setting's name) and the
        declared ``type``, ``choices``, ``action``, ``metavar``.
    """
    out = []
    for cls in GROUPS:
        for f in fields(cls):
            meta = f.metadata
            if "flag" not in meta:
                continue
            kw = {"help": meta["help"], **meta["argparse"]}
            kw.setdefault("dest", cls._flat.get(f.name, f.name))
            if kw.get("action") not in ("store_true", "store_false"):
                kw.setdefault("default", None if f.default is MISSING else f.default)
            out.append((meta["flag"], kw))
    rank = {flag: i for i, flag in enumerate(CLI_ORDER)}
    return sorted(out, key=lambda o: rank.get(o[0], len(rank)))


def from_options(args, **given) -> dict:
    """Return the groups of :func:`uqx.validate` from parsed ``uqx validate`` options.

    Each field declared as an option (:func:`cli_options`) reads its value from
    ``args`` (``--no-conditional`` inverted); ``given`` sets the other fields (or
    overrides one), by field name (the names are distinct across the groups).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options.
    **given
        Field name -> value (``bins``, ``scheme``, ``simulate_all``, ``ties``,
        ``progress``...).

    Returns
    -------
    dict
        Parameter of :func:`uqx.validate` (``bootstrap``...) -> its group.
    """
    out = {}
    for cls in GROUPS:
        kw = {}
        for f in fields(cls):
            meta = f.metadata
            if f.name in given:
                kw[f.name] = given[f.name]
            elif "flag" in meta:
                dest = meta["argparse"].get("dest", cls._flat.get(f.name, f.name))
                if hasattr(args, dest):
                    value = getattr(args, dest)
                    kw[f.name] = (not value) if meta.get("inverted") else value
        out[cls.param] = cls(**kw)
    return out
