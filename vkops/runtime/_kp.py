"""kp, imported on first device use (descriptors and validation work without it), and the Vulkan
flag values that vkops' patched kp takes as plain integers."""
from __future__ import annotations

_kp = None

# VkAccessFlagBits
SHADER_READ, SHADER_WRITE = 0x20, 0x40
TRANSFER_READ, TRANSFER_WRITE = 0x800, 0x1000
HOST_READ = 0x2000
# VkPipelineStageFlagBits
STAGE_COMPUTE, STAGE_TRANSFER, STAGE_HOST = 0x800, 0x1000, 0x4000

_HOW_TO_GET = (
    "vkops needs kp (Kompute) 0.9.0 with vkops' patch (patches/kp-0.9.0/): in a checkout run `make setup`, "
    "or build a wheel for your Python with `make kp-wheel PY=python3 OUT=dist` and `pip install dist/kp-*.whl`")


def kp():
    """The kp module; raises ImportError saying how to get the patched build."""
    global _kp
    if _kp is None:
        try:
            import kp as mod  # noqa: PLC0415
        except ImportError as e:
            raise ImportError(f"{e}. {_HOW_TO_GET}") from e
        if not hasattr(mod, "OpBufferCopy"):
            raise ImportError(f"the installed kp is not vkops' patched build. {_HOW_TO_GET}")
        _kp = mod
    return _kp
