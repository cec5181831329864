"""The one choice source: every nondeterministic decision of a run goes through here.

A run of a model is a pure function of the sequence of choices it draws. Each
draw is typed (an index among ``n`` options), labelled, and recorded in order,
so the very same run can be drawn at random, driven and shrunk by Hypothesis,
enumerated exhaustively, or replayed byte for byte from a recording.

Choice 0 is always the boring choice (FIFO order, no delay, no fault), so a
recording reads as "FIFO except for these deviations" and shrinking moves
toward fewer of them. The compact text form of a recording, the *blob*, lists
only the deviations: ``57:12=1,40=2`` is 57 draws, all 0 but draw 12 (1) and
draw 40 (2).

No plain ``assert``: a provider's out-of-range value or a schedule draw naming
the wrong actors is a ``KernelError`` (exit 70); a draw a model asks wrongly for
(no label, no options, an empty range, ``p`` outside [0, 1]) is a ``ValueError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple, TypeVar

from raceproof.sim.errors import KernelError, Nondeterministic, contract

T = TypeVar("T")

SCHEDULE_LABEL = "schedule"
MAX_DRAWS = 1_000_000  # draws in one recording: far above any bounded run, far below memory
_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment
_BATCH_AFTER = 64  # values a generator computes one at a time before it batches
_BATCH_MAX = 4096  # values computed ahead at most


class Choice(NamedTuple):
    """One recorded draw: its label, how many options it had, which was taken."""

    label: str
    n: int
    value: int


# ``Choice(label, n, value)`` without NamedTuple's Python-level ``__new__``: one per draw.
_new_choice = partial(tuple.__new__, Choice)


class ReplayMisaligned(Exception):
    """A recorded choice sequence no longer fits the model that replays it."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(index, message)
        self.index = index
        self.detail = message
        self.actor: str | None = None  # the actor that drew (the World notes it as it passes)

    def __str__(self) -> str:
        return f"replay misaligned at draw #{self.index}: {self.detail}"

    def as_nondeterminism(self) -> Nondeterministic:
        """What it means when the recording is the model's own run: the model's mistake."""
        return Nondeterministic(self.detail, draw=self.index, actor=self.actor)


