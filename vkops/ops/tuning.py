"""The shared base of the operators' tunings (ops/<op>/tuning.py): a frozen dataclass of planning knobs,
hashed once (it is part of every plan key), replaced by name and validated, each error naming the field, the
rule and the value (pure: imports only errors)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Tuple, TypeVar

from ..errors import ValidationError

T = TypeVar("T", bound="Tuning")


@dataclass(frozen=True)
class Tuning:
    """Subclasses add the fields (each default with its one-line why) and `validate()`; OP names the operator."""

    OP = "an operator"  # a class attribute, not a field

    def __post_init__(self):
        if self._validates_at_init():
            self.validate()
        object.__setattr__(self, "_hash", hash(dataclasses.astuple(self)))

    def _validates_at_init(self) -> bool:
        return True

    def __hash__(self) -> int:  # a plan key holds it: hashed on every call, so once
        return self._hash

    @classmethod
    def knobs(cls) -> Tuple[str, ...]:
        """Every knob's name."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self: T, **knobs) -> T:
        """This tuning with `knobs` changed (validated; an unknown name is a ValidationError)."""
        bad = sorted(set(knobs) - set(self.knobs()))
        if bad:
            raise ValidationError(f"no {self.OP} knob {bad[0]!r}: {type(self).__name__}'s fields are "
                                  f"{', '.join(self.knobs())}")
        return dataclasses.replace(self, **knobs)

    def validate(self: T) -> T:
        return self

    def check_counts(self, names: Iterable[str], pow2: Iterable[str] = ()) -> None:
        """Each of `names` an int >= 1 (not a bool); those in `pow2` also a power of two."""
        pow2 = set(pow2)
        for name in names:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValidationError(f"{type(self).__name__}.{name} must be an int >= 1; got {v!r}")
            if name in pow2 and v & (v - 1):
                raise ValidationError(f"{type(self).__name__}.{name} must be a power of two (a buffer or "
                                      f"workgroup size); got {v!r}")
