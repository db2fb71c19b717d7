"""The variables of uqx's results: the name, dimensions and ``long_name`` of each, once.

Every step that builds a result reads its variables here, so does the NetCDF writer
(:func:`uqx.dataio.netcdf.to_netcdf` gives a variable that lost its ``long_name`` the one
declared here back) and the documentation (the page *Result variables* is generated from
:data:`GROUPS`).

* :class:`Variable` declares one variable: ``name``, ``dims``, ``long_name`` and the
  attributes that are the same in every result (``safety_limit``, ``power``, ``rule``).
  A ``long_name`` that depends on the call is a :meth:`str.format` template whose fields
  the step gives (``"BCa {level:.0%} lower limit"``: ``level=0.95``); attributes whose value
  depends on the call are named in ``given`` and given by the step as well.
  ``long_name=None``: the variable carries no ``long_name``.
* :class:`Group` holds the variables of one kind of result (:data:`VALIDATE` for
  :func:`uqx.validate`, ...): ``group.data_vars({name: values}, **fields)`` are the
  ``data_vars`` of an :class:`xarray.Dataset`, ``group.variable(name, values, **fields)``
  the ``(dims, values, attrs)`` of ``ds[name] = ...``, ``group.attrs(name, **fields)`` the
  attributes alone, ``group.annotate(ds)`` gives a built data set's variables theirs, and
  ``group.mismatches(ds)`` says what in a data set differs from the declarations (the
  tests read it).
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

import numpy as np

from uqx.engine.defaults import POWER
from uqx.engine.stats.tailedness import SAFETY_LIMITS, TAILEDNESS_KEYS

__all__ = [
    "Variable",
    "Group",
    "INPUT",
    "LITERATURE",
    "VALIDATE",
    "WARN_SEP",
    "split_warnings",
    "BOOTSTRAP",
    "BOOTSTRAP_PER_BIN",
    "SIMULATE_REFERENCE",
    "CALIBRATION_CURVE",
    "PICP",
    "LRR",
    "FITS",
    "STUDIES",
    "GROUPS",
    "group_of",
]


@dataclasses.dataclass(frozen=True)
class Variable:
    """One variable of a result: name, dimensions, ``long_name`` and fixed attributes.

    Parameters
    ----------
    name : str
        The variable's name in the data set.
    dims : tuple of str
        Its dimensions, in order.
    long_name : str or None
        Its CF ``long_name``; a :meth:`str.format` template when it has fields
        (``{level:.0%}``), which :meth:`attributes` fills; None: no ``long_name``.
    attrs : mapping, optional
        Attributes with the same value in every result (``safety_limit``, ``power``).
    given : tuple of str, optional
        Attributes whose value the call gives (``tolerance``): :meth:`attributes` asks
        for each.
    """

    name: str
    dims: tuple[str, ...]
    long_name: str | None
    attrs: Mapping[str, object] = dataclasses.field(default_factory=dict)
    given: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "dims", tuple(self.dims))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the fields of the ``long_name`` template (empty: a fixed text)."""
        if self.long_name is None:
            return ()
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.long_name) if f)

    def attributes(self, **values) -> dict:
        """Return the attributes: ``long_name`` (filled), the fixed ones, the given ones.

        Parameters
        ----------
        **values
            One value per template field (:attr:`fields`) and per name of ``given``.

        Returns
        -------
        dict
            A new dict, ``long_name`` first.

        Raises
        ------
        TypeError
            A field or given attribute missing, or a name that is neither.
        """
        wanted = set(self.fields) | set(self.given)
        if set(values) != wanted:
            raise TypeError(f"variable {self.name!r} takes {sorted(wanted)}, got "
                            f"{sorted(values)}")
        out = {} if self.long_name is None else {
            "long_name": self.long_name.format(**{f: values[f] for f in self.fields})}
        out.update(self.attrs)
        out.update((k, values[k]) for k in self.given)
        return out

    def matches(self, long_name) -> bool:
        """Whether ``long_name`` is this variable's (for some value of its fields)."""
        if self.long_name is None or long_name is None:
            return self.long_name is None and long_name is None
        pattern = "".join(re.escape(text) + ("(.+?)" if field else "")
                          for text, field, _, _ in string.Formatter().parse(self.long_name))
        return re.fullmatch(pattern, str(long_name), re.S) is not None


