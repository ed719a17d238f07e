"""The whole suite runs under the Khronos validation layer; any message it logs fails the test.

The layer is configured through the environment before the first Vulkan instance exists, so this
runs at import time. Set VKOPS_NO_VALIDATION=1 to run without it (e.g. on a machine lacking it).
"""
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests (tests/test_properties.py): "ci" by default, `--hypothesis-profile=long` for a long run.
_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
settings.register_profile("ci", max_examples=30, deadline=None, suppress_health_check=_QUIET)
settings.register_profile("long", max_examples=600, deadline=None, suppress_health_check=_QUIET)


def pytest_configure(config):
    if not config.getoption("hypothesis_profile", None):
        settings.load_profile("ci")

# Pipeline cache files go to a fresh directory, so no run reads another's.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="vkops-cache-")

_LOG = None
if not os.environ.get("VKOPS_NO_VALIDATION"):
    _dir = Path(tempfile.mkdtemp(prefix="vkops-vvl-"))
    _LOG = _dir / "validation.log"
    (_dir / "vk_layer_settings.txt").write_text(
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
        "khronos_validation.report_flags = error,warn\n"
        f"khronos_validation.log_filename = {_LOG}\n")
    os.environ["VK_INSTANCE_LAYERS"] = "VK_LAYER_KHRONOS_validation"
    os.environ["VK_LAYER_SETTINGS_PATH"] = str(_dir)


def _log_size():
    return _LOG.stat().st_size if _LOG is not None and _LOG.exists() else 0


@pytest.fixture(autouse=True)
def no_validation_messages():
    before = _log_size()
    yield
    after = _log_size()
    if after > before:
        with open(_LOG, "rb") as f:
            f.seek(before)
            text = f.read(4000).decode(errors="replace")
        pytest.fail(f"Vulkan validation layer reported:\n{text}")


@pytest.fixture(scope="session")
def dev():
    import vkops

    return vkops.Device()


@pytest.fixture
def rng(request):
    import numpy as np

    import zlib

    # A reproducible stream per test (str hash() is salted per process, crc32 is not).
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
