"""The one random-number policy of uqx and the bootstrap resampling kernels.

Randomness is keyed by coordinates: every independent block of work (a data set, a
replicate block, a sample block, a Monte-Carlo cell) gets its own
:class:`numpy.random.SeedSequence` with ``spawn_key`` built from those coordinates, so a
result never depends on chunking, scheduler or worker count.

Bootstrap resamples are drawn as **counts**: replicate ``r`` is the vector ``c_r`` of how
many times each of the M samples was drawn (``sum(c_r) = M``). Statistics read the
counts (binned and rank statistics) or weighted sums of per-sample features (moment
statistics), so all statistics of a call share the same resamples. For cache locality on
large M the M positions are cut into fixed sample blocks of :data:`SAMPLE_BLOCK`: the
number of draws falling into each block is multinomial, then draws are uniform within a
block — the same distribution as M uniform draws over all positions.

Uniform integers come from xoshiro256** (Blackman & Vigna 2018), two 32-bit halves per
output, with Lemire's unbiased bounded-integer method, in numba, seeded from the
SeedSequence: about 1 ns per draw, against ~60 ns for a numba call into a numpy Generator.
Sample blocks of 2**14 positions keep the feature rows of a block in L2 cache.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

import numba
import numpy as np

from uqx.errors import InputError

__all__ = [
    "SAMPLE_BLOCK",
    "REPLICATE_BLOCK",
    "SAMPLE_GROUP",
    "MEMORY_BUDGET",
    "rows_for_budget",
    "coord_key",
    "content_key",
    "chunked_content_key",
    "key_hex",
    "seed_sequence",
    "resolve_seed",
    "BootstrapPlan",
]

#: Positions per sample block (fixed: part of the definition of a resample stream).
SAMPLE_BLOCK = 1 << 14
#: Replicates per block (fixed: results do not depend on how blocks are scheduled).
REPLICATE_BLOCK = 1000
#: Memory budget (bytes) of one task's working arrays: count batches, simulated data sets.
#: Blocks size themselves to it; the numbers never depend on it (streams are keyed by
#: fixed blocks and consumed sequentially).
MEMORY_BUDGET = 128 * 2**20
#: Sample blocks per group: the unit of work (a dask task) of streamed sums on large data.
SAMPLE_GROUP = 64

_MASK32 = np.uint64(0xFFFFFFFF)


def rows_for_budget(row_bytes: int, budget: int = MEMORY_BUDGET) -> int:
    """Rows of ``row_bytes`` bytes that fit in ``budget`` (at least one)."""
    return max(1, int(budget) // max(int(row_bytes), 1))


def coord_key(value) -> int:
    """Stable 32-bit key of a coordinate value (CRC-32 of its string form)."""
    if isinstance(value, (int, np.integer)) and 0 <= int(value) < 2**32:
        return int(value)
    return zlib.crc32(str(value).encode("utf-8")) & 0xFFFFFFFF


def content_key(*arrays) -> tuple[int, int, int, int]:
    """Key of a data set by its content: four 32-bit words of the SHA-256 of the arrays.

    The bytes hashed are the float64 values in file order, so the same data gives the same
    random streams whatever the set is called or whatever runs beside it, and two sets
    share a stream only when their data are identical. :func:`chunked_content_key` gives
    the same key from arrays read piece by piece.
    """
    return chunked_content_key((a,) for a in arrays)


def chunked_content_key(columns) -> tuple[int, int, int, int]:
    """:func:`content_key` of columns given piece by piece: the one content digest of uqx.

    Parameters
    ----------
    columns : iterable of iterables of array-like
        Each column as consecutive chunks, in file order; ``(E_chunks, uE_chunks)`` gives
        the key of ``content_key(E, uE)`` whatever the chunk boundaries.

    Returns
    -------
    tuple of 4 int
        The first 16 bytes of SHA-256(column 1 as float64, ``|``, column 2, ``|``, ...),
        read as four little-endian 32-bit words (the words of a ``spawn_key``).
    """
    h = hashlib.sha256()
    for chunks in columns:
        for chunk in chunks:
            # the array's own buffer, in C order (no bytes copy of the column: 8 bytes
            # a row); an empty chunk adds nothing, as its empty bytes did
            a = np.ascontiguousarray(chunk, dtype=np.float64).reshape(-1)
            if a.size:
                h.update(memoryview(a).cast("B"))
        h.update(b"|")  # (E, uE) and (E', uE') with the same concatenation differ
    d = h.digest()
    return tuple(int.from_bytes(d[4 * i : 4 * i + 4], "little") for i in range(4))


def key_hex(key) -> str:
    """Hex form of a :func:`content_key` (the ``input_digests`` of a result): 32 digits."""
    return "".join(f"{int(w):08x}" for w in key)


def _flat_keys(coords):
    for c in coords:
        if isinstance(c, tuple):
            yield from _flat_keys(c)
        else:
            yield coord_key(c)


def seed_sequence(seed: int, *coords) -> np.random.SeedSequence:
    """SeedSequence of the root ``seed`` keyed by coordinates (``spawn_key``).

    A tuple coordinate (e.g. a :func:`content_key`) contributes all its words.
    """
    return np.random.SeedSequence(int(seed), spawn_key=tuple(_flat_keys(coords)))


def resolve_seed(seed) -> int:
    """Return ``seed`` as an int, drawing (and returning, to be recorded) fresh entropy if None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    try:
        value = int(seed)
    except (TypeError, ValueError):
        value = -1
    if value < 0 or value != seed:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return value