class ChoiceSource:
    """Base class of every provider: subclasses implement :meth:`_pick`.

    Model code calls :meth:`choose`, :meth:`draw_int` and :meth:`draw_bool`;
    the World calls :meth:`schedule` to order events due at the same instant.
    All four funnel into one recorded draw of an index in ``[0, n)``.
    """

    def __init__(self) -> None:
        # Every draw in order: a ``Choice``, or for a schedule draw of the fast path (see
        # ``RandomSource.schedule``) its bare value, whose ``n`` is the next one in
        # ``_sizes``; made a ``Choice`` in place when ``record`` is read. ``len(drawn)`` is
        # the number of draws so far.
        self.drawn: list[Choice | int] = []
        self._sizes: list[int] = []  # ``n`` of each bare value in ``drawn``, in order
        self._typed = 0  # draws before this index are all ``Choice`` objects
        self._sized = 0  # sizes before this index are spent

    @property
    def record(self) -> list[Choice]:
        """Every draw so far, in order, as ``Choice`` objects (the list itself: appending records)."""
        draws, sizes, sized = self.drawn, self._sizes, self._sized
        for index in range(self._typed, len(draws)):
            entry = draws[index]
            if type(entry) is int:
                draws[index] = _new_choice((SCHEDULE_LABEL, sizes[sized], entry))
                sized += 1
        contract(sized == len(sizes), "every bare draw has its size")
        self._typed, self._sized = len(draws), sized
        return draws  # type: ignore[return-value]

    # -- the one primitive -------------------------------------------------
    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        raise NotImplementedError

    def _draw(
        self, label: str, n: int, p_nonzero: float | None = None, keys: Sequence[str] = ()
    ) -> int:
        if not (isinstance(label, str) and label):  # inline checks: the hot path
            raise ValueError("a draw needs a label")
        if not (isinstance(n, int) and n >= 1):
            raise ValueError(f"draw {label!r} needs at least one option, got {n}")
        if n == 1:
            return 0  # no decision to make: not recorded, so recordings stay minimal
        value = self._pick(label, n, p_nonzero, keys)
        if not 0 <= value < n:
            raise KernelError(f"provider returned {value} for {n} options")
        self.drawn.append(_new_choice((label, n, value)))
        return value

    # -- the public interface ----------------------------------------------
    def choose(self, label: str, options: Sequence[T]) -> T:
        """One of ``options``; option 0 is the boring one."""
        if not options:
            raise ValueError(f"choose {label!r} from no options")
        return options[self._draw(label, len(options))]

    def draw_int(self, label: str, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi]``; ``lo`` is the boring one."""
        if not lo <= hi:
            raise ValueError(f"draw_int {label!r}: empty range [{lo}, {hi}]")
        return lo + self._draw(label, hi - lo + 1)

    def draw_bool(self, label: str, p: float = 0.5) -> bool:
        """True with probability about ``p`` under random providers; False is boring."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"draw_bool {label!r}: p={p} is not a probability")
        return self._draw(label, 2, p_nonzero=p) == 1

    uses_keys = False  # True for providers that look at which actor each event resumes
    # Whether the World names the actors of each schedule deviation (``World.overtaken``).
    # A search turns it off on the sources it makes: naming costs a walk over callbacks on
    # nearly every step of a random run, and only a reported run needs the names (``shrink``
    # replays its result with them).
    names_deviations = True
    # Tracked shared state records each container as one resource (``raceproof.sim.shared``'s
    # ``WholeObjectFootprints`` sets it on the sources of the runs it wraps).
    whole_object_footprints = False

    def schedule(self, n: int, keys: Callable[[], Sequence[str]]) -> int:
        """Index of the one of ``n`` due events that runs next.

        ``keys()`` names the actor each event resumes; it is computed only for
        providers that use it (PCT), since it costs a walk over callbacks.
        """
        return self._draw(SCHEDULE_LABEL, n, keys=keys() if self.uses_keys else ())

    @property
    def values(self) -> list[int]:
        return [c.value for c in self.record]


class SplitMix64:
    """A tiny seeded generator, identical on every Python version and platform.

    SplitMix64 is counter-based: output ``k`` is a fixed mix of ``seed + k·γ``
    (mod 2^64), independent of the outputs before it. So a generator that has
    already drawn :data:`_BATCH_AFTER` values computes the next ones in batches
    (doubling up to :data:`_BATCH_MAX`) with NumPy's wrapping uint64 arithmetic,
    and each draw pops one: the very same values, bit for bit, at a fraction of
    the cost of the fourteen big-integer operations per value in pure Python
    (the schedule draw of every tie-heavy run). A short-lived generator (a
    derived seed, a short run) never imports NumPy.
    """

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK64  # the state after the last value computed
        self.buffer: list[int] = []  # values computed ahead, the next one last (``pop()``)
        self._computed = 0

    @property
    def state(self) -> int:
        """The state after the last value *drawn* (values computed ahead do not count)."""
        return (self._state - len(self.buffer) * _GAMMA) & _MASK64

    def next64(self) -> int:
        buffer = self.buffer
        if buffer:
            return buffer.pop()
        if self._computed >= _BATCH_AFTER:
            self._refill()
            return buffer.pop()
        self._computed += 1
        self._state = z = (self._state + _GAMMA) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def _refill(self) -> None:
        """Compute the next batch of values into ``buffer`` (empty here), in reverse order."""
        import numpy as np  # only for generators that draw many values

        size = min(self._computed, _BATCH_MAX)
        u64 = np.uint64
        # Steps size, size-1, ..., 1 from the current state: reversed, so ``pop()`` takes step 1.
        z = np.arange(size, 0, -1, dtype=u64) * u64(_GAMMA) + u64(self._state)
        z = (z ^ (z >> u64(30))) * u64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
        self.buffer.extend((z ^ (z >> u64(31))).tolist())
        self._state = (self._state + size * _GAMMA) & _MASK64
        self._computed += size

    def below(self, n: int) -> int:
        if n < 1:  # inline: every random draw
            raise KernelError(f"SplitMix64.below: no value below {n}")
        return (self.next64() * n) >> 64

    def chance(self, p: float) -> bool:
        return self.next64() < int(p * (1 << 64))


