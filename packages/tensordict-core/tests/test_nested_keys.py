"""Nested keys: unravelling, validation."""

import pytest

from tensordict import NestedKey, unravel_key, unravel_key_list, unravel_key_to_tuple
from tensordict._nested_key import is_nested_key, key_to_path


def test_unravel_key():
    assert unravel_key("a") == "a"
    assert unravel_key(("a",)) == "a"
    assert unravel_key(("a", ("b", ("c",)))) == ("a", "b", "c")
    assert unravel_key((("a",), "b")) == ("a", "b")


def test_unravel_key_to_tuple_and_list():
    assert unravel_key_to_tuple("a") == ("a",)
    assert unravel_key_to_tuple(("a", ("b",))) == ("a", "b")
    assert unravel_key_list(["a", ("b", ("c",)), ("d",)]) == ["a", ("b", "c"), "d"]


@pytest.mark.parametrize("bad", [("a", 1), ("a", [1]), (0,), (), ("a", ())])
def test_invalid_tuple_keys_unravel_to_empty_tuple(bad):
    # upstream's compiled unravel_key: a tuple that is not a nested key gives ()
    assert unravel_key(bad) == ()
    assert unravel_key_to_tuple(bad) == ()
    assert not is_nested_key(bad) and not isinstance(bad, NestedKey)
    with pytest.raises(RuntimeError):
        unravel_key_list([bad])


@pytest.mark.parametrize("bad", [1, None, ["a"], b"a"])
def test_non_tuple_keys_raise_runtime_error(bad):
    with pytest.raises(RuntimeError):
        unravel_key(bad)
    assert unravel_key_to_tuple(bad) == ()
    assert not is_nested_key(bad)


def test_invalid_key_lookup_raises_key_error_naming_it():
    with pytest.raises(KeyError, match=r"Only NestedKeys .*\(0,\)"):
        key_to_path((0,))
    with pytest.raises(KeyError, match="Got key \\(\\)"):
        key_to_path(())


def test_nested_key_type_is_usable_as_annotation():
    def f(key: NestedKey) -> NestedKey:
        return key

    assert f(("a", "b")) == ("a", "b")