class Group(Mapping):
    """The variables of one kind of result, by name (a read-only mapping).

    Parameters
    ----------
    title : str
        What holds them (``"uqx.validate"``), the heading of the documentation's table.
    variables : iterable of Variable
        In the order the documentation lists them; names are unique.
    complete : bool, default True
        Whether every variable of such a result is declared (False: only the
        variables that carry a ``long_name``; :meth:`mismatches` skips the others).
    marker : str, optional
        A variable that tells this kind of result from the others of :data:`GROUPS`
        (:func:`group_of`).
    """

    def __init__(self, title: str, variables: Iterable[Variable], *, complete: bool = True,
                 marker: str | None = None):
        self.title, self.complete, self.marker = title, complete, marker
        self._vars: dict[str, Variable] = {}
        for v in variables:
            if v.name in self._vars:
                raise ValueError(f"{title}: variable {v.name!r} declared twice")
            self._vars[v.name] = v

    def __getitem__(self, name: str) -> Variable:
        return self._vars[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._vars)

    def __len__(self) -> int:
        return len(self._vars)

    def __repr__(self) -> str:
        return f"Group({self.title!r}, {len(self)} variables)"

    def attrs(self, name: str, **values) -> dict:
        """Return the attributes of variable ``name`` (:meth:`Variable.attributes`)."""
        return self[name].attributes(**values)

    def variable(self, name: str, values, **fields) -> tuple:
        """Return ``(dims, values, attrs)`` of variable ``name``, for ``ds[name] = ...``.

        Parameters
        ----------
        name : str
            A declared variable.
        values : array_like
            Its values, in the order of its ``dims``.
        **fields
            The fields of its ``long_name`` and its ``given`` attributes.

        Returns
        -------
        tuple
            ``(dims, values, attrs)``.
        """
        v = self[name]
        return v.dims, values, v.attributes(**fields)

    def data_vars(self, values: Mapping, **fields) -> dict:
        """Return ``{name: (dims, values, attrs)}`` for :class:`xarray.Dataset`.

        Parameters
        ----------
        values : mapping
            The values of declared variables, by name.
        **fields
            The fields and given attributes that they take, shared: each variable takes
            those it names.

        Returns
        -------
        dict
            In the order of ``values``.

        Raises
        ------
        TypeError
            A field that no variable takes, or one missing.
        """
        unused = set(fields)
        out = {}
        for name, vals in values.items():
            out[name] = self[name].dims, vals, self._attributes(name, fields, unused)
        if unused:
            raise TypeError(f"no variable of {list(values)} takes {sorted(unused)}")
        return out

    def annotate(self, ds, **fields) -> None:
        """Give the variables of ``ds`` that this group declares their attributes, in place.

        Parameters
        ----------
        ds : xarray.Dataset
            Its declared variables (coordinates included) get the attributes of
            :meth:`attrs`; the others are left as they are.
        **fields
            As for :meth:`data_vars`.

        Raises
        ------
        TypeError
            A field that no variable of ``ds`` takes, or one missing.
        """
        unused = set(fields)
        for name, var in ds.variables.items():
            if name in self:
                var.attrs.update(self._attributes(name, fields, unused))
        if unused:
            raise TypeError(f"no variable of {self.title} in the data set takes "
                            f"{sorted(unused)}")

    def _attributes(self, name, fields: dict, unused: set) -> dict:
        """Return the attributes of ``name`` from the shared ``fields``; strike those it takes."""
        v = self[name]
        wanted = set(v.fields) | set(v.given)
        unused -= wanted
        return v.attributes(**{k: fields[k] for k in wanted if k in fields})

    def mismatches(self, ds) -> list[str]:
        """Say where a data set's variables differ from their declarations.

        Parameters
        ----------
        ds : xarray.Dataset
            A result of this kind.

        Returns
        -------
        list of str
            One line per variable (coordinates included) that is not declared (for a
            complete group), has other dimensions, another ``long_name`` or another
            value of a fixed attribute; empty when all agree.
        """
        out = []
        for name, var in ds.variables.items():
            name = str(name)
            if name not in self:
                if self.complete:
                    out.append(f"{name}: not declared in {self.title}")
                continue
            v = self[name]
            if tuple(var.dims) != v.dims:
                out.append(f"{name}: dims {tuple(var.dims)}, declared {v.dims}")
            if not v.matches(var.attrs.get("long_name")):
                out.append(f"{name}: long_name {var.attrs.get('long_name')!r}, declared "
                           f"{v.long_name!r}")
            for key, want in v.attrs.items():
                have = var.attrs.get(key)
                if not (have == want or _both_nan(have, want)):
                    out.append(f"{name}: {key} {have!r}, declared {want!r}")
        return out


def _both_nan(a, b) -> bool:
    return all(isinstance(x, float | np.floating) and np.isnan(x) for x in (a, b))


def _v(name, dims, long_name, given=(), **attrs) -> Variable:
    return Variable(name, dims, long_name, attrs, tuple(given))


def _like(v: Variable, **changes) -> Variable:
    """Declare ``v`` again in another result (other dims, say): one text for both."""
    return dataclasses.replace(v, **changes)


_SET, _STAT, _SET_STAT = ("set",), ("stat",), ("set", "stat")
_SET_STAT_MEMBER, _SET_STAT_DIST = ("set", "stat", "member"), ("set", "stat", "dist")
_SET_QUESTION, _SET_QUESTION_MEMBER = ("set", "question"), ("set", "question", "member")
_SET_COND, _SET_COND_BIN = ("set", "cond"), ("set", "cond", "bin")
_SET_COND_XSTAT = ("set", "cond", "xstat")

# ----------------------------------------------------------------- input data

