"""A tensorclass constructor given a keyword that is no field raises as upstream 0.15.3
does (an AttributeError naming the fields) and as Python does (a TypeError)."""

from __future__ import annotations

import pytest
import torch

from tensordict import tensorclass


@tensorclass
class Point:
    x: torch.Tensor
    label: str = "p"


@pytest.mark.parametrize("error", [AttributeError, TypeError])
def test_unexpected_keyword_raises_both_classes(error):
    with pytest.raises(error, match=r"Cannot set the attribute 'y': Point has no such field\. "
                                    r"Its fields are \['label', 'x'\]"):
        Point(x=torch.zeros(3), y=torch.zeros(3), batch_size=[3])


def test_fields_and_metadata_keywords_still_construct():
    point = Point(x=torch.zeros(3), label="q", batch_size=[3], device="cpu", names=["n"])
    assert point.label == "q" and point.batch_size == torch.Size([3])
    assert point.names == ["n"] and point.device == torch.device("cpu")
    with pytest.raises(TypeError, match="positional"):
        Point(torch.zeros(3), "q", "extra", batch_size=[3])


@pytest.mark.parametrize("build", [
    lambda: Point.from_dict({"zz": torch.zeros(3)}),
    lambda: Point.from_dict({"x": torch.zeros(3), "zz": torch.zeros(3)}),
    lambda: Point.fromkeys(["zz"], 0),
    lambda: Point.from_any({"zz": torch.zeros(3)}),
])
def test_class_constructors_refuse_keys_that_are_no_fields(build):
    with pytest.raises(ValueError, match=r"must correspond to the class attributes.*'zz'"):
        build()  # (it returned a plain TensorDict)


def test_class_constructors_of_fields_build_the_class():
    point = Point.from_dict({"x": torch.zeros(3)}, batch_size=[3])
    assert type(point) is Point and point.batch_size == torch.Size([3])
