"""no_grad, test_mode and using_config are classes (step 23): `with dz.no_grad:` says what to do."""

from __future__ import annotations

import re

import pytest

import dezero_like as dz


@pytest.mark.parametrize("name,call", [
    ("no_grad", "with dz.no_grad():"),
    ("test_mode", "with dz.test_mode():"),
    ("using_config", "with dz.using_config('train', False):"),
])
def test_with_a_config_class_not_called_says_what_to_write(name, call):
    before = (dz.Config.enable_backprop, dz.Config.train)
    with pytest.raises(TypeError, match=re.escape(f"'with {name}:'")) as info:
        with getattr(dz, name):
            pass
    assert f"call it: {call}" in str(info.value)
    assert (dz.Config.enable_backprop, dz.Config.train) == before


def test_no_grad_decorates_a_function_that_calls_itself():
    @dz.no_grad()
    def depth(n):
        return dz.Config.enable_backprop if n == 0 else depth(n - 1)

    assert depth(3) is False
    assert dz.Config.enable_backprop is True