#: The input record (:func:`uqx.dataio.model.from_arrays`, :func:`uqx.dataio.model.stack`;
#: one set has no ``set`` dimension).
INPUT = Group("input data (uqx.from_arrays, uqx.stack)", [
    _v("E", ("set", "sample"), "prediction error (reference - prediction)"),
    _v("uE", ("set", "sample"), "prediction uncertainty (standard uncertainty of E)"),
    _v("X", ("set", "sample"), "input feature (conditioning variable for adaptivity)"),
    _v("V", ("set", "sample"), "predicted value"),
    _v("M", _SET, "sample size"),
    _v("n_dropped", _SET, "rows dropped by documented filters"),
    _v("units", _SET, "units of E and uE"),
], complete=False)

#: What the readers of the literature sets add to the input record, or describe anew
#: (:func:`uqx.load_dataset`), by reader.
LITERATURE = {
    "pal2022": Group("literature sets, reader pal2022", [
        _v("uE_other", ("sample",), "uE of the matching _cal/_uncal file (the file's column "
           "'X'); not an input feature", given=("units",)),
    ], complete=False),
    "bus2022": Group("literature sets, reader bus2022", [
        _v("X", ("sample",), "molecular mass (from the column 'formula')", units="g/mol"),
    ], complete=False),
    "hu2022": Group("literature sets, reader hu2022", [
        _v("X", ("sample",), "{space}-space distance", units="arbitrary"),
        _v("prob", ("prob",), "interval coverage probability"),
        _v("U", ("sample", "prob"),
           "half-width of the conformal prediction interval (qhat_P * X)", given=("units",)),
        _v("qhat", ("prob",), "conformal scale factor", given=("units",)),
    ], complete=False),
}

# ----------------------------------------------------------------- uqx.bootstrap

_ESTIMATE = _v("estimate", _SET_STAT, "point estimate t0")
_BIAS = _v("bias", _SET_STAT, "bootstrap bias mean(T) - t0")
_SE = _v("se", _SET_STAT, "bootstrap standard error sd(T)")
_Z0 = _v("z0", _SET_STAT, "BCa bias-correction z0")
_ACCELERATION = _v("acceleration", _SET_STAT, "BCa acceleration (exact jackknife)")
_STAT_COORD = _v("stat", _STAT, "statistic")
_STAT_LONG_NAME = _v("stat_long_name", _STAT, None)
_SET_COORD, _M_COORD = _v("set", _SET, None), _v("M", _SET, None)

#: :func:`uqx.bootstrap`.
BOOTSTRAP = Group("uqx.bootstrap", [
    _ESTIMATE, _BIAS, _SE,
    _v("ci_low", _SET_STAT, "lower confidence limit"),
    _v("ci_high", _SET_STAT, "upper confidence limit"),
    _Z0, _ACCELERATION,
    _v("n_nan", _SET_STAT, "number of NaN bootstrap replicates"),
    _v("replicates", ("set", "stat", "replicate"), "bootstrap distribution T (t0 first)"),
    _SET_COORD, _STAT_COORD, _STAT_LONG_NAME, _M_COORD,
    _v("replicate", ("replicate",), None),
], marker="acceleration")

#: :func:`uqx.bootstrap_per_bin` (the statistic and its variable in the attributes).
BOOTSTRAP_PER_BIN = Group("uqx.bootstrap_per_bin", [
    *(_like(BOOTSTRAP[k], dims=("set", "bin"))
      for k in ("estimate", "bias", "se", "ci_low", "ci_high")),
    _v("n", ("set", "bin"), "bin population"),
    _v("x_mid", ("set", "bin"), "mid-range of {cond} in the bin"),
    _SET_COORD,
    _v("bin", ("bin",), None),
])

# ----------------------------------------------------------------- uqx.simulate_reference


def _top_variables(suffix: str, var: str) -> list[Variable]:
    """Declare the copies' per-bin sums of the bins of ``var`` (simulate_reference)."""
    b, c = f"top_bin{suffix}", f"top_copy{suffix}"
    return [
        _v(f"top_sums{suffix}", ("set", c, b, "top_sum"),
           f"per-bin sums (eps^2, E^2, E, eps) of the copies of the tests in the bins of "
           f"{var} (the statistics up to a factor and under the alternatives are computed "
           "from them, uqx.engine.alternative.BinnedCopies)"),
        _v(f"top_u2{suffix}", ("set", b), f"sum of u^2 per bin of {var}"),
        _v(f"top_count{suffix}", ("set", b), f"points per bin of {var}"),
        _v(f"top_bins{suffix}", ("set", b), f"the bins of {var} above its 90th percentile"),
        _v(f"top_M{suffix}", _SET, None),
        _v(f"top_n_bins{suffix}", _SET, None),
        _v(f"top_n_copies{suffix}", _SET, None),
    ]