def derive_seed(seed: int, *path: int) -> int:
    """A well-mixed seed for sub-run ``path`` of run ``seed`` (one seed derives all)."""
    rng = SplitMix64(seed)
    for part in path:
        rng = SplitMix64(rng.next64() ^ (part & _MASK64))
    return rng.next64()


class RandomSource(ChoiceSource):
    """Uniform draws from a seeded generator; booleans honour their ``p``."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.rng = SplitMix64(seed)
        self._buffer = self.rng.buffer  # the same list for the generator's whole life

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        if p_nonzero is not None and n == 2:
            return 1 if self.rng.chance(p_nonzero) else 0
        return (self.rng.next64() * n) >> 64  # ``below(n)``, inlined: n >= 2 here

    def schedule(self, n: int, keys: Callable[[], Sequence[str]]) -> int:
        """``ChoiceSource.schedule`` in one call: the World draws among n >= 2 due events.

        The same value, recorded the same way, without the generic draw's frames
        (this runs on nearly every step of a tie-heavy run).
        """
        if n < 2:
            return super().schedule(n, keys)
        buffer = self._buffer  # the generator's values computed ahead (``SplitMix64``)
        value = ((buffer.pop() if buffer else self.rng.next64()) * n) >> 64
        # A ``Choice`` only when ``record`` is read. Two small ints, not one packed int or a
        # tuple: ints up to 256 are Python's own cached objects, so nothing is allocated
        # and nothing is left for the garbage collector to track.
        self.drawn.append(value)
        self._sizes.append(n)
        return value

    def inlined_schedule(self) -> tuple[list[int], Callable[[int], None], Callable[[int], None]]:
        """What a caller needs to inline ``schedule`` for n >= 2: the values computed ahead
        (pop one, take ``(value * n) >> 64``) and the two appends that record the draw
        (the value, then ``n``). ``World.step`` inlines it on every unobserved step; the
        lists live as long as the source, so the bound appends stay valid.
        """
        return self._buffer, self.drawn.append, self._sizes.append


_NUMBERS = re.compile(r"\d+")


class SwarmSource(RandomSource):
    """Swarm testing (Groce et al., ISSTA 2012): each run enables a random subset of the kinds.

    A draw's *kind* is its label with its numbers taken out: ``fault.crash.w1``
    and ``fault.crash.w2`` are one kind, ``rebalance1.at`` and ``rebalance2.at``
    another, every schedule draw a third. On first sight each kind is enabled
    or not, at even odds, from a stream of its own (derived from the seed, so
    the enabled set is a function of the seed alone); an enabled kind draws as
    :class:`RandomSource` does, a disabled one always takes option 0, the boring
    one (no fault, no delay, FIFO). The record holds the values actually taken,
    so a swarm run replays and shrinks like any other.
    """

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.kinds: dict[str, bool] = {}  # kind -> enabled, in order of first sight
        self._kind_of: dict[str, str] = {}
        self._features = SplitMix64(derive_seed(seed, 1))

    def enabled(self, label: str) -> bool:
        kind = self._kind_of.get(label)
        if kind is None:
            kind = self._kind_of[label] = _NUMBERS.sub("", label)
        on = self.kinds.get(kind)
        if on is None:
            on = self.kinds[kind] = self._features.chance(0.5)
        return on

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        return super()._pick(label, n, p_nonzero, keys) if self.enabled(label) else 0

    schedule = ChoiceSource.schedule  # through ``_pick``: the schedule is a kind like the others


class ReplaySource(ChoiceSource):
    """Replays recorded values.

    ``strict``: every draw must match the recording (label and option count when
    the recording has them, the value in range, the same number of draws), else
    :class:`ReplayMisaligned`. Not strict: the recording is a *prefix*; past its
    end every draw is 0, and an out-of-range value becomes 0 (used by the
    enumerator and the shrinker, which then keep what the run actually drew).
    """

    def __init__(
        self,
        values: Sequence[int] | Sequence[Choice],
        *,
        strict: bool = True,
    ) -> None:
        super().__init__()
        self.expected: list[Choice | None] = [v if isinstance(v, Choice) else None for v in values]
        self.raw: list[int] = [v.value if isinstance(v, Choice) else int(v) for v in values]
        self.strict = strict

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        index = len(self.drawn)
        if index >= len(self.raw):
            if self.strict:
                raise ReplayMisaligned(
                    index,
                    f"the model asked for draw {label!r} ({n} options) "
                    f"but the recording holds only {len(self.raw)} draws",
                )
            return 0
        value = self.raw[index]
        want = self.expected[index]
        if self.strict and want is not None and (want.label != label or want.n != n):
            raise ReplayMisaligned(
                index,
                f"recorded {want.label!r} with {want.n} options, "
                f"the model now draws {label!r} with {n} options",
            )
        if value >= n:
            if self.strict:
                raise ReplayMisaligned(
                    index, f"recorded value {value} but draw {label!r} has only {n} options"
                )
            return 0
        return value

    def finish(self) -> None:
        """In strict mode, every recorded draw must have been used."""
        made = len(self.drawn)
        if self.strict and made != len(self.raw):
            want = self.expected[made] if made < len(self.expected) else None
            then = f" (its next: {want.label!r})" if want is not None else ""
            raise ReplayMisaligned(
                made,
                f"the model made {made} draws, the recording holds {len(self.raw)}{then}",
            )


class KeyedReplaySource(ChoiceSource):
    """Replays values keyed by (label, occurrence of that label); every other draw is 0.

    Robust to shifts: when an early draw changes how many draws follow, a
    deviation still lands on "the 2nd ``rpc.client0`` draw" rather than on
    whatever now sits at its old position. The shrinker uses it to drop one
    deviation without misplacing the others.
    """

    def __init__(self, keyed: dict[tuple[str, int], int]) -> None:
        super().__init__()
        self.keyed = keyed
        self.seen: dict[str, int] = {}

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        occurrence = self.seen.get(label, 0)
        self.seen[label] = occurrence + 1
        value = self.keyed.get((label, occurrence), 0)
        return value if value < n else 0


def keyed_deviations(record: Sequence[Choice]) -> dict[tuple[str, int], int]:
    """The nonzero draws of ``record`` keyed by (label, occurrence)."""
    seen: dict[str, int] = {}
    keyed = {}
    for choice in record:
        occurrence = seen.get(choice.label, 0)
        seen[choice.label] = occurrence + 1
        if choice.value:
            keyed[(choice.label, occurrence)] = choice.value
    return keyed


class PCTSource(ChoiceSource):
    """Probabilistic Concurrency Testing (Burckhardt et al.) over the schedule draws.

    Each actor gets a random priority at first sight; every schedule draw runs
    the highest-priority actor; at ``depth - 1`` change points, drawn among the
    first ``expected_steps`` schedule draws, the running actor drops to the
    lowest priority. Other draws (delays, faults) are seeded random.
    """

    uses_keys = True

    def __init__(self, seed: int, depth: int, expected_steps: int) -> None:
        super().__init__()
        if not (depth >= 1 and expected_steps >= 1):
            raise ValueError(
                f"PCTSource: depth {depth} and expected_steps {expected_steps} must be >= 1"
            )
        self.rng = SplitMix64(seed)
        self.priority: dict[str, int] = {}
        self.change_points = sorted(
            {self.rng.below(expected_steps) for _ in range(depth - 1)}, reverse=True
        )
        self.low = 0
        self.schedule_draws = 0

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        if label != SCHEDULE_LABEL:
            if p_nonzero is not None and n == 2:
                return 1 if self.rng.chance(p_nonzero) else 0
            return self.rng.below(n)
        contract(len(keys) == n, f"a schedule draw of {n} options names {len(keys)} actors")
        for key in keys:
            if key not in self.priority:
                self.priority[key] = 1_000_000 + self.rng.below(1_000_000)
        best = max(range(n), key=lambda i: (self.priority[keys[i]], -i))
        if self.change_points and self.change_points[-1] == self.schedule_draws:
            self.change_points.pop()
            self.low -= 1
            self.priority[keys[best]] = self.low
            best = max(range(n), key=lambda i: (self.priority[keys[i]], -i))
        self.schedule_draws += 1
        return best


class HypothesisSource(ChoiceSource):
    """Draws through Hypothesis' ``data.draw`` so the whole schedule shrinks toward 0."""

    def __init__(self, data: object) -> None:
        super().__init__()
        from hypothesis import strategies as st

        self._st = st  # its integers() are cached by Hypothesis: one object per range
        self.data = data
        # The integer draw ``st.integers(lo, hi)`` itself makes for ranges up to 128 wide,
        # without the strategy machinery around it (half of an example's time on a small
        # model): the same choices, shrunk the same way. Anything else takes the strategy.
        conjecture = getattr(data, "conjecture_data", None)
        self._integer: Callable[[int, int], int] | None = getattr(conjecture, "draw_integer", None)

    def _pick(self, label: str, n: int, p_nonzero: float | None, keys: Sequence[str]) -> int:
        draw = self._draw_in
        if p_nonzero is not None and n == 2 and p_nonzero > 0.0:
            # Nonzero only at the top of a range about 1/p wide, so it fires about p of
            # the time and still shrinks to "no"; from p = 0.5 on the range is [0, 1].
            top = max(1, round(1 / p_nonzero) - 1)
            return 1 if draw(0, top) == top else 0
        return draw(0, n - 1)

    def _draw_in(self, lo: int, hi: int) -> int:
        if self._integer is not None and hi - lo <= 127:
            return int(self._integer(lo, hi))
        return int(self.data.draw(self._st.integers(lo, hi)))  # type: ignore[attr-defined]


