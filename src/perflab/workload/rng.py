"""A small, seedable random stream per simulated user.

Why not `random.Random` or a numpy Generator per user: each carries kilobytes of state
(Mersenne Twister: 2.5 KB), and perflab aims at 100k idle users in a few KB each. SplitMix64
(Steele, Lea, Flood 2014) keeps 8 bytes of state, passes BigCrush, and makes each user's
stream independent of every other user's: the same (seed, user) gives the same sequence of
script choices and think times however the event loop interleaves users.
"""

from __future__ import annotations

import math

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_INV_2_53 = 1.0 / (1 << 53)


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class UserRandom:
    """SplitMix64 stream: `random()` in [0, 1), plus the few distributions perflab needs."""

    __slots__ = ("state",)

    def __init__(self, seed: int, stream: int, substream: int = 0):
        # Mixing the three numbers makes nearby seeds and users yield unrelated streams.
        self.state = _mix((_mix(seed & _MASK) ^ _mix((stream * 0xD1B54A32D192ED03 + substream) & _MASK)) & _MASK)

    def next64(self) -> int:
        self.state = (self.state + _GAMMA) & _MASK
        return _mix(self.state)

    def random(self) -> float:
        return (self.next64() >> 11) * _INV_2_53

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.random()

    def randint(self, low: int, high: int) -> int:
        """Uniform integer in [low, high], both inclusive."""
        return low + int(self.random() * (high - low + 1))

    def exponential(self, mean: float) -> float:
        return -mean * math.log(1.0 - self.random())

    def normal(self) -> float:
        # Box-Muller; one of the pair is discarded to keep the state a single integer.
        u1 = 1.0 - self.random()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * self.random())

    def lognormal(self, mu: float, sigma: float) -> float:
        return math.exp(mu + sigma * self.normal())

    def pick(self, cumulative: list[float]) -> int:
        """Index drawn with probabilities given as a cumulative list ending at the total."""
        if len(cumulative) == 1:
            # One choice (a workload of one script): the draw is still taken from the stream, so
            # every later draw is the one it would be, but not mixed into a number nobody reads
            # -- about a microsecond per transaction on the HTTP driver's path.
            self.state = (self.state + _GAMMA) & _MASK
            return 0
        x = self.random() * cumulative[-1]
        lo, hi = 0, len(cumulative) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cumulative[mid] > x:
                hi = mid
            else:
                lo = mid + 1
        return lo
