"""vkops.onnx: ONNX's own backend node tests for TopK, Slice and QLinearMatMul, and our own cases
(dtype conversion, errors, clamping, per-axis scales, a two-node graph) against NumPy."""
import re
import unittest
import warnings

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx import TensorProto, helper
from onnx.backend.test.loader import load_model_tests

import vkops
import vkops.onnx as vkonnx

# ---------------------------------------------------------------------------------------------- #
# ONNX node tests
# ---------------------------------------------------------------------------------------------- #
FAMILIES = re.compile(r"^test_(top_k|slice|qlinearmatmul)(_|$)")
# Node tests vkops cannot run, with the reason. Each must raise the backend's clear error (checked
# below), and the list must name only tests that exist, so it cannot go stale.
UNSUPPORTED = {}

with warnings.catch_warnings():  # ONNX builds every op's cases at load; some overflow on purpose
    warnings.simplefilter("ignore", RuntimeWarning)
    NODE_CASES = {t.name: t for t in load_model_tests(kind="node") if FAMILIES.search(t.name)}
    backend_test = onnx.backend.test.BackendTest(vkonnx, __name__)
NODE_TESTS = sorted(NODE_CASES)


def _expose(cases):
    """Only our families on the CPU device (ONNX's 'CPU': host arrays in and out), as a TestCase
    class: the runner's own classes would add every other ONNX test as a skip."""
    node = cases["OnnxBackendNodeModelTest"]
    attrs = {f"{name}_cpu": getattr(node, f"{name}_cpu") for name in NODE_TESTS if name not in UNSUPPORTED}
    return type("OnnxBackendNodeModelTest", (unittest.TestCase,), attrs)


OnnxBackendNodeModelTest = _expose(backend_test.test_cases)


def test_node_tests_found():
    # guards against a renamed family silently running nothing
    for family in ("top_k", "slice", "qlinearmatmul"):
        assert any(n.startswith(f"test_{family}") for n in NODE_TESTS), family
    assert len(NODE_TESTS) >= 20, NODE_TESTS


def test_unsupported_list_is_current_and_each_raises_its_error():
    assert set(UNSUPPORTED) <= set(NODE_TESTS), set(UNSUPPORTED) - set(NODE_TESTS)
    for name, reason in UNSUPPORTED.items():
        assert isinstance(reason, str) and len(reason) > 10, (name, reason)
        case = NODE_CASES[name]
        inputs = [onnx.numpy_helper.to_array(x) if isinstance(x, TensorProto) else x for x in case.data_sets[0][0]]
        with pytest.raises(vkops.ValidationError, match="vkops.onnx: "):
            vkonnx.prepare(case.model).run(inputs)