#: :func:`uqx.simulate_reference` (``draws`` with ``keep_draws``, then the copies of the
#: tests: ``cc_spread`` and the per-bin sums of the binnings of uE, X and V).
SIMULATE_REFERENCE = Group("uqx.simulate_reference", [
    _v("reference", _SET_STAT, "simulated reference (mean over N_MC draws)"),
    _v("reference_se", _SET_STAT, "Monte-Carlo standard error of the reference"),
    _v("sim2_low", _SET_STAT, "lower quantile of simulated values (Sim2)"),
    _v("sim2_high", _SET_STAT, "upper quantile of simulated values (Sim2)"),
    _v("n_nan", _SET_STAT, "copies whose statistic is NaN or infinite (left out of the reference)"),
    _v("nu", _SET, "degrees of freedom per set"),
    _v("draws", ("set", "stat", "mc"), None),
    _v("cc_spread", ("set", "cc_copy", "cc_gamma"),
       "CC of the copies of the tests under u = c*uE^gamma (the resolution of CC)"),
    *_top_variables("", "uE"), *_top_variables("_X", "X"), *_top_variables("_V", "V"),
    _SET_COORD, _v("stat", _STAT, None),
    _v("top_factor", ("top_factor",), None),
    _v("cc_gamma", ("cc_gamma",), None),
], marker="sim2_low")

# ----------------------------------------------------------------- uqx.validate

_RESOLUTION = {"power": POWER}

#: Separator of several warnings in the string variables ``warnings``/``set_warnings``.
WARN_SEP = "\n"


def split_warnings(text) -> list[str]:
    """Split a ``warnings`` string variable into its messages."""
    return [w for w in str(text).split(WARN_SEP) if w]


