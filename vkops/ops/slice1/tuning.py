"""SLICE1's tuning as data: the two knobs its lowering reads (the kernel's workgroup and words a thread), in
one frozen, validated, hashable value, part of every plan key; pass another with
`tuning=DEFAULT.replace(...)` to `plan()`, `lower()` or `vkops.slice()`. Each default says why in one line;
docs/tuning/slice1.md has the rule they feed (pure: imports only errors)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Tuple

from ...errors import ValidationError

_DOC = "docs/tuning/slice1.md"  # the sections named below: #<anchor> of this page


@dataclass(frozen=True)
class Slice1Tuning:
    """The planning knobs of the lowering, named as the module constants of slice1.py they were."""

    WORKGROUP: int = 256  # wanted; Limits.workgroup() gives what the device allows, 128 at Vulkan's minimum (#which-loop-runs-where)
    WORDS_PER_THREAD: int = 4  # a workgroup's tile is WORKGROUP x this many words (specialization constant 1) (#which-loop-runs-where)

    def __post_init__(self):
        self.validate()
        object.__setattr__(self, "_hash", hash(dataclasses.astuple(self)))

    def __hash__(self) -> int:  # a plan key holds it: hashed on every call, so once
        return self._hash

    @classmethod
    def knobs(cls) -> Tuple[str, ...]:
        """Every knob's name."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **knobs) -> "Slice1Tuning":
        """This tuning with `knobs` changed (validated; an unknown name is a ValidationError)."""
        bad = sorted(set(knobs) - set(self.knobs()))
        if bad:
            raise ValidationError(f"no SLICE1 knob {bad[0]!r}: Slice1Tuning's fields are {', '.join(self.knobs())}")
        return dataclasses.replace(self, **knobs)

    def validate(self) -> "Slice1Tuning":
        """Raise ValidationError naming the field, the rule and the value; returns self."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValidationError(f"Slice1Tuning.{f.name} must be an int >= 1; got {v!r}")
        if self.WORKGROUP & (self.WORKGROUP - 1):
            raise ValidationError(f"Slice1Tuning.WORKGROUP must be a power of two; got {self.WORKGROUP!r}")
        return self


DEFAULT = Slice1Tuning()
