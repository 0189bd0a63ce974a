"""The seeds' TensorClass examples with their exact printed output, and the reprs."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tensordict import TensorClass, TensorDict, set_printoptions, tensorclass


@pytest.fixture
def verbose():
    with set_printoptions(compact=False):
        yield


# -- the TensorClass reference page (seed 001) ---------------------------------------------
class Foo(TensorClass):
    tensor: torch.Tensor
    non_tensor: Any
    nested: Any = None


def test_reference_page_example(verbose, capsys):
    foo = Foo(tensor=torch.randn(3), non_tensor="a string!", nested=None, batch_size=[3])
    print(foo)
    assert capsys.readouterr().out == (
        "Foo(\n"
        "    non_tensor=NonTensorData(data=a string!, batch_size=torch.Size([3]), device=None),\n"
        "    tensor=Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, "
        "is_shared=False),\n"
        "    nested=None,\n"
        "    batch_size=torch.Size([3]),\n"
        "    device=None,\n"
        "    is_shared=False)\n"
    )


def test_reference_page_option_examples():
    class A(TensorClass["autocast"]):
        integer: int

    assert A(integer=torch.ones(())).integer == 1

    class B(TensorClass, autocast=True):  # equivalent
        integer: int

    assert B(integer=torch.ones(())).integer == 1

    class C(TensorClass["nocast"]):
        integer: int

    assert C(integer=1).integer == 1

    class D(TensorClass["nocast", "frozen"]):  # multiple keywords can be used
        integer: int

    assert D(integer=1).integer == 1

    class E(TensorClass, nocast=True):  # equivalent
        integer: int

    assert E(integer=1).integer == 1

    class F(TensorClass):
        integer: int

    with pytest.warns(FutureWarning):
        assert repr(F(integer=1).integer) == "tensor(1)"


# -- the README's TensorClass section (seeds 000 and 003) -----------------------------------
@tensorclass
class MyData:
    image: torch.Tensor
    mask: torch.Tensor
    label: torch.Tensor

    def mask_image(self):
        return self.image[self.mask.expand_as(self.image)].view(*self.batch_size, -1)

    def select_label(self, label):
        return self[self.label == label]


def _seed_data() -> MyData:
    images = torch.randn(100, 3, 64, 64)
    label = torch.arange(100) % 9  # 11 samples of label 1, like the seed's random draw
    mask = torch.zeros(1, 64 * 64, dtype=torch.bool)
    mask[:, :2039] = True  # 3 * 2039 = 6117 masked pixels per image, as printed
    mask = mask.reshape(1, 64, 64).expand(100, 1, 64, 64)
    return MyData(images, mask, label=label, batch_size=[100])


def test_readme_example(verbose, capsys):
    data = _seed_data()
    print(data.select_label(1))
    print(data.mask_image().shape)
    print(data.reshape(10, 10))
    assert capsys.readouterr().out == (
        "MyData(\n"
        "    image=Tensor(shape=torch.Size([11, 3, 64, 64]), device=cpu, dtype=torch.float32, "
        "is_shared=False),\n"
        "    label=Tensor(shape=torch.Size([11]), device=cpu, dtype=torch.int64, "
        "is_shared=False),\n"
        "    mask=Tensor(shape=torch.Size([11, 1, 64, 64]), device=cpu, dtype=torch.bool, "
        "is_shared=False),\n"
        "    batch_size=torch.Size([11]),\n"
        "    device=None,\n"
        "    is_shared=False)\n"
        "torch.Size([100, 6117])\n"
        "MyData(\n"
        "    image=Tensor(shape=torch.Size([10, 10, 3, 64, 64]), device=cpu, "
        "dtype=torch.float32, is_shared=False),\n"
        "    label=Tensor(shape=torch.Size([10, 10]), device=cpu, dtype=torch.int64, "
        "is_shared=False),\n"
        "    mask=Tensor(shape=torch.Size([10, 10, 1, 64, 64]), device=cpu, dtype=torch.bool, "
        "is_shared=False),\n"
        "    batch_size=torch.Size([10, 10]),\n"
        "    device=None,\n"
        "    is_shared=False)\n"
    )


def test_readme_example_leaf_by_leaf():
    data = _seed_data()
    selected = data.select_label(1)
    keep = data.label == 1
    assert torch.equal(selected.image, data.image[keep])
    assert torch.equal(selected.mask, data.mask[keep])
    reshaped = data.reshape(10, 10)
    assert torch.equal(reshaped.image, data.image.reshape(10, 10, 3, 64, 64))


# -- compact reprs (upstream 0.15.3 layout) -------------------------------------------------
class Bar(TensorClass):
    foo: Foo
    td: TensorDict
    x: torch.Tensor
    s: str = "hi"


def _bar() -> Bar:
    foo = Foo(tensor=torch.zeros(3), non_tensor="a string!", batch_size=[3])
    return Bar(foo=foo, td=TensorDict(a=torch.zeros(3, 2), batch_size=[3]),
               x=torch.zeros(3, 4, 5), batch_size=[3])


def test_compact_reprs():
    foo = Foo(tensor=torch.zeros(3), non_tensor="a string!", batch_size=[3])
    assert repr(foo) == "Foo(batch_size=[3], fields={non_tensor: str, tensor: f32[], nested: None})"
    assert repr(_bar()) == (
        "Bar(batch_size=[3], fields={\n"
        "    foo: Foo{non_tensor: str, tensor: f32[], nested: None},\n"
        "    s: str,\n"
        "    td: {a: f32[2]},\n"
        "    x: f32[4,5]})"
    )
    assert repr(_bar()._tensordict).startswith("TensorDict(batch_size=[3], fields={\n    foo: Foo{")


def test_verbose_nested_repr(verbose):
    text = repr(_bar())
    assert text.startswith("Bar(\n    foo=Foo(\n        non_tensor=NonTensorData(data=a string!")
    assert "    s=NonTensorData(data=hi, batch_size=torch.Size([3]), device=None),\n" in text
    assert "    td=TensorDict(\n        fields={\n            a: Tensor(shape=torch.Size([3, 2])" \
        in text
    assert text.endswith("    batch_size=torch.Size([3]),\n    device=None,\n    is_shared=False)")


def test_class_docstring_shows_the_constructor():
    assert Bar.__doc__ == (
        "Bar(foo: 'Foo', td: 'TensorDict', x: 'torch.Tensor', s: 'str' = 'hi', *, "
        "batch_size=None, device=None, names=None)"
    )