#: :func:`uqx.validate`, step by step (some variables only with some statistics or
#: settings: ``kappa_cs_z2_half`` ... not on the streamed route, the conditional
#: diagnostics with ``conditional=True``, the tolerance with ``tolerance``).
VALIDATE = Group("uqx.validate", [
    # coordinates
    _SET_COORD, _M_COORD, _STAT_COORD, _STAT_LONG_NAME,
    *(_v(d, (d,), None) for d in ("member", "question", "dist", "cond", "bin", "xstat",
                                  "sweep", "decile_of")),
    # the bootstrap of the statistics
    _ESTIMATE, _BIAS, _SE,
    _v("ci_low", _SET_STAT, "BCa {level:.0%} lower limit"),
    _v("ci_high", _SET_STAT, "BCa {level:.0%} upper limit"),
    _v("ci_low_se", _SET_STAT, "Monte-Carlo standard error of ci_low"),
    _v("ci_high_se", _SET_STAT, "Monte-Carlo standard error of ci_high"),
    _Z0, _ACCELERATION,
    # the tailedness of the data
    *(_v(k, _SET, k.replace("_", " "), safety_limit=SAFETY_LIMITS.get(k, np.nan))
      for k in TAILEDNESS_KEYS),
    _v("kappa_cs_z2_half", ("set", "half"),
       "kappa_cs of Z^2 scaled within the bins of uE, in the lower and the upper half of "
       "the uE order (the small-sample reach of the tails, half by half)"),
    _v("half_points", ("set", "half"), "points in each half of the uE order"),
    _v("u2_effective_points", _SET,
       "effective number of points of u^2, (sum u^2)^2 / sum u^4: the points that carry "
       "the statistics weighted by u^2 (RCE, UCE)"),
    # the null family
    _v("kappa_cs_z2_local", _SET,
       "Crow-Siddiqui kurtosis of Z^2 scaled within the bins of uE (Z itself when "
       "streamed): the shape of the errors the null family must match",
       safety_limit=SAFETY_LIMITS["kappa_cs_z2"]),
    _v("member_plausible", ("set", "member"),
       "member takes part in the verdicts: its shape not excluded by the data's kappa_cs "
       "of Z^2, of the whole set and of every window of bins of uE "
       "(uqx.engine.null_shape.plausible_members)"),
    _v("log_abs_z_spread_local", _SET,
       "variance of ln|Z| within the bins of uE, pooled: the body of the errors that the "
       "null of the rank correlation CC depends on "
       "(uqx.engine.null_body.log_abs_z_spread_local)"),
    _v("member_plausible_rank", ("set", "member"),
       "member takes part in the test of CC: member_plausible and its spread of ln|Z| not "
       "excluded by the data's (uqx.engine.null_body.body_plausible)"),
    _v("nu_fit_local_min", _SET,
       "smallest nu of the fitted member over the windows of bins of uE (its joint copies "
       "draw each window at its own nu when some window's kappa_cs excludes nu_fit; NaN: "
       "one nu, nu_fit)"),
    _v("nu_fit_local_max", _SET,
       "largest nu of the fitted member over the windows of bins of uE"),
    _v("nu_fit", _SET,
       "degrees of freedom of the data-matched t_s null (inf: normal), from kappa_cs of "
       "Z^2 (scaled within the bins of uE unless streamed)"),
    _v("nu_fit_two_sided", _SET,
       "degrees of freedom of the data-matched t_s null of the statistics tested on both "
       "sides: heavy end of the confidence set of nu (one standard error of kappa_cs)"),
    # the references
    _v("reference", _SET_STAT, "reference value (N for simulated)"),
    _v("reference_se", _SET_STAT, "standard uncertainty of the reference (Monte-Carlo)"),
    _v("zeta", _SET_STAT, "zeta-score (000 Eq. 20): zeta_BS or zeta_Sim with D = N"),
    _v("reference_kind", _SET_STAT, "predefined / simulated / none"),
    _v("d_sensitive", _SET_STAT,
       "references of the distributions differ beyond 2 sqrt(u_N^2 + u_T^2)"),
    _v("sim_reference", _SET_STAT_DIST, "simulated reference (Sim)"),
    _v("sim_reference_se", _SET_STAT_DIST, "MC standard error of Sim"),
    _v("sim2_low", _SET_STAT_DIST, "Sim2 interval lower limit"),
    _v("sim2_high", _SET_STAT_DIST, "Sim2 interval upper limit"),
    _v("zeta_sim", _SET_STAT_DIST, "zeta_Sim (U_t = 2u) per distribution"),
    _v("zeta_sim2", _SET_STAT_DIST, "zeta_Sim2 (comparison only)"),
    # the tests and the verdicts
    _v("p_value", _SET_STAT_MEMBER,
       "Monte-Carlo p-value of the statistic's test under each member of the null family "
       "(before the question's adjustment)"),
    _v("null_band_low", _SET_STAT,
       "2.5 % quantile of a binned statistic's calibrated copies (lowest over the members "
       "that take part): printed instead of a bootstrap interval"),
    _v("null_band_high", _SET_STAT,
       "97.5 % quantile of a binned statistic's calibrated copies (highest over the "
       "members that take part)"),
    _v("test_statistic", _SET_STAT,
       "the value the statistic's test reads (the estimate; mean_z: its studentised form "
       "t_z, whose null is no bias whatever the scale)"),
    _v("zeta_verdict", _SET_STAT, "the papers' zeta rule (000 Fig. 1), for comparison"),
    _v("zeta_borderline", _SET_STAT,
       "|zeta| within 2 Monte-Carlo sd of 1 (zeta_verdict can flip with the seed)"),
    _v("verdict", _SET_STAT,
       "verdict: valid / invalid / inconclusive / not tested / diagnostic",
       rule="a node's statistic: the closed weighted min-p of the set's graph at its "
            "family-wise level, under every member (uqx.engine.questions); any other "
            "statistic is a diagnostic and decides nothing"),
    _v("verdict_reason", _SET_STAT, "why the verdict is inconclusive"),
    _v("borderline", _SET_STAT, "an adjusted p-value within 2 Monte-Carlo sd of its level"),
    _v("p_adjusted", _SET_STAT_MEMBER,
       "adjusted p-value of a node's statistic: the larger of the closed test's (weighted "
       "min-p of the set's graph on the shared copies) and its question's own p-value over "
       "QUESTION_SHARE; NaN for a diagnostic"),
    _v("valid", _SET_STAT, "1 valid, 0 invalid, NaN otherwise"),
    _v("question_verdict", _SET_QUESTION,
       "verdict of each question: average calibration, consistency on uE, adaptivity on "
       "X / V, consistency up to a factor"),
    _v("question_reason", _SET_QUESTION, "why the question's verdict is inconclusive"),
    _v("question_p_value", _SET_QUESTION_MEMBER,
       "the question's adjusted p-value: the smallest of its nodes' adjusted p-values (the "
       "larger of the closed test's and the question's own p-value over QUESTION_SHARE)"),
    _v("question_level", _SET_QUESTION_MEMBER,
       "level the question's adjusted p-value is compared with: the set's family-wise "
       "level alpha"),
    _v("question_level_initial", _SET_QUESTION_MEMBER,
       "the question's nodes' share of the set's family-wise level in the intersection of "
       "every node (their resolution is read there)"),
    _v("question_borderline", _SET_QUESTION,
       "an adjusted p-value within 2 Monte-Carlo sd of its level"),
    _v("question_tests", _SET_QUESTION, "the statistics that test the question's nodes"),
    _v("factor_statistic", _SET_STAT,
       "the binned statistic on uE of the data rescaled by its factor sqrt(ZMS) (question "
       "up_to_factor)"),
    _v("factor_verdict", _SET_STAT,
       "verdict of the statistic on uE rescaled by its factor sqrt(ZMS) (question "
       "up_to_factor)"),
    _v("factor_verdict_reason", _SET_STAT, None),
    _v("factor_p_value", _SET_STAT_MEMBER,
       "p-value of the statistic on uE rescaled by its factor"),
    _v("factor_p_adjusted", _SET_STAT_MEMBER,
       "the same, adjusted inside the question up_to_factor"),
    # the resolutions
    _v("resolution_low", _SET_STAT,
       "largest factor f below 1 of errors f*uE (mean_z: the bias below 0, in units of the "
       "errors' sd) that the statistic's test finds not valid with 80 % power at its "
       "deciding threshold", **_RESOLUTION),
    _v("resolution_high", _SET_STAT,
       "smallest factor above 1 (mean_z: bias above 0; binned statistics: errors f*uE in "
       "the bins above the 90th percentile of their variable) found not valid with 80 % "
       "power", **_RESOLUTION),
    _v("resolution_spread_low", _SET_STAT,
       "binned statistics on uE: the largest exponent gamma below 1 of u = c*uE^gamma "
       "(same mean square, piecewise on the bins of uE) found not valid with 80 % power",
       **_RESOLUTION),
    _v("resolution_spread_high", _SET_STAT,
       "binned statistics on uE: the smallest exponent gamma above 1 of u = c*uE^gamma "
       "found not valid with 80 % power", **_RESOLUTION),
    _v("question_resolution_low", _SET_QUESTION,
       "question: the factor below 1 (average: scale of uE) found not valid with 80 % "
       "power", **_RESOLUTION),
    _v("question_resolution_high", _SET_QUESTION,
       "question: the factor above 1 (average: scale of uE; consistency, up_to_factor, "
       "adaptivity: uE too small by f in the top decile of its variable) found not valid "
       "with 80 % power", **_RESOLUTION),
    _v("question_resolution_spread_low", _SET_QUESTION,
       "consistency questions: the exponent gamma below 1 of u = c*uE^gamma found not "
       "valid with 80 % power", **_RESOLUTION),
    _v("question_resolution_spread_high", _SET_QUESTION,
       "consistency questions: the exponent gamma above 1 of u = c*uE^gamma found not "
       "valid with 80 % power", **_RESOLUTION),
    # the papers' conditional diagnostics
    _v("lzisd", _SET_COND_BIN, "LZISD per bin, Var(Z)^-1/2"),
    _v("lzisd_ci_low", _SET_COND_BIN, "LZISD BCa lower limit"),
    _v("lzisd_ci_high", _SET_COND_BIN, "LZISD BCa upper limit"),
    _v("bin_n", _SET_COND_BIN, "bin population"),
    _v("bin_x_mid", _SET_COND_BIN, "bin mid-range of the conditioning variable"),
    _v("cond_n_bins", _SET_COND, "number of LZISD bins (real, not padding)"),
    _v("lzisd_ci_method", _SET_COND, "LZISD interval method"),
    _v("fval", _SET_COND, "fraction of bins whose LZISD interval contains 1"),
    _v("fval_ci_low", _SET_COND, "Wilson-cc lower limit"),
    _v("fval_ci_high", _SET_COND, "Wilson-cc upper limit"),
    _v("fval_verdict", _SET_COND,
       "not tested: the fraction of valid bins is a diagnostic of the papers, its per-bin "
       "intervals under-cover with heavy tails and few points per bin (the consistency / "
       "adaptivity question decides)"),
    _v("conditional_valid", _SET_COND,
       "fraction of valid bins compatible with {nominal:.0%} (Wilson-cc upper limit >= "
       "it): 1 yes, 0 no (papers' diagnostic)"),
    _v("extrap_intercept", _SET_COND_XSTAT, "intercept of lm(y ~ sqrt(N/M))"),
    _v("extrap_intercept_se", _SET_COND_XSTAT, "OLS standard error of the intercept"),
    _v("extrap_slope", _SET_COND_XSTAT, None),
    _v("extrap_slope_se", _SET_COND_XSTAT, None),
    _v("extrap_papers_valid", _SET_COND_XSTAT,
       "|intercept - ideal| <= 2 SE (papers' test, reported only)"),
    _v("extrap_verdict", _SET_COND_XSTAT,
       "not tested: the intercepts are a diagnostic (extrap_p_value: one-sided "
       "Monte-Carlo p-value per member)"),
    _v("extrap_verdict_reason", _SET_COND_XSTAT, None),
    _v("extrap_null_low", _SET_COND_XSTAT + ("dist",), "null 2.5 % quantile"),
    _v("extrap_null_high", _SET_COND_XSTAT + ("dist",), "null 97.5 % quantile"),
    _v("extrap_p_value", _SET_COND_XSTAT + ("member",),
       "Monte-Carlo p-value of the intercept (one-sided)"),
    _v("extrap_values", ("set", "cond", "sweep", "xstat"),
       "statistic per number of bins of the sweep"),
    _v("extrap_n_bins", ("set", "cond", "sweep"), "number of equal-count bins of the sweep"),
    # the scale factor and the consistency up to it
    _v("scale_factor", _SET, "factor f = sqrt(ZMS): uE x f has a ZMS of exactly 1"),
    _v("scale_factor_low", _SET,
       "lower end of the factors f whose ZMS/f^2 the test of ZMS keeps under some member "
       "(confidence level of the result)"),
    _v("scale_factor_high", _SET, "upper end of the same"),
    _v("rescaled_consistency", _SET,
       "consistency of uE rescaled by its factor (question up_to_factor), where average "
       "calibration is invalid ('': not asked): valid = consistent up to the factor f"),
    _v("rescaled_consistency_reason", _SET, None),
    _v("rescaled_consistency_resolution", _SET,
       "resolution of that verdict: uE of the top 10 % too small by this factor (after "
       "rescaling), found not valid with 80 % power"),
    _v("rescaled_consistency_spread_low", _SET,
       "resolution of that verdict under u = c*uE^gamma: the exponent below 1 found not "
       "valid with 80 % power"),
    _v("rescaled_consistency_spread_high", _SET,
       "the exponent above 1 found not valid with 80 % power"),
    _v("scale_within_tolerance", _SET,
       "1: the average scale of uE right within the tolerance (f = sqrt(ZMS) inside "
       "[1/(1+T), 1+T] by two one-sided Monte-Carlo tests under every member), 0: not "
       "shown; NaN: no copies", given=("tolerance", "alpha")),
    _v("scale_tolerance_p_value", _SET,
       "largest p-value of the two one-sided tests of the edges, over the members",
       given=("tolerance",)),
    # where uE is off, the warnings, the bins
    _v("zms_decile", ("set", "decile_of", "decile"),
       "ZMS of the data in each tenth of a variable (equal counts, in its order): where uE "
       "is too small (> 1) or too large (< 1)"),
    _v("warnings", _SET_STAT, "warnings"),
    _v("set_warnings", _SET, "data-set level warnings"),
    _v("n_bins_used", _SET, "bins used by binned statistics on uE (-1: none requested)"),
], marker="question_verdict")

