"""perflab: a performance evaluation lab.

Drive a system under test with simulated users, measure what every transaction costs,
and compare release A with release B the way the seed reports' lab did.
"""

__version__ = "0.1.0"
