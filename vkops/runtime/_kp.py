"""kp, imported on first device use (descriptors and validation work without it), and the Vulkan
flag values that vkops' patched kp takes as plain integers."""
from __future__ import annotations

import sys

_kp = None

# VkAccessFlagBits
SHADER_READ, SHADER_WRITE = 0x20, 0x40
TRANSFER_READ, TRANSFER_WRITE = 0x800, 0x1000
HOST_READ = 0x2000
# VkPipelineStageFlagBits
STAGE_COMPUTE, STAGE_TRANSFER, STAGE_HOST = 0x800, 0x1000, 0x4000

def how_to_get() -> str:
    """How to install the patched kp for this Python (the ImportError's advice)."""
    py = sys.executable or "python3"
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    return ("vkops needs kp (Kompute) 0.9.0 built with vkops' patch: the wheels `make wheels` builds carry it "
            "(`pip install vkops-*.whl`); this install has none (a pure-Python build). To add it (building needs "
            "libvulkan-dev libfmt-dev cmake g++), from a vkops checkout either "
            f"`make kp-wheel PY={py} OUT=dist` and then `{py} -m pip install dist/kp-0.9.0-{tag}-*.whl`, "
            f"or in one step `{py} -m pip install ./patches/kp-0.9.0` (`make setup` does it for the checkout's .venv)")


def kp():
    """The kp module; raises ImportError saying how to get the patched build."""
    global _kp
    if _kp is None:
        try:  # the wheel's own build (make wheels), else the one installed beside vkops (make setup)
            from .._vendor import kp as mod  # noqa: PLC0415
        except ImportError:
            try:
                import kp as mod  # noqa: PLC0415
            except ImportError as e:
                if "libvulkan" in str(e):  # kp is there, the loader it links is not
                    raise ImportError(f"{e}: no Vulkan loader. Install the system's (Debian/Ubuntu: apt install "
                                      "libvulkan1) or the vkops wheel, which bundles one") from e
                raise ImportError(f"{e}. {how_to_get()}") from e
        if not hasattr(mod, "OpBufferCopy"):
            raise ImportError(f"the installed kp is not vkops' patched build. {how_to_get()}")
        _kp = mod
    return _kp
