"""SLICE1's tuning as data: the two knobs its lowering reads (the kernel's workgroup and words a thread), in
one frozen, validated, hashable value, part of every plan key; pass another with
`tuning=DEFAULT.replace(...)` to `plan()`, `lower()` or `vkops.slice()`. Each default says why in one line;
docs/tuning/slice1.md has the rule they feed (pure: imports only errors)."""
from __future__ import annotations

from dataclasses import dataclass

from ..tuning import Tuning

_DOC = "docs/tuning/slice1.md"  # the sections named below: #<anchor> of this page


@dataclass(frozen=True)
class Slice1Tuning(Tuning):
    """The planning knobs of the lowering, named as the module constants of slice1.py they were."""

    __hash__ = Tuning.__hash__  # else dataclass(frozen=True) hashes every knob on every call's plan lookup

    WORKGROUP: int = 256  # wanted; Limits.workgroup() gives what the device allows, 128 at Vulkan's minimum (#which-loop-runs-where)
    WORDS_PER_THREAD: int = 4  # a workgroup's tile is WORKGROUP x this many words (specialization constant 1) (#which-loop-runs-where)

    OP = "SLICE1"

    def validate(self) -> "Slice1Tuning":
        """Raise ValidationError naming the field, the rule and the value; returns self."""
        self.check_counts(self.knobs(), pow2=("WORKGROUP",))
        return self


DEFAULT = Slice1Tuning()
