"""to_jsonable, the report's last step: plain values pass through its fast path exactly as through the general
one, numpy values become Python ones, NaN and infinities become None, keys become strings."""

from __future__ import annotations

import json
import math
from collections import OrderedDict

import numpy as np

from metrics.core.common import to_jsonable


class Name(str):
    """A str subclass (Django's SafeString is one): kept as it is, like any value the report does not convert."""


def test_plain_and_numpy_values_come_out_as_json_values() -> None:
    value = {
        "float": 0.1, "nan": math.nan, "inf": -math.inf, "int": 3, "bool": True, "none": None, "str": "x",
        "name": Name("n"), 7: "int key", ("a", 1): "tuple key",
        "np": [np.float64(0.5), np.float32(np.nan), np.int16(4), np.bool_(False), np.array([1.5, np.inf])],
        "tuple": (1, 2.0, math.nan), "ordered": OrderedDict([(np.int64(2), np.float64(math.inf))]),
        "nested": {"deeper": [{"x": np.array([[1, 2], [3, 4]])}]},
    }
    out = to_jsonable(value)
    assert out == {
        "float": 0.1, "nan": None, "inf": None, "int": 3, "bool": True, "none": None, "str": "x", "name": "n",
        "7": "int key", "('a', 1)": "tuple key", "np": [0.5, None, 4, False, [1.5, None]], "tuple": [1, 2.0, None],
        "ordered": {"2": None}, "nested": {"deeper": [{"x": [[1, 2], [3, 4]]}]},
    }
    kinds = [type(v) for v in out["np"][:4]]
    assert kinds == [float, type(None), int, bool]
    assert type(out["name"]) is Name and type(out["int"]) is int and type(out["bool"]) is bool
    json.dumps(out, allow_nan=False)