# -- blobs: the copy-pasteable text form of a recording ------------------------
# ASCII digits only (``\d`` alone would take "٣" and "５"), at most 18 each: no count of draws,
# position or option is longer, and ``int()`` of thousands of digits is slow and then refused.
_BLOB = re.compile(r"^([0-9]{1,18}):((?:[0-9]{1,18}=[0-9]{1,18})(?:,[0-9]{1,18}=[0-9]{1,18})*)?$")


def encode_blob(values: Sequence[int]) -> str:
    """``LEN:POS=VAL,...`` listing only the nonzero draws."""
    deviations = ",".join(f"{i}={v}" for i, v in enumerate(values) if v)
    return f"{len(values)}:{deviations}"


def decode_blob(blob: str) -> list[int]:
    """The values of ``blob``; ValueError naming what is wrong if it is malformed."""
    match = _BLOB.match(blob.strip())
    if not match:
        raise ValueError(f"choice blob {blob!r} is not of the form LEN:POS=VAL,POS=VAL")
    length = int(match.group(1))
    if length > MAX_DRAWS:
        raise ValueError(f"choice blob {blob!r}: {length} draws, at most {MAX_DRAWS}")
    values = [0] * length
    last = -1
    for part in filter(None, (match.group(2) or "").split(",")):
        pos_text, val_text = part.split("=")
        pos, val = int(pos_text), int(val_text)
        if pos >= length:
            raise ValueError(f"choice blob {blob!r}: position {pos} is past its length {length}")
        if pos <= last:
            raise ValueError(f"choice blob {blob!r}: positions must increase ({pos} after {last})")
        if val == 0:
            raise ValueError(f"choice blob {blob!r}: position {pos} lists the boring value 0")
        values[pos] = val
        last = pos
    return values


def deviations(values: Sequence[int]) -> int:
    """How many draws left the boring choice."""
    return sum(1 for v in values if v)