def xoshiro_state(ss: np.random.SeedSequence) -> np.ndarray:
    """Return the xoshiro256** state (4 uint64) seeded by ``ss`` (never all zero)."""
    st = ss.generate_state(4, np.uint64)
    if not st.any():  # the all-zero state is the one forbidden state
        st[0] = np.uint64(1)
    return st


@numba.njit(inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(inline="always")
def lemire_threshold(n):
    """Return the rejection threshold ``(2**32 - n) % n`` of Lemire's bounded integers."""
    return (np.uint64(0x100000000) - n) % n


@numba.njit(inline="always")
def xoshiro_next(s0, s1, s2, s3):
    """One xoshiro256** step (Blackman & Vigna 2018): ``(output, s0, s1, s2, s3)``.

    Output ``rotl(5 s1, 7) * 9``; state update ``s2 ^= s0; s3 ^= s1; s1 ^= s2;
    s0 ^= s3; s2 ^= s1 << 17; s3 = rotl(s3, 45)``. The state travels in scalars
    (registers); every generator of uqx (:mod:`uqx.engine.generators` too) steps through here.
    """
    x = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return x, s0, s1, s2, s3


@numba.njit(inline="always")
def lemire_pair(s0, s1, s2, s3, n, thresh):
    """One xoshiro256** step, two candidate integers in [0, n) (n <= 2**32).

    The 64-bit output is split into its high and low 32-bit halves; each is a candidate
    of Lemire's (2019) multiply-shift method, accepted when the low word of the product
    is >= ``thresh = 2**32 mod n`` (unbiased). Returns (j_hi, ok_hi, j_lo, ok_lo, state).
    The state travels in scalars (registers). A replicate's draws start on a fresh
    output: a low half left over at its end is discarded.
    """
    x, s0, s1, s2, s3 = xoshiro_next(s0, s1, s2, s3)
    mask = np.uint64(0xFFFFFFFF)
    m1 = (x >> np.uint64(32)) * n
    m2 = (x & mask) * n
    return (m1 >> np.uint64(32), (m1 & mask) >= thresh,
            m2 >> np.uint64(32), (m2 & mask) >= thresh, s0, s1, s2, s3)


@numba.njit(nogil=True, cache=True)
def _draw_counts(state, size, n_draws, out):
    """Add ``n_draws[r]`` uniform draws in [0, size) to ``out[r]`` (int32 counts)."""
    n = np.uint64(size)
    th = lemire_threshold(n)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for r in range(n_draws.shape[0]):
        row = out[r]
        left = n_draws[r]
        while left > 0:
            j1, ok1, j2, ok2, s0, s1, s2, s3 = lemire_pair(s0, s1, s2, s3, n, th)
            if ok1:
                row[j1] += 1
                left -= 1
            if ok2 and left > 0:
                row[j2] += 1
                left -= 1
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


@numba.njit(nogil=True, cache=True)
def _draw_sums3(state, F, n_draws, out):
    """Add to ``out[r]`` the sums of the 3 feature columns of ``F`` over the draws."""
    n = np.uint64(F.shape[0])
    th = lemire_threshold(n)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for r in range(n_draws.shape[0]):
        a0 = a1 = a2 = 0.0
        left = n_draws[r]
        while left > 0:
            j1, ok1, j2, ok2, s0, s1, s2, s3 = lemire_pair(s0, s1, s2, s3, n, th)
            if ok1:
                a0 += F[j1, 0]
                a1 += F[j1, 1]
                a2 += F[j1, 2]
                left -= 1
            if ok2 and left > 0:
                a0 += F[j2, 0]
                a1 += F[j2, 1]
                a2 += F[j2, 2]
                left -= 1
        out[r, 0] += a0
        out[r, 1] += a1
        out[r, 2] += a2
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


@numba.njit(nogil=True, cache=True)
def _draw_sums5(state, F, n_draws, out):
    """Add to ``out[r]`` the sums of the 5 feature columns of ``F`` over the draws."""
    n = np.uint64(F.shape[0])
    th = lemire_threshold(n)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for r in range(n_draws.shape[0]):
        a0 = a1 = a2 = a3 = a4 = 0.0
        left = n_draws[r]
        while left > 0:
            j1, ok1, j2, ok2, s0, s1, s2, s3 = lemire_pair(s0, s1, s2, s3, n, th)
            if ok1:
                a0 += F[j1, 0]
                a1 += F[j1, 1]
                a2 += F[j1, 2]
                a3 += F[j1, 3]
                a4 += F[j1, 4]
                left -= 1
            if ok2 and left > 0:
                a0 += F[j2, 0]
                a1 += F[j2, 1]
                a2 += F[j2, 2]
                a3 += F[j2, 3]
                a4 += F[j2, 4]
                left -= 1
        out[r, 0] += a0
        out[r, 1] += a1
        out[r, 2] += a2
        out[r, 3] += a3
        out[r, 4] += a4
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


@numba.njit(nogil=True, cache=True)
def _draw_uniform(state, size, out):
    """Fill ``out`` with uniform draws in [0, size) (one replicate's stream)."""
    n = np.uint64(size)
    th = lemire_threshold(n)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    i = 0
    while i < out.shape[0]:
        j1, ok1, j2, ok2, s0, s1, s2, s3 = lemire_pair(s0, s1, s2, s3, n, th)
        if ok1:
            out[i] = j1
            i += 1
        if ok2 and i < out.shape[0]:
            out[i] = j2
            i += 1
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


def uniform_integers(ss: np.random.SeedSequence, size: int, n: int) -> np.ndarray:
    """``n`` uniform integers in [0, size) from the xoshiro stream of ``ss``."""
    out = np.empty(n, np.int64)
    _draw_uniform(xoshiro_state(ss), size, out)
    return out


@dataclass(frozen=True)
class BootstrapPlan:
    """Resampling plan of one data set: M samples, ``n_boot`` replicates, keyed seed.

    Replicates are cut into blocks of :data:`REPLICATE_BLOCK`; block ``b`` draws from
    ``seed_sequence(seed, key, b)`` (sample-block split) and
    ``seed_sequence(seed, key, b, k)`` (draws inside sample block ``k``).
    """

    M: int
    n_boot: int
    seed: int
    key: object

    @property
    def n_blocks(self) -> int:
        """Number of replicate blocks."""
        return -(-self.n_boot // REPLICATE_BLOCK)

    @property
    def sample_blocks(self) -> list[tuple[int, int]]:
        """(start, stop) of each sample block."""
        starts = range(0, self.M, SAMPLE_BLOCK)
        return [(s, min(s + SAMPLE_BLOCK, self.M)) for s in starts]

    def block_size(self, b: int) -> int:
        """Replicates in block ``b``."""
        if not 0 <= b < self.n_blocks:
            raise IndexError(f"replicate block {b} out of range 0..{self.n_blocks - 1}")
        return min(REPLICATE_BLOCK, self.n_boot - b * REPLICATE_BLOCK)

    def sample_block_draws(self, b: int) -> np.ndarray:
        """Draws of each replicate of block ``b`` falling in each sample block.

        int64 (n_b, number of sample blocks), each row multinomial with total M over
        the blocks' sizes (one sample block: M).
        """
        return self._draws_per_sample_block(b)

    def sample_block_states(self, b: int) -> np.ndarray:
        """xoshiro256** states (number of sample blocks, 4) of replicate block ``b``.

        Row ``k`` seeds the draws inside sample block ``k``,
        ``seed_sequence(seed, key, b, k)``; a kernel that consumes them advances the rows
        in place. One stream per sample block, continued from replicate to replicate:
        counts drawn replicate by replicate, block by block, are those of
        :meth:`iter_counts` (and of :func:`uqx.engine.evaluator.SetEvaluator.replicates`
        on its streamed route).
        """
        return np.stack([xoshiro_state(seed_sequence(self.seed, self.key, b, k))
                         for k in range(len(self.sample_blocks))])

    def _draws_per_sample_block(self, b: int) -> np.ndarray:
        nb = self.block_size(b)
        blocks = self.sample_blocks
        if len(blocks) == 1:
            return np.full((nb, 1), self.M, dtype=np.int64)
        sizes = np.array([e - s for s, e in blocks], dtype=np.float64)
        rng = np.random.Generator(np.random.PCG64(seed_sequence(self.seed, self.key, b)))
        return rng.multinomial(self.M, sizes / self.M, size=nb).astype(np.int64)

    def iter_counts(self, b: int, batch: int | None = None):
        """Yield the counts of replicate block ``b`` in batches of ``batch`` replicates.

        Each batch is an int32 array (n, M) whose rows sum to M. The draws are the same
        whatever ``batch`` is (the per-sample-block streams simply continue).
        """
        draws = self._draws_per_sample_block(b)
        nb = draws.shape[0]
        batch = nb if batch is None else max(1, int(batch))
        states = self.sample_block_states(b)
        for lo in range(0, nb, batch):
            hi = min(lo + batch, nb)
            out = np.zeros((hi - lo, self.M), dtype=np.int32)
            for k, (s, e) in enumerate(self.sample_blocks):
                _draw_counts(states[k], e - s, draws[lo:hi, k], out[:, s:e])
            yield out

    def counts(self, b: int) -> np.ndarray:
        """Return the counts of replicate block ``b``: int32 (n_b, M), each row summing to M."""
        return next(self.iter_counts(b))

    @property
    def n_groups(self) -> int:
        """Number of groups of :data:`SAMPLE_GROUP` sample blocks."""
        return -(-len(self.sample_blocks) // SAMPLE_GROUP)

    def group_rows(self, g: int) -> tuple[int, int]:
        """(start, stop) of the positions covered by the sample blocks of group ``g``."""
        blocks = self.sample_blocks
        return blocks[g * SAMPLE_GROUP][0], blocks[min((g + 1) * SAMPLE_GROUP, len(blocks)) - 1][1]

    def sums(self, b: int, F: np.ndarray) -> np.ndarray:
        """Feature sums of replicate block ``b``: ``sum_i c_ri F[i]``, shape (n_b, k).

        Uses the same draws as :meth:`counts` without materialising them (memory O(k)).
        Defined as the sum, in group order, of :meth:`sums_group` over all groups, so
        computing the groups as separate tasks gives the same bits.
        """
        out = self.sums_group(b, F, 0)
        for g in range(1, self.n_groups):
            out = out + self.sums_group(b, F, g)
        return out

    def sums_group(self, b: int, F: np.ndarray, g: int, offset: int = 0) -> np.ndarray:
        """Feature sums of replicate block ``b`` over the sample blocks of group ``g``.

        ``F`` holds the feature rows from position ``offset`` on (all M rows by default;
        a streamed caller passes only the rows of group g with ``offset`` their first
        position). The kernels take 3 or 5 columns; other widths are zero-padded (k < 5)
        or summed in groups of 5 over the same draws.
        """
        F = np.asarray(F, dtype=np.float64)
        k = F.shape[1]
        if k not in (3, 5):
            width = 3 if k < 3 else 5
            parts = []
            for lo in range(0, k, width):
                part = F[:, lo : lo + width]
                pad = np.zeros((F.shape[0], width - part.shape[1]))
                sums = self.sums_group(b, np.hstack([part, pad]), g, offset)
                parts.append(sums[:, : part.shape[1]])
            return np.hstack(parts)
        F = np.ascontiguousarray(F)
        kernel = _draw_sums3 if k == 3 else _draw_sums5
        draws = self._draws_per_sample_block(b)
        out = np.zeros((draws.shape[0], k))
        blocks = self.sample_blocks
        for j in range(g * SAMPLE_GROUP, min((g + 1) * SAMPLE_GROUP, len(blocks))):
            s, e = blocks[j]
            st = xoshiro_state(seed_sequence(self.seed, self.key, b, j))
            kernel(st, F[s - offset : e - offset], draws[:, j], out)
        return out