# ----------------------------------------------------------------- calibration curves

#: :func:`uqx.inference.curves.confidence.calibration_curve` of one set (of a stack: with
#: ``set`` in front): the observed fraction of the errors within u q_D(p).
CALIBRATION_CURVE = Group("uqx.inference.curves.confidence.calibration_curve", [
    _v("eta", ("prob",), "observed fraction E <= u q_D(p)"),
    _v("ci_low", ("prob",), None),
    _v("ci_high", ("prob",), None),
    _v("prob", ("prob",), "target probability"),
])

#: :func:`uqx.inference.curves.intervals.picp`.
PICP = Group("uqx.inference.curves.intervals.picp", [
    _v("picp", ("set", "prob"), "prediction-interval coverage probability"),
    _v("picp_low", ("set", "prob"), "Wilson {level:.0%} lower limit"),
    _v("picp_high", ("set", "prob"), "Wilson {level:.0%} upper limit"),
    _v("valid", ("set", "prob"), "P inside the interval",
       note="tests the intervals; built from uE, it also tests the shape D"),
    _SET_COORD,
    _v("prob", ("prob",), None),
])

#: :func:`uqx.inference.curves.intervals.local_range_ratio`.
LRR = Group("uqx.inference.curves.intervals.local_range_ratio", [
    _v("lrr", ("bin",), "local range ratio (target 1)"),
    _v("ci_low", ("bin",), "BCa {level:.0%} lower limit"),
    _v("ci_high", ("bin",), "BCa {level:.0%} upper limit"),
    _v("n", ("bin",), "bin population"),
    _v("x_mid", ("bin",), "bin mid-range of cond"),
    _v("valid", ("bin",), "1 inside the BCa interval"),
    _v("bin", ("bin",), None),
])

