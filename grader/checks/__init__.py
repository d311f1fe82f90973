"""Small composable checks: each is called with a Trial, returns a CheckResult."""

from grader.checks.comms import Bytes, Count, LargestTransfer, OnlyCollectives, RingHops
from grader.checks.memory import TempMemory
from grader.checks.program import Precision, UnderShardMap
from grader.checks.sharding import OutputSharding
from grader.checks.values import InputsUntouched, Values

__all__ = [
    "Bytes",
    "Count",
    "InputsUntouched",
    "LargestTransfer",
    "OnlyCollectives",
    "OutputSharding",
    "RingHops",
    "Precision",
    "TempMemory",
    "UnderShardMap",
    "Values",
]
