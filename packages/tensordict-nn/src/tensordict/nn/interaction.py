"""How probabilistic modules turn a distribution into a value.

>>> from tensordict.nn import InteractionType, interaction_type, set_interaction_type
>>> interaction_type() is None
True
>>> with set_interaction_type("random"):
...     interaction_type()
<InteractionType.RANDOM: 'random'>
"""

from __future__ import annotations

from enum import Enum

from tensordict.nn.utils import _Switch, _SwitchContext

__all__ = ["InteractionType", "interaction_type", "set_interaction_type"]


class InteractionType(Enum):
    """What a probabilistic module writes: the distribution's mode, median, mean, a random
    sample, or its deterministic sample (``deterministic_sample``, the mode of a discrete
    distribution, else the mean).

    >>> InteractionType("mode"), str(InteractionType.RANDOM)
    (<InteractionType.MODE: 'mode'>, 'random')
    """

    MODE = "mode"
    MEDIAN = "median"
    MEAN = "mean"
    RANDOM = "random"
    DETERMINISTIC = "deterministic"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def from_str(cls, type_str: str) -> InteractionType:
        """The member named ``type_str`` (case-insensitive).

        >>> InteractionType.from_str("MEAN")
        <InteractionType.MEAN: 'mean'>
        """
        return cls(type_str.lower())


_INTERACTION = _Switch(None)


def interaction_type() -> InteractionType | None:
    """The interaction type set by :class:`set_interaction_type`, or ``None`` outside of
    one (each module's ``default_interaction_type`` then applies).

    >>> interaction_type() is None
    True
    """
    return _INTERACTION.get()


class set_interaction_type(_SwitchContext):  # noqa: N801 (upstream name)
    """Context manager / decorator setting how probabilistic modules pick their output.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.nn import ProbabilisticTensorDictModule
    >>> from torch.distributions import Normal
    >>> module = ProbabilisticTensorDictModule(
    ...     in_keys=["loc", "scale"], out_keys=["x"], distribution_class=Normal)
    >>> td = TensorDict(loc=torch.ones(2), scale=torch.ones(2), batch_size=[2])
    >>> with set_interaction_type("mode"):
    ...     module(td)["x"]
    tensor([1., 1.])
    """

    _switch = _INTERACTION

    def __init__(self, type: InteractionType | str | None = InteractionType.DETERMINISTIC,  # noqa: A002
                 *, thread_local: bool = False) -> None:
        if isinstance(type, str):
            type = InteractionType.from_str(type)  # noqa: A001
        elif type is not None and not isinstance(type, InteractionType):
            raise TypeError(f"interaction type must be an InteractionType or a str, got {type!r}")
        super().__init__(type, thread_local)