# ----------------------------------------------------------------- distribution fits

#: :func:`uqx.inference.fits.fit_sets` (the keys of :func:`uqx.inference.fits.fit_set`).
FITS = Group("uqx.inference.fits.fit_sets", [
    _v("ig_k", _SET, "IG shape k of u^2, MLE (gamma fit of 1/u^2; 000 Table II)"),
    _v("ig_theta", _SET, "IG scale theta of u^2, MLE (000 Table II)"),
    _v("nu_u2", _SET, "IG shape of u^2 by min-KS, nu(u^2) of 001 Table I"),
    _v("ig_theta_ks", _SET, "IG scale of u^2 by min-KS"),
    _v("nu_e2", _SET, "nu of the scaled F(1, nu) fit of E^2 by min-KS (001 Table I)"),
    _v("scale_e2", _SET, "scale sigma of the F(1, nu) fit of E^2"),
    _v("nu_z2", _SET, "nu of the scaled F(1, nu) fit of Z^2 by min-KS (001 Table I)"),
    _v("scale_z2", _SET, "scale sigma of the F(1, nu) fit of Z^2"),
    _v("nu_eff_e", _SET, "nu_eff of the scaled-shifted Student t MLE fit of E (000 Table III)"),
    _v("bias_e", _SET, "location mu of the Student t fit of E"),
    _v("scale_e", _SET, "scale sigma of the Student t fit of E"),
    _v("nu_eff_z", _SET, "nu_eff of the scaled-shifted Student t MLE fit of Z (000 Table III)"),
    _v("bias_z", _SET, "location mu of the Student t fit of Z"),
    _v("scale_z", _SET, "scale sigma of the Student t fit of Z"),
    _v("rel_bias_e", _SET, "relative bias of E, 100 mean(E)/sd(E) in % (000 Table III b_E)"),
    _v("rel_bias_z", _SET, "relative bias of Z, 100 mean(Z)/sd(Z) in % (000 Table III b_Z)"),
    _SET_COORD,
])

