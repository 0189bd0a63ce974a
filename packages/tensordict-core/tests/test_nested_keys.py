"""Nested keys: unravelling, validation."""

import pytest

from tensordict import NestedKey, unravel_key, unravel_key_list, unravel_key_to_tuple
from tensordict._nested_key import is_nested_key


def test_unravel_key():
    assert unravel_key("a") == "a"
    assert unravel_key(("a",)) == "a"
    assert unravel_key(("a", ("b", ("c",)))) == ("a", "b", "c")
    assert unravel_key((("a",), "b")) == ("a", "b")


def test_unravel_key_to_tuple_and_list():
    assert unravel_key_to_tuple("a") == ("a",)
    assert unravel_key_to_tuple(("a", ("b",))) == ("a", "b")
    assert unravel_key_list(["a", ("b", ("c",)), ("d",)]) == ["a", ("b", "c"), "d"]


@pytest.mark.parametrize("bad", [1, ("a", 1), None, ("a", [1])])
def test_invalid_keys_raise(bad):
    with pytest.raises(KeyError, match="strings"):
        unravel_key(bad)
    assert not is_nested_key(bad)


def test_empty_tuple_is_invalid():
    with pytest.raises(KeyError, match="empty"):
        unravel_key_to_tuple(())


def test_nested_key_type_is_usable_as_annotation():
    def f(key: NestedKey) -> NestedKey:
        return key

    assert f(("a", "b")) == ("a", "b")