# ----------------------------------------------------------------- studies (uqx sweep)

_RATE_DIMS = ("design", "M", "scenario", "test")
_RATES = [
    v for name in ("valid", "invalid", "inconclusive") for v in (
        _v(f"rate_{name}", _RATE_DIMS, f"fraction of '{name}' verdicts"),
        _v(f"rate_{name}_low", _RATE_DIMS,
           "Wilson-cc 95 % lower limit, cluster-robust (blocks sharing uE)"),
        _v(f"rate_{name}_high", _RATE_DIMS,
           "Wilson-cc 95 % upper limit, cluster-robust (blocks sharing uE)"),
    )
]

#: The archives of ``uqx sweep STUDY`` (:mod:`uqx.sweeps`), by study: the variables that
#: their summaries describe (the others are named in the documentation's *Studies*).
STUDIES = {
    "appendix-b": Group("uqx sweep appendix-b", [
        _v("ence", ("model", "M", "N", "nu", "replicate"),
           "ENCE (RMSE convention) of each simulated data set"),
        _v("zmse", ("model", "M", "N", "nu", "replicate"), "ZMSE of each simulated data set"),
        _v("slope", ("model", "stat"), "OLS slope of the cell means against sqrt(N/M)"),
        _v("intercept", ("model", "stat"),
           "OLS intercept of the cell means against sqrt(N/M)"),
    ], complete=False),
    "binned-tailedness": Group("uqx sweep binned-tailedness", [
        _v("beta_gm", ("set", "var", "bin"), "beta_GM per equal-count uE bin"),
        _v("kappa_cs", ("set", "var", "bin"), "kappa_CS per equal-count uE bin"),
    ], complete=False),
    "bins": Group("uqx sweep bins", [
        _v("value", ("set", "stat", "N"), "binned statistic for N equal-count bins"),
        _v("verdict", ("set", "stat"), "intercept against its simulated null distribution"),
        _v("papers_valid", ("set", "stat"), "|intercept - ideal| <= 2 SE (papers' test)"),
    ], complete=False),
    "decimation": Group("uqx sweep decimation", [
        _v("delta", ("set", "k", "stat"),
           "statistic after removing k % largest u minus full value"),
        _v("bar_low", ("set", "stat"), "full-set BCa lower limit minus estimate"),
        _v("bar_high", ("set", "stat"), "full-set BCa upper limit minus estimate"),
    ], complete=False),
    "error-rates": Group("uqx sweep error-rates", [
        *_RATES,
        _v("n_sets", _RATE_DIMS,
           "sets with a verdict (valid, invalid or inconclusive)"),
        _v("verdict", ("design", "M", "scenario", "replicate", "test"), "verdict code",
           given=("codes",)),
    ], complete=False),
    "pval": Group("uqx sweep pval", [
        _v("valid", ("scenario", "nu", "replicate", "stat"),
           "reference value inside the BCa interval (1) or not (0)"),
        _v("p_val", ("scenario", "nu", "stat"), "validation probability (001 Eq. 21)"),
        _v("p_val_low", ("scenario", "nu", "stat"), "Wilson-cc 95 % lower limit of p_val"),
        _v("p_val_high", ("scenario", "nu", "stat"), "Wilson-cc 95 % upper limit of p_val"),
    ], complete=False),
    "reference-sensitivity": Group("uqx sweep reference-sensitivity", [
        _like(SIMULATE_REFERENCE["reference"], dims=("set", "nu", "stat")),
        _v("draws", ("set", "nu", "stat", "mc"), "statistic of each simulated data set"),
    ], complete=False),
}

#: Every group, the documentation's order; :func:`group_of` tries the markers in it.
GROUPS: dict[str, Group] = {
    "validate": VALIDATE,
    "bootstrap": BOOTSTRAP,
    "bootstrap_per_bin": BOOTSTRAP_PER_BIN,
    "simulate_reference": SIMULATE_REFERENCE,
    "calibration_curve": CALIBRATION_CURVE,
    "picp": PICP,
    "lrr": LRR,
    "fits": FITS,
    "input": INPUT,
    **{f"literature {k}": g for k, g in LITERATURE.items()},
    **{f"study {k}": g for k, g in STUDIES.items()},
}


def group_of(ds) -> Group | None:
    """Return the group of a result: its study's, or the first whose marker it holds.

    Parameters
    ----------
    ds : xarray.Dataset
        A result of :func:`uqx.validate`, :func:`uqx.bootstrap`,
        :func:`uqx.simulate_reference`, or an archive of ``uqx sweep``.

    Returns
    -------
    Group or None
        None for anything else.
    """
    study = ds.attrs.get("study")
    if study:
        return STUDIES.get(str(study))
    for g in GROUPS.values():
        if g.marker is not None and g.marker in ds.variables:
            return g
    return None
